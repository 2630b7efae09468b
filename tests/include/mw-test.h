/* SPDX-License-Identifier: MIT */
/*
 * What every memwatch test program shares (scripts/build-tests puts
 * tests/include on each one's include path):
 *
 *   TAP           tap_plan(), tap_ok(), tap_diag(), CHECK_EQ(), tap_done():
 *                 kselftest-style "ok N description" / "not ok N
 *                 description" lines, "# " diagnostics, "Bail out!" by
 *                 mw_bail().  The guest runner (tests/harness/run-suites) and
 *                 the host's tap_tally (scripts/lib/common.sh) count these.
 *   guest check   mw_in_guest(), tap_guest_only(): the kernel command line
 *                 carries memwatch.guest=1, the marker of the QEMU guests
 *                 (the safety rule in README.md: no test touches the host);
 *                 mw_no_aslr(argv): re-exec without address randomisation.
 *   clock         mw_now_ns(), mw_now_s(): CLOCK_MONOTONIC.
 *   random        mw_rnd(), mw_rndn(): splitmix64 over a caller's state, so
 *                 that a printed seed replays a run exactly.
 *   whole I/O     mw_xio(): all n bytes through read(2) or write(2).
 *   touching      mw_touch(): read or write one byte that may fault,
 *                 returning the signal (SIGSEGV, SIGBUS) instead of dying,
 *                 once mw_on_fault() is the handler of both.
 *   userfaultfd   mw_uffd_open(), mw_uffd_register_wp(), mw_uffd_wp(): the
 *                 set-up every uffd-wp test repeats, each returning -errno.
 *   scan          mw_ww_arg(): the PAGEMAP_SCAN argument of Wine's
 *                 GetWriteWatch (written pages, with or without reset).
 *   The benchmarks (bench/bench.h) take the clock, the userfaultfd calls
 *   and the scan argument from here too.  Beside it: mw-marker.h (the
 *   PMD-level marker's debugfs counters), mw-uring.h (one io_uring read).
 *   uapi          the kernel ABI the tests use that older system headers
 *                 lack (PAGEMAP_SCAN, UFFD_FEATURE_WP_*, newer MADV_ and
 *                 mmap flags), each defined only where the headers do not.
 *
 * Include it before any system header, or define _GNU_SOURCE first (it
 * defines it for the system headers it includes).  TAP is one stream per
 * process (stdout), so its count lives here beside it, not in each test's
 * context.
 */
#ifndef MW_TEST_H
#define MW_TEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>
#include <linux/userfaultfd.h>

/* ---- TAP ---------------------------------------------------------------- */

static struct {
	int n;		/* points printed */
	int failed;	/* of which "not ok" */
} mw_tap;

static inline void tap_plan(int n)
{
	printf("TAP version 13\n1..%d\n", n);
}

__attribute__((format(printf, 1, 2)))
static inline void tap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* One point: "ok N description" or "not ok N description"; returns cond. */
__attribute__((format(printf, 2, 3)))
static inline int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d ", cond ? "ok" : "not ok", ++mw_tap.n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond)
		mw_tap.failed++;
	return cond;
}

/* The exit status: 1 if any point failed. */
static inline int tap_done(void)
{
	return mw_tap.failed ? 1 : 0;
}

/* Check an int result against the expected one, printing both. */
#define CHECK_EQ(got, want, ...) do {					\
	long long g_ = (long long)(got), w_ = (long long)(want);	\
	if (!tap_ok(g_ == w_, __VA_ARGS__))				\
		tap_diag("  got %lld, want %lld (%s)", g_, w_, #got);	\
} while (0)

/*
 * The test cannot go on: "Bail out! WHAT: strerror(errno)", with the run's
 * seed for the replay when there is one (seed: NULL otherwise), exit 1.
 */
