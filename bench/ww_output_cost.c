// SPDX-License-Identifier: MIT
/*
 * libmemwatch's three outputs of one get+reset, side by side:
 *
 *   ww_output_cost [PAGES [ROUNDS [BACKEND]]]     (32768, 21, uffd)
 *
 * An address array (memwatch_get), runs (memwatch_get_regions) and a
 * bitmap (memwatch_get_bitmap) of a watched anonymous range of PAGES 4 KiB
 * pages of which 0.1%, 1% or 10% were written (random pages, the same ones
 * for every variant and round).  Each case's variants run in turn round by
 * round, the writes done untimed before each call; the median per call over
 * ROUNDS rounds is printed, with the ratio of the medians to the address
 * array, in the layout of bench/pagemap_scan.  Run it under
 * `scripts/vm-run --icount` (make lib-bench) for repeatable figures.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"
#include "memwatch.h"

struct bench {
	struct memwatch *mw;
	char *mem;
	long psz, pages;
	unsigned char *pattern;		/* 1: page written before each call */
	void **addrs;
	struct memwatch_region *runs;
	uint64_t *bitmap;
};

static void prep(struct bench *b)
{
	long i;

	for (i = 0; i < b->pages; i++)
		if (b->pattern[i])
			b->mem[i * b->psz] ^= 1;
}

static long get_addrs(struct bench *b)
{
	size_t n = (size_t)b->pages;
	int ret = memwatch_get(b->mw, b->mem, b->pages * b->psz,
			       MEMWATCH_GET_RESET, b->addrs, &n);

	bench_check(ret, "memwatch_get");
	return (long)n;
}

static long get_runs(struct bench *b)
{
	size_t n = (size_t)b->pages;
	int ret = memwatch_get_regions(b->mw, b->mem, b->pages * b->psz,
				       MEMWATCH_GET_RESET, b->runs, &n);

	bench_check(ret, "memwatch_get_regions");
	return (long)n;
}

static long get_bitmap(struct bench *b)
{
	size_t n = SIZE_MAX;
	int ret = memwatch_get_bitmap(b->mw, b->mem, b->pages * b->psz,
				      MEMWATCH_GET_RESET, b->bitmap, &n);

	bench_check(ret, "memwatch_get_bitmap");
	return (long)n;
}

typedef long (*variant_fn)(struct bench *b);

static void run_case(struct bench *b, const char *name, int rounds)
{
	static const char *const vname[] = { "address array", "regions", "bitmap" };
	static const variant_fn fn[] = { get_addrs, get_runs, get_bitmap };
	double *t = calloc((size_t)rounds * 3, sizeof(*t)), med[3];
	long result[3];
	int r, v;

	if (!t)
		bench_check(-ENOMEM, "calloc");
	for (r = 0; r < rounds; r++) {
		for (v = 0; v < 3; v++) {
			double t0;

			prep(b);
			t0 = now_us();
			result[v] = fn[v](b);
			t[v * rounds + r] = now_us() - t0;
		}
	}
	for (v = 0; v < 3; v++) {
		med[v] = median(t + v * rounds, rounds);	/* sorts */
		printf("%-34s %-22s %10.1f us  (min %10.1f)  result %ld\n",
		       v ? "" : name, vname[v], med[v], t[v * rounds], result[v]);
	}
	for (v = 1; v < 3; v++)
		printf("%-34s %-22s %10.2fx\n", "", "ratio to the first", med[v] / med[0]);
	free(t);
}

int main(int argc, char **argv)
{
	static const int per_mille_x10[] = { 1, 10, 100 };	/* 0.1%, 1%, 10% */
	enum memwatch_backend be = MEMWATCH_BACKEND_UFFD;
	struct bench b = { 0 };
	int rounds = argc > 2 ? atoi(argv[2]) : 21, ret, c;
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	char name[64];
	long i;

	b.psz = sysconf(_SC_PAGESIZE);
	b.pages = argc > 1 ? atol(argv[1]) : 32768;
	if (b.pages <= 0 || rounds <= 0 ||
	    (argc > 3 && memwatch_backend_from_name(argv[3], &be))) {
		fprintf(stderr, "usage: ww_output_cost [PAGES [ROUNDS [BACKEND]]]\n");
		return 2;
	}
	tap_guest_only();
	b.mem = mmap(NULL, b.pages * b.psz, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	b.pattern = calloc((size_t)b.pages, 1);
	b.addrs = calloc((size_t)b.pages, sizeof(*b.addrs));
	b.runs = calloc((size_t)b.pages, sizeof(*b.runs));
	b.bitmap = calloc(((size_t)b.pages + 63) / 64, sizeof(*b.bitmap));
	if (b.mem == MAP_FAILED || !b.pattern || !b.addrs || !b.runs || !b.bitmap)
		bench_check(-ENOMEM, "allocation");
	memset(b.mem, 1, b.pages * b.psz);
	ret = memwatch_open(&b.mw, be, MEMWATCH_OPEN_NO_ENV);
	if (ret == 0)
		ret = memwatch_add(b.mw, b.mem, b.pages * b.psz, MEMWATCH_ADD_NOHUGEPAGE);
	bench_check(ret, "memwatch_open/add");
	printf("# libmemwatch %s backend: %ld pages of 4K anon, %d rounds, get+reset, median per call\n",
	       memwatch_backend_name(be), b.pages, rounds);
	for (c = 0; c < 3; c++) {
		memset(b.pattern, 0, (size_t)b.pages);
		for (i = 0; i < b.pages; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			b.pattern[i] = x % 1000 < (uint64_t)per_mille_x10[c];
		}
		snprintf(name, sizeof(name), "get+reset, %g%% written",
			 per_mille_x10[c] / 10.0);
		run_case(&b, name, rounds);
	}
	memwatch_close(b.mw);
	return 0;
}
