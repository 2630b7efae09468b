// SPDX-License-Identifier: MIT
/*
 * Write watches: the context, the range table and argument checking common
 * to all backends, plus the GetWriteWatch()/ResetWriteWatch() wrappers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

static const struct mw_backend_ops *backend_ops(enum memwatch_backend b)
{
	switch (b) {
	case MEMWATCH_BACKEND_UFFD:
		return &mw_uffd_ops;
	case MEMWATCH_BACKEND_SOFT_DIRTY:
		return &mw_soft_dirty_ops;
	case MEMWATCH_BACKEND_MPROTECT:
		return &mw_mprotect_ops;
	default:
		return NULL;
	}
}

static bool backend_available(const struct memwatch_probe *p,
			      enum memwatch_backend b)
{
	switch (b) {
	case MEMWATCH_BACKEND_UFFD:
		return p->backend == MEMWATCH_BACKEND_UFFD;
	case MEMWATCH_BACKEND_SOFT_DIRTY:
		return p->features & MEMWATCH_FEAT_SOFT_DIRTY;
	case MEMWATCH_BACKEND_MPROTECT:
		return true;
	default:
		return false;
	}
}

int memwatch_open(struct memwatch **out, enum memwatch_backend backend,
		  unsigned int flags)
{
	struct memwatch *mw;
	const char *env;
	int ret;

	if (!out)
		return -EFAULT;
	*out = NULL;
	if (flags & ~MEMWATCH_OPEN_NO_ENV)
		return -EINVAL;	/* EOPNOTSUPP: the backend is unavailable */
	if ((unsigned int)backend > MEMWATCH_BACKEND_MPROTECT)
		return -EINVAL;
	if (backend == MEMWATCH_BACKEND_AUTO &&
	    !(flags & MEMWATCH_OPEN_NO_ENV) &&
	    (env = secure_getenv("MEMWATCH_BACKEND")) && *env) {
		ret = memwatch_backend_from_name(env, &backend);
		if (ret)
			return ret;
	}

	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return -ENOMEM;
	memwatch_probe(&mw->probe);
	if (backend == MEMWATCH_BACKEND_AUTO)
		backend = mw->probe.backend;
	if (!backend_available(&mw->probe, backend)) {
		free(mw);
		return -EOPNOTSUPP;
	}
	mw->backend = backend;
	mw->ops = backend_ops(backend);
	mw->page_size = mw->probe.page_size;
	mw->owner = getpid();
	mw->uffd = mw->pagemap_fd = mw->clear_refs_fd = -1;
	pthread_mutex_init(&mw->lock, NULL);
	ret = mw->ops->open(mw);
	if (ret) {
		pthread_mutex_destroy(&mw->lock);
		free(mw);
		return ret;
	}
	*out = mw;
	return 0;
}

void memwatch_close(struct memwatch *mw)
{
	size_t i;

	if (!mw)
		return;
	/* In a forked child the backend only drops what is process-local. */
	mw->ops->close(mw);
	for (i = 0; i < mw->nranges; i++) {
		free((void *)mw->ranges[i].state);
		free(mw->ranges[i].huge);
	}
	free(mw->ranges);
	pthread_mutex_destroy(&mw->lock);
	free(mw);
}

enum memwatch_backend memwatch_get_backend(const struct memwatch *mw)
{
	return mw ? mw->backend : MEMWATCH_BACKEND_AUTO;
}

/* Validate [addr, addr + len) and round len up to whole pages. */
static int check_span(const struct memwatch *mw, const void *addr, size_t len,
		      uintptr_t *a, uintptr_t *b)
{
	uintptr_t start = (uintptr_t)addr;

	if (len == 0)
		return -EINVAL;
	if (start & (mw->page_size - 1))
		return -EINVAL;
	if (len > UINTPTR_MAX - start - (mw->page_size - 1))
		return -EINVAL;
	*a = start;
	*b = (start + len + mw->page_size - 1) & ~(mw->page_size - 1);
	return 0;
}

/* The registered range containing all of [a, b), or NULL. */
static struct mw_range *find_range(struct memwatch *mw, uintptr_t a,
				   uintptr_t b)
{
	size_t lo = 0, hi = mw->nranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct mw_range *r = &mw->ranges[mid];

		if (a >= r->end)
			lo = mid + 1;
		else if (a < r->start)
			hi = mid;
		else
			return b <= r->end ? r : NULL;
	}
	return NULL;
}

static int lock_ctx(struct memwatch *mw)
{
	pthread_mutex_lock(&mw->lock);
	if (getpid() != mw->owner) {
		pthread_mutex_unlock(&mw->lock);
		return -ECHILD;
	}
	return 0;
}

/* The end of a call that enter() let in: the lock dropped. */
static void leave(struct memwatch *mw)
{
	pthread_mutex_unlock(&mw->lock);
}

