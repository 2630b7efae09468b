// SPDX-License-Identifier: MIT
/*
 * The Windows write-watch contract, against one backend:
 *   ./ww_contract uffd|soft-dirty|mprotect
 * Every rule is checked with its exact answer.  Where a fallback backend
 * cannot meet a rule, the test asserts the documented deviation instead
 * (memwatch(7), "Backends").  When the uffd backend is requested on a kernel
 * whose probe says it is unavailable, the test asserts exactly that.
 */
#include "tap.h"

#include <sys/mman.h>

#include "memwatch.h"

static struct memwatch *mw;
static enum memwatch_backend be;
static size_t ps;

/* npages read-write pages between two PROT_NONE guards (no VMA merges). */
static char *region(size_t npages)
{
	char *p = mmap(NULL, (npages + 2) * ps, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	mprotect(p + ps, npages * ps, PROT_READ | PROT_WRITE);
	return p + ps;
}

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

static void expect(const char *desc, char *base, size_t first, size_t n,
		   unsigned int flags, size_t cap, const char *want)
{
	char got[512];
	int ret = getlist(base, first, n, flags, cap, got, sizeof(got));

	if (!tap_ok(ret >= 0 && !strcmp(got, want), "%s: [%s]", desc, want))
		tap_diag("  got [%s] (ret %d)", got, ret);
}

static int unavailable(void)
{
	struct memwatch_probe p;
	int ret = memwatch_open(&mw, be, MEMWATCH_OPEN_NO_ENV);

	memwatch_probe(&p);
	tap_plan(3);
	tap_diag("probe: backend %s, features 0x%llx, scan errno %d",
		 memwatch_backend_name(p.backend),
		 (unsigned long long)p.features, p.scan_errno);
	tap_ok(p.backend != MEMWATCH_BACKEND_UFFD,
	       "probe says the uffd backend is unavailable on this kernel");
	tap_ok(!(p.features & MEMWATCH_FEAT_UFFD_WP_ASYNC) ||
	       !(p.features & MEMWATCH_FEAT_PAGEMAP_SCAN),
	       "because WP_ASYNC or PAGEMAP_SCAN is missing");
	CHECK_EQ(ret, -EOPNOTSUPP, "memwatch_open(uffd) is -EOPNOTSUPP, precisely");
	return tap_done();
}

int main(int argc, char **argv)
{
	struct memwatch_probe probe;
	char *a, *b, *c, *d, got[512];
	void *pages[16];
	size_t cnt;
	uintptr_t ucnt;
	uint32_t gran;
	int ret, pfd[2];
	ssize_t n;
	bool sd, mp;

	tap_guest_only();
	if (argc != 2 || memwatch_backend_from_name(argv[1], &be) ||
	    be == MEMWATCH_BACKEND_AUTO) {
		fprintf(stderr, "usage: %s uffd|soft-dirty|mprotect\n", argv[0]);
		return 2;
	}
	ps = (size_t)sysconf(_SC_PAGESIZE);
	memwatch_probe(&probe);
	if (be == MEMWATCH_BACKEND_UFFD && probe.backend != MEMWATCH_BACKEND_UFFD)
		return unavailable();
	sd = be == MEMWATCH_BACKEND_SOFT_DIRTY;
	mp = be == MEMWATCH_BACKEND_MPROTECT;

	tap_plan(56);
	ret = memwatch_open(&mw, be, MEMWATCH_OPEN_NO_ENV);
	if (!tap_ok(ret == 0 && memwatch_get_backend(mw) == be,
		    "open the %s backend", argv[1]))
		return 1;

	/* Basic rules on a fresh, never-touched range. */
	a = region(16);
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
	b = region(8);
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
	c = region(4);
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
	CHECK_EQ(memwatch_get(mw, a, ps, 0x10, pages, &cnt), -EOPNOTSUPP,
		 "unknown flag: -EOPNOTSUPP");
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
	tap_ok(memwatch_GetWriteWatch(mw, 2, a, ps, pages, &ucnt, &gran) == EOPNOTSUPP &&
	       memwatch_GetWriteWatch(mw, 0, a, 0, pages, &ucnt, &gran) == EINVAL,
	       "GetWriteWatch errors: bad flags EOPNOTSUPP, zero size EINVAL");

	/* Remove and re-add. */
	touch(a, "5");
	CHECK_EQ(memwatch_remove(mw, a, 16 * ps), 0, "remove the range");
	touch(a, "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15");
	tap_ok(1, "writes to an unwatched range just work");
	CHECK_EQ(memwatch_add(mw, a, 16 * ps, 0), 0, "re-add it");
	expect("a re-added range starts clean", a, 0, 16, 0, 64, "");

	memwatch_close(mw);
	touch(b, "0");
	tap_ok(1, "writes after memwatch_close() just work");
	return tap_done();
}
