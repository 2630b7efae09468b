// SPDX-License-Identifier: MIT
/* Small system-call helpers shared by the backends. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* The whole of a /proc text file read from fd (from offset 0), NUL-ended. */
int mw_read_file(int fd, char **out)
{
	size_t cap = 16384, len = 0;
	char *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = pread(fd, buf + len, cap - len - 1, (off_t)len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (cap - len < 4096) {
			char *nb = realloc(buf, cap * 2);

			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
	}
	buf[len] = '\0';
	*out = buf;
	return 0;
}

/* mw_read_file() of /proc/PID/FILE. */
int mw_read_proc(pid_t pid, const char *file, char **out)
{
	int fd = mw_open_proc(pid, file, O_RDONLY), ret;

	if (fd < 0)
		return fd;
	ret = mw_read_file(fd, out);
	close(fd);
	return ret;
}

/*
 * Room for one more element after n in arr (capacity *cap): the array,
 * moved or not, or NULL (arr is left as it was).
 */
void *mw_grow(void *arr, size_t *cap, size_t n, size_t size)
{
	void *nv;
	size_t nc;

	if (n < *cap)
		return arr;
	nc = *cap ? *cap * 2 : 64;
	nv = realloc(arr, nc * size);
	if (nv)
		*cap = nc;
	return nv;
}

/* Does the VmFlags line starting at p (up to eol) carry the flag fl? */
static bool has_vmflag(const char *p, const char *eol, const char *fl)
{
	size_t l = strlen(fl);

	while (p < eol) {
		while (p < eol && *p == ' ')
			p++;
		if ((size_t)(eol - p) >= l && !memcmp(p, fl, l) &&
		    (p + l == eol || p[l] == ' '))
			return true;
		while (p < eol && *p != ' ')
			p++;
	}
	return false;
}

/*
 * Parse /proc/PID/smaps text: each VMA's range, its KernelPageSize and the
 * VmFlags the library acts on ("ht" hugetlb, "pf" VM_PFNMAP, "io" VM_IO,
 * "uw" uffd-wp registered), and whether it is private anonymous memory.
 * Entries of VMAs without a KernelPageSize line keep 0.
 */
int mw_parse_smaps(const char *text, struct mw_vma_info **out, size_t *count)
{
	struct mw_vma_info *v = NULL, *cur = NULL, *nv;
	size_t n = 0, cap = 0;
	const char *line = text;

	while (*line) {
		const char *eol = strchr(line, '\n');
		unsigned long long start, end, kb, inode;
		char perms[8], name[8];
		int used = 0;

		if (!eol)
			eol = line + strlen(line);
		name[0] = '\0';
		if (sscanf(line, "%llx-%llx %7s %*s %*s %llu %n", &start, &end,
			   perms, &inode, &used) == 4 && used) {
			nv = mw_grow(v, &cap, n, sizeof(*v));
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
			cur = &v[n++];
			memset(cur, 0, sizeof(*cur));
			cur->start = (uintptr_t)start;
			cur->end = (uintptr_t)end;
			/*
			 * Private anonymous memory ([heap], [stack], [anon:x]
			 * or no name) holds nothing but anonymous and zero
			 * pages; [vdso] and the like hold others.
			 */
			sscanf(line + used, "%7s", name);
			if (!inode && perms[3] == 'p' &&
			    (!name[0] || name[0] != '[' ||
			     !strncmp(name, "[heap]", 6) ||
			     !strncmp(name, "[stack", 6) ||
			     !strncmp(name, "[anon:", 6)))
				cur->flags |= MW_VMA_ANON;
		} else if (cur && sscanf(line, "KernelPageSize: %llu kB", &kb) == 1) {
			cur->page_size = (uintptr_t)kb << 10;
		} else if (cur && !strncmp(line, "VmFlags:", 8)) {
			if (has_vmflag(line + 8, eol, "ht"))
				cur->flags |= MW_VMA_HUGETLB;
			if (has_vmflag(line + 8, eol, "pf"))
				cur->flags |= MW_VMA_PFNMAP;
			if (has_vmflag(line + 8, eol, "io"))
				cur->flags |= MW_VMA_IO;
			if (has_vmflag(line + 8, eol, "uw"))
				cur->flags |= MW_VMA_UFFD_WP;
		}
		line = *eol ? eol + 1 : eol;
	}
	*out = v;
	*count = n;
	return 0;
}