/* What a call works on: its span in pages and the range holding it. */
struct call {
	uintptr_t a, b;
	struct mw_range *r;
};

/*
 * The entry of every call on part of a context, its errors in this order:
 * no context (-EFAULT), flags beyond ALLOWED (-EINVAL), a bad span
 * (check_span), a forked child (lock_ctx: -ECHILD) and, with RANGE, no
 * registered range holding all of the span (-ENOENT).  Returns 0 with the
 * lock held (leave() drops it) and c filled in, or -errno without the lock.
 */
static int enter(struct memwatch *mw, const void *addr, size_t len,
		 unsigned int flags, unsigned int allowed, bool range,
		 struct call *c)
{
	int ret;

	if (!mw)
		return -EFAULT;
	if (flags & ~allowed)
		return -EINVAL;
	ret = check_span(mw, addr, len, &c->a, &c->b);
	if (ret)
		return ret;
	ret = lock_ctx(mw);
	if (ret)
		return ret;
	c->r = range ? find_range(mw, c->a, c->b) : NULL;
	if (range && !c->r) {
		leave(mw);
		return -ENOENT;
	}
	return 0;
}

/* mincore() fails with ENOMEM when part of the range is not mapped. */
static int check_mapped(struct memwatch *mw, uintptr_t a, uintptr_t b)
{
	size_t n = (b - a) / mw->page_size;
	unsigned char *vec = malloc(n);
	int ret = 0;

	if (!vec)
		return -ENOMEM;
	if (mincore((void *)a, b - a, vec) < 0)
		ret = -errno;
	free(vec);
	return ret;
}

int memwatch_add(struct memwatch *mw, void *addr, size_t len,
		 unsigned int flags)
{
	struct mw_range *r;
	struct call c;
	uintptr_t a, b;
	size_t i, pos;
	int ret;

	ret = enter(mw, addr, len, flags, MEMWATCH_ADD_NOHUGEPAGE, false, &c);
	if (ret)
		return ret;
	a = c.a;
	b = c.b;
	for (pos = 0; pos < mw->nranges && mw->ranges[pos].start < b; pos++) {
		if (mw->ranges[pos].end > a) {
			ret = -EEXIST;
			goto out;
		}
	}
	ret = check_mapped(mw, a, b);
	if (ret)
		goto out;
	if (mw->nranges == mw->cap) {
		size_t cap = mw->cap ? mw->cap * 2 : 8;
		struct mw_range *n = realloc(mw->ranges, cap * sizeof(*n));

		if (!n) {
			ret = -ENOMEM;
			goto out;
		}
		mw->ranges = n;
		mw->cap = cap;
	}
	if ((flags & MEMWATCH_ADD_NOHUGEPAGE) &&
	    madvise((void *)a, b - a, MADV_NOHUGEPAGE) < 0) {
		ret = -errno;
		goto out;
	}

	for (i = mw->nranges; i > pos; i--)
		mw->ranges[i] = mw->ranges[i - 1];
	r = &mw->ranges[pos];
	r->start = a;
	r->end = b;
	r->state = NULL;
	r->huge = NULL;
	r->nhuge = 0;
	if (mw->backend != MEMWATCH_BACKEND_UFFD) {
		r->state = calloc((b - a) / mw->page_size, 1);
		if (!r->state) {
			ret = -ENOMEM;
			goto undo;
		}
	}
	mw->nranges++;
	ret = mw->ops->add(mw, r);
	if (ret == 0)
		goto out;
	mw->nranges--;
	free((void *)r->state);
	free(r->huge);
undo:
	for (i = pos; i < mw->nranges; i++)
		mw->ranges[i] = mw->ranges[i + 1];
out:
	leave(mw);
	return ret;
}

int memwatch_remove(struct memwatch *mw, void *addr, size_t len)
{
	struct mw_range *r;
	struct call c;
	size_t pos;
	int ret;

	ret = enter(mw, addr, len, 0, 0, true, &c);
	if (ret)
		return ret;
	r = c.r;
	if (r->start != c.a || r->end != c.b) {
		ret = -ENOENT;	/* only part of a range */
		goto out;
	}
	ret = mw->ops->remove(mw, r);
	if (ret)
		goto out;
	free((void *)r->state);
	free(r->huge);
	pos = (size_t)(r - mw->ranges);
	mw->nranges--;
	memmove(r, r + 1, (mw->nranges - pos) * sizeof(*r));
out:
	leave(mw);
	return ret;
}

/*
 * The get of every output: checks, the lock, the range, then the backend
 * fills the sink.  A sink of capacity 0 takes nothing: nothing is returned
 * or re-armed.
 */
