// SPDX-License-Identifier: GPL-2.0
/*
 * scanspan: a PAGEMAP_SCAN over the whole address space costs about what
 * scanning each VMA on its own costs, and answers the same.
 *
 * The kernel may walk a range in chunks (ours: 1 GiB under one hold of the
 * mmap lock), but address space no VMA maps has nothing to report: a scan
 * of [0, TASK_SIZE_MAX) must not pay per chunk of emptiness.  With 5-level
 * paging (Debian's config, X86_5LEVEL=y, on a CPU with la57) that range is
 * 2^26 chunks of 1 GiB; with 4 levels 2^17.  The oracle is the same
 * process's VMAs scanned one by one (/proc/self/maps): the regions must be
 * identical, and the whole-range scan may cost at most SLACK times the sum
 * of the per-VMA scans plus FLOOR_NS (medians of ROUNDS).  Upstream 6.12,
 * which walks the range in one go, passes too.
 *
 *   scanspan [--rounds N]
 * TAP on stdout.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "mw-test.h"

#define PSZ		4096UL
#define MAX_VMAS	256
#define MAX_REGIONS	4096
#define SLACK		4
#define FLOOR_NS	2000000ULL	/* 2 ms: timer and TCG noise */

struct span {
	int pm;				/* /proc/self/pagemap */
	uint64_t tsm;			/* TASK_SIZE_MAX */
	uint64_t vma_start[MAX_VMAS], vma_end[MAX_VMAS];
	unsigned int nvmas;
	struct page_region out[MAX_REGIONS];
	unsigned int nout;
};

static void probe_tsm(struct span *s)
{
	void *p = mmap((void *)(uintptr_t)(1ULL << 48), PSZ, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	s->tsm = (1ULL << 47) - PSZ;
	if (p != MAP_FAILED) {
		munmap(p, PSZ);
		if (p == (void *)(uintptr_t)(1ULL << 48))
			s->tsm = (1ULL << 56) - PSZ;
	}
}

static void read_maps(struct span *s)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long a, b;

	if (!f)
		mw_bail("open /proc/self/maps", NULL);
	s->nvmas = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx", &a, &b) != 2 || a >= s->tsm)
			continue;
		if (s->nvmas == MAX_VMAS) {
			errno = E2BIG;
			mw_bail("too many VMAs", NULL);
		}
		s->vma_start[s->nvmas] = a;
		s->vma_end[s->nvmas] = b;
		s->nvmas++;
	}
	fclose(f);
}

/* Scan [start, end) to the end, appending to out (merging at the seam). */
static int scan(struct span *s, uint64_t start, uint64_t end)
{
	struct pm_scan_arg arg;

	while (start < end) {
		long n;

		memset(&arg, 0, sizeof(arg));
		arg.size = sizeof(arg);
		arg.start = start;
		arg.end = end;
		arg.vec = (uintptr_t)&s->out[s->nout];
		arg.vec_len = MAX_REGIONS - s->nout;
		arg.category_mask = PAGE_IS_PRESENT;
		arg.return_mask = PAGE_IS_PRESENT;
		n = ioctl(s->pm, PAGEMAP_SCAN, &arg);
		if (n < 0)
			return -errno;
		/* Regions of two calls that touch are one region. */
		if (n && s->nout && s->out[s->nout - 1].end == s->out[s->nout].start &&
		    s->out[s->nout - 1].categories == s->out[s->nout].categories) {
			s->out[s->nout - 1].end = s->out[s->nout].end;
			memmove(&s->out[s->nout], &s->out[s->nout + 1],
				(n - 1) * sizeof(s->out[0]));
			n--;
		}
		s->nout += n;
		if (arg.walk_end <= start || s->nout == MAX_REGIONS)
			return -ENOSPC;
		start = arg.walk_end;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static struct span s;
	static struct page_region ref[MAX_REGIONS];
	unsigned int rounds = 7, nref = 0, i, r;
	uint64_t *t_full, *t_vmas;
	char *area[4];
	int err = 0;

	if (argc == 3 && !strcmp(argv[1], "--rounds"))
		rounds = (unsigned int)strtoul(argv[2], NULL, 0);
	if (!rounds || rounds > 101) {
		fprintf(stderr, "usage: %s [--rounds N (1..101)]\n", argv[0]);
		return 2;
	}
	tap_guest_only();
	tap_plan(3);
	s.pm = open("/proc/self/pagemap", O_RDONLY);
	if (s.pm < 0)
		mw_bail("open /proc/self/pagemap", NULL);
	probe_tsm(&s);
	/* A few mappings with a page here and there present. */
	for (i = 0; i < 4; i++) {
		area[i] = mmap(NULL, 64 * PSZ, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (area[i] == MAP_FAILED)
			mw_bail("mmap", NULL);
		for (r = 0; r < 64; r += 3 + i)
			area[i][r * PSZ] = 1;
	}
	read_maps(&s);
	t_full = calloc(rounds, sizeof(*t_full));
	t_vmas = calloc(rounds, sizeof(*t_vmas));
	if (!t_full || !t_vmas)
		mw_bail("calloc", NULL);

	for (r = 0; r < rounds && !err; r++) {
		uint64_t t0 = mw_now_ns();

		s.nout = 0;
		for (i = 0; i < s.nvmas && !err; i++)
			err = scan(&s, s.vma_start[i], s.vma_end[i]);
		t_vmas[r] = mw_now_ns() - t0;
		nref = s.nout;
		memcpy(ref, s.out, nref * sizeof(ref[0]));

		s.nout = 0;
		t0 = mw_now_ns();
		if (!err)
			err = scan(&s, 0, s.tsm);
		t_full[r] = mw_now_ns() - t0;
	}
	tap_ok(!err, "PAGEMAP_SCAN of [0, %#" PRIx64 ") and of the %u VMAs below it succeed%s%s",
	       s.tsm, s.nvmas, err ? ": " : "", err ? strerror(-err) : "");
	tap_ok(!err && s.nout == nref && !memcmp(ref, s.out, nref * sizeof(ref[0])),
	       "the whole-range scan reports the regions the per-VMA scans report (%u, %u)",
	       s.nout, nref);
	qsort(t_full, rounds, sizeof(*t_full), cmp_u64);
	qsort(t_vmas, rounds, sizeof(*t_vmas), cmp_u64);
	tap_ok(!err && t_full[rounds / 2] <= SLACK * t_vmas[rounds / 2] + FLOOR_NS,
	       "the whole-range scan costs %" PRIu64 " us, the per-VMA scans %" PRIu64
	       " us (medians of %u; bound %u x + %llu us)",
	       t_full[rounds / 2] / 1000, t_vmas[rounds / 2] / 1000, rounds, SLACK,
	       FLOOR_NS / 1000);
	printf("# %d passed, %d failed\n", mw_tap.n - mw_tap.failed, mw_tap.failed);
	return tap_done();
}
