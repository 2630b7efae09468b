// SPDX-License-Identifier: GPL-2.0
/*
 * ww_steps: what a written page costs the write-watch harvest, step by
 * step.  On an armed 4K anonymous range (WP_ASYNC, MADV_NOHUGEPAGE), for
 * each density of written pages, the median time of:
 *   get+reset  PAGEMAP_SCAN WP_MATCHING, mask = return = WRITTEN (Wine)
 *   get        the same without WP_MATCHING (report only)
 *   reset      WP_MATCHING with vec = NULL (write-protect only)
 * (nothing written, the first density, is the walk alone) and, per
 * written page, the slope against the density below it:
 * (t(d) - t(d_prev)) / (written(d) - written(d_prev)).  Under -icount the
 * times count guest instructions, so the slopes of two kernels compare.
 *   ww_steps [PAGES [ROUNDS [STRIDE...]]]
 * default 16384 pages (64 MiB), 21 rounds, strides 1000 100 16 2 (every
 * STRIDE-th page written; nothing written is always the first density)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/fs.h>
#include "bench.h"

#define MAXR 65536

struct ctx {
	int pagemap, uffd;
	char *mem;
	long pages, psz;
	struct page_region *vec;
};

static long scan(struct ctx *c, int out, int wp)
{
	struct pm_scan_arg arg = mw_ww_arg((uintptr_t)c->mem,
					   (uintptr_t)c->mem + c->pages * c->psz,
					   false, out ? c->vec : NULL,
					   out ? MAXR : 0);

	/* the steps' own flags: WP_MATCHING or none, no CHECK_WPASYNC */
	arg.flags = wp ? PM_SCAN_WP_MATCHING : 0;
	return bench_scan(c->pagemap, &arg);
}

/* Write every stride-th page (none for 0); returns how many. */
static long dirty(struct ctx *c, long stride)
{
	long i, n = 0;

	if (!stride)
		return 0;
	for (i = 0; i < c->pages; i += stride, n++)
		c->mem[i * c->psz] ^= 1;
	return n;
}

enum { GET_RESET, GET, RESET, NSTEPS };
static const char *const step_name[NSTEPS] = { "get+reset", "get", "reset" };

/* Median of @rounds calls of step @s after writing every @stride-th page. */
static double measure(struct ctx *c, int s, long stride, int rounds, long *res)
{
	double *t = calloc(rounds, sizeof(*t)), m;
	int r;

	if (!t)
		bench_die("calloc");
	for (r = 0; r < rounds; r++) {
		double t0;

		/* Re-arm everything, then write: each call sees the same state. */
		scan(c, 0, 1);
		dirty(c, stride);
		t0 = now_us();
		*res = scan(c, s != RESET, s != GET);
		t[r] = now_us() - t0;
	}
	m = median(t, rounds);
	free(t);
	return m;
}

int main(int argc, char **argv)
{
	long strides[32] = { 0, 1000, 100, 16, 2 };
	int nd = 5;
	struct ctx c = { 0 };
	double t[NSTEPS][32];
	long written[32], res;
	int rounds = argc > 2 ? atoi(argv[2]) : 21, s, d;

	c.psz = sysconf(_SC_PAGESIZE);
	c.pages = argc > 1 ? atol(argv[1]) : 16384;
	if (argc > 3) {
		for (nd = 1; nd < 32 && nd + 2 < argc; nd++) {
			strides[nd] = atol(argv[nd + 2]);
			if (strides[nd] <= 0 || (nd > 1 && strides[nd] >= strides[nd - 1]))
				rounds = 0;	/* usage */
		}
	}
	if (c.pages <= 0 || rounds <= 0) {
		fprintf(stderr, "usage: ww_steps [PAGES [ROUNDS [STRIDE...]]]: "
			"strides decreasing, > 0, at most 31\n");
		return 2;
	}
	tap_guest_only();
	c.vec = calloc(MAXR, sizeof(*c.vec));
	if (!c.vec || bench_open_wp_async(&c.pagemap, &c.uffd))
		bench_die("pagemap/userfaultfd");
	c.mem = mmap(NULL, c.pages * c.psz, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c.mem == MAP_FAILED)
		bench_die("mmap");
	madvise(c.mem, c.pages * c.psz, MADV_NOHUGEPAGE);
	memset(c.mem, 1, c.pages * c.psz);
	bench_arm(c.uffd, c.mem, c.pages * c.psz);

	printf("# %ld pages of 4K anon, %d rounds, median us per call\n",
	       c.pages, rounds);
	for (d = 0; d < nd; d++) {
		written[d] = (strides[d] ? (c.pages + strides[d] - 1) / strides[d] : 0);
		for (s = 0; s < NSTEPS; s++) {
			t[s][d] = measure(&c, s, strides[d], rounds, &res);
			printf("ww_steps %-9s stride %-5ld written %-6ld %10.1f us  result %ld\n",
			       step_name[s], strides[d], written[d], t[s][d], res);
		}
	}
	/* Slopes, ns per written page (ns = instructions under -icount). */
	for (d = 1; d < nd; d++)
		for (s = 0; s < NSTEPS; s++)
			printf("ww_steps slope %-9s %5ld..%-5ld %8.1f ns per written page\n",
			       step_name[s], written[d - 1], written[d],
			       (t[s][d] - t[s][d - 1]) * 1e3 /
			       (written[d] - written[d - 1]));
	return 0;
}
