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
 *  - hugetlb: add notes the range's hugetlb VMAs (smaps), and no
 *    write-protecting call ever covers part of a huge page (by its range
 *    or its max_pages): kernels disagree on what that does;
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "internal.h"

#define MW_SCAN_REGIONS 256

_Static_assert(sizeof(struct memwatch_region) == sizeof(struct mw_page_region),
	       "struct memwatch_region is struct page_region");

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

/*
 * Does a VMA that backs a file (inode != 0 in /proc/self/maps) overlap
 * [a, b)?  Anonymous memory cannot be hugetlb; this spares the smaps read
 * (which walks every page table of the process) for most ranges.
 */
static int maybe_hugetlb(uintptr_t a, uintptr_t b)
{
	char *text, *line;
	int ret;

	ret = mw_read_proc(0, "maps", &text);
	if (ret)
		return ret;
	for (line = text; *line; ) {
		unsigned long long start, end, inode;
		char *eol = strchr(line, '\n');

		if (sscanf(line, "%llx-%llx %*s %*s %*s %llu", &start, &end,
			   &inode) == 3 && start < b && end > a && inode) {
			ret = 1;
			break;
		}
		if (!eol)
			break;
		line = eol + 1;
	}
	free(text);
	return ret;
}

/* Record the hugetlb VMAs inside r (r->huge, sorted). */
static int find_huge(struct mw_range *r)
{
	struct mw_vma_info *v = NULL;
	size_t i, n = 0;
	char *text;
	int ret;

	ret = maybe_hugetlb(r->start, r->end);
	if (ret <= 0)
		return ret;
	ret = mw_read_proc(0, "smaps", &text);
	if (ret)
		return ret;
	ret = mw_parse_smaps(text, &v, &n);
	free(text);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		struct mw_huge *h;

		if (!(v[i].flags & MW_VMA_HUGETLB) || v[i].start >= r->end ||
		    v[i].end <= r->start || v[i].page_size <= 1)
			continue;
		h = realloc(r->huge, (r->nhuge + 1) * sizeof(*h));
		if (!h) {
			ret = -ENOMEM;
			break;
		}
		r->huge = h;
		h[r->nhuge].start = v[i].start > r->start ? v[i].start : r->start;
		h[r->nhuge].end = v[i].end < r->end ? v[i].end : r->end;
		h[r->nhuge].page_size = v[i].page_size;
		r->nhuge++;
	}
	free(v);
	return ret;
}

/*
 * [a, b) is cut into pieces at the edges of r's hugetlb VMAs; *unit is the
 * piece's page size (mw->page_size outside hugetlb).  Returns the end of
 * the piece starting at a.
 */
static uintptr_t next_piece(struct memwatch *mw, struct mw_range *r,
			    uintptr_t a, uintptr_t b, uintptr_t *unit)
{
	size_t i;

	*unit = mw->page_size;
	for (i = 0; i < r->nhuge; i++) {
		const struct mw_huge *h = &r->huge[i];

		if (h->end <= a)
			continue;
		if (h->start <= a) {
			*unit = h->page_size;
			return h->end < b ? h->end : b;
		}
		return h->start < b ? h->start : b;
	}
	return b;
}

