// SPDX-License-Identifier: MIT
/*
 * The Windows write-watch contract, against one backend:
 *   ./ww_contract uffd|soft-dirty|mprotect [available|unavailable]
 * Every rule is checked with its exact answer.  Where a fallback backend
 * cannot meet a rule, the test asserts the documented deviation instead
 * (memwatch(7), "Backends").  The second argument says whether this kernel
 * must offer the backend (expect.h): the test never adapts silently.
 */
#include "mw-test.h"
#include "expect.h"

#include <sys/mman.h>

#include "memwatch.h"

static struct memwatch *mw;
static enum memwatch_backend be;
static size_t ps;

static void touch(char *base, const char *list)
{
	char *end;

	while (*list) {
		long i = strtol(list, &end, 10);

		base[i * ps] = (char)(i + 1);
		list = *end ? end + 1 : end;
	}
}

/* Written pages of [first, first + n) as "i,j,k" (indices from base). */
static int getlist(char *base, size_t first, size_t n, unsigned int flags,
		   size_t cap, char *out, size_t outlen)
{
	void *pages[64];
	size_t count = cap, i;
	int ret;

	ret = memwatch_get(mw, base + first * ps, n * ps, flags, pages, &count);
	out[0] = '\0';
	if (ret)
		return ret;
	for (i = 0; i < count; i++) {
		size_t l = strlen(out);

		snprintf(out + l, outlen - l, "%s%ld", i ? "," : "",
			 (long)(((char *)pages[i] - base) / (long)ps));
	}
	return (int)count;
}

/* kB of AnonHugePages in the VMA of /proc/self/smaps that contains addr. */
static long thp_kb(const void *addr)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	unsigned long lo, hi;
	long kb = -1;
	bool in = false;
	char line[512];

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') &&
		    line[strlen(line) - 1] == '\n' && !strstr(line, "kB"))
			in = lo <= (uintptr_t)addr && (uintptr_t)addr < hi;
		else if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	if (f)
		fclose(f);
	return kb;
}

