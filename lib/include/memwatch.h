/* SPDX-License-Identifier: MIT */
/*
 * memwatch.h - exact write tracking and page scans for Linux processes.
 *
 * Two facilities:
 *   - write watches (GetWriteWatch()/ResetWriteWatch() semantics) over
 *     ranges of the calling process, on the best backend the running kernel
 *     offers: userfaultfd WP_ASYNC + PAGEMAP_SCAN (exact), soft-dirty, or
 *     mprotect + SIGSEGV;
 *   - page scans: iterate the page regions of this or another process by
 *     category (present, swapped, file, zero pfn, huge, soft-dirty, written).
 *
 * Every function returning int returns 0 (or a count) on success and a
 * negative errno value on failure; the library never prints.  See
 * memwatch(7) for the overview and one man page per function.
 *
 * This header depends only on the C library: it compiles with
 * -std=c11 -pedantic on systems whose kernel headers lack PAGEMAP_SCAN.
 */
#ifndef MEMWATCH_H
#define MEMWATCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MEMWATCH_VERSION_MAJOR	1
#define MEMWATCH_VERSION_MINOR	1

/*
 * Page categories.  Bit for bit the kernel's PAGE_IS_* values of the
 * PAGEMAP_SCAN ioctl, so regions can be handed to code that uses the uapi.
 */
#define MEMWATCH_PAGE_WPALLOWED		(1ULL << 0)
#define MEMWATCH_PAGE_WRITTEN		(1ULL << 1)
#define MEMWATCH_PAGE_FILE		(1ULL << 2)
#define MEMWATCH_PAGE_PRESENT		(1ULL << 3)
#define MEMWATCH_PAGE_SWAPPED		(1ULL << 4)
#define MEMWATCH_PAGE_PFNZERO		(1ULL << 5)
#define MEMWATCH_PAGE_HUGE		(1ULL << 6)
#define MEMWATCH_PAGE_SOFT_DIRTY	(1ULL << 7)

/* ------------------------------------------------------------------ */
/* Probe                                                              */
/* ------------------------------------------------------------------ */

enum memwatch_backend {
	MEMWATCH_BACKEND_AUTO = 0,	/* best available (or $MEMWATCH_BACKEND) */
	MEMWATCH_BACKEND_UFFD = 1,	/* uffd WP_ASYNC + PAGEMAP_SCAN: exact */
	MEMWATCH_BACKEND_SOFT_DIRTY = 2,/* pagemap bit 55 + clear_refs */
	MEMWATCH_BACKEND_MPROTECT = 3	/* mprotect + SIGSEGV handler */
};

/* struct memwatch_probe.features */
#define MEMWATCH_FEAT_UFFD			(1ULL << 0) /* userfaultfd(2) usable */
#define MEMWATCH_FEAT_UFFD_WP			(1ULL << 1) /* write-protect mode */
#define MEMWATCH_FEAT_UFFD_WP_UNPOPULATED	(1ULL << 2)
#define MEMWATCH_FEAT_UFFD_WP_ASYNC		(1ULL << 3)
#define MEMWATCH_FEAT_PAGEMAP			(1ULL << 4) /* /proc/self/pagemap */
#define MEMWATCH_FEAT_PAGEMAP_SCAN		(1ULL << 5) /* the ioctl */
#define MEMWATCH_FEAT_SOFT_DIRTY		(1ULL << 6) /* CONFIG_MEM_SOFT_DIRTY */
#define MEMWATCH_FEAT_PAGEMAP_PFN		(1ULL << 7) /* PFNs visible to us */

struct memwatch_probe {
	uint64_t features;		/* MEMWATCH_FEAT_* */
	uint64_t uffd_features;		/* UFFDIO_API features the kernel offers */
	uint64_t scan_categories;	/* category bits PAGEMAP_SCAN accepts */
	int uffd_errno;			/* why userfaultfd failed, or 0 */
	int scan_errno;			/* errno of a zero-length PAGEMAP_SCAN, or 0 */
	enum memwatch_backend backend;	/* the best write-watch backend */
	unsigned int page_size;
	uint64_t reserved[6];
};

int memwatch_probe(struct memwatch_probe *probe);
const char *memwatch_backend_name(enum memwatch_backend backend);
int memwatch_backend_from_name(const char *name, enum memwatch_backend *backend);

/* ------------------------------------------------------------------ */
/* Write watches                                                      */
/* ------------------------------------------------------------------ */

struct memwatch;

/* memwatch_open() flags */
#define MEMWATCH_OPEN_NO_ENV		(1U << 0) /* ignore $MEMWATCH_BACKEND */

