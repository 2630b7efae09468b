// SPDX-License-Identifier: GPL-2.0
/*
 * make demo: what the booted kernel can do for exact write tracking.
 * Prints the kernel version, the userfaultfd features it reports, whether
 * PAGEMAP_SCAN answers, soft-dirty's false positives after a VMA merge,
 * and then the tracking through libmemwatch, the way an application would
 * do it: GetWriteWatch()-style calls on the exact uffd backend next to the
 * soft-dirty backend.  Exits non-zero if the library's answers are not the
 * expected ones (the demo-lib suites).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <linux/fs.h>
#include <linux/userfaultfd.h>

#include "mw-test.h"
#include <memwatch.h>

static const char *const feature_names[] = {
	"PAGEFAULT_FLAG_WP", "EVENT_FORK", "EVENT_REMAP", "EVENT_REMOVE",
	"MISSING_HUGETLBFS", "MISSING_SHMEM", "EVENT_UNMAP", "SIGBUS",
	"THREAD_ID", "MINOR_HUGETLBFS", "MINOR_SHMEM", "EXACT_ADDRESS",
	"WP_HUGETLBFS_SHMEM", "WP_UNPOPULATED", "POISON", "WP_ASYNC",
};

static long psize;

/*
 * Write pages 3 and 7 of the n-page buffer p, mprotect it RO -> RW, and map
 * a page right after it (the VMAs merge where they can): soft-dirty then
 * reports every page, exact tracking the two.
 */
static void false_positive_steps(char *p, int n)
{
	p[3 * psize] = 2;
	p[7 * psize] = 2;
	mprotect(p, n * psize, PROT_READ);
	mprotect(p, n * psize, PROT_READ | PROT_WRITE);
	mmap(p + n * psize, psize, PROT_READ | PROT_WRITE,
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
}

/* One GetWriteWatch(WRITE_WATCH_FLAG_RESET) call, printed; 1 if not want. */
static int ww_show(struct memwatch *mw, char *p, int n, const char *when,
		   const char *want)
{
	void *pages[16];
	uintptr_t cnt = 16;
	uint32_t gran;
	char got[128] = "";
	unsigned int err = memwatch_GetWriteWatch(mw, MEMWATCH_WRITE_WATCH_FLAG_RESET,
						  p, n * psize, pages, &cnt, &gran);

	if (err) {
		printf("    %-36s GetWriteWatch failed: %s\n", when, strerror((int)err));
		return 1;
	}
	for (uintptr_t i = 0; i < cnt; i++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), " %ld",
			 (long)(((char *)pages[i] - p) / psize));
	printf("    %-36s pages%s\n", when, cnt ? got : " none");
	if (strcmp(got, want)) {
		printf("    ^ UNEXPECTED: wanted pages%s\n", *want ? want : " none");
		return 1;
	}
	return 0;
}

/*
 * 16 watched pages: write 3 and 7, mprotect RO->RW, map a page right after
 * them (the VMAs merge where they can), get+reset; write 12, get+reset;
 * get+reset again.
 */
