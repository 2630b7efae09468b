// SPDX-License-Identifier: MIT
/*
 * A process with a known memory layout for the CLI golden tests, at fixed
 * addresses from 0x200000000000:
 *   +0x00000  16 pages anon rw: pages 0-4 written, 5-6 read (zero page)
 *   +0x11000   8 pages anon rw: all written, pages 4-7 paged out to swap,
 *              then pages 0-1 and 6-7 write-protected with (synchronous)
 *              uffd-wp, so PAGE_IS_WRITTEN is clear on them
 *   +0x1a000   8 pages of /mnt/disk/cli-layout.dat, private, read-only:
 *              pages 0-1 cached and read, 2-7 never cached
 * Writes "ready" to the file named by argv[1] once set up, then keeps
 * writing page 2 of the first mapping every 20 ms (for `memwatch top`)
 * until killed.
 */
#include "mw-test.h"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BASE 0x200000000000UL

/* Register [p, p + len) for uffd-wp and protect two runs of it. */
static int protect(char *p, long len, long a, long b, long n)
{
	int fd = mw_uffd_open(O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY, 0);

	if (fd < 0 || mw_uffd_register_wp(fd, p, (size_t)len) ||
	    mw_uffd_wp(fd, p + a, (size_t)n, true) ||
	    mw_uffd_wp(fd, p + b, (size_t)n, true))
		return -1;
	return fd;	/* kept open: nothing writes there again */
}

int main(int argc, char **argv)
{
	long ps = sysconf(_SC_PAGESIZE);
	char *a, *b, *f, page[4096];
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	int fd, i;

	if (argc != 2)
		return 2;
	a = mmap((void *)BASE, 16 * ps, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	b = mmap((void *)(BASE + 17 * ps), 8 * ps, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	fd = open("/mnt/disk/cli-layout.dat", O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (a == MAP_FAILED || b == MAP_FAILED || fd < 0 || ftruncate(fd, 8 * ps))
		return 1;
	memset(page, 'x', sizeof(page));
	if (pwrite(fd, page, sizeof(page), 0) != (ssize_t)sizeof(page) ||
	    pwrite(fd, page, sizeof(page), ps) != (ssize_t)sizeof(page))
		return 1;
	f = mmap((void *)(BASE + 26 * ps), 8 * ps, PROT_READ,
		 MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0);
	if (f == MAP_FAILED)
		return 1;
	for (i = 0; i < 5; i++)
		a[i * ps] = 1;
	(void)*(volatile char *)(a + 5 * ps);
	(void)*(volatile char *)(a + 6 * ps);
	memset(b, 1, 8 * ps);
	if (madvise(b + 4 * ps, 4 * ps, MADV_PAGEOUT))
		return 1;
	if (protect(b, 8 * ps, 0, 6 * ps, 2 * ps) < 0)
		return 1;
	(void)*(volatile char *)f;
	(void)*(volatile char *)(f + ps);

	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "ready\n", 6) != 6)
		return 1;
	close(fd);
	for (;;) {
		((volatile char *)a)[2 * ps] = 2;
		nanosleep(&ts, NULL);
	}
}