static int uffd_add(struct memwatch *mw, struct mw_range *r)
{
	struct uffdio_register reg = {
		.range = { .start = r->start, .len = r->end - r->start },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	uintptr_t a, end, unit;
	int ret;

	ret = find_huge(r);
	if (ret)
		return ret;
	if (ioctl(mw->uffd, UFFDIO_REGISTER, &reg) < 0)
		return -errno;
	if (!(reg.ioctls & (1ULL << _UFFDIO_WRITEPROTECT))) {
		/* e.g. a file mapping the kernel cannot write-protect */
		uffd_unregister(mw, r);
		return -EOPNOTSUPP;
	}
	/*
	 * One call per piece: 6.12 refuses (EINVAL) one UFFDIO_WRITEPROTECT
	 * over a hugetlb VMA and memory after it that ends off a huge page.
	 */
	for (a = r->start; a < r->end && !ret; a = end) {
		end = next_piece(mw, r, a, r->end, &unit);
		ret = uffd_wp(mw, a, end);
	}
	if (ret)
		uffd_unregister(mw, r);
	return ret;
}

static int uffd_remove(struct memwatch *mw, struct mw_range *r)
{
	int ret = uffd_unregister(mw, r);

	/*
	 * EINVAL for an aligned range the kernel registered: no mapping is
	 * left in it (unmapped without memwatch_remove()), nothing to drop.
	 */
	return ret == -EINVAL ? 0 : ret;
}

/*
 * Hand the written pages of [at, end) to the sink, in order, re-arming
 * them when arm.  unit is the piece's page size: a hugetlb page can only
 * be re-armed whole, so a re-arming call never asks for part of one: its
 * max_pages is a whole number of huge pages, and once less than one huge
 * page fits, the rest is reported without re-arming (a false positive
 * next time, never a lost write).  The caller has cut [at, end) to whole
 * huge pages when arming.  Kernels differ in what they do with a partial
 * huge page under PM_SCAN_WP_MATCHING (the patched 6.1 stops there, 6.12
 * skips it and goes on); never asking for one gives the same answer on
 * both.
 *
 * Runs go straight from the kernel into the caller's array (struct
 * memwatch_region is struct page_region): vec_len is the room left, so
 * the kernel re-arms no run that does not fit; a first run that carries
 * on the caller's last one is merged into it.  Addresses and bitmaps
 * count pages: max_pages is the room left.
 */
static int get_piece(struct memwatch *mw, uintptr_t at, uintptr_t end,
		     bool arm, uintptr_t unit, struct mw_sink *k)
{
	struct mw_page_region buf[MW_SCAN_REGIONS], *vec;
	struct mw_pm_scan_arg arg;
	size_t per = unit / mw->page_size, room, max, found, vec_len;
	bool direct = k->kind == MW_SINK_RUNS;
	long i, ret;

	while (at < end && k->n < k->cap) {
		room = mw_sink_room(k);
		max = direct ? 0 : room;
		if (arm && per > 1 && max) {
			max -= max % per;
			if (!max) {
				arm = false;
				max = room;
			}
		}
		if (direct) {
			vec = (struct mw_page_region *)(k->runs + k->n);
			vec_len = k->cap - k->n;
		} else {
			vec = buf;
			vec_len = MW_SCAN_REGIONS;
		}
		memset(&arg, 0, sizeof(arg));
		/*
		 * CHECK_WPASYNC: memory unmapped and mapped again in the range
		 * is not registered any more: -EPERM, rather than reporting
		 * all of it written without a reset re-arming any.
		 */
		arg.flags = MW_PM_SCAN_CHECK_WPASYNC |
			    (arm ? MW_PM_SCAN_WP_MATCHING : 0);
		arg.start = at;
		arg.end = end;
		arg.vec = (uintptr_t)vec;
		arg.vec_len = vec_len;
		arg.max_pages = max;
		arg.category_mask = MW_PAGE_IS_WRITTEN;
		arg.return_mask = MW_PAGE_IS_WRITTEN;
		ret = mw_pagemap_scan(mw->pagemap_fd, &arg);
		if (ret < 0)
			return (int)ret;
		found = 0;
		if (direct) {
			size_t got = (size_t)ret;

			if (got && k->n && k->runs[k->n - 1].end == vec[0].start) {
				k->runs[k->n - 1].end = vec[0].end;
				memmove(vec, vec + 1, (got - 1) * sizeof(*vec));
				got--;
			}
			k->n += got;
		} else {
			for (i = 0; i < ret; i++) {
				uintptr_t e = mw_sink_put(k, vec[i].start,
							  vec[i].end);

				found += (e - vec[i].start) / mw->page_size;
				if (e < vec[i].end)
					break;
			}
		}
		if (arg.walk_end >= end || arg.walk_end <= at)
			break;
		/* Stopped by max_pages or a full region buffer: go on. */
		if ((max && found == max) || (size_t)ret == vec_len) {
			at = arg.walk_end;
			continue;
		}
		break;	/* the mappings changed under the watch */
	}
	return 0;
}

static uintptr_t align_up(uintptr_t x, uintptr_t unit)
{
	return (x + unit - 1) & ~(unit - 1);
}

/*
 * The segment of [a, b) starting at a: its end, its page size (*unit) and
 * whether a reset may re-arm it (*arm): hugetlb pages only partly inside
 * [a, b) are segments of their own, never re-armed.
 */
static uintptr_t next_segment(struct memwatch *mw, struct mw_range *r,
			      uintptr_t a, uintptr_t b, bool reset,
			      uintptr_t *unit, bool *arm)
{
	uintptr_t end = next_piece(mw, r, a, b, unit), hs, he;

	*arm = reset;
	if (!reset || *unit == mw->page_size)
		return end;
	hs = align_up(a, *unit);
	he = end & ~(*unit - 1);
	*arm = false;
	if (hs >= he)
		return end;	/* inside one huge page that [a, b) cuts */
	if (a < hs)
		return hs;	/* the partial huge page at the start */
	*arm = true;
	return he;		/* then [he, end) is a segment of its own */
}

/*
 * The runs array filled up exactly where a segment ended (a hugetlb VMA's
 * edge): the last run may carry on in the next segment.  Look without
 * re-arming, then take the rest of the run and re-arm just that.
 */
static int extend_last_run(struct memwatch *mw, struct mw_range *r,
			   uintptr_t b, bool reset, struct mw_sink *k)
{
	struct mw_page_region reg;
	struct mw_pm_scan_arg arg;
	uintptr_t x, end, unit;
	bool arm;
	long ret;

	while ((x = k->runs[k->n - 1].end) < b) {
		end = next_segment(mw, r, x, b, reset, &unit, &arm);
		memset(&arg, 0, sizeof(arg));
		arg.flags = MW_PM_SCAN_CHECK_WPASYNC;
		arg.start = x;
		arg.end = end;
		arg.vec = (uintptr_t)&reg;
		arg.vec_len = 1;
		arg.category_mask = MW_PAGE_IS_WRITTEN;
		arg.return_mask = MW_PAGE_IS_WRITTEN;
		ret = mw_pagemap_scan(mw->pagemap_fd, &arg);
		if (ret < 0)
			return (int)ret;
		if (ret == 0 || reg.start != x)
			break;
		if (arm) {
			ret = uffd_wp(mw, x, reg.end);
			if (ret)
				return (int)ret;
		}
		k->runs[k->n - 1].end = reg.end;
		if (reg.end < end)
			break;
	}
	return 0;
}

static int uffd_get(struct memwatch *mw, struct mw_range *r, uintptr_t a,
		    uintptr_t b, bool reset, struct mw_sink *k)
{
	uintptr_t unit, end;
	bool arm;
	int ret = 0;

	while (a < b && k->n < k->cap && !ret) {
		end = next_segment(mw, r, a, b, reset, &unit, &arm);
		ret = get_piece(mw, a, end, arm, unit, k);
		a = end;
	}
	if (!ret && k->kind == MW_SINK_RUNS && k->n == k->cap && r->nhuge)
		ret = extend_last_run(mw, r, b, reset, k);
	return ret;
}

/* Re-arm the written pages of [a, b): PAGEMAP_SCAN, no output vector. */
static int reset_piece(struct memwatch *mw, uintptr_t a, uintptr_t b)
{
	struct mw_pm_scan_arg arg;
	long ret;

	while (a < b) {
		memset(&arg, 0, sizeof(arg));
		arg.flags = MW_PM_SCAN_WP_MATCHING | MW_PM_SCAN_CHECK_WPASYNC;
		arg.start = a;
		arg.end = b;
		arg.category_mask = MW_PAGE_IS_WRITTEN;
		arg.return_mask = MW_PAGE_IS_WRITTEN;
		ret = mw_pagemap_scan(mw->pagemap_fd, &arg);
		if (ret < 0)
			return (int)ret;
		if (arg.walk_end >= b || arg.walk_end <= a)
			break;
		a = arg.walk_end;
	}
	return 0;
}

/*
 * A hugetlb page only partly inside [a, b) cannot be protected in part: it
 * stays written (reported again: no write lost).
 */
static int uffd_reset(struct memwatch *mw, struct mw_range *r, uintptr_t a,
		      uintptr_t b)
{
	uintptr_t unit, end, hs, he;
	int ret = 0;

	while (a < b && !ret) {
		end = next_piece(mw, r, a, b, &unit);
		hs = align_up(a, unit);
		he = end & ~(unit - 1);
		if (hs < he)
			ret = reset_piece(mw, hs, he);
		a = end;
	}
	return ret;
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
