/* SPDX-License-Identifier: MIT */
/*
 * What the sparse-range modes of the write oracles (wostress, kwrites)
 * read besides the answers: the page-table bytes of this process (VmPTE in
 * /proc/self/status: mm->pgtables_bytes), the machine's (PageTables in
 * /proc/meminfo) and the PMD-level uffd-wp marker's debugfs counters,
 * where the kernel has them (doc/pmd-marker.md).
 *
 *   mw_vmpte_kb()              VmPTE in kB, or -errno
 *   mw_meminfo_kb("PageTables") a /proc/meminfo field in kB, or -errno
 *   mw_marker_enabled()        its debugfs switch: 1, 0, or -errno
 *   mw_marker_read(&s)         the counters; -ENOENT: no marker in this kernel
 *   mw_marker_print(&a, &b)    "# marker NAME +DELTA" for each counter
 *   mw_reserve_alone(len)      a reservation no other mapping shares tables with
 */
#ifndef MW_MARKER_H
#define MW_MARKER_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MW_MARKER_DIR "/sys/kernel/debug/uffd_wp_pmd_marker"

/* The counters of MW_MARKER_DIR/stats, in the order it prints them. */
#define MW_MARKER_COUNTERS(X)						\
	X(installed) X(rearmed) X(emptied) X(cleared) X(copied) X(moved) \
	X(expanded_fault) X(expanded_mfill) X(expanded_protect)		\
	X(expanded_scan) X(expanded_madvise) X(expanded_split)		\
	X(expanded_mremap) X(expand_failed) X(scan)

enum mw_marker_counter {
#define MW_MARKER_ENUM(n) MWM_##n,
	MW_MARKER_COUNTERS(MW_MARKER_ENUM)
#undef MW_MARKER_ENUM
	MWM_N
};

static const char *const mw_marker_name[MWM_N] = {
#define MW_MARKER_NAME(n) #n,
	MW_MARKER_COUNTERS(MW_MARKER_NAME)
#undef MW_MARKER_NAME
};

struct mw_marker_stats {
	uint64_t v[MWM_N];
	bool seen[MWM_N];	/* the file had the line */
};

/* A "Name:   N kB" line of a /proc file, in kB; -errno. */
static inline long mw_proc_kb(const char *path, const char *field)
{
	FILE *f = fopen(path, "re");
	size_t fl = strlen(field);
	char line[256];
	long kb = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, fl) && line[fl] == ':') {
			kb = strtol(line + fl + 1, NULL, 10);
			break;
		}
	fclose(f);
	return kb;
}

static inline long mw_vmpte_kb(void)
{
	return mw_proc_kb("/proc/self/status", "VmPTE");
}

static inline long mw_meminfo_kb(const char *field)
{
	return mw_proc_kb("/proc/meminfo", field);
}

/* MW_MARKER_DIR/enabled: 1, 0, or -errno (-ENOENT: no marker). */
static inline int mw_marker_enabled(void)
{
	FILE *f = fopen(MW_MARKER_DIR "/enabled", "re");
	int c;

	if (!f)
		return -errno;
	c = fgetc(f);
	fclose(f);
	return c == '1' ? 1 : c == '0' ? 0 : -EINVAL;
}

/* 0, -ENOENT (no marker: the file is absent), or another -errno. */
static inline int mw_marker_read(struct mw_marker_stats *s)
{
	FILE *f = fopen(MW_MARKER_DIR "/stats", "re");
	char name[64];
	unsigned long long v;

	memset(s, 0, sizeof(*s));
	if (!f)
		return -errno;
	while (fscanf(f, "%63s %llu", name, &v) == 2)
		for (int i = 0; i < MWM_N; i++)
			if (!strcmp(name, mw_marker_name[i])) {
				s->v[i] = v;
				s->seen[i] = true;
			}
	fclose(f);
	return 0;
}

static inline uint64_t mw_marker_delta(const struct mw_marker_stats *a,
				       const struct mw_marker_stats *b,
				       enum mw_marker_counter i)
{
	return b->v[i] - a->v[i];
}

/* The counters' deltas from a to b, one line each ("# marker NAME +D"). */
static inline void mw_marker_print(const struct mw_marker_stats *a,
				   const struct mw_marker_stats *b)
{
	for (int i = 0; i < MWM_N; i++)
		printf("# marker %-17s %s%llu\n", mw_marker_name[i],
		       b->seen[i] ? "+" : "(absent) ",
		       (unsigned long long)mw_marker_delta(a, b, i));
}

/*
 * A PROT_NONE MAP_NORESERVE reservation of len bytes (at most 512 GiB)
 * alone in a 512 GiB-aligned range (a pgd entry of 4-level paging): no
 * other mapping shares its pud, pmd or pte tables, so munmap frees every
 * table its use allocated and VmPTE goes back exactly; NULL if none of the
 * candidate ranges (from 16 TiB up) is free.
 */
static inline void *mw_reserve_alone(size_t len)
{
	const uintptr_t step = 512UL << 30;

	for (uintptr_t a = 32 * step; a < 200 * step; a += step) {
		void *p = mmap((void *)a, step, PROT_NONE, MAP_PRIVATE |
			       MAP_ANONYMOUS | MAP_NORESERVE |
			       MAP_FIXED_NOREPLACE, -1, 0);

		if (p == MAP_FAILED)
			continue;
		if (p != (void *)a) {	/* a kernel without NOREPLACE */
			munmap(p, step);
			continue;
		}
		munmap((char *)p + len, step - len);
		return p;
	}
	return NULL;
}

#endif
