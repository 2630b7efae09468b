// SPDX-License-Identifier: MIT
/* Small system-call helpers shared by the backends. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

/* Open /proc/PID/FILE (pid 0: /proc/self/FILE); -errno on failure. */
int mw_open_proc(pid_t pid, const char *file, int flags)
{
	char path[64];
	int fd;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	else
		snprintf(path, sizeof(path), "/proc/self/%s", file);
	fd = open(path, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* pread exactly len bytes; a short read (end of file) is -EIO. */
int mw_pread_full(int fd, void *buf, size_t len, off_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		off += n;
		len -= (size_t)n;
	}
	return 0;
}

int mw_write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* PAGEMAP_SCAN: the number of regions stored, or -errno. */
long mw_pagemap_scan(int fd, struct mw_pm_scan_arg *arg)
{
	long ret;

	arg->size = sizeof(*arg);
	do
		ret = ioctl(fd, MW_PAGEMAP_SCAN, arg);
	while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : ret;
}

/*
 * A userfaultfd the way Wine opens it: user-mode faults only (so no
 * privilege or vm.unprivileged_userfaultfd is needed), non-blocking,
 * close-on-exec.
 */
int mw_uffd_create(void)
{
	long fd = syscall(SYS_userfaultfd,
			  O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);

	return fd < 0 ? -errno : (int)fd;
}