static int get_into(struct memwatch *mw, void *addr, size_t len,
		    unsigned int flags, struct mw_sink *k)
{
	struct call c;
	int ret;

	ret = enter(mw, addr, len, flags, MEMWATCH_GET_RESET, true, &c);
	if (ret)
		return ret;
	k->page_size = mw->page_size;
	k->page_shift = (unsigned int)__builtin_ctzl(mw->page_size);
	k->base = c.a;
	k->n = 0;
	k->used = true;
	if (k->cap)
		ret = mw->ops->get(mw, c.r, c.a, c.b,
				   flags & MEMWATCH_GET_RESET, k);
	leave(mw);
	return ret;
}

int memwatch_get(struct memwatch *mw, void *addr, size_t len,
		 unsigned int flags, void **pages, size_t *count)
{
	struct mw_sink k = { .kind = MW_SINK_PAGES };
	int ret;

	if (!mw || !count || (!pages && *count))
		return -EFAULT;
	k.cap = *count;
	k.pages = pages;
	ret = get_into(mw, addr, len, flags, &k);
	if (k.used)	/* bad arguments leave *count alone */
		*count = k.n;
	return ret;
}

int memwatch_get_regions(struct memwatch *mw, void *addr, size_t len,
			 unsigned int flags, struct memwatch_region *regions,
			 size_t *count)
{
	struct mw_sink k = { .kind = MW_SINK_RUNS };
	int ret;

	if (!mw || !count || (!regions && *count))
		return -EFAULT;
	k.cap = *count;
	k.runs = regions;
	ret = get_into(mw, addr, len, flags, &k);
	if (k.used)	/* bad arguments leave *count alone */
		*count = k.n;
	return ret;
}

int memwatch_get_bitmap(struct memwatch *mw, void *addr, size_t len,
			unsigned int flags, uint64_t *bitmap, size_t *count)
{
	struct mw_sink k = { .kind = MW_SINK_BITMAP };
	uintptr_t a, b;
	int ret;

	if (!mw || !count || !bitmap)
		return -EFAULT;
	if (flags & ~MEMWATCH_GET_RESET)
		return -EINVAL;
	ret = check_span(mw, addr, len, &a, &b);
	if (ret)
		return ret;
	/* Every word covering the range, the bits past its end too. */
	memset(bitmap, 0, ((b - a) / mw->page_size + 63) / 64 * sizeof(*bitmap));
	k.cap = *count;
	k.bitmap = bitmap;
	ret = get_into(mw, addr, len, flags, &k);
	if (ret && !k.n)
		memset(bitmap, 0,
		       ((b - a) / mw->page_size + 63) / 64 * sizeof(*bitmap));
	if (k.used)
		*count = k.n;
	return ret;
}

int memwatch_reset(struct memwatch *mw, void *addr, size_t len)
{
	struct call c;
	int ret;

	ret = enter(mw, addr, len, 0, 0, true, &c);
	if (ret)
		return ret;
	ret = mw->ops->reset(mw, c.r, c.a, c.b);
	leave(mw);
	return ret;
}

int memwatch_prepare_write(struct memwatch *mw, void *addr, size_t len)
{
	struct call c;
	int ret;

	ret = enter(mw, addr, len, 0, 0, true, &c);
	if (ret)
		return ret;
	if (mw->ops->prepare_write)
		ret = mw->ops->prepare_write(mw, c.r, c.a, c.b);
	leave(mw);
	return ret;
}

/*
 * Windows semantics: the base is rounded down and the end up to pages
 * (like Wine's NtGetWriteWatch()); *count is the capacity in and the number
 * of addresses out; the granularity is the page size.
 */
unsigned int memwatch_GetWriteWatch(struct memwatch *mw, uint32_t flags,
				    void *base, size_t size, void **addresses,
				    uintptr_t *count, uint32_t *granularity)
{
	uintptr_t a, pmask;
	size_t n;
	int ret;

	if (!mw || !count || !granularity)
		return EFAULT;
	if (flags & ~MEMWATCH_WRITE_WATCH_FLAG_RESET)
		return EINVAL;
	if (size == 0)
		return EINVAL;
	pmask = mw->page_size - 1;
	a = (uintptr_t)base & ~pmask;
	if (size > UINTPTR_MAX - (uintptr_t)base)
		return EINVAL;
	n = (size_t)*count;
	ret = memwatch_get(mw, (void *)a, (uintptr_t)base + size - a,
			   (flags & MEMWATCH_WRITE_WATCH_FLAG_RESET) ?
			   MEMWATCH_GET_RESET : 0, addresses, &n);
	if (ret)
		return (unsigned int)-ret;
	*count = n;
	*granularity = (uint32_t)mw->page_size;
	return 0;
}

unsigned int memwatch_ResetWriteWatch(struct memwatch *mw, void *base,
				      size_t size)
{
	uintptr_t a;

	if (!mw)
		return EFAULT;
	if (size == 0)
		return EINVAL;
	if (size > UINTPTR_MAX - (uintptr_t)base)
		return EINVAL;
	a = (uintptr_t)base & ~(mw->page_size - 1);
	return (unsigned int)-memwatch_reset(mw, (void *)a,
					     (uintptr_t)base + size - a);
}