/* memwatch_add() flags */
#define MEMWATCH_ADD_NOHUGEPAGE		(1U << 0) /* madvise(MADV_NOHUGEPAGE) */

/* memwatch_get() flags */
#define MEMWATCH_GET_RESET		(1U << 0) /* re-arm what is returned */

int memwatch_open(struct memwatch **mw, enum memwatch_backend backend,
		  unsigned int flags);
void memwatch_close(struct memwatch *mw);
enum memwatch_backend memwatch_get_backend(const struct memwatch *mw);

int memwatch_add(struct memwatch *mw, void *addr, size_t len,
		 unsigned int flags);
int memwatch_remove(struct memwatch *mw, void *addr, size_t len);
int memwatch_get(struct memwatch *mw, void *addr, size_t len,
		 unsigned int flags, void **pages, size_t *count);
int memwatch_reset(struct memwatch *mw, void *addr, size_t len);

/*
 * The same get in two more shapes (MEMWATCH_1.1), with the same flags,
 * atomic reset and capacity rule (memwatch_get_regions(3)):
 *  - runs of written pages, [start, end) in struct memwatch_region
 *    (categories MEMWATCH_PAGE_WRITTEN), maximal and ascending; *count is
 *    the capacity in runs on entry, the number stored on return;
 *  - a bitmap, bit i (bitmap[i / 64] >> (i % 64) & 1) for page i of the
 *    range; the caller's buffer holds (pages + 63) / 64 words, all of
 *    them rewritten; *count is the most bits to set on entry (SIZE_MAX:
 *    no limit), the number set on return.
 */
struct memwatch_region;
int memwatch_get_regions(struct memwatch *mw, void *addr, size_t len,
			 unsigned int flags, struct memwatch_region *regions,
			 size_t *count);
int memwatch_get_bitmap(struct memwatch *mw, void *addr, size_t len,
			unsigned int flags, uint64_t *bitmap, size_t *count);
int memwatch_prepare_write(struct memwatch *mw, void *addr, size_t len);

/* Windows-shaped wrappers: 0 on success, a positive errno on failure. */
#define MEMWATCH_WRITE_WATCH_FLAG_RESET	1U

unsigned int memwatch_GetWriteWatch(struct memwatch *mw, uint32_t flags,
				    void *base, size_t size, void **addresses,
				    uintptr_t *count, uint32_t *granularity);
unsigned int memwatch_ResetWriteWatch(struct memwatch *mw, void *base,
				      size_t size);

/* ------------------------------------------------------------------ */
/* Page scans                                                         */
/* ------------------------------------------------------------------ */

struct memwatch_scan;

/* Same layout as the kernel's struct page_region. */
struct memwatch_region {
	uint64_t start;
	uint64_t end;
	uint64_t categories;
};

/* The PAGEMAP_SCAN matching rules; end == 0 means "to the last mapping". */
struct memwatch_scan_query {
	uint64_t start;
	uint64_t end;
	uint64_t category_inverted;
	uint64_t category_mask;
	uint64_t category_anyof_mask;
	uint64_t return_mask;
	uint64_t max_pages;		/* 0: no limit */
};

struct memwatch_vma {
	uint64_t start;
	uint64_t end;
	uint64_t offset;
	unsigned int prot;		/* PROT_READ | PROT_WRITE | PROT_EXEC */
	unsigned int shared;		/* 1 for MAP_SHARED */
	char name[252];			/* path, [heap], [stack], or "" */
	unsigned int flags;		/* MEMWATCH_VMA_* */
};

/* struct memwatch_vma.flags */
#define MEMWATCH_VMA_NAME_TRUNCATED	(1U << 0) /* name: the first 251 bytes */

/* memwatch_scan_open*() flags */
#define MEMWATCH_SCAN_PREAD		(1U << 0) /* don't use PAGEMAP_SCAN */

int memwatch_scan_open(struct memwatch_scan **scan, pid_t pid,
		       unsigned int flags);
int memwatch_scan_open_pidfd(struct memwatch_scan **scan, int pidfd,
			     unsigned int flags);
void memwatch_scan_close(struct memwatch_scan *scan);
uint64_t memwatch_scan_categories(const struct memwatch_scan *scan);
int memwatch_scan_uses_ioctl(const struct memwatch_scan *scan);
int memwatch_scan_begin(struct memwatch_scan *scan,
			const struct memwatch_scan_query *query);
int memwatch_scan_next(struct memwatch_scan *scan,
		       struct memwatch_region *region);
int memwatch_scan_vmas(struct memwatch_scan *scan, struct memwatch_vma **vmas,
		       size_t *count);

#ifdef __cplusplus
}
#endif

#endif /* MEMWATCH_H */
