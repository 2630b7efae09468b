// SPDX-License-Identifier: MIT
/*
 * The region and bitmap outputs (memwatch_get_regions(),
 * memwatch_get_bitmap()) against the address array of memwatch_get():
 *   ./ww_outputs uffd|soft-dirty|mprotect [available|unavailable]
 * The oracle is memwatch_get() without reset on the same memory in the
 * same state (taken just before): the runs must be exactly its pages
 * grouped into maximal runs, the bitmap exactly its pages.  With a
 * capacity of N entries (N runs, N bits) and MEMWATCH_GET_RESET a call
 * must return the oracle's first N entries and re-arm exactly those: the
 * oracle taken after it holds the rest.  Random write patterns (0.1% to
 * all pages, runs), sub-ranges cutting the watched range, THPs cut by the
 * query, hugetlb pages (uffd), truncation with resumption until the range
 * is drained, and writer threads racing the harvests (no write lost, none
 * invented, as in ww_threads).
 */
#include "mw-test.h"
#include "expect.h"
#include "writers.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>

#include "memwatch.h"

enum kind { K_PAGES, K_RUNS, K_BITMAP };
static const char *const kname[] = { "addresses", "regions", "bitmap" };

static struct memwatch *mw;
static enum memwatch_backend be;
static size_t ps;
static uint64_t rng;
static unsigned long fmt_bad;	/* malformed outputs, all calls */

static void bad_output(const char *fmt, size_t a, size_t b)
{
	if (fmt_bad++ < 5) {
		printf("#   malformed output: ");
		printf(fmt, a, b);
		printf("\n");
	}
}

/*
 * One get of the given kind over pages [0, n) of base; out[i] = 1 for each
 * page i reported.  Checks the output's form: addresses ascending in the
 * range; runs ascending, maximal (never adjacent), inside the range,
 * categories WRITTEN; the bitmap's bits past the range and the word after
 * the buffer untouched.  *count: capacity in, entries out.
 */
static int get_kind(enum kind k, char *base, size_t n, unsigned int flags,
		    size_t *count, unsigned char *out)
{
	static void *pages[1 << 14];
	static struct memwatch_region runs[1 << 14];
	static uint64_t bm[(1 << 14) / 64 + 2];
	size_t i, words = (n + 63) / 64, cap = *count, set = 0;
	uintptr_t lo = (uintptr_t)base, hi = lo + n * ps, prev = 0;
	int ret;

	memset(out, 0, n);
	switch (k) {
	case K_PAGES:
		if (cap > sizeof(pages) / sizeof(pages[0]))
			*count = cap = sizeof(pages) / sizeof(pages[0]);
		ret = memwatch_get(mw, base, n * ps, flags, pages, count);
		for (i = 0; !ret && i < *count; i++) {
			uintptr_t p = (uintptr_t)pages[i];

			if (p < lo || p >= hi || (p - lo) % ps || (i && p <= prev))
				bad_output("address %zu of %zu", i, *count);
			else
				out[(p - lo) / ps] = 1;
			prev = p;
		}
		return ret;
	case K_RUNS:
		if (cap > sizeof(runs) / sizeof(runs[0]))
			*count = cap = sizeof(runs) / sizeof(runs[0]);
		ret = memwatch_get_regions(mw, base, n * ps, flags, runs, count);
		for (i = 0; !ret && i < *count; i++) {
			uint64_t s = runs[i].start, e = runs[i].end, p;

			if (s < lo || e > hi || s >= e || (s - lo) % ps ||
			    (e - lo) % ps || (i && s <= prev) ||
			    runs[i].categories != MEMWATCH_PAGE_WRITTEN) {
				bad_output("run %zu of %zu", i, *count);
				continue;
			}
			for (p = s; p < e; p += ps)
				out[(p - lo) / ps] = 1;
			prev = e;
		}
		if (!ret && *count > cap)
			bad_output("%zu runs for a capacity of %zu", *count, cap);
		return ret;
	case K_BITMAP:
		memset(bm, 0xa5, sizeof(bm));
		ret = memwatch_get_bitmap(mw, base, n * ps, flags, bm, count);
		if (ret)
			return ret;
		for (i = 0; i < n; i++) {
			out[i] = (bm[i / 64] >> (i % 64)) & 1;
			set += out[i];
		}
		for (i = n; i < words * 64; i++)
			if ((bm[i / 64] >> (i % 64)) & 1)
				bad_output("bit %zu set past %zu pages", i, n);
		if (bm[words] != 0xa5a5a5a5a5a5a5a5ULL)
			bad_output("word %zu after the bitmap of %zu pages changed",
				   words, n);
		if (set != *count)
			bad_output("%zu bits set, count %zu", set, *count);
		return ret;
	}
	return -EINVAL;
}