__attribute__((noreturn))
static inline void mw_bail(const char *what, const uint64_t *seed)
{
	const char *err = strerror(errno);

	if (seed)
		printf("Bail out! %s: %s (seed %" PRIu64 ")\n", what, err, *seed);
	else
		printf("Bail out! %s: %s\n", what, err);
	exit(1);
}

/* ---- the guest check ---------------------------------------------------- */

/* Does the kernel command line hold the word memwatch.guest=1? */
static inline bool mw_in_guest(void)
{
	char buf[4096] = " ";
	int fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf + 1, sizeof(buf) - 3) : -1;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return false;
	buf[n + 1] = '\0';
	if (buf[n] == '\n')
		buf[n] = ' ';
	else
		strcat(buf, " ");
	return strstr(buf, " memwatch.guest=1 ") != NULL;
}

/*
 * The same layout on every run: without address-space randomisation, by
 * a re-exec of /proc/self/exe when it is on (returns only if it was off
 * already or cannot be switched off).
 */
static inline void mw_no_aslr(char **argv)
{
	int pers = personality(0xffffffff);

	if (pers != -1 && !(pers & ADDR_NO_RANDOMIZE) &&
	    personality(pers | ADDR_NO_RANDOMIZE) != -1)
		execv("/proc/self/exe", argv);
}

/*
 * Refuse to run outside the guest: one line on stderr naming the program,
 * exit status 2 (as for bad arguments).  Then stdout line-buffered, so that
 * TAP and the lines of other processes reach the guest's log in order.
 */
