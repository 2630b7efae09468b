/* SPDX-License-Identifier: MIT */
/* libmemwatch internals: the context, its ranges and the backend interface. */
#ifndef MW_INTERNAL_H
#define MW_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "memwatch.h"
#include "uapi.h"

#define MW_HIDDEN __attribute__((visibility("hidden")))

/* A VMA as /proc/PID/smaps describes it (util.c). */
#define MW_VMA_HUGETLB	(1U << 0)	/* VmFlags "ht" */
#define MW_VMA_PFNMAP	(1U << 1)	/* "pf": PAGEMAP_SCAN skips it */
#define MW_VMA_IO	(1U << 2)	/* "io" */
#define MW_VMA_UFFD_WP	(1U << 3)	/* "uw": registered for uffd-wp */
#define MW_VMA_ANON	(1U << 4)	/* private anonymous memory */

struct mw_vma_info {
	uintptr_t start;
	uintptr_t end;
	uintptr_t page_size;		/* KernelPageSize */
	unsigned int flags;		/* MW_VMA_* */
};

/* A hugetlb part of a watched range: [start, end), pages of page_size. */
struct mw_huge {
	uintptr_t start;
	uintptr_t end;
	uintptr_t page_size;
};

/* One watched range, [start, end), page aligned. */
struct mw_range {
	uintptr_t start;
	uintptr_t end;
	/*
	 * Per-page state, one byte a page.  soft-dirty: "written before the
	 * last process-wide clear_refs" (sticky); mprotect: MW_PG_* below,
	 * shared with the SIGSEGV handler.  Unused by the uffd backend.
	 */
	_Atomic unsigned char *state;
	/*
	 * mprotect backend: the protection found at add, PROT_READ |
	 * PROT_WRITE [| PROT_EXEC]; a clean page has it without PROT_WRITE,
	 * and remove puts it back.
	 */
	int prot;
	/*
	 * uffd backend: the hugetlb VMAs inside the range when it was added
	 * (sorted), so that no write-protecting scan cuts a huge page.
	 */
	struct mw_huge *huge;
	size_t nhuge;
};

struct memwatch;

/*
 * Where a get puts the written pages it finds (output.c): an address
 * array (memwatch_get), runs (memwatch_get_regions) or a bitmap
 * (memwatch_get_bitmap).  Backends hand it pages or runs in ascending
 * order; it takes what fits and says where it stopped, so that a reset
 * re-arms exactly what was returned.
 */
enum mw_sink_kind { MW_SINK_PAGES, MW_SINK_RUNS, MW_SINK_BITMAP };

struct mw_sink {
	enum mw_sink_kind kind;
	uintptr_t page_size;
	unsigned int page_shift;
	size_t cap;		/* pages, runs, or bits to set (bitmap) */
	size_t n;		/* entries stored: pages, runs or bits set */
	void **pages;		/* MW_SINK_PAGES */
	struct memwatch_region *runs;	/* MW_SINK_RUNS */
	uint64_t *bitmap;	/* MW_SINK_BITMAP: bit i is page base + i */
	uintptr_t base;
	bool used;		/* the arguments passed: *count is set */
};

/*
 * Take the written pages [s, e) (page aligned, after everything taken
 * before); returns the end of what was taken (s when nothing fits).
 */
uintptr_t mw_sink_put(struct mw_sink *k, uintptr_t s, uintptr_t e) MW_HIDDEN;
/* Would a written page at addr be taken? */
bool mw_sink_fits(const struct mw_sink *k, uintptr_t addr) MW_HIDDEN;
/* How many more pages can be taken: SIZE_MAX for runs (counted apart). */
size_t mw_sink_room(const struct mw_sink *k) MW_HIDDEN;

struct mw_backend_ops {
	const char *name;
	int (*open)(struct memwatch *mw);
	void (*close)(struct memwatch *mw);
	/* r is already in mw->ranges (state allocated and zeroed). */
	int (*add)(struct memwatch *mw, struct mw_range *r);
	/* r is still in mw->ranges; it is dropped after this returns. */
	int (*remove)(struct memwatch *mw, struct mw_range *r);
	/*
	 * Hand the written pages of [a, b) of r to the sink, in ascending
	 * order, until it is full; with reset, re-arm exactly the pages it
	 * took when it filled up, else the whole of [a, b).
	 */
	int (*get)(struct memwatch *mw, struct mw_range *r, uintptr_t a,
		   uintptr_t b, bool reset, struct mw_sink *sink);
	int (*reset)(struct memwatch *mw, struct mw_range *r, uintptr_t a,
		     uintptr_t b);
	int (*prepare_write)(struct memwatch *mw, struct mw_range *r,
			     uintptr_t a, uintptr_t b);
};

struct memwatch {
	pthread_mutex_t lock;
	const struct mw_backend_ops *ops;
	enum memwatch_backend backend;
	struct memwatch_probe probe;
	uintptr_t page_size;
	pid_t owner;			/* getpid() at open: fork detection */
	struct mw_range *ranges;	/* sorted by start, disjoint */
	size_t nranges, cap;
	int uffd;			/* uffd backend */
	int pagemap_fd;			/* uffd, soft-dirty backends */
	int clear_refs_fd;		/* soft-dirty backend */
};

extern const struct mw_backend_ops mw_uffd_ops MW_HIDDEN;
extern const struct mw_backend_ops mw_soft_dirty_ops MW_HIDDEN;
extern const struct mw_backend_ops mw_mprotect_ops MW_HIDDEN;

/* Helpers shared by the backends (util.c). */
int mw_open_proc(pid_t pid, const char *file, int flags) MW_HIDDEN;
int mw_pread_full(int fd, void *buf, size_t len, off_t off) MW_HIDDEN;
int mw_write_full(int fd, const void *buf, size_t len) MW_HIDDEN;
long mw_pagemap_scan(int fd, struct mw_pm_scan_arg *arg) MW_HIDDEN;
int mw_uffd_create(void) MW_HIDDEN;
int mw_read_file(int fd, char **out) MW_HIDDEN;
int mw_read_proc(pid_t pid, const char *file, char **out) MW_HIDDEN;
void *mw_grow(void *arr, size_t *cap, size_t n, size_t size) MW_HIDDEN;
int mw_parse_smaps(const char *text, struct mw_vma_info **out,
		   size_t *count) MW_HIDDEN;

#endif /* MW_INTERNAL_H */
