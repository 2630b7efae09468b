// SPDX-License-Identifier: MIT
/*
 * The scan API: exact regions for a known layout in this process and in a
 * child (by pid and by pidfd), resumption across more regions than one
 * buffer holds, max_pages, the pid-reuse guard, fork safety of a "self"
 * scan, the permission error, and (when the kernel has PAGEMAP_SCAN) the
 * ioctl path checked page for page against the pagemap-read path.
 *   ./scan ioctl|pread
 * The argument is the path this kernel must give: "ioctl" on a kernel with
 * PAGEMAP_SCAN (the test fails if the probe does not find it), "pread" on
 * one without (it fails if the ioctl answers).
 */
#include "mw-test.h"

#include <linux/userfaultfd.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "memwatch.h"

#define P	MEMWATCH_PAGE_PRESENT
#define S	MEMWATCH_PAGE_SWAPPED
#define F	MEMWATCH_PAGE_FILE
#define Z	MEMWATCH_PAGE_PFNZERO
#define W	MEMWATCH_PAGE_WRITTEN
#define SD	MEMWATCH_PAGE_SOFT_DIRTY
#define CHILD_AT 0x200000000000ULL

static size_t ps;

/* Regions of q as "s-e:cats s-e:cats" with page indices from base. */
static int regions(struct memwatch_scan *s, const struct memwatch_scan_query *q,
		   uint64_t base, char *out, size_t len, size_t *nreg)
{
	struct memwatch_region r;
	size_t n = 0;
	int ret;

	out[0] = '\0';
	ret = memwatch_scan_begin(s, q);
	if (ret)
		return ret;
	while ((ret = memwatch_scan_next(s, &r)) == 1) {
		size_t l = strlen(out);

		if (l + 40 < len)
			snprintf(out + l, len - l, "%s%llu-%llu:%llx", n ? " " : "",
				 (unsigned long long)((r.start - base) / ps),
				 (unsigned long long)((r.end - base) / ps),
				 (unsigned long long)r.categories);
		n++;
	}
	if (nreg)
		*nreg = n;
	return ret;
}

static void expect(struct memwatch_scan *s, const char *desc, uint64_t base,
		   uint64_t first, uint64_t last, uint64_t inv, uint64_t mask,
		   uint64_t anyof, uint64_t ret_mask, uint64_t max, const char *want)
{
	struct memwatch_scan_query q = {
		.start = base + first * ps, .end = base + last * ps,
		.category_inverted = inv, .category_mask = mask,
		.category_anyof_mask = anyof, .return_mask = ret_mask,
		.max_pages = max,
	};
	char got[4096];
	int ret = regions(s, &q, base, got, sizeof(got), NULL);

	if (!tap_ok(ret == 0 && !strcmp(got, want), "%s: [%s]", desc, want))
		tap_diag("  got [%s] (ret %d)", got, ret);
}

