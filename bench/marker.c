// SPDX-License-Identifier: GPL-2.0
/*
 * What a large untouched reservation costs write tracking, the case of
 * the PMD-level uffd-wp marker (doc/pmd-marker.md):
 * Wine's VirtualAlloc(MEM_WRITE_WATCH) of a big view, armed at once and
 * hardly written.
 *
 *   marker [SIZE_MIB...]      (default 1024 4096 16384)
 *
 * Every range is anonymous MAP_PRIVATE|MAP_NORESERVE, MADV_NOHUGEPAGE (as
 * Wine maps it), registered MODE_WP on one uffd with WP_ASYNC |
 * WP_UNPOPULATED.  For each size:
 *   arm            UFFDIO_WRITEPROTECT(WP) of the never-touched range, a
 *                  fresh range each rep (munmap + mmap + register); KB is
 *                  the change of VmPTE (the process's page tables) over it
 *   harvest_0      GetWriteWatch(RESET): PAGEMAP_SCAN with
 *                  PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC, category and
 *                  return mask WRITTEN, 1024 regions per call, resumed at
 *                  walk_end to the end, on the armed untouched range
 *   harvest_0.1    the same after writing every 1000th page (untimed; the
 *                  same pages each rep, so after the first rep they are
 *                  present and armed again by the harvest); KB: VmPTE's
 *                  change over all its reps (the tables those writes
 *                  needed: none without the marker)
 * Then on a fresh armed range of 1 GiB (or the first size, if smaller),
 * FW_REGIONS writes, each timed alone (clock_gettime around one store),
 * ns per write, net of the same timed store to a present writable page:
 *   fw_first_2m      the first write into a never-touched 2 MiB of the
 *                    armed range (with the marker: its expansion)
 *   fw_table_present the first write into a never-touched page of a 2 MiB
 *                    that already has its page table (the first write
 *                    done): the armed-untouched cost without the marker
 *   fw_unarmed_2m    the first write into a never-touched 2 MiB of a
 *                    registered range never armed (a plain anonymous
 *                    fault that allocates the page table)
 * fw_first_2m's KB: VmPTE's change over its FW_REGIONS writes (a table
 * each with the marker, none without).
 * Output, one line per case, a script parses it (scripts/bench):
 *   mk SIZE_MIB CASE MEDIAN P90 KB UNIT
 * MEDIAN and P90 over the reps (arm and harvests: REPS = 7, 5 from 4 GiB
 * on, 3 from 16 GiB on) or over the FW_REGIONS writes; KB: for arm the
 * median VmPTE change of the call ("-" where none is measured).  Lines starting
 * with "#" are comments: the marker's debugfs counters before and after
 * the run, where the kernel has them ("# marker absent" otherwise).  Run
 * it under `scripts/vm-run --icount` (guest time = instructions).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "bench.h"

#define MIB		(1024L * 1024)
#define HPSZ		(2 * MIB)
#define PSZ		4096L
#define FW_REGIONS	256
#define NVEC		1024
#define MAXREPS		7
#define STATS		"/sys/kernel/debug/uffd_wp_pmd_marker/stats"

struct bench {
	int uffd, pagemap;
	struct page_region vec[NVEC];
};

/* VmPTE of this process in kB (mm->pgtables_bytes). */
static long vmpte_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		bench_die("/proc/self/status");
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmPTE:", 6))
			kb = atol(line + 6);
	fclose(f);
	return kb;
}

/* The marker's counters as "# marker WHEN: name value ..." or absent. */
static void print_stats(const char *when)
{
	char name[64];
	unsigned long long v;
	FILE *f = fopen(STATS, "r");

	if (!f) {
		printf("# marker absent (%s: %s): no PMD-level marker in this kernel\n",
		       STATS, strerror(errno));
		return;
	}
	printf("# marker %s:", when);
	while (fscanf(f, "%63s %llu", name, &v) == 2)
		printf(" %s %llu", name, v);
	printf("\n");
	fclose(f);
}

static char *map_range(struct bench *b, long size, int reg)
{
	return bench_map_range(b->uffd, size, reg);
}

static void arm(struct bench *b, char *m, long size)
{
	bench_wp(b->uffd, m, size, true);
}

/* GetWriteWatch(RESET) of [m, m + size): the pages reported. */
static long harvest(struct bench *b, char *m, long size)
{
	struct pm_scan_arg a = mw_ww_arg((uintptr_t)m, (uintptr_t)m + size,
					 true, b->vec, NVEC);
	long pages = 0;

	while (a.start < a.end) {
		long n = bench_scan(b->pagemap, &a);

		for (long i = 0; i < n; i++)
			pages += (b->vec[i].end - b->vec[i].start) / PSZ;
		a.start = a.walk_end;
	}
	return pages;
}

static void line(long mib, const char *name, double *v, int n, double kb,
		 const char *unit)
{
	double p90;
	char kbs[32] = "-";

	median(v, n);			/* sorts v */
	p90 = v[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1];
	if (kb >= 0)
		snprintf(kbs, sizeof(kbs), "%.0f", kb);
	printf("mk %6ld %-16s %12.1f %12.1f %8s %s\n", mib, name, v[n / 2],
	       p90, kbs, unit);
	fflush(stdout);
}