/* The oracle: memwatch_get() without reset, room for every page. */
static int oracle(char *base, size_t n, unsigned char *out)
{
	size_t cnt = n;

	return get_kind(K_PAGES, base, n, 0, &cnt, out);
}

/* The oracle's first cap entries of kind k. */
static void prefix(enum kind k, const unsigned char *ref, size_t n, size_t cap,
		   unsigned char *out)
{
	size_t i, e = 0;

	memset(out, 0, n);
	for (i = 0; i < n; i++) {
		if (!ref[i])
			continue;
		if (k != K_RUNS || i == 0 || !ref[i - 1]) {
			if (e == cap)
				break;
			e++;
		}
		out[i] = 1;
	}
}

/* Index of the first difference of a and b, or -1. */
static long differs(const unsigned char *a, const unsigned char *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (a[i] != b[i])
			return (long)i;
	return -1;
}

/*
 * Without reset: do the regions and the bitmap of [base, base + n pages)
 * equal the oracle?  Returns the number of outputs that differ (or fail).
 */
static unsigned long outputs_differ(char *base, size_t n, unsigned char *ref,
				    unsigned char *got)
{
	unsigned long bad = 0;
	size_t cnt = n;
	int ret;

	ret = oracle(base, n, ref);
	ret = ret ? ret : get_kind(K_RUNS, base, n, 0, &cnt, got);
	bad += ret || differs(got, ref, n) >= 0;
	cnt = SIZE_MAX;
	ret = ret ? ret : get_kind(K_BITMAP, base, n, 0, &cnt, got);
	bad += ret || differs(got, ref, n) >= 0;
	return bad;
}

static size_t count_set(const unsigned char *a, size_t n)
{
	size_t i, c = 0;

	for (i = 0; i < n; i++)
		c += a[i];
	return c;
}

/* A random write pattern over n pages, recorded in wrote[]. */
static void write_pattern(char *base, size_t n, unsigned char *wrote)
{
	static const unsigned int per_mille[] = { 1, 10, 100, 500, 1000 };
	unsigned int pm = per_mille[mw_rnd(&rng) % 5];
	size_t i, j, runs;

	memset(wrote, 0, n);
	for (i = 0; i < n; i++)
		if (mw_rnd(&rng) % 1000 < pm)
			wrote[i] = 1;
	runs = mw_rnd(&rng) % 4;
	while (runs--) {
		i = mw_rnd(&rng) % n;
		for (j = i; j < n && j < i + mw_rnd(&rng) % 40; j++)
			wrote[j] = 1;
	}
	for (i = 0; i < n; i++)
		if (wrote[i])
			base[i * ps] = (char)mw_rnd(&rng);
}

/*
 * Get+reset of kind k over [base, base + n pages) with random small
 * capacities, resuming after the last entry, until nothing is returned.
 * Each call is checked against the oracle just before it (its prefix) and
 * just after (the rest).  Returns the number of mismatches; drained[]
 * collects everything returned.
 */