static char *guarded(size_t n)
{
	char *p = mmap(NULL, (n + 2) * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	mprotect(p + ps, n * ps, PROT_READ | PROT_WRITE);
	return p + ps;
}

#define PMD_SPAN (2UL << 20)

/*
 * n pages between two PROT_NONE guard pages, placed so that page "at" of
 * the range (-1: the first guard page) starts a PMD: where the range meets
 * a PMD boundary decides which pages have a page table, and the kernel
 * answers differently for a pte_none in a table and for a range without
 * one.  Where mmap() happens to put a range must not decide a test, so the
 * rest of the two PMDs stays reserved (PROT_NONE, never touched): no other
 * mapping can bring a page table into them.
 */
static char *guarded_at(size_t n, long at)
{
	size_t len = 3 * PMD_SPAN + (n + 2) * ps;
	uintptr_t base, p = (uintptr_t)mmap(NULL, len, PROT_NONE,
					    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == (uintptr_t)MAP_FAILED)
		return NULL;
	/* The first PMD boundary with a whole PMD of the reservation before it. */
	base = ((p + 2 * PMD_SPAN - 1) & ~(PMD_SPAN - 1)) - (uintptr_t)(at + 1) * ps;
	mprotect((void *)(base + ps), n * ps, PROT_READ | PROT_WRITE);
	return (char *)(base + ps);
}

/* 16 pages: 0-3 written, 4-5 read (zero page), 6-7 swapped, 8-15 never touched. */
static void layout(char *r)
{
	int i;

	for (i = 0; i < 4; i++)
		r[i * ps] = 1;
	for (i = 4; i < 6; i++)
		(void)*(volatile char *)(r + i * ps);
	r[6 * ps] = 1;
	r[7 * ps] = 1;
	madvise(r + 6 * ps, 2 * ps, MADV_PAGEOUT);
}

/*
 * 8 pages, all written, 6-7 paged out, then pages 1, 2 (present) and 7
 * (swapped) write-protected with synchronous uffd-wp, which 6.1 has: the
 * pagemap entries get PM_UFFD_WP, PAGEMAP_SCAN clears PAGE_IS_WRITTEN.
 * Returns the userfaultfd, to keep open (nothing writes there again).
 */
static int wp_layout(char *w)
{
	int fd;

	memset(w, 1, 8 * ps);
	madvise(w + 6 * ps, 2 * ps, MADV_PAGEOUT);
	fd = mw_uffd_open(O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY, 0);
	if (fd < 0 || mw_uffd_register_wp(fd, w, 8 * ps) ||
	    mw_uffd_wp(fd, w + ps, 2 * ps, true) ||
	    mw_uffd_wp(fd, w + 7 * ps, ps, true))
		return -1;
	return fd;
}

/* The child: 8 anonymous pages at CHILD_AT (0,1 written, 2 read) and a 4-page file mapping after them (0,1 read). */
static void child_layout(int ready, int hold)
{
	char *a, *f, c = 0;
	int fd, i;

	a = mmap((void *)CHILD_AT, 8 * ps, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	/*
	 * Only pages 0 and 1 get into the page cache, so read fault-around
	 * cannot map pages 2 and 3.
	 */
	fd = open("/mnt/disk/scan-file", O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (ftruncate(fd, 4 * (off_t)ps))
		_exit(3);
	for (i = 0; i < 2; i++) {
		char page[4096];

		memset(page, 'a' + i, sizeof(page));
		if (pwrite(fd, page, sizeof(page), i * (off_t)ps) != (ssize_t)sizeof(page))
			_exit(3);
	}
	f = mmap((void *)(CHILD_AT + 9 * ps), 4 * ps, PROT_READ,
		 MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
	if (a == MAP_FAILED || f == MAP_FAILED)
		_exit(4);
	a[0] = 1;
	a[ps] = 1;
	(void)*(volatile char *)(a + 2 * ps);
	(void)*(volatile char *)f;
	(void)*(volatile char *)(f + ps);
	if (write(ready, "r", 1) != 1)
		_exit(5);
	if (read(hold, &c, 1) < 0)
		_exit(6);
	_exit(0);
}

int main(int argc, char **argv)
{
	struct memwatch_probe probe;
	struct memwatch_scan *s, *s2;
	struct memwatch_vma *vmas;
	char *r, *many, *w, got[4096], got2[4096];
	size_t n, nvmas, i;
	int ret, st, ready[2], hold[2], pidfd, wfd;
	uint64_t zero, cats;
	pid_t pid;
	bool found, want_ioctl;

	tap_guest_only();
	if (argc != 2 || (strcmp(argv[1], "ioctl") && strcmp(argv[1], "pread"))) {
		fprintf(stderr, "usage: %s ioctl|pread  (the path this kernel must give)\n",
			argv[0]);
		return 2;
	}
	want_ioctl = !strcmp(argv[1], "ioctl");
	tap_plan(42);
	ps = (size_t)sysconf(_SC_PAGESIZE);
	memwatch_probe(&probe);

	CHECK_EQ(!!(probe.features & MEMWATCH_FEAT_PAGEMAP_SCAN), want_ioctl,
		 "this kernel %s PAGEMAP_SCAN, as the suite list says",
		 want_ioctl ? "has" : "lacks");
	ret = memwatch_scan_open(&s, 0, 0);
	if (!tap_ok(ret == 0, "open a scan of this process"))
		return 1;
	CHECK_EQ(memwatch_scan_uses_ioctl(s), want_ioctl,
		 "the scan uses %s", want_ioctl ? "PAGEMAP_SCAN" : "the pagemap read");
	cats = memwatch_scan_categories(s);
	tap_diag("categories 0x%llx (%s)", (unsigned long long)cats,
		 memwatch_scan_uses_ioctl(s) ? "ioctl" : "pagemap read");
	tap_ok((cats & (P | S | F | W | SD | Z)) == (P | S | F | W | SD | Z),
	       "present, swapped, file, written, soft-dirty, zero-pfn answerable");
	zero = Z;

	r = guarded_at(16, -1);
	layout(r);
	expect(s, "categories of the known layout", (uintptr_t)r, 0, 16, 0, 0, 0,
	       P | S | zero, 0, "0-4:8 4-6:28 6-8:10 8-16:0");
	expect(s, "mask present", (uintptr_t)r, 0, 16, 0, P, 0, P, 0, "0-6:8");
	expect(s, "inverted present: the rest", (uintptr_t)r, 0, 16, P, P, 0, P, 0, "6-16:0");
	expect(s, "anyof present|swapped, return 0: one run", (uintptr_t)r, 0, 16,
	       0, 0, P | S, 0, 0, "0-8:0");
	expect(s, "max_pages 3", (uintptr_t)r, 0, 16, 0, P, 0, P, 3, "0-3:8");
	expect(s, "sub-range", (uintptr_t)r, 3, 7, 0, 0, 0, P | S, 0, "3-6:8 6-7:10");
	/*
	 * PAGE_IS_WRITTEN = not uffd-wp protected: with no protection at all,
	 * every page of the range is written, never-touched ones too.
	 */
	expect(s, "written without uffd-wp: every page, holes included", (uintptr_t)r, 0, 16,
	       0, W, 0, W, 0, "0-16:2");
	/*
	 * With no page table at all (upstream 6.12's rule), a page is written
	 * only in a VMA that uffd-wp tracks: pages 8-15 lie in the next PMD,
	 * which nothing touched.
	 */
	many = guarded_at(16, 8);
	for (i = 0; i < 8; i++)
		many[i * ps] = 1;
	expect(s, "written without uffd-wp: not where no page table exists", (uintptr_t)many,
	       0, 16, 0, W, 0, W, 0, "0-8:2");
	w = guarded(8);
	wfd = wp_layout(w);
	tap_ok(wfd >= 0, "write-protect pages 1, 2 (present) and 7 (swapped) with uffd-wp");
	expect(s, "written: the pages uffd-wp does not protect", (uintptr_t)w, 0, 8,
	       0, W, 0, W, 0, "0-1:2 3-7:2");
	expect(s, "uffd-wp protected pages: inverted written", (uintptr_t)w, 0, 8,
	       W, W, 0, P | S, 0, "1-3:8 7-8:10");
	expect(s, "present/swapped/written of the protected layout", (uintptr_t)w, 0, 8,
	       0, 0, 0, P | S | W, 0, "0-1:a 1-3:8 3-6:a 6-7:12 7-8:10");

	/* More regions than one buffer (512) holds. */
	many = guarded(1200);
	for (i = 0; i < 1200; i += 2)
		many[i * ps] = 1;
	{
		struct memwatch_scan_query q = { .start = (uintptr_t)many,
			.end = (uintptr_t)many + 1200 * ps, .return_mask = P };

		ret = regions(s, &q, (uintptr_t)many, got, sizeof(got), &n);
		tap_ok(ret == 0 && n == 1200, "1200 alternating regions, resumed across buffers (%zu)", n);
		q.category_mask = P;
		ret = regions(s, &q, (uintptr_t)many, got, sizeof(got), &n);
		tap_ok(ret == 0 && n == 600, "600 present regions (%zu)", n);
		q.category_mask = 0;
		q.return_mask = 0;
		ret = regions(s, &q, (uintptr_t)many, got, sizeof(got), &n);
		tap_ok(ret == 0 && n == 1 && !strcmp(got, "0-1200:0"),
		       "return 0: one region, merged across buffer boundaries [%s]", got);
		q.category_mask = P;
		q.max_pages = 550;
		ret = regions(s, &q, (uintptr_t)many, got, sizeof(got), &n);
		tap_ok(ret == 0 && n == 550, "max_pages 550 across buffers: %zu regions", n);
	}

	/* The ioctl against the pagemap read, on everything above. */
	ret = memwatch_scan_open(&s2, 0, MEMWATCH_SCAN_PREAD);
	tap_ok(ret == 0 && !memwatch_scan_uses_ioctl(s2), "open a pagemap-read scan");
	{
		struct memwatch_scan_query q = { .start = (uintptr_t)r,
			.end = (uintptr_t)r + 16 * ps,
			.return_mask = P | S | F | W | SD | Z };
		int r1 = regions(s, &q, (uintptr_t)r, got, sizeof(got), NULL);
		int r2 = regions(s2, &q, (uintptr_t)r, got2, sizeof(got2), NULL);

		if (!tap_ok(r1 == 0 && r2 == 0 && !strcmp(got, got2),
			    "%s and pagemap read agree on all categories",
			    memwatch_scan_uses_ioctl(s) ? "PAGEMAP_SCAN" : "pagemap read (no ioctl here)"))
			tap_diag("  [%s] vs [%s]", got, got2);
		q.start = (uintptr_t)w;
		q.end = (uintptr_t)w + 8 * ps;
		r1 = regions(s, &q, (uintptr_t)w, got, sizeof(got), NULL);
		r2 = regions(s2, &q, (uintptr_t)w, got2, sizeof(got2), NULL);
		if (!tap_ok(r1 == 0 && r2 == 0 && !strcmp(got, got2),
			    "they agree on the uffd-wp protected layout"))
			tap_diag("  [%s] vs [%s]", got, got2);
		q.start = (uintptr_t)many;
		q.end = (uintptr_t)many + 1200 * ps;
		r1 = regions(s, &q, (uintptr_t)many, got, sizeof(got), &n);
		r2 = regions(s2, &q, (uintptr_t)many, got2, sizeof(got2), NULL);
		if (!tap_ok(r1 == 0 && r2 == 0 && !strcmp(got, got2),
			    "they agree on the 1200-page pattern too"))
			tap_diag("  [%.200s] vs [%.200s]", got, got2);
	}
	memwatch_scan_close(s2);

	/* A child with a known layout, by pid and by pidfd. */
	if (pipe(ready) || pipe(hold))
		return 1;
	pid = fork();
	if (pid == 0) {
		close(hold[1]);
		child_layout(ready[1], hold[0]);
	}
	close(hold[0]);
	if (read(ready[0], got, 1) != 1)
		return 1;
	ret = memwatch_scan_open(&s2, pid, 0);
	tap_ok(ret == 0, "open a scan of the child by pid");
	expect(s2, "child's anonymous pages", CHILD_AT, 0, 8, 0, 0, 0, P | F | Z, 0,
	       "0-2:8 2-3:28 3-8:0");
	expect(s2, "child's file pages", CHILD_AT, 9, 13, 0, 0, 0, P | F, 0,
	       "9-11:c 11-13:0");
	expect(s2, "the gap between mappings is not reported", CHILD_AT, 0, 13, 0, 0, 0, 0, 0,
	       "0-8:0 9-13:0");
	ret = memwatch_scan_vmas(s2, &vmas, &nvmas);
	found = false;
	for (i = 0; ret == 0 && i < nvmas; i++)
		if (vmas[i].start == CHILD_AT + 9 * ps && vmas[i].end == CHILD_AT + 13 * ps &&
		    vmas[i].prot == PROT_READ && vmas[i].shared &&
		    !strcmp(vmas[i].name, "/mnt/disk/scan-file"))
			found = true;
	tap_ok(found, "memwatch_scan_vmas lists the child's file mapping");
	free(vmas);

	memwatch_scan_close(s);
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	ret = memwatch_scan_open_pidfd(&s, pidfd, 0);
	tap_ok(ret == 0, "open a scan of the child by pidfd");
	expect(s, "same answer by pidfd", CHILD_AT, 0, 8, 0, 0, 0, P | F | Z, 0,
	       "0-2:8 2-3:28 3-8:0");
	close(hold[1]);
	waitpid(pid, &st, 0);
	tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child exited cleanly");
	{
		struct memwatch_scan_query q = { .start = CHILD_AT, .end = CHILD_AT + 8 * ps };

		CHECK_EQ(memwatch_scan_begin(s, &q), -ESRCH,
			 "a scan of a reaped process: -ESRCH");
	}
	memwatch_scan_close(s);
	memwatch_scan_close(s2);
	CHECK_EQ(memwatch_scan_open_pidfd(&s, pidfd, 0), -ESRCH,
		 "pidfd of a reaped process (its pid may be reused): -ESRCH");
	CHECK_EQ(memwatch_scan_open_pidfd(&s, ready[0], 0), -EBADF,
		 "an fd that is not a pidfd: -EBADF");
	close(pidfd);

	/* A scan of "self" follows a fork into the child's own mm. */
	ret = memwatch_scan_open(&s, 0, 0);
	pid = fork();
	if (pid == 0) {
		char *c = mmap((void *)CHILD_AT, 2 * ps, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		struct memwatch_scan_query q = { .start = CHILD_AT,
			.end = CHILD_AT + 2 * ps, .return_mask = P };

		c[ps] = 1;
		ret = regions(s, &q, CHILD_AT, got, sizeof(got), NULL);
		_exit(ret == 0 && !strcmp(got, "0-1:0 1-2:8") ? 0 : 1);
	}
	waitpid(pid, &st, 0);
	tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "after fork, a self scan sees the child's own memory");
	{
		struct memwatch_scan_query q = { .start = CHILD_AT, .end = CHILD_AT + 2 * ps };

		ret = regions(s, &q, CHILD_AT, got, sizeof(got), &n);
		tap_ok(ret == 0 && n == 0, "and the parent's scan does not see it");
	}
	memwatch_scan_close(s);

	/* Permission: an unprivileged user cannot scan init. */
	pid = fork();
	if (pid == 0) {
		if (setgid(1000) || setuid(1000))
			_exit(100);
		_exit(-memwatch_scan_open(&s, 1, 0));
	}
	waitpid(pid, &st, 0);
	tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == EACCES,
	       "uid 1000 scanning pid 1: -EACCES (status %d)", WEXITSTATUS(st));

	{
		struct memwatch_scan_query q = { .start = 1 };

		ret = memwatch_scan_open(&s, 0, 0);
		CHECK_EQ(memwatch_scan_begin(s, &q), -EINVAL, "unaligned start: -EINVAL");
		q.start = 0;
		q.return_mask = 1ULL << 40;
		CHECK_EQ(memwatch_scan_begin(s, &q), -EOPNOTSUPP,
			 "a category this scan cannot answer: -EOPNOTSUPP");
		memwatch_scan_close(s);
	}
	CHECK_EQ(memwatch_scan_open(&s, 0, 0x100), -EINVAL, "unknown open flag: -EINVAL");
	/* SOFTDIRTY is "-", not 0, where the kernel has no soft-dirty bits. */
	ret = memwatch_scan_open(&s, 0, 0);
	CHECK_EQ(!!(memwatch_scan_categories(s) & SD),
		 !!(probe.features & MEMWATCH_FEAT_SOFT_DIRTY),
		 "soft-dirty is answerable exactly when the kernel has it");
	memwatch_scan_close(s);
	return tap_done();
}
