/* SPDX-License-Identifier: MIT */
/*
 * Private copy of the kernel uapi libmemwatch needs, so that it builds on
 * kernel headers older than the interfaces it probes for at run time
 * (Debian 12's 6.1 headers lack PAGEMAP_SCAN and UFFD_FEATURE_WP_ASYNC).
 * Names carry an MW_ prefix so newer system headers never clash.
 */
#ifndef MW_UAPI_H
#define MW_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>
#include <linux/userfaultfd.h>	/* UFFDIO_* as of 6.1 */

/* include/uapi/linux/fs.h (upstream 6.7; SOFT_DIRTY from 6.8) */
#define MW_PAGE_IS_WPALLOWED	(1ULL << 0)
#define MW_PAGE_IS_WRITTEN	(1ULL << 1)
#define MW_PAGE_IS_FILE		(1ULL << 2)
#define MW_PAGE_IS_PRESENT	(1ULL << 3)
#define MW_PAGE_IS_SWAPPED	(1ULL << 4)
#define MW_PAGE_IS_PFNZERO	(1ULL << 5)
#define MW_PAGE_IS_HUGE		(1ULL << 6)
#define MW_PAGE_IS_SOFT_DIRTY	(1ULL << 7)

struct mw_page_region {
	__u64 start;
	__u64 end;
	__u64 categories;
};

#define MW_PM_SCAN_WP_MATCHING		(1ULL << 0)
#define MW_PM_SCAN_CHECK_WPASYNC	(1ULL << 1)

struct mw_pm_scan_arg {
	__u64 size;
	__u64 flags;
	__u64 start;
	__u64 end;
	__u64 walk_end;
	__u64 vec;
	__u64 vec_len;
	__u64 max_pages;
	__u64 category_inverted;
	__u64 category_mask;
	__u64 category_anyof_mask;
	__u64 return_mask;
};

#define MW_PAGEMAP_SCAN		_IOWR('f', 16, struct mw_pm_scan_arg)

/* include/uapi/linux/userfaultfd.h (6.4 and 6.7) */
#define MW_UFFD_FEATURE_WP_UNPOPULATED	(1ULL << 13)
#define MW_UFFD_FEATURE_WP_ASYNC	(1ULL << 15)

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY	1
#endif

/* Documentation/admin-guide/mm/pagemap.rst: /proc/PID/pagemap entries */
#define MW_PM_PFN_MASK		((1ULL << 55) - 1)
#define MW_PM_SOFT_DIRTY	(1ULL << 55)
#define MW_PM_MMAP_EXCLUSIVE	(1ULL << 56)
#define MW_PM_UFFD_WP		(1ULL << 57)
#define MW_PM_FILE		(1ULL << 61)
#define MW_PM_SWAP		(1ULL << 62)
#define MW_PM_PRESENT		(1ULL << 63)

/* /proc/PID/clear_refs */
#define MW_CLEAR_REFS_SOFT_DIRTY "4"

#endif /* MW_UAPI_H */
