// SPDX-License-Identifier: MIT
/*
 * Exact write watches: userfaultfd WP_ASYNC + PAGEMAP_SCAN (Linux 6.7, or
 * 6.1 with the memwatch series).  Called the way Wine calls it, so the
 * kernel sees a client it already knows:
 *  - one userfaultfd with WP_ASYNC | WP_UNPOPULATED; the kernel resolves
 *    write-protect faults itself and the pte's uffd-wp bit is the watch;
 *  - add: UFFDIO_REGISTER(MODE_WP) + UFFDIO_WRITEPROTECT of the whole range
 *    (WP_UNPOPULATED puts markers on ptes never touched);
 *  - get: PAGEMAP_SCAN, mask = return = WRITTEN, max_pages = capacity left,
 *    WP_MATCHING when resetting, resuming at walk_end while the region
 *    buffer came back full.  max_pages makes the kernel stop after the
 *    first N pages, so a reset re-arms exactly what was returned;
 *  - reset: PAGEMAP_SCAN with WP_MATCHING and no output vector.
 * Transparent huge pages: add write-protects a THP as one PMD; the first
 * write to it makes the kernel split it and resolve the fault on the
 * written pte, so tracking stays exact per 4 KiB page.  The library never
 * splits a huge page itself: a get or reset only re-arms written pages,
 * and a protected THP is not written.  MEMWATCH_ADD_NOHUGEPAGE avoids
 * THPs altogether (Wine's choice).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "internal.h"

#define MW_SCAN_REGIONS 256

static int uffd_open(struct memwatch *mw)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = MW_UFFD_FEATURE_WP_ASYNC |
			    MW_UFFD_FEATURE_WP_UNPOPULATED,
	};
	int fd, ret;

	fd = mw_uffd_create();
	if (fd < 0)
		return fd;
	if (ioctl(fd, UFFDIO_API, &api) < 0) {
		ret = errno == EINVAL ? -EOPNOTSUPP : -errno;
		close(fd);
		return ret;
	}
	ret = mw_open_proc(0, "pagemap", O_RDONLY);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	mw->uffd = fd;
	mw->pagemap_fd = ret;
	return 0;
}

static void uffd_close(struct memwatch *mw)
{
	/* Closing the userfaultfd drops every registration and wp bit. */
	if (mw->uffd >= 0)
		close(mw->uffd);
	if (mw->pagemap_fd >= 0)
		close(mw->pagemap_fd);
}

static int uffd_wp(struct memwatch *mw, uintptr_t a, uintptr_t b)
{
	struct uffdio_writeprotect wp = {
		.range = { .start = a, .len = b - a },
		.mode = UFFDIO_WRITEPROTECT_MODE_WP,
	};

	while (ioctl(mw->uffd, UFFDIO_WRITEPROTECT, &wp) < 0) {
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
	}
	return 0;
}

static int uffd_unregister(struct memwatch *mw, struct mw_range *r)
{
	struct uffdio_range range = { .start = r->start,
				      .len = r->end - r->start };

	return ioctl(mw->uffd, UFFDIO_UNREGISTER, &range) < 0 ? -errno : 0;
}