static unsigned long drain(enum kind k, char *base, size_t n,
			   unsigned char *drained, unsigned long *calls)
{
	unsigned char *ref = malloc(n), *got = malloc(n), *want = malloc(n),
		      *after = malloc(n);
	unsigned long bad = 0;
	size_t cur = 0, i;

	memset(drained, 0, n);
	while (cur < n) {
		size_t m = n - cur, cap, cnt;
		long d;
		int ret;

		ret = oracle(base + cur * ps, m, ref);
		cap = k == K_RUNS ? 1 + mw_rnd(&rng) % 6 : 1 + mw_rnd(&rng) % 80;
		cnt = cap;
		ret = ret ? ret : get_kind(k, base + cur * ps, m, MEMWATCH_GET_RESET,
					   &cnt, got);
		(*calls)++;
		prefix(k, ref, m, cap, want);
		d = differs(got, want, m);
		if (ret || d >= 0) {
			if (bad++ < 3)
				tap_diag("  %s, capacity %zu at page %zu: ret %d, first difference at page %ld (got %d)",
					 kname[k], cap, cur, ret, d + (long)cur,
					 d >= 0 ? got[d] : -1);
			break;
		}
		ret = oracle(base + cur * ps, m, after);
		for (i = 0; i < m; i++)
			want[i] = ref[i] && !got[i];
		d = differs(after, want, m);
		if (ret || d >= 0) {
			if (bad++ < 3)
				tap_diag("  %s, capacity %zu at page %zu: not re-armed exactly as returned (page %ld)",
					 kname[k], cap, cur, d + (long)cur);
			break;
		}
		if (!cnt)
			break;
		for (i = 0; i < m; i++)
			drained[cur + i] |= got[i];
		for (i = m; i > 0 && !got[i - 1]; i--)
			;
		cur += i;	/* resume after the last page returned */
	}
	free(ref);
	free(got);
	free(want);
	free(after);
	return bad;
}

/* Writers racing harvests made of small resumed calls (writers.h). */
#define TPAGES 256

static void race(void)
{
	unsigned long calls = 0, reported = 0;
	unsigned char got[TPAGES];
	char *base = mw_test_region(TPAGES);
	struct writers w;
	int ret = 0;

	if (memwatch_add(mw, base, TPAGES * ps, MEMWATCH_ADD_NOHUGEPAGE)) {
		tap_ok(0, "watch %d pages for the writers", TPAGES);
		return;
	}
	writers_start(&w, base, ps, TPAGES);
	for (;;) {
		enum kind k = w.harvests % 2 ? K_BITMAP : K_RUNS;
		bool rep[TPAGES] = { false };
		bool last = writers_before(&w);
		size_t cur = 0, i, j;

		while (cur < TPAGES) {
			size_t cnt = k == K_RUNS ? 1 + mw_rnd(&rng) % 4 : 1 + mw_rnd(&rng) % 32;

			ret = get_kind(k, base + cur * ps, TPAGES - cur,
				       MEMWATCH_GET_RESET, &cnt, got);
			calls++;
			if (ret || !cnt)
				break;
			for (i = TPAGES - cur; i > 0 && !got[i - 1]; i--)
				;
			reported += count_set(got, i);
			for (j = 0; j < i; j++)
				rep[cur + j] = got[j];
			cur += i;	/* resume after the last page returned */
		}
		if (ret) {
			tap_diag("get (%s): %s", kname[k], strerror(-ret));
			break;
		}
		writers_after(&w, rep);
		if (last)
			break;
		if (w.harvests % 4 == 0)
			usleep(1000);
	}
	tap_diag("%d writers, %lu writes, %lu harvests (%lu calls), %lu pages reported, %lu lost, %lu false",
		 w.n, atomic_load(&w.total), w.harvests, calls, reported, w.lost, w.falsepos);
	tap_ok(ret == 0 && w.harvests - 1 >= WRITERS_MIN_HARVESTS &&
	       atomic_load(&w.total) > 200,
	       "regions and bitmap, resumed in small steps, harvested %lu times while writers ran",
	       w.harvests - 1);
	CHECK_EQ(w.falsepos, 0, "racing writers: every reported page had a write since the previous harvest");
	if (be == MEMWATCH_BACKEND_SOFT_DIRTY)
		tap_ok(1, "soft-dirty deviation (documented): %lu writes racing a reset lost", w.lost);
	else
		CHECK_EQ(w.lost, 0, "racing writers: no write lost");
	memwatch_remove(mw, base, TPAGES * ps);
	writers_free(&w);
}