/* A 2 MiB-aligned, MADV_HUGEPAGE anonymous range of 2 MiB. */
static char *thp_region(void)
{
	size_t huge = 2UL << 20;
	char *raw = mmap(NULL, 3 * huge, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *h = (char *)(((uintptr_t)raw + 2 * huge - 1) & ~(uintptr_t)(huge - 1));

	if (raw == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	/* PROT_NONE on both sides: no merge with anything mapped later. */
	mprotect(raw, (size_t)(h - raw), PROT_NONE);
	mprotect(h + huge, (size_t)(raw + 3 * huge - h - huge), PROT_NONE);
	madvise(h, huge, MADV_HUGEPAGE);
	return h;
}

/* Written pages of [base, base + n pages) into a caller-sized array. */
static int getmany(char *base, size_t n, unsigned int flags, void **out,
		   size_t cap, size_t *count)
{
	*count = cap;
	return memwatch_get(mw, base, n * ps, flags, out, count);
}

/* How many of bp[0..cnt) are not base + k pages, in order. */
static size_t misplaced(void **bp, size_t cnt, char *base)
{
	size_t k, bad = 0;

	for (k = 0; k < cnt; k++)
		bad += bp[k] != base + k * ps;
	return bad;
}

static void expect(const char *desc, char *base, size_t first, size_t n,
		   unsigned int flags, size_t cap, const char *want)
{
	char got[512];
	int ret = getlist(base, first, n, flags, cap, got, sizeof(got));

	if (!tap_ok(ret >= 0 && !strcmp(got, want), "%s: [%s]", desc, want))
		tap_diag("  got [%s] (ret %d)", got, ret);
}

int main(int argc, char **argv)
{
	char *a, *b, *c, *d, got[512];
	void *pages[16];
	size_t cnt;
	uintptr_t ucnt;
	uint32_t gran;
	int ret, pfd[2];
	ssize_t n;
	bool sd, mp;

	tap_guest_only();
	be = mw_test_backend(argc, argv);
	ps = (size_t)sysconf(_SC_PAGESIZE);
	sd = be == MEMWATCH_BACKEND_SOFT_DIRTY;
	mp = be == MEMWATCH_BACKEND_MPROTECT;

	tap_plan(be == MEMWATCH_BACKEND_UFFD ? 98 : 75);
	{
		struct memwatch *m2 = NULL;

		CHECK_EQ(memwatch_open(&m2, be, MEMWATCH_OPEN_NO_ENV | 0x100), -EINVAL,
			 "open with an unknown flag: -EINVAL (EOPNOTSUPP means no backend)");
		memwatch_close(m2);
	}
	ret = memwatch_open(&mw, be, MEMWATCH_OPEN_NO_ENV);
	if (!tap_ok(ret == 0 && memwatch_get_backend(mw) == be,
		    "open the %s backend", argv[1]))
		return 1;

	/* Basic rules on a fresh, never-touched range. */
	a = mw_test_region(16);
	CHECK_EQ(memwatch_add(mw, a, 16 * ps, 0), 0, "add 16 untouched pages");
	expect("fresh range: nothing written", a, 0, 16, 0, 64, "");
	touch(a, "9,0,4,3");
	expect("written pages, page-aligned, ascending", a, 0, 16, 0, 64, "0,3,4,9");
	expect("a get without reset changes nothing", a, 0, 16, 0, 64, "0,3,4,9");
	expect("get with reset returns them", a, 0, 16, MEMWATCH_GET_RESET, 64, "0,3,4,9");
	expect("then nothing is left", a, 0, 16, 0, 64, "");
	touch(a, "0");
	expect("a re-armed page traps again", a, 0, 16, MEMWATCH_GET_RESET, 64, "0");

	/* Sub-ranges. */
	touch(a, "1,5,12");
	expect("sub-range query returns only pages inside it", a, 4, 6, 0, 64, "5");
	CHECK_EQ(memwatch_reset(mw, a, 4 * ps), 0, "reset of pages [0,4)");
	expect("reset of a sub-range leaves the rest alone", a, 0, 16, 0, 64, "5,12");
	expect("sub-range get+reset", a, 4, 2, MEMWATCH_GET_RESET, 64, "5");
	expect("only that sub-range was re-armed", a, 0, 16, 0, 64, "12");
	CHECK_EQ(memwatch_reset(mw, a, 16 * ps), 0, "reset everything");
	expect("clean after reset", a, 0, 16, 0, 64, "");

	/* The N-entry contract. */
	touch(a, "2,4,6,8,10");
	ret = getlist(a, 0, 16, MEMWATCH_GET_RESET, 3, got, sizeof(got));
	tap_ok(ret == 3 && !strcmp(got, "2,4,6"),
	       "array of 3: the first 3 written pages, success");
	expect("reset stopped after the last page returned", a, 0, 16, 0, 64, "8,10");
	touch(a, "2");
	expect("pages re-armed by the short get trap again", a, 0, 16, MEMWATCH_GET_RESET, 64, "2,8,10");
	cnt = 0;
	CHECK_EQ(memwatch_get(mw, a, 16 * ps, MEMWATCH_GET_RESET, NULL, &cnt), 0,
		 "array of 0: success");
	CHECK_EQ(cnt, 0, "array of 0: nothing returned");

	/* A range populated before it is watched starts clean. */
	b = mw_test_region(8);
	memset(b, 0x5a, 8 * ps);
	CHECK_EQ(memwatch_add(mw, b, 8 * ps, 0), 0, "add 8 populated pages");
	expect("populated range starts clean", b, 0, 8, 0, 64, "");
	touch(b, "7");
	expect("write to a populated page", b, 0, 8, MEMWATCH_GET_RESET, 64, "7");
	expect("adding b left a alone", a, 0, 16, 0, 64, "");

	/* Kernel writes: read(2) into a watched buffer. */
	if (pipe(pfd) || write(pfd[1], "hello", 5) != 5)
		return 1;
	n = read(pfd[0], a + 6 * ps, 5);
	if (mp) {
		tap_ok(n == -1 && errno == EFAULT,
		       "mprotect deviation: read(2) into a watched page is EFAULT");
		expect("the failed kernel write recorded nothing", a, 0, 16, 0, 64, "");
		CHECK_EQ(memwatch_prepare_write(mw, a + 6 * ps, ps), 0,
			 "memwatch_prepare_write() the buffer");
		n = read(pfd[0], a + 6 * ps, 5);
	} else {
		tap_ok(1, "read(2) into a watched page: no EFAULT");
		CHECK_EQ(memwatch_prepare_write(mw, a + 6 * ps, ps), 0,
			 "memwatch_prepare_write() is a no-op here");
		expect("the kernel's write counts", a, 0, 16, 0, 64, "6");
		memwatch_reset(mw, a, 16 * ps);
		if (write(pfd[1], "hello", 5) != 5)
			return 1;
		n = read(pfd[0], a + 6 * ps, 5);
	}
	CHECK_EQ(n, 5, "read(2) into the watched buffer succeeds");
	expect("the kernel's write counts", a, 0, 16, MEMWATCH_GET_RESET, 64, "6");

	/* mprotect RO -> RW by the caller neither sets nor clears watches. */
	touch(b, "3");
	mprotect(b, 8 * ps, PROT_READ);
	mprotect(b, 8 * ps, PROT_READ | PROT_WRITE);
	expect("mprotect RO->RW does not clear a written page", b, 0, 8, 0, 64, "3");
	touch(b, "5");
	if (mp)
		expect("mprotect deviation: writes after the caller's own mprotect RW are missed",
		       b, 0, 8, 0, 64, "3");
	else
		expect("mprotect RO->RW: later writes still tracked, nothing added",
		       b, 0, 8, 0, 64, "3,5");
	memwatch_reset(mw, b, 8 * ps);
	if (mp)		/* undo the damage: re-protect what the caller opened */
		memwatch_prepare_write(mw, b, 8 * ps), memwatch_reset(mw, b, 8 * ps);
	mprotect(b + 2 * ps, ps, PROT_READ);
	mprotect(b + 2 * ps, ps, PROT_READ | PROT_WRITE);
	if (mp)
		memwatch_prepare_write(mw, b + 2 * ps, ps), memwatch_reset(mw, b, 8 * ps);
	expect("VMA split + merge by mprotect sets nothing", b, 0, 8, 0, 64, "");

	/* A new mapping merging with the watched one. */
	/*
	 * Pages 0-3 watched; page 4 is replaced by a new mapping.  The guard
	 * after page 4 keeps the new mapping from merging with whatever
	 * happens to be mapped next (it would then not merge with ours).
	 */
	c = mw_test_region(5);
	CHECK_EQ(memwatch_add(mw, c, 4 * ps, 0), 0, "add 4 pages");
	munmap(c + 4 * ps, ps);
	d = mmap(c + 4 * ps, ps, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	tap_ok(d == c + 4 * ps, "map a page right after it (the VMAs merge)");
	if (sd)
		expect("soft-dirty deviation: the merge makes every page look written (VM_SOFTDIRTY)",
		       c, 0, 4, 0, 64, "0,1,2,3");
	else
		expect("a VMA merge sets nothing", c, 0, 4, 0, 64, "");
	memwatch_reset(mw, c, 4 * ps);
	expect("a reset clears the merge's false positives", c, 0, 4, 0, 64, "");

	/* Watched pages that go to swap keep their state. */
	touch(b, "1");
	memwatch_reset(mw, b, 8 * ps);
	touch(b, "4");
	ret = madvise(b, 8 * ps, MADV_PAGEOUT);
	CHECK_EQ(ret, 0, "MADV_PAGEOUT the watched range");
	expect("swapped-out pages keep their state", b, 0, 8, 0, 64, "4");
	touch(b, "6");
	expect("writes after swap-in count", b, 0, 8, MEMWATCH_GET_RESET, 64, "4,6");

	/* Distinct errors for bad arguments. */
	cnt = 16;
	CHECK_EQ(memwatch_get(mw, a, 0, 0, pages, &cnt), -EINVAL, "zero size: -EINVAL");
	CHECK_EQ(memwatch_get(mw, a + 1, ps, 0, pages, &cnt), -EINVAL, "unaligned address: -EINVAL");
	CHECK_EQ(memwatch_get(mw, a, 17 * ps, 0, pages, &cnt), -ENOENT,
		 "range not fully watched: -ENOENT");
	CHECK_EQ(memwatch_get(mw, a, ps, 0, pages, NULL), -EFAULT, "NULL count: -EFAULT");
	CHECK_EQ(memwatch_get(mw, a, ps, 0, NULL, &cnt), -EFAULT, "NULL pages: -EFAULT");
	CHECK_EQ(memwatch_get(mw, a, ps, 0x10, pages, &cnt), -EINVAL,
		 "get with an unknown flag: -EINVAL");
	CHECK_EQ(memwatch_add(mw, a + 100 * ps, ps, 0x10), -EINVAL,
		 "add with an unknown flag: -EINVAL");
	tap_ok(memwatch_add(mw, a + 8 * ps, 16 * ps, 0) == -EEXIST &&
	       memwatch_remove(mw, a, 8 * ps) == -ENOENT &&
	       memwatch_reset(mw, a - ps, ps) == -ENOENT,
	       "overlapping add -EEXIST, partial remove -ENOENT, reset outside -ENOENT");
	d = mmap(NULL, 2 * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(d, 2 * ps);
	CHECK_EQ(memwatch_add(mw, d, 2 * ps, 0), -ENOMEM, "add of unmapped memory: -ENOMEM");

	/* The GetWriteWatch()/ResetWriteWatch() shape. */
	touch(a, "1,2");
	ucnt = 16;
	ret = (int)memwatch_GetWriteWatch(mw, MEMWATCH_WRITE_WATCH_FLAG_RESET,
					  a + 100, 16 * ps - 100, pages, &ucnt, &gran);
	tap_ok(ret == 0 && ucnt == 2 && gran == ps && pages[0] == a + ps &&
	       pages[1] == a + 2 * ps,
	       "GetWriteWatch(RESET) on an unaligned base: 2 pages, granularity %zu", ps);
	touch(a, "3");
	CHECK_EQ(memwatch_ResetWriteWatch(mw, a, 16 * ps), 0, "ResetWriteWatch");
	ucnt = 16;
	tap_ok(memwatch_GetWriteWatch(mw, 0, a, 16 * ps, pages, &ucnt, &gran) == 0 &&
	       ucnt == 0, "nothing after ResetWriteWatch");
	tap_ok(memwatch_GetWriteWatch(mw, 2, a, ps, pages, &ucnt, &gran) == EINVAL &&
	       memwatch_GetWriteWatch(mw, 0, a, 0, pages, &ucnt, &gran) == EINVAL,
	       "GetWriteWatch errors: bad flags EINVAL, zero size EINVAL");

	/* Remove and re-add. */
	touch(a, "5");
	CHECK_EQ(memwatch_remove(mw, a, 16 * ps), 0, "remove the range");
	touch(a, "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15");
	tap_ok(1, "writes to an unwatched range just work");
	CHECK_EQ(memwatch_add(mw, a, 16 * ps, 0), 0, "re-add it");
	expect("a re-added range starts clean", a, 0, 16, 0, 64, "");

	/* More written regions than one PAGEMAP_SCAN buffer (256): resume at walk_end. */
	{
		size_t big = 1200, k, bad = 0;
		void **bp = calloc(big, sizeof(*bp));
		char *e = mw_test_region(big);

		CHECK_EQ(memwatch_add(mw, e, big * ps, 0), 0, "add 1200 pages");
		for (k = 0; k < big; k += 2)
			e[k * ps] = 1;
		ret = getmany(e, big, 0, bp, big, &cnt);
		for (k = 0; k < cnt; k++)
			bad += bp[k] != e + 2 * k * ps;
		tap_ok(ret == 0 && cnt == 600 && !bad,
		       "600 written pages in 600 regions: all, in order (got %zu, %zu wrong)",
		       cnt, bad);
		ret = getmany(e, big, MEMWATCH_GET_RESET, bp, 300, &cnt);
		tap_ok(ret == 0 && cnt == 300 && bp[0] == e && bp[299] == e + 598 * ps,
		       "array of 300 over 600 regions: the first 300 (got %zu)", cnt);
		ret = getmany(e, big, MEMWATCH_GET_RESET, bp, big, &cnt);
		for (k = 0, bad = 0; k < cnt; k++)
			bad += bp[k] != e + (600 + 2 * k) * ps;
		tap_ok(ret == 0 && cnt == 300 && !bad,
		       "the other 300 stayed armed-off and are reported next (got %zu, %zu wrong)",
		       cnt, bad);
		ret = getmany(e, big, 0, bp, big, &cnt);
		tap_ok(ret == 0 && cnt == 0, "then nothing is left (got %zu)", cnt);
		CHECK_EQ(memwatch_remove(mw, e, big * ps), 0, "remove the 1200 pages");
		free(bp);
	}

	/* Transparent huge pages (the guest runs THP=madvise). */
	{
		size_t np = 512, k, bad = 0;
		void **bp = calloc(np, sizeof(*bp));
		char *h = thp_region(), *u = thp_region();

		memset(h, 1, np * ps);
		CHECK_EQ(thp_kb(h), 2048, "a populated 2 MiB range is one THP");
		CHECK_EQ(memwatch_add(mw, h, np * ps, 0), 0, "watch the THP");
		ret = getmany(h, np, MEMWATCH_GET_RESET, bp, np, &cnt);
		tap_ok(ret == 0 && cnt == 0, "a watched THP starts clean (got %zu)", cnt);
		CHECK_EQ(memwatch_reset(mw, h + 4 * ps, ps), 0, "reset one page of it");
		CHECK_EQ(thp_kb(h), 2048, "get+reset and a 4 KiB reset of a clean THP do not split it");
		h[7 * ps] = 2;
		ret = getmany(h, np, MEMWATCH_GET_RESET, bp, np, &cnt);
		if (sd) {
			for (k = 0; k < cnt; k++)
				bad += bp[k] != h + k * ps;
			tap_ok(ret == 0 && cnt == np && !bad,
			       "soft-dirty deviation: a write to a THP reports its 512 pages (got %zu)",
			       cnt);
		} else {
			tap_ok(ret == 0 && cnt == 1 && bp[0] == h + 7 * ps,
			       "a write to a THP reports exactly the 4 KiB page written (got %zu)",
			       cnt);
		}
		ret = getmany(h, np, 0, bp, np, &cnt);
		tap_ok(ret == 0 && cnt == 0, "and the reset re-armed it (got %zu)", cnt);

		/* Never touched: a write must not bring in an unprotected THP. */
		CHECK_EQ(memwatch_add(mw, u, np * ps, 0), 0, "watch an untouched THP-eligible range");
		u[9 * ps] = 3;
		ret = getmany(u, np, 0, bp, np, &cnt);
		if (sd) {
			for (k = 0, bad = 0; k < cnt; k++)
				bad += bp[k] != u + k * ps;
			tap_ok(ret == 0 && cnt == np && !bad && thp_kb(u) == 2048,
			       "soft-dirty deviation: the write faulted in a THP, all 512 pages reported (got %zu, THP %ld kB)",
			       cnt, thp_kb(u));
		} else {
			tap_ok(ret == 0 && cnt == 1 && bp[0] == u + 9 * ps,
			       "first write to an untouched watched range: exactly its page (got %zu, THP %ld kB)",
			       cnt, thp_kb(u));
		}

		/* MEMWATCH_ADD_NOHUGEPAGE: 4 KiB granularity, soft-dirty too. */
		u = thp_region();
		CHECK_EQ(memwatch_add(mw, u, np * ps, MEMWATCH_ADD_NOHUGEPAGE), 0,
			 "watch an untouched range with MEMWATCH_ADD_NOHUGEPAGE");
		u[9 * ps] = 3;
		ret = getmany(u, np, 0, bp, np, &cnt);
		tap_ok(ret == 0 && cnt == 1 && bp[0] == u + 9 * ps && thp_kb(u) == 0,
		       "NOHUGEPAGE: a write reports exactly its page, no THP (got %zu, THP %ld kB)",
		       cnt, thp_kb(u));
		free(bp);
	}

	/*
	 * A range another userfaultfd already registers (a second context, or
	 * the program's own uffd) cannot be watched by this one: -EBUSY.
	 */
	if (be == MEMWATCH_BACKEND_UFFD) {
		struct memwatch *m2;

		ret = memwatch_open(&m2, be, MEMWATCH_OPEN_NO_ENV);
		CHECK_EQ(ret ? ret : memwatch_add(m2, a, 16 * ps, 0), -EBUSY,
			 "a second uffd context adding a watched range: -EBUSY");
		if (!ret)
			memwatch_close(m2);
	}

	/* hugetlb (uffd only: soft-dirty and mprotect cannot track it on 6.1). */
	if (be == MEMWATCH_BACKEND_UFFD) {
		size_t np = 1024, k, bad = 0;
		void **bp = calloc(np, sizeof(*bp));
		char *t = mmap(NULL, np * ps, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);

		tap_ok(t != MAP_FAILED, "map two 2 MiB hugetlb pages");
		memset(t, 1, np * ps);
		CHECK_EQ(memwatch_add(mw, t, np * ps, 0), 0, "watch them");
		ret = getmany(t, np, 0, bp, np, &cnt);
		tap_ok(ret == 0 && cnt == 0, "hugetlb: starts clean (got %zu)", cnt);
		t[600 * ps] = 2;
		ret = getmany(t, np, 0, bp, np, &cnt);
		for (k = 0; k < cnt; k++)
			bad += bp[k] != t + (512 + k) * ps;
		tap_ok(ret == 0 && cnt == 512 && !bad,
		       "a write reports its whole hugetlb page: 512 pages (got %zu)", cnt);
		ret = getmany(t, np, MEMWATCH_GET_RESET, bp, 100, &cnt);
		tap_ok(ret == 0 && cnt == 100 && bp[0] == t + 512 * ps && bp[99] == t + 611 * ps,
		       "array of 100 with reset: the first 100 pages of it (got %zu)", cnt);
		ret = getmany(t, np, 0, bp, np, &cnt);
		tap_ok(ret == 0 && cnt == 512,
		       "deviation: a hugetlb page re-arms only whole, so all 512 stay reported (got %zu)",
		       cnt);
		ret = getmany(t, np, MEMWATCH_GET_RESET, bp, np, &cnt);
		tap_ok(ret == 0 && cnt == 512, "get+reset with room for it: 512 (got %zu)", cnt);
		ret = getmany(t, np, 0, bp, np, &cnt);
		tap_ok(ret == 0 && cnt == 0, "and now it is re-armed (got %zu)", cnt);
		t[5 * ps] = 4;
		t[700 * ps] = 4;
		CHECK_EQ(memwatch_reset(mw, t + ps, (np - 1) * ps), 0,
			 "reset from page 1: hugetlb page 0 only partly inside");
		ret = getmany(t, np, 0, bp, np, &cnt);
		tap_ok(ret == 0 && cnt == 512 && bp[0] == t && bp[511] == t + 511 * ps,
		       "the partial one stays written, the whole one after it is reset (got %zu)",
		       cnt);
		t[700 * ps] = 5;
		ret = getmany(t + ps, np - 1, MEMWATCH_GET_RESET, bp, np, &cnt);
		tap_ok(ret == 0 && cnt == 1023 && bp[0] == t + ps && bp[1022] == t + 1023 * ps,
		       "get+reset from page 1: the partial page's 511 and all 512 of the next (got %zu)",
		       cnt);
		ret = getmany(t, np, 0, bp, np, &cnt);
		tap_ok(ret == 0 && cnt == 512 && bp[0] == t && bp[511] == t + 511 * ps,
		       "only the partial one was left written (got %zu)", cnt);
		/*
		 * max_pages smaller than a huge page with two written: the
		 * first 100 pages of the first one, nothing re-armed (6.12 left
		 * alone points walk_end at the last written huge page).
		 */
		CHECK_EQ(memwatch_reset(mw, t, np * ps), 0, "reset all");
		t[5 * ps] = 6;
		t[700 * ps] = 6;
		ret = getmany(t, np, MEMWATCH_GET_RESET, bp, 100, &cnt);
		bad = misplaced(bp, cnt, t);
		tap_ok(ret == 0 && cnt == 100 && !bad,
		       "two written, array of 100 with reset: pages 0-99 of the first (got %zu, %zu wrong)",
		       cnt, bad);
		ret = getmany(t, np, MEMWATCH_GET_RESET, bp, 600, &cnt);
		bad = misplaced(bp, cnt, t);
		tap_ok(ret == 0 && cnt == 600 && !bad,
		       "array of 600: the first huge page (re-armed) and 88 of the second (got %zu, %zu wrong)",
		       cnt, bad);
		ret = getmany(t, np, 0, bp, np, &cnt);
		tap_ok(ret == 0 && cnt == 512 && bp[0] == t + 512 * ps,
		       "only the second is still written (got %zu)", cnt);
		CHECK_EQ(memwatch_remove(mw, t, np * ps), 0, "remove the hugetlb range");

		/*
		 * One watched range over a hugetlb VMA and 4 KiB pages after
		 * it (6.12's UFFDIO_WRITEPROTECT refuses such a range in one
		 * call; the library protects it piece by piece): with less
		 * room than a huge page, the hugetlb pages come first and the
		 * small page after them is not reached.
		 */
		munmap(t + 512 * ps, 512 * ps);
		if (mmap(t + 512 * ps, 16 * ps, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
			tap_diag("mmap after the hugetlb page: %s", strerror(errno));
		CHECK_EQ(memwatch_add(mw, t, 528 * ps, 0), 0,
			 "watch a hugetlb page and 16 small pages after it");
		t[1 * ps] = 7;
		t[520 * ps] = 7;
		ret = getmany(t, 528, MEMWATCH_GET_RESET, bp, 50, &cnt);
		bad = misplaced(bp, cnt, t);
		tap_ok(ret == 0 && cnt == 50 && !bad,
		       "array of 50 with reset: pages 0-49 of the hugetlb page, in order (got %zu, %zu wrong)",
		       cnt, bad);
		ret = getmany(t, 528, MEMWATCH_GET_RESET, bp, np, &cnt);
		tap_ok(ret == 0 && cnt == 513 && bp[0] == t && bp[511] == t + 511 * ps &&
		       bp[512] == t + 520 * ps,
		       "then all: 512 + the small page (got %zu)", cnt);
		ret = getmany(t, 528, 0, bp, np, &cnt);
		tap_ok(ret == 0 && cnt == 0, "and all of it re-armed (got %zu)", cnt);
		CHECK_EQ(memwatch_remove(mw, t, 528 * ps), 0, "remove it");
		munmap(t, 528 * ps);
		free(bp);
	}

	memwatch_close(mw);
	touch(b, "0");
	tap_ok(1, "writes after memwatch_close() just work");
	return tap_done();
}