static inline void tap_guest_only(void)
{
	if (!mw_in_guest()) {
		fprintf(stderr, "%s: not in the memwatch guest (no "
			"memwatch.guest=1 on the kernel command line), "
			"refusing\n", program_invocation_short_name);
		exit(2);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
}

/* ---- clock ----------------------------------------------------------------- */

static inline uint64_t mw_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline double mw_now_s(void)
{
	return (double)mw_now_ns() / 1e9;
}

/* ---- whole reads and writes -------------------------------------------- */

/*
 * All n bytes through read(2) or write(2), retried on EINTR: 0, or -1 with
 * errno set (EPIPE for an end of file before n bytes).
 */
static inline int mw_xio(int fd, void *p, size_t n, bool wr)
{
	char *c = p;

	while (n) {
		ssize_t r = wr ? write(fd, c, n) : read(fd, c, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = EPIPE;
			return -1;
		}
		c += r;
		n -= r;
	}
	return 0;
}

/* ---- random numbers ----------------------------------------------------- */

/* splitmix64: the next number of the stream *state. */
static inline uint64_t mw_rnd(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A number in [0, n) (0 for n = 0). */
static inline uint64_t mw_rndn(uint64_t *state, uint64_t n)
{
	return n ? mw_rnd(state) % n : 0;
}

/* ---- touching memory that may fault ------------------------------------ */

/* The jump buffer of the thread's mw_touch() in progress, or NULL. */
static inline sigjmp_buf **mw_fault_jmp(void)
{
	static __thread sigjmp_buf *jb;

	return &jb;
}

/* The SIGSEGV and SIGBUS handler: back into mw_touch(), else die of it. */
static inline void mw_on_fault(int sig)
{
	if (*mw_fault_jmp())
		siglongjmp(**mw_fault_jmp(), sig);
	signal(sig, SIG_DFL);
	raise(sig);
}

/*
 * Write v into *p (write) or read *p into *got (may be NULL); returns the
 * signal the access took, or 0.
 */
static inline int mw_touch(volatile char *p, bool write, char v, char *got)
{
	sigjmp_buf jb;
	int sig;

	*mw_fault_jmp() = &jb;
	sig = sigsetjmp(jb, 1);
	if (!sig) {
		if (write)
			*p = v;
		else if (got)
			*got = *p;
		else
			(void)*p;
	}
	*mw_fault_jmp() = NULL;
	return sig;
}

/* ---- uapi the system headers may lack ----------------------------------- */

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MFD_HUGETLB
#define MFD_HUGETLB 4U
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MPOL_MF_MOVE
#define MPOL_MF_MOVE (1 << 1)
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef UFFDIO_CONTINUE_MODE_WP
#define UFFDIO_CONTINUE_MODE_WP ((__u64)1 << 1)
#endif
#ifndef _UFFDIO_MOVE
#define _UFFDIO_MOVE 0x05
#endif
#ifndef _UFFDIO_POISON
#define _UFFDIO_POISON 0x08
#endif

/* PAGEMAP_SCAN, the ioctl on /proc/PID/pagemap (upstream 6.7's ABI). */
#ifndef PAGEMAP_SCAN
struct page_region {
	__u64 start, end, categories;
};
struct pm_scan_arg {
	__u64 size, flags, start, end, walk_end, vec, vec_len, max_pages;
	__u64 category_inverted, category_mask, category_anyof_mask;
	__u64 return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#define PM_SCAN_WP_MATCHING (1 << 0)
#define PM_SCAN_CHECK_WPASYNC (1 << 1)
#define PAGE_IS_WPALLOWED (1 << 0)
#define PAGE_IS_WRITTEN (1 << 1)
#define PAGE_IS_FILE (1 << 2)
#define PAGE_IS_PRESENT (1 << 3)
#define PAGE_IS_SWAPPED (1 << 4)
#define PAGE_IS_PFNZERO (1 << 5)
#define PAGE_IS_HUGE (1 << 6)
#endif
#ifndef PAGE_IS_SOFT_DIRTY
#define PAGE_IS_SOFT_DIRTY (1 << 7)
#endif

/* ---- userfaultfd -------------------------------------------------------- */

/*
 * A userfaultfd opened with FLAGS (O_CLOEXEC, O_NONBLOCK,
 * UFFD_USER_MODE_ONLY) after UFFDIO_API with FEATURES: the descriptor, or
 * -errno (the descriptor closed).
 */
static inline int mw_uffd_open(int flags, uint64_t features)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	int fd = (int)syscall(__NR_userfaultfd, flags), err;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, UFFDIO_API, &api)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* Register [p, p + len) with FD in write-protect mode: 0 or -errno. */
static inline int mw_uffd_register_wp(int fd, void *p, size_t len)
{
	struct uffdio_register reg = {
		.range = { (uintptr_t)p, len },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	return ioctl(fd, UFFDIO_REGISTER, &reg) ? -errno : 0;
}

/* Write-protect (ON) or un-protect [p, p + len): 0 or -errno. */
static inline int mw_uffd_wp(int fd, void *p, size_t len, bool on)
{
	struct uffdio_writeprotect wp = {
		.range = { (uintptr_t)p, len },
		.mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	return ioctl(fd, UFFDIO_WRITEPROTECT, &wp) ? -errno : 0;
}

/* ---- the write-watch scan ---------------------------------------------- */

/*
 * The PAGEMAP_SCAN argument of Wine's GetWriteWatch over [start, end): the
 * written pages (category_mask = return_mask = PAGE_IS_WRITTEN) into VEC of
 * VEC_LEN regions (NULL, 0: none); with RESET each page found is
 * write-protected again (PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC).  The
 * caller sets max_pages, resumes at walk_end, and so on.
 */
static inline struct pm_scan_arg mw_ww_arg(uint64_t start, uint64_t end,
					   bool reset, struct page_region *vec,
					   uint64_t vec_len)
{
	return (struct pm_scan_arg){
		.size = sizeof(struct pm_scan_arg),
		.flags = reset ? PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC : 0,
		.start = start, .end = end,
		.vec = (uintptr_t)vec, .vec_len = vec_len,
		.category_mask = PAGE_IS_WRITTEN,
		.return_mask = PAGE_IS_WRITTEN,
	};
}

#endif /* MW_TEST_H */
