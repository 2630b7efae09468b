/* SPDX-License-Identifier: GPL-2.0 */
/* Timing helpers shared by the bench/ programs. */
#ifndef MEMWATCH_BENCH_H
#define MEMWATCH_BENCH_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

/* "PROGRAM: what: errno's message" on stderr, exit status 1. */
static inline void __attribute__((noreturn)) bench_die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what,
		strerror(errno));
	exit(1);
}

static inline double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
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
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED,
	};

	*pagemap = open("/proc/self/pagemap", O_RDONLY);
	if (*pagemap < 0)
		return -1;
	*uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (*uffd < 0 || ioctl(*uffd, UFFDIO_API, &api))
		return -1;
	return 0;
}

/*
 * An anonymous MAP_PRIVATE|MAP_NORESERVE range of size bytes,
 * MADV_NOHUGEPAGE (4K ptes, as Wine maps its views), registered MODE_WP
 * on uffd if reg; exits on failure.
 */
static inline char *bench_map_range(int uffd, long size, int reg)
{
	struct uffdio_register r;
	char *m = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (m == MAP_FAILED)
		bench_die("mmap");
	if (madvise(m, size, MADV_NOHUGEPAGE))
		bench_die("MADV_NOHUGEPAGE");
	if (!reg)
		return m;
	r = (struct uffdio_register){
		.range = { (uintptr_t)m, size },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	if (ioctl(uffd, UFFDIO_REGISTER, &r))
		bench_die("UFFDIO_REGISTER");
	return m;
}

#endif
