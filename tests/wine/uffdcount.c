// SPDX-License-Identifier: MIT
/*
 * uffdcount.so: an LD_PRELOAD counter of the calls that make up Wine's
 * kernel write-watch path, so that the guest can prove the path was taken
 * (or not).  It wraps libc's syscall() and ioctl(), forwards every call
 * unchanged and counts, per process:
 *   uffd_open    userfaultfd(2) calls that returned a descriptor
 *   api_async    UFFDIO_API calls that succeeded with UFFD_FEATURE_WP_ASYNC
 *                asked and granted
 *   api_fail     UFFDIO_API calls that failed (Wine asks for WP_ASYNC;
 *                a kernel without it refuses the call)
 *   register_wp  UFFDIO_REGISTER calls with MODE_WP that succeeded
 *   wp           UFFDIO_WRITEPROTECT calls that succeeded
 *   scan         PAGEMAP_SCAN calls that succeeded
 *   scan_fail    PAGEMAP_SCAN calls that failed
 * The counters live in a shared mapping of $UFFDCOUNT_DIR/PID (8-byte
 * little-endian words in the order above), so they survive however the
 * process ends (Wine leaves through exit_group from any thread).
 * `od -An -tu8 -v` reads them back.  The request numbers come from the
 * uapi headers the program is built against (the series' exported ones).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/userfaultfd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { C_OPEN, C_API_ASYNC, C_API_FAIL, C_REGISTER_WP, C_WP, C_SCAN, C_SCAN_FAIL, C_N };

static uint64_t *counters;

static void count(int which)
{
	if (counters)
		__atomic_fetch_add(&counters[which], 1, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void uffdcount_init(void)
{
	const char *dir = getenv("UFFDCOUNT_DIR");
	char path[4096];
	void *m;
	int fd;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/%d", dir, (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (ftruncate(fd, C_N * sizeof(uint64_t)) == 0) {
		m = mmap(NULL, C_N * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m != MAP_FAILED)
			counters = m;
	}
	close(fd);
}

long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	long a[6], ret;
	va_list ap;
	int i;

	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	ret = real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (nr == __NR_userfaultfd && ret >= 0)
		count(C_OPEN);
	return ret;
}

int ioctl(int fd, unsigned long req, ...)
{
	static int (*real)(int, unsigned long, ...);
	void *arg;
	va_list ap;
	int ret;

	if (!real)
		real = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	ret = real(fd, req, arg);
	switch (req) {
	case UFFDIO_API: {
		const struct uffdio_api *api = arg;

		if (!(api->features & UFFD_FEATURE_WP_ASYNC) && ret == 0)
			break;
		if (ret == 0)
			count(C_API_ASYNC);
		else
			count(C_API_FAIL);
		break;
	}
	case UFFDIO_REGISTER:
		if (ret == 0 && (((const struct uffdio_register *)arg)->mode &
				 UFFDIO_REGISTER_MODE_WP))
			count(C_REGISTER_WP);
		break;
	case UFFDIO_WRITEPROTECT:
		if (ret == 0)
			count(C_WP);
		break;
	case PAGEMAP_SCAN:
		count(ret >= 0 ? C_SCAN : C_SCAN_FAIL);
		break;
	}
	return ret;
}