static int lib_steps(enum memwatch_backend be, const char *want)
{
	const int n = 16;
	struct memwatch *mw;
	char *p = mmap(NULL, (n + 1) * psize, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ret, bad = 0;

	munmap(p + n * psize, psize);
	memset(p, 1, n * psize);
	ret = memwatch_open(&mw, be, MEMWATCH_OPEN_NO_ENV);
	if (ret == 0)
		ret = memwatch_add(mw, p, n * psize, 0);
	printf("  %s backend:%s%s\n", memwatch_backend_name(be), ret ? " " : "",
	       ret ? strerror(-ret) : "");
	if (ret)
		return 1;
	false_positive_steps(p, n);
	bad |= ww_show(mw, p, n, "wrote 3, 7; mprotect; VMA merge:", want);
	p[12 * psize] = 2;
	bad |= ww_show(mw, p, n, "after that reset, wrote 12:", " 12");
	bad |= ww_show(mw, p, n, "nothing written since:", "");
	memwatch_close(mw);
	munmap(p, (n + 1) * psize);
	return bad;
}

static int lib_demo(void)
{
	struct memwatch_probe pr;
	int bad = 0;

	memwatch_probe(&pr);
	printf("libmemwatch, GetWriteWatch()-style on 16 pages (best backend here: %s):\n",
	       memwatch_backend_name(pr.backend));
	if (pr.backend == MEMWATCH_BACKEND_UFFD) {
		bad |= lib_steps(MEMWATCH_BACKEND_UFFD, " 3 7");
	} else {
		printf("  uffd backend (exact): not on this kernel, which lacks:%s%s%s\n"
		       "    (needs Linux 6.7, or 6.1 with the memwatch series)\n",
		       pr.features & MEMWATCH_FEAT_UFFD_WP_UNPOPULATED ? "" : " WP_UNPOPULATED",
		       pr.features & MEMWATCH_FEAT_UFFD_WP_ASYNC ? "" : " WP_ASYNC",
		       pr.features & MEMWATCH_FEAT_PAGEMAP_SCAN ? "" : " PAGEMAP_SCAN");
		/* The probe must be right about it. */
		struct memwatch *mw;
		int ret = memwatch_open(&mw, MEMWATCH_BACKEND_UFFD, MEMWATCH_OPEN_NO_ENV);

		if (ret != -EOPNOTSUPP) {
			printf("    ^ UNEXPECTED: memwatch_open(uffd) gave %d\n", ret);
			bad = 1;
		}
	}
	if (pr.features & MEMWATCH_FEAT_SOFT_DIRTY)
		bad |= lib_steps(MEMWATCH_BACKEND_SOFT_DIRTY,
				 " 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15");
	else
		printf("  soft-dirty backend: not on this kernel (CONFIG_MEM_SOFT_DIRTY)\n");
	if (pr.features & MEMWATCH_FEAT_SOFT_DIRTY)
		printf("  (soft-dirty's 16 pages are its false positive: the merged VMA is all\n"
		       "   soft-dirty; uffd-wp reports exactly what was written)\n");
	return bad;
}

static int uffd_open(uint64_t features, uint64_t *got)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	int fd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return -errno;
	if (ioctl(fd, UFFDIO_API, &api)) {
		int e = -errno;

		close(fd);
		return e;
	}
	if (got)
		*got = api.features;
	return fd;
}

/* Pages of [p, p + n pages) whose pagemap entry has soft-dirty (bit 55). */
static int soft_dirty_pages(char *p, int n)
{
	int fd = open("/proc/self/pagemap", O_RDONLY), cnt = 0;
	uint64_t e;

	for (int i = 0; i < n; i++) {
		if (pread(fd, &e, 8, ((uintptr_t)p / psize + i) * 8) == 8 && (e >> 55 & 1))
			cnt++;
	}
	close(fd);
	return cnt;
}

int main(void)
{
	struct utsname u;
	uint64_t feat = 0;
	const int n = 16;
	int fd, pm;

	psize = sysconf(_SC_PAGESIZE);
	uname(&u);
	printf("kernel: %s %s\n", u.release, u.version);

	fd = uffd_open(0, &feat);
	if (fd < 0) {
		printf("userfaultfd: unavailable (%s)\n", strerror(-fd));
	} else {
		printf("userfaultfd features:");
		for (unsigned int b = 0; b < 64; b++)
			if (feat >> b & 1)
				printf(" %s", b < 16 ? feature_names[b] : "?");
		printf("\n");
		close(fd);
	}

	pm = open("/proc/self/pagemap", O_RDONLY);
	struct pm_scan_arg probe = { .size = sizeof(probe) };
	int scan = ioctl(pm, PAGEMAP_SCAN, &probe) == 0;

	printf("PAGEMAP_SCAN: %s\n", scan ? "answers" :
	       errno == ENOTTY ? "not supported by this kernel (ENOTTY)" : strerror(errno));

	char *p = mmap(NULL, (n + 1) * psize, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(p + n * psize, psize);
	memset(p, 1, n * psize);

	printf("soft-dirty, 16 pages: clear_refs, write pages 3 and 7, mprotect RO->RW,\n"
	       "  then map a page right after the buffer (the VMAs merge):\n");
	fd = open("/proc/self/clear_refs", O_WRONLY);
	if (fd < 0 || write(fd, "4", 1) != 1) {
		printf("  soft-dirty unavailable\n");
	} else {
		false_positive_steps(p, n);
		printf("  soft-dirty reports %d of 16 pages written (2 were)\n",
		       soft_dirty_pages(p, n));
	}
	if (fd >= 0)
		close(fd);

	return lib_demo();
}
