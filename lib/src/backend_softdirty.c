// SPDX-License-Identifier: MIT
/*
 * Write watches from the soft-dirty bit (/proc/self/pagemap bit 55) and
 * /proc/self/clear_refs.  Works on any kernel with CONFIG_MEM_SOFT_DIRTY.
 *
 * clear_refs clears the bit in the whole process, so a per-range reset is
 * done honestly: before each clear, the current soft-dirty state of every
 * page this context watches is folded into a sticky per-page byte, and
 * only the bytes of the range being reset are then dropped.  A page reads
 * as written when its sticky byte or its soft-dirty bit is set.
 *
 * Known deviations from the Windows contract (documented in memwatch(7)):
 *  - false positives: a VMA carrying VM_SOFTDIRTY reports all its pages
 *    soft-dirty; a new mapping that merges with a watched one sets it on
 *    the merged VMA, so every watched page then reads as written;
 *  - get + reset is not atomic: a write landing between the pagemap read
 *    and the clear_refs write is lost;
 *  - clear_refs is process-wide: soft-dirty users outside this context
 *    (another context, CRIU pre-dump) lose their state, and they reset ours;
 *  - transparent huge pages are tracked per PMD (2 MiB).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

#define MW_SD_BATCH 512

static int sd_open(struct memwatch *mw)
{
	int fd;

	fd = mw_open_proc(0, "pagemap", O_RDONLY);
	if (fd < 0)
		return fd;
	mw->pagemap_fd = fd;
	fd = mw_open_proc(0, "clear_refs", O_WRONLY);
	if (fd < 0) {
		close(mw->pagemap_fd);
		return fd;
	}
	mw->clear_refs_fd = fd;
	return 0;
}

static void sd_close(struct memwatch *mw)
{
	if (mw->pagemap_fd >= 0)
		close(mw->pagemap_fd);
	if (mw->clear_refs_fd >= 0)
		close(mw->clear_refs_fd);
}

/* sticky[i] |= soft-dirty(i) for the pages of [a, b) in r. */
static int sd_fold(struct memwatch *mw, struct mw_range *r, uintptr_t a,
		   uintptr_t b)
{
	uint64_t ent[MW_SD_BATCH];
	uintptr_t at = a;

	while (at < b) {
		size_t n = (b - at) / mw->page_size, i, base;
		int ret;

		if (n > MW_SD_BATCH)
			n = MW_SD_BATCH;
		ret = mw_pread_full(mw->pagemap_fd, ent, n * sizeof(ent[0]),
				    (off_t)(at / mw->page_size * 8));
		if (ret)
			return ret;
		base = (at - r->start) / mw->page_size;
		for (i = 0; i < n; i++)
			if (ent[i] & MW_PM_SOFT_DIRTY)
				atomic_store_explicit(&r->state[base + i], 1,
						      memory_order_relaxed);
		at += n * mw->page_size;
	}
	return 0;
}

/*
 * Fold every watched range, drop the sticky state of [a, b) in r, and clear
 * the soft-dirty bits of the process.
 */
static int sd_rearm(struct memwatch *mw, struct mw_range *r, uintptr_t a,
		    uintptr_t b, bool fold_r)
{
	size_t i;
	int ret;

	for (i = 0; i < mw->nranges; i++) {
		struct mw_range *o = &mw->ranges[i];

		if (o == r && !fold_r)
			continue;
		ret = sd_fold(mw, o, o->start, o->end);
		if (ret)
			return ret;
	}
	for (i = (a - r->start) / mw->page_size;
	     i < (b - r->start) / mw->page_size; i++)
		atomic_store_explicit(&r->state[i], 0, memory_order_relaxed);
	return mw_write_full(mw->clear_refs_fd, MW_CLEAR_REFS_SOFT_DIRTY, 1);
}

static int sd_add(struct memwatch *mw, struct mw_range *r)
{
	/* A new range starts clean; the others keep what they had. */
	return sd_rearm(mw, r, r->start, r->end, false);
}

static int sd_remove(struct memwatch *mw, struct mw_range *r)
{
	(void)mw;
	(void)r;
	return 0;
}

static int sd_get(struct memwatch *mw, struct mw_range *r, uintptr_t a,
		  uintptr_t b, bool reset, struct mw_sink *sink)
{
	uintptr_t stop = b, page;
	size_t i;
	int ret;

	/* Snapshot into the sticky bytes, then read them. */
	ret = sd_fold(mw, r, a, b);
	if (ret)
		return ret;
	for (i = (a - r->start) / mw->page_size;
	     i < (b - r->start) / mw->page_size; i++) {
		if (!atomic_load_explicit(&r->state[i], memory_order_relaxed))
			continue;
		page = r->start + i * mw->page_size;
		if (mw_sink_put(sink, page, page + mw->page_size) == page)
			break;	/* full: re-arm up to the last page taken */
		stop = page + mw->page_size;
	}
	if (i == (b - r->start) / mw->page_size)
		stop = b;
	if (!reset)
		return 0;
	/* The rest of r (outside [a, b)) must be folded as well. */
	return sd_rearm(mw, r, a, stop, true);
}

static int sd_reset(struct memwatch *mw, struct mw_range *r, uintptr_t a,
		    uintptr_t b)
{
	return sd_rearm(mw, r, a, b, true);
}

const struct mw_backend_ops mw_soft_dirty_ops = {
	.name = "soft-dirty",
	.open = sd_open,
	.close = sd_close,
	.add = sd_add,
	.remove = sd_remove,
	.get = sd_get,
	.reset = sd_reset,
};