/* Arming and the two harvests of an untouched range of mib MiB. */
static void sizes(struct bench *b, long mib)
{
	long size = mib * MIB, reps = mib >= 16384 ? 3 : mib >= 4096 ? 5 : MAXREPS;
	double us[MAXREPS], kb[MAXREPS], h0[MAXREPS], h1[MAXREPS];
	char *m = NULL;
	long got, k0;

	for (int r = 0; r < reps; r++) {
		double t0;

		if (m && munmap(m, size))
			bench_die("munmap");
		m = map_range(b, size, 1);
		k0 = vmpte_kb();
		t0 = now_us();
		arm(b, m, size);
		us[r] = now_us() - t0;
		kb[r] = vmpte_kb() - k0;
	}
	line(mib, "arm", us, reps, median(kb, reps), "us");
	for (int r = 0; r < reps; r++) {
		double t0 = now_us();

		got = harvest(b, m, size);
		h0[r] = now_us() - t0;
		if (got)
			fprintf(stderr, "marker: %ld pages reported, none written\n",
				got);
	}
	line(mib, "harvest_0", h0, reps, -1, "us");
	k0 = vmpte_kb();
	for (int r = 0; r < reps; r++) {
		double t0;

		for (long off = 0; off < size; off += 1000 * PSZ)
			m[off] = 1;
		t0 = now_us();
		got = harvest(b, m, size);
		h1[r] = now_us() - t0;
		if (got != (size / PSZ + 999) / 1000)
			fprintf(stderr, "marker: %ld pages reported, %ld written\n",
				got, (size / PSZ + 999) / 1000);
	}
	line(mib, "harvest_0.1", h1, reps, vmpte_kb() - k0, "us");
	if (munmap(m, size))
		bench_die("munmap");
}

/* One store to p, timed alone, in ns. */
static double timed_store(volatile char *p)
{
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	*p = 1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
}

/*
 * The first write into each of FW_REGIONS 2 MiB of an armed untouched
 * range of mib MiB (every nchunks/FW_REGIONS-th chunk, a page inside it
 * that moves from chunk to chunk), then one more untouched page in each of
 * them, then the same first writes into an unarmed registered range.
 */
static void first_writes(struct bench *b, long mib)
{
	long size = mib * MIB, nch = size / HPSZ;
	long step = nch / FW_REGIONS ? nch / FW_REGIONS : 1;
	double first[FW_REGIONS], table[FW_REGIONS], unarmed[FW_REGIONS];
	double plain[FW_REGIONS], base, k0;
	char *m = map_range(b, size, 1), *u = map_range(b, size, 1);
	int n = 0;

	arm(b, m, size);
	for (int i = 0; i < FW_REGIONS; i++) {
		m[0] = 1;
		plain[i] = timed_store(m);
	}
	base = median(plain, FW_REGIONS);
	k0 = vmpte_kb();
	for (long ch = 0; ch < nch && n < FW_REGIONS; ch += step, n++) {
		long pg = (n * 37) % 511;

		first[n] = timed_store(m + ch * HPSZ + pg * PSZ) - base;
	}
	k0 = vmpte_kb() - k0;
	for (int i = 0; i < n; i++) {
		long pg = (i * 37) % 511 + 1;

		table[i] = timed_store(m + i * step * HPSZ + pg * PSZ) - base;
		unarmed[i] = timed_store(u + i * step * HPSZ +
					 ((i * 37) % 511) * PSZ) - base;
	}
	printf("# first writes: %d regions of 2 MiB in %ld MiB, a timed store to a present page %.0f ns (subtracted)\n",
	       n, mib, base);
	line(mib, "fw_first_2m", first, n, k0, "ns");
	line(mib, "fw_table_present", table, n, -1, "ns");
	line(mib, "fw_unarmed_2m", unarmed, n, -1, "ns");
	if (munmap(m, size) || munmap(u, size))
		bench_die("munmap");
}

int main(int argc, char **argv)
{
	struct bench *b = calloc(1, sizeof(*b));
	long def[] = { 1024, 4096, 16384 }, fw_mib;
	int nsz = argc > 1 ? argc - 1 : 3;
	long *sz = calloc(nsz, sizeof(*sz));

	if (!b || !sz)
		bench_die("calloc");
	for (int i = 0; i < nsz; i++) {
		sz[i] = argc > 1 ? atol(argv[i + 1]) : def[i];
		if (sz[i] < 2 || sz[i] % 2) {
			fprintf(stderr, "usage: %s [SIZE_MIB...] (even, 2 or more)\n",
				argv[0]);
			return 2;
		}
	}
	tap_guest_only();	/* and stdout line-buffered */
	if (bench_open_wp_async(&b->pagemap, &b->uffd))
		bench_die("userfaultfd with WP_ASYNC and WP_UNPOPULATED");
	printf("# marker: untouched reservations, MADV_NOHUGEPAGE, WP_ASYNC|WP_UNPOPULATED; mk SIZE_MIB CASE MEDIAN P90 KB UNIT\n");
	print_stats("before");
	for (int i = 0; i < nsz; i++)
		sizes(b, sz[i]);
	fw_mib = sz[0] < 1024 ? sz[0] : 1024;
	first_writes(b, fw_mib);
	print_stats("after");
	free(sz);
	free(b);
	return 0;
}
