/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the bench/ programs share.  The set-up they have in common with the
 * tests comes from tests/include/mw-test.h (tests/tests.mk and lib/lib.mk
 * put tests/include on their include path): the guest check, the clock,
 * the userfaultfd calls, Wine's scan argument (mw_ww_arg) and the uapi
 * older system headers lack.  Here: the error exit, microseconds, the
 * median, and those set-up steps as a benchmark takes them, exiting on
 * failure.
 */
#ifndef MEMWATCH_BENCH_H
#define MEMWATCH_BENCH_H

#include "mw-test.h"

/* "PROGRAM: what: errno's message" on stderr, exit status 1. */
static inline void __attribute__((noreturn)) bench_die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what,
		strerror(errno));
	exit(1);
}

/* ret (a count or -errno), or bench_die(what) if it is an error. */
static inline long bench_check(long ret, const char *what)
{
	if (ret < 0) {
		errno = (int)-ret;
		bench_die(what);
	}
	return ret;
}

static inline double now_us(void)
{
	return (double)mw_now_ns() / 1e3;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Sorts v. */
static inline double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return v[n / 2];
}

/*
 * /proc/self/pagemap into *pagemap and a userfaultfd with WP_ASYNC and
 * WP_UNPOPULATED into *uffd; 0, or -1 with errno set.
 */
static inline int bench_open_wp_async(int *pagemap, int *uffd)
{
	*pagemap = open("/proc/self/pagemap", O_RDONLY);
	if (*pagemap < 0)
		return -1;
	*uffd = mw_uffd_open(O_CLOEXEC | O_NONBLOCK, UFFD_FEATURE_WP_ASYNC |
			     UFFD_FEATURE_WP_UNPOPULATED);
	if (*uffd < 0) {
		errno = -*uffd;
		return -1;
	}
	return 0;
}

/* Write-protect (on) or un-protect [m, m + size); exits on failure. */
static inline void bench_wp(int uffd, char *m, long size, bool on)
{
	bench_check(mw_uffd_wp(uffd, m, size, on), "UFFDIO_WRITEPROTECT");
}

/* Register [m, m + size) MODE_WP on uffd and arm it; exits on failure. */
static inline void bench_arm(int uffd, char *m, long size)
{
	if (mw_uffd_register_wp(uffd, m, size) < 0 ||
	    mw_uffd_wp(uffd, m, size, true) < 0)
		bench_die("uffd register/protect");
}

/* PAGEMAP_SCAN on pagemap with *arg: the regions; exits on failure. */
static inline long bench_scan(int pagemap, struct pm_scan_arg *arg)
{
	long n = ioctl(pagemap, PAGEMAP_SCAN, arg);

	if (n < 0)
		bench_die("PAGEMAP_SCAN");
	return n;
}

/*
 * An anonymous MAP_PRIVATE|MAP_NORESERVE range of size bytes,
 * MADV_NOHUGEPAGE (4K ptes, as Wine maps its views), registered MODE_WP
 * on uffd if reg; exits on failure.
 */
static inline char *bench_map_range(int uffd, long size, int reg)
{
	char *m = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (m == MAP_FAILED)
		bench_die("mmap");
	if (madvise(m, size, MADV_NOHUGEPAGE))
		bench_die("MADV_NOHUGEPAGE");
	if (reg)
		bench_check(mw_uffd_register_wp(uffd, m, size),
			    "UFFDIO_REGISTER");
	return m;
}

#endif