static int uffd_add(struct memwatch *mw, struct mw_range *r)
{
	struct uffdio_register reg = {
		.range = { .start = r->start, .len = r->end - r->start },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	int ret;

	if (ioctl(mw->uffd, UFFDIO_REGISTER, &reg) < 0)
		return -errno;
	if (!(reg.ioctls & (1ULL << _UFFDIO_WRITEPROTECT))) {
		/* e.g. a file mapping the kernel cannot write-protect */
		uffd_unregister(mw, r);
		return -EOPNOTSUPP;
	}
	ret = uffd_wp(mw, r->start, r->end);
	if (ret)
		uffd_unregister(mw, r);
	return ret;
}

static int uffd_remove(struct memwatch *mw, struct mw_range *r)
{
	return uffd_unregister(mw, r);
}

/* hugetlb page sizes are multiples of this (x86_64: 2 MiB, 1 GiB). */
#define MW_HUGE_STEP (2UL << 20)

static int uffd_get(struct memwatch *mw, struct mw_range *r, uintptr_t a,
		    uintptr_t b, bool reset, void **pages, size_t *count)
{
	struct mw_page_region vec[MW_SCAN_REGIONS];
	struct mw_pm_scan_arg arg;
	size_t cap = *count, n = 0;
	uintptr_t at = a, plain_end = a, end;
	bool arm;
	long i, ret;

	(void)r;
	while (at < b && n < cap) {
		/* [at, plain_end) is reported without re-arming (see below). */
		arm = reset && at >= plain_end;
		end = arm || !reset ? b : plain_end;
		memset(&arg, 0, sizeof(arg));
		arg.flags = arm ? MW_PM_SCAN_WP_MATCHING : 0;
		arg.start = at;
		arg.end = end;
		arg.vec = (uintptr_t)vec;
		arg.vec_len = MW_SCAN_REGIONS;
		arg.max_pages = cap - n;
		arg.category_mask = MW_PAGE_IS_WRITTEN;
		arg.return_mask = MW_PAGE_IS_WRITTEN;
		ret = mw_pagemap_scan(mw->pagemap_fd, &arg);
		if (ret < 0)
			return (int)ret;
		for (i = 0; i < ret; i++) {
			uint64_t p;

			for (p = vec[i].start; p < vec[i].end && n < cap;
			     p += mw->page_size)
				pages[n++] = (void *)(uintptr_t)p;
		}
		if (n == cap)
			break;
		if (arg.walk_end >= end) {
			at = end;
			continue;
		}
		/* The region buffer filled up: resume where the walk ended. */
		if (ret == MW_SCAN_REGIONS && arg.walk_end > at) {
			at = arg.walk_end;
			continue;
		}
		if (!arm)
			break;
		/*
		 * A re-arming walk stopped early with room left in the array:
		 * before a hugetlb page that the kernel can only protect
		 * whole, and that is only partly inside [at, b) or does not
		 * fit in the array.  Report that page's pages without
		 * re-arming them (they are reported again next time: a false
		 * positive, never a lost write), then re-arm again after it,
		 * one 2 MiB step at a time.
		 */
		at = arg.walk_end > at ? arg.walk_end : at;
		plain_end = (at + MW_HUGE_STEP) & ~(uintptr_t)(MW_HUGE_STEP - 1);
		if (plain_end > b)
			plain_end = b;
	}
	*count = n;
	return 0;
}

static int uffd_reset(struct memwatch *mw, struct mw_range *r, uintptr_t a,
		      uintptr_t b)
{
	struct mw_pm_scan_arg arg;
	uintptr_t at = a;
	long ret;

	(void)r;
	while (at < b) {
		memset(&arg, 0, sizeof(arg));
		arg.flags = MW_PM_SCAN_WP_MATCHING;
		arg.start = at;
		arg.end = b;
		arg.category_mask = MW_PAGE_IS_WRITTEN;
		arg.return_mask = MW_PAGE_IS_WRITTEN;
		ret = mw_pagemap_scan(mw->pagemap_fd, &arg);
		if (ret < 0)
			return (int)ret;
		if (arg.walk_end >= b)
			break;
		/*
		 * The walk stopped at the start of a hugetlb page that is only
		 * partly inside [at, b) and cannot be protected in part: leave
		 * it written (reported again: no write lost) and go on after
		 * it, one 2 MiB step at a time (a 1 GiB page takes several).
		 */
		at = ((arg.walk_end > at ? arg.walk_end : at) + MW_HUGE_STEP) &
		     ~(uintptr_t)(MW_HUGE_STEP - 1);
	}
	return 0;
}

const struct mw_backend_ops mw_uffd_ops = {
	.name = "uffd",
	.open = uffd_open,
	.close = uffd_close,
	.add = uffd_add,
	.remove = uffd_remove,
	.get = uffd_get,
	.reset = uffd_reset,
};