int main(int argc, char **argv)
{
	const size_t N = 1024;
	unsigned char *wrote = malloc(N), *ref = malloc(N), *got = malloc(N),
		      *want = malloc(N);
	unsigned long bad[4] = { 0 }, kbad[3] = { 0 }, kcalls[3] = { 0 };
	struct memwatch_region runs[8];
	uint64_t bm[4];
	size_t cnt, i;
	char *a;
	int ret, trial;

	tap_guest_only();
	be = mw_test_backend(argc, argv);
	tap_plan(be == MEMWATCH_BACKEND_UFFD ? 31 : 28);
	ps = (size_t)sysconf(_SC_PAGESIZE);
	rng = (uint64_t)time(NULL) * 2654435761u + 1;
	tap_diag("seed %llu", (unsigned long long)rng);

	a = mw_test_region(N);
	ret = memwatch_open(&mw, be, MEMWATCH_OPEN_NO_ENV);
	if (ret == 0)
		ret = memwatch_add(mw, a, N * ps, MEMWATCH_ADD_NOHUGEPAGE);
	if (!tap_ok(ret == 0, "open %s and watch %zu pages", argv[1], N))
		return 1;

	/* Arguments, as memwatch_get() checks them. */
	cnt = 8;
	CHECK_EQ(memwatch_get_regions(mw, a, ps, 0x2, runs, &cnt), -EINVAL,
		 "regions: an unknown flag is -EINVAL");
	cnt = 8;
	CHECK_EQ(memwatch_get_bitmap(mw, a, ps, 0x80000000u, bm, &cnt), -EINVAL,
		 "bitmap: an unknown flag is -EINVAL");
	cnt = 8;
	tap_ok(memwatch_get_regions(mw, a, ps, 0, NULL, &cnt) == -EFAULT &&
	       memwatch_get_regions(mw, a, ps, 0, runs, NULL) == -EFAULT &&
	       memwatch_get_regions(NULL, a, ps, 0, runs, &cnt) == -EFAULT,
	       "regions: NULL array with a capacity, NULL count, NULL context: -EFAULT");
	tap_ok(memwatch_get_bitmap(mw, a, ps, 0, NULL, &cnt) == -EFAULT &&
	       memwatch_get_bitmap(mw, a, ps, 0, bm, NULL) == -EFAULT,
	       "bitmap: NULL bitmap, NULL count: -EFAULT");
	cnt = 8;
	tap_ok(memwatch_get_regions(mw, a, 0, 0, runs, &cnt) == -EINVAL &&
	       memwatch_get_bitmap(mw, a, 0, 0, bm, &cnt) == -EINVAL,
	       "zero length: -EINVAL for both");
	tap_ok(memwatch_get_regions(mw, a + 1, ps, 0, runs, &cnt) == -EINVAL &&
	       memwatch_get_bitmap(mw, a + 1, ps, 0, bm, &cnt) == -EINVAL,
	       "unaligned address: -EINVAL for both");
	tap_ok(memwatch_get_regions(mw, a, (N + 1) * ps, 0, runs, &cnt) == -ENOENT &&
	       memwatch_get_bitmap(mw, a - ps, 2 * ps, 0, bm, &cnt) == -ENOENT &&
	       cnt == 8,
	       "a range not inside one watched range: -ENOENT for both; bad arguments leave *count alone");
	cnt = 0;
	tap_ok(memwatch_get_regions(mw, a, ps, 0, NULL, &cnt) == 0 && cnt == 0,
	       "regions: capacity 0 with a NULL array is valid, returns none");

	/* Capacity 0 takes nothing and re-arms nothing. */
	a[2 * ps] = 1;
	cnt = 0;
	ret = memwatch_get_regions(mw, a, 8 * ps, MEMWATCH_GET_RESET, runs, &cnt);
	oracle(a, 8, ref);
	tap_ok(ret == 0 && cnt == 0 && ref[2] && count_set(ref, 8) == 1,
	       "regions, capacity 0 with reset: none returned, page 2 still written");
	cnt = 0;
	bm[0] = ~0ULL;
	ret = memwatch_get_bitmap(mw, a, 8 * ps, MEMWATCH_GET_RESET, bm, &cnt);
	oracle(a, 8, ref);
	tap_ok(ret == 0 && cnt == 0 && bm[0] == 0 && ref[2] && count_set(ref, 8) == 1,
	       "bitmap, limit 0 with reset: all bits clear, page 2 still written");

	/* The example of memwatch_get_regions(3). */
	memwatch_reset(mw, a, N * ps);
	a[3 * ps] = a[4 * ps] = a[5 * ps] = a[9 * ps] = a[15 * ps] = 1;
	cnt = 8;
	ret = memwatch_get_regions(mw, a, 16 * ps, 0, runs, &cnt);
	tap_ok(ret == 0 && cnt == 3 &&
	       runs[0].start == (uintptr_t)a + 3 * ps && runs[0].end == (uintptr_t)a + 6 * ps &&
	       runs[1].start == (uintptr_t)a + 9 * ps && runs[1].end == (uintptr_t)a + 10 * ps &&
	       runs[2].start == (uintptr_t)a + 15 * ps && runs[2].end == (uintptr_t)a + 16 * ps,
	       "pages 3-5, 9, 15 written: runs [3,6) [9,10) [15,16) (got %zu)", cnt);
	cnt = SIZE_MAX;
	ret = memwatch_get_bitmap(mw, a, 16 * ps, MEMWATCH_GET_RESET, bm, &cnt);
	tap_ok(ret == 0 && cnt == 5 && bm[0] == 0x8238,
	       "the bitmap, with reset: 0x8238, 5 bits (got 0x%llx, %zu)",
	       (unsigned long long)bm[0], cnt);

	/* Bitmap word edges: 65 pages (two words), one page. */
	memwatch_reset(mw, a, N * ps);
	a[0] = a[63 * ps] = a[64 * ps] = a[65 * ps] = 1;
	cnt = SIZE_MAX;
	bm[0] = bm[1] = bm[2] = 0x5555;
	ret = memwatch_get_bitmap(mw, a, 65 * ps, 0, bm, &cnt);
	tap_ok(ret == 0 && cnt == 3 && bm[0] == (1ULL | 1ULL << 63) && bm[1] == 1 &&
	       bm[2] == 0x5555,
	       "65 pages: bits 0, 63, 64, nothing past page 64, the third word untouched");
	cnt = SIZE_MAX;
	bm[0] = bm[1] = 0x5555;
	ret = memwatch_get_bitmap(mw, a + 64 * ps, ps, 0, bm, &cnt);
	tap_ok(ret == 0 && cnt == 1 && bm[0] == 1 && bm[1] == 0x5555,
	       "one page at page 64: bit 0 only, one word written");
	memwatch_reset(mw, a, N * ps);

	/* Random patterns: the three outputs of one state, and sub-ranges. */
	for (trial = 0; trial < 30; trial++) {
		size_t x = mw_rnd(&rng) % N, y = x + 1 + mw_rnd(&rng) % (N - x);
		long d;

		write_pattern(a, N, wrote);
		oracle(a, N, ref);
		if ((d = differs(ref, wrote, N)) >= 0 && bad[0]++ < 3)
			tap_diag("  trial %d: the addresses differ from the writes at page %ld",
				 trial, d);
		cnt = N;
		ret = get_kind(K_RUNS, a, N, 0, &cnt, got);
		if ((ret || (d = differs(got, ref, N)) >= 0) && bad[1]++ < 3)
			tap_diag("  trial %d: regions differ at page %ld (ret %d)", trial, d, ret);
		cnt = SIZE_MAX;
		ret = get_kind(K_BITMAP, a, N, 0, &cnt, got);
		if ((ret || (d = differs(got, ref, N)) >= 0) && bad[2]++ < 3)
			tap_diag("  trial %d: bitmap differs at page %ld (ret %d)", trial, d, ret);
		/* [x, y): only what is inside, bit 0 is page x. */
		oracle(a + x * ps, y - x, ref);
		for (i = 0; i < 2; i++) {
			cnt = i ? SIZE_MAX : N;
			ret = get_kind(i ? K_BITMAP : K_RUNS, a + x * ps, y - x, 0, &cnt, got);
			if ((ret || differs(got, ref, y - x) >= 0 ||
			     differs(ref, wrote + x, y - x) >= 0) && bad[3]++ < 3)
				tap_diag("  trial %d: %s of pages [%zu, %zu) differ", trial,
					 i ? "bitmap" : "regions", x, y);
		}
		/* Drain with small capacities, each kind in turn. */
		kbad[trial % 3] += drain((enum kind)(trial % 3), a, N, got, &kcalls[trial % 3]);
		if (differs(got, wrote, N) >= 0 && kbad[trial % 3]++ < 3)
			tap_diag("  trial %d: drained %s differ from the writes", trial,
				 kname[trial % 3]);
		oracle(a, N, ref);
		if (count_set(ref, N) && kbad[trial % 3]++ < 3)
			tap_diag("  trial %d: %zu pages still written after draining",
				 trial, count_set(ref, N));
	}
	CHECK_EQ(bad[0], 0, "30 random patterns: the address array is exactly the pages written");
	CHECK_EQ(bad[1], 0, "the regions are the same pages, in maximal runs");
	CHECK_EQ(bad[2], 0, "the bitmap is the same pages");
	CHECK_EQ(bad[3], 0, "random sub-ranges: regions and bitmap give the oracle's pages inside them");
	for (i = 0; i < 3; i++)
		CHECK_EQ(kbad[i], 0,
			 "get+reset by %s with small capacities, resumed until drained (%lu calls): each call the oracle's first N entries, re-armed exactly, all the writes",
			 kname[i], kcalls[i]);
	CHECK_EQ(fmt_bad, 0, "every output well formed (ascending, maximal runs, bits inside)");
	memwatch_remove(mw, a, N * ps);

	/* A THP cut by the queries (the guest runs THP=madvise). */
	{
		size_t huge = 2UL << 20, hp = huge / ps;
		char *raw = mmap(NULL, 3 * huge, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		char *h = (char *)(((uintptr_t)raw + 2 * huge - 1) & ~(uintptr_t)(huge - 1));
		unsigned long tb = 0, tk = 0, calls = 0;
		unsigned char *w2 = malloc(hp), *r2 = malloc(hp), *g2 = malloc(hp);

		mprotect(raw, (size_t)(h - raw), PROT_NONE);
		mprotect(h + huge, (size_t)(raw + 3 * huge - h - huge), PROT_NONE);
		madvise(h, huge, MADV_HUGEPAGE);
		memset(h, 1, huge);
		ret = memwatch_add(mw, h, huge, 0);
		for (trial = 0; !ret && trial < 12; trial++) {
			size_t x = mw_rnd(&rng) % hp, y = x + 1 + mw_rnd(&rng) % (hp - x);

			write_pattern(h, hp, w2);
			tb += outputs_differ(h + x * ps, y - x, r2, g2);
			tk += drain((enum kind)(trial % 3), h + x * ps, y - x, g2, &calls);
			memwatch_reset(mw, h, huge);
		}
		tap_ok(ret == 0 && tb == 0,
		       "a 2 MiB THP cut by random sub-ranges: regions and bitmap equal the oracle");
		tap_ok(ret == 0 && tk == 0,
		       "and get+reset resumed in small steps inside the cut (%lu calls) matches it",
		       calls);
		memwatch_remove(mw, h, huge);
		munmap(raw, 3 * huge);
		free(w2);
		free(r2);
		free(g2);
	}

	/* hugetlb (uffd only, as in ww_contract): re-armed only whole. */
	if (be == MEMWATCH_BACKEND_UFFD) {
		size_t np = 1024, k;
		unsigned char *post[3], *rep[3];
		unsigned long hb = 0;
		char *t = mmap(NULL, np * ps, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);

		ret = t == MAP_FAILED ? -ENOMEM : memwatch_add(mw, t, np * ps, 0);
		for (trial = 0; !ret && trial < 6; trial++) {
			size_t x = mw_rnd(&rng) % np, y = x + 1 + mw_rnd(&rng) % (np - x);

			t[(mw_rnd(&rng) % np) * ps] = 1;
			if (trial & 1)
				t[(mw_rnd(&rng) % np) * ps] = 1;
			hb += outputs_differ(t + x * ps, y - x, ref, got);
			memwatch_reset(mw, t, np * ps);
		}
		tap_ok(ret == 0 && hb == 0,
		       "hugetlb, random sub-ranges cutting huge pages: regions and bitmap equal the oracle");
		/*
		 * The same writes, then get+reset from page 1 (huge page 0
		 * only partly inside: never re-armed) by each kind: the same
		 * pages returned and the same left written.
		 */
		for (k = 0; k < 3; k++) {
			rep[k] = malloc(np);
			post[k] = malloc(np);
			memwatch_reset(mw, t, np * ps);
			t[5 * ps] = t[700 * ps] = 2;
			cnt = k == K_BITMAP ? SIZE_MAX : np;
			memset(rep[k], 0, np);
			ret |= get_kind((enum kind)k, t + ps, np - 1, MEMWATCH_GET_RESET,
					&cnt, rep[k] + 1);
			ret |= oracle(t, np, post[k]);
		}
		tap_ok(ret == 0 && count_set(rep[0], np) == 1023 &&
		       differs(rep[0], rep[1], np) < 0 && differs(rep[0], rep[2], np) < 0 &&
		       count_set(post[0], np) == 512 && post[0][0] && post[0][511] &&
		       differs(post[0], post[1], np) < 0 && differs(post[0], post[2], np) < 0,
		       "get+reset from page 1 by each kind: the same 1023 pages, the same 512 left written");
		for (k = 0; k < 3; k++) {
			free(rep[k]);
			free(post[k]);
		}
		memwatch_remove(mw, t, np * ps);
		/*
		 * A run across the edge of a hugetlb VMA and small pages after
		 * it, in an array of one run: the whole run, re-armed.
		 */
		munmap(t + 512 * ps, 512 * ps);
		if (mmap(t + 512 * ps, 16 * ps, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
			tap_diag("mmap after the hugetlb page: %s", strerror(errno));
		ret = memwatch_add(mw, t, 528 * ps, 0);
		t[ps] = t[512 * ps] = t[513 * ps] = 3;
		cnt = 1;
		ret = ret ? ret : memwatch_get_regions(mw, t, 528 * ps, MEMWATCH_GET_RESET,
						       runs, &cnt);
		oracle(t, 528, ref);
		tap_ok(ret == 0 && cnt == 1 && runs[0].start == (uintptr_t)t &&
		       runs[0].end == (uintptr_t)t + 514 * ps && count_set(ref, 528) == 0,
		       "a run over a hugetlb page and 2 small pages after it, array of one: [0, 514), all re-armed (got %zu, end page %ld, %zu left)",
		       cnt, cnt ? (long)((runs[0].end - (uintptr_t)t) / ps) : -1L,
		       count_set(ref, 528));
		memwatch_remove(mw, t, 528 * ps);
		munmap(t, 528 * ps);
	}

	race();
	memwatch_close(mw);
	free(wrote);
	free(ref);
	free(got);
	free(want);
	return tap_done();
}
