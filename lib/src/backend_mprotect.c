// SPDX-License-Identifier: MIT
/*
 * Write watches by write-protecting pages and catching the fault (Wine's
 * classic fallback; any kernel).  A watched page is read-only until its
 * first write, which the SIGSEGV handler records before making the page
 * writable again.
 *
 * The handler has no context argument, so this backend keeps the little
 * state it strictly needs in file scope: the table of watched ranges of all
 * contexts (published with one atomic pointer, freed only once no handler
 * can still be reading it), the previous SIGSEGV action it chains to, and
 * the lock that serialises table updates.
 *
 * Per-page state (one byte each, shared with the handler):
 *   CLEAN   read-only, not written since the last reset;
 *   OPENING the handler (or prepare_write) is making it writable;
 *   WRITTEN writable, written since the last reset;
 *   ARMING  a reset is write-protecting it.
 * Only the thread that moved a page to OPENING changes its protection to
 * writable, and it stores WRITTEN after its mprotect() returns; a fault on
 * an OPENING page just returns and the access faults again until the page
 * is open.  A get with reset (and a reset) protects first and reports
 * after: it moves the written pages it will report WRITTEN -> ARMING, and
 * those pages only, write-protects them, and then ARMING -> CLEAN with a
 * compare-and-swap that fails if a write faulted in between (the page is
 * then OPENING or WRITTEN).  It reports the OPENING pages it meets too,
 * without touching them: another thread may already have written an
 * OPENING page, which is writable from the handler's mprotect() on,
 * before the handler stores WRITTEN.  A page is reported exactly
 * when it was moved to ARMING or seen OPENING, so a write that lands after
 * the selection (on a clean page, or on an ARMING page after its
 * protection) faults and leaves the page OPENING, then WRITTEN, to be
 * reported next time; a write between the selection and the protection is
 * reported now.  No write racing a get or a reset is lost, and no write
 * done before a get began is missing from it.
 *
 * The handler runs with every signal blocked, so no signal handler that
 * writes watched memory can interrupt it while it holds a page OPENING
 * (that access would fault forever); prepare_write blocks them around the
 * same step.
 *
 * Protections: only memory that is readable and writable, with one
 * protection throughout (rw- or rwx), is watched (anything else is
 * refused with EACCES, untouched); a clean page keeps that protection
 * minus PROT_WRITE (code in a watched rwx page still runs), a written page
 * and a removed range get it back exactly.
 *
 * Documented limits: the kernel does not fault on its own writes into
 * protected pages (read(2) into a watched buffer fails with EFAULT):
 * callers pass such buffers to memwatch_prepare_write() first.  Callers
 * must not mprotect() watched memory themselves; every watched page that
 * is written splits a VMA.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "internal.h"

enum { MW_PG_CLEAN = 0, MW_PG_WRITTEN = 1, MW_PG_ARMING = 2, MW_PG_OPENING = 3 };

struct mp_entry {
	uintptr_t start, end;
	_Atomic unsigned char *state;
	const struct memwatch *owner;
	int prot;			/* of a written page */
};

struct mp_table {
	size_t n;
	struct mp_entry e[];
};

/* The handler state (see above). */
static _Atomic(struct mp_table *) mp_table;
static atomic_int mp_readers;
static pthread_mutex_t mp_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction mp_old;
static bool mp_installed;
static uintptr_t mp_page_size;

static bool fault_is_write(void *ucv)
{
#if defined(__x86_64__) || defined(__i386__)
	ucontext_t *uc = ucv;

	return uc->uc_mcontext.gregs[REG_ERR] & 0x2;
#else
	(void)ucv;
	return true;
#endif
}

static void mp_chain(int sig, siginfo_t *si, void *uc)
{
	ucontext_t *ctx = uc;
	sigset_t mask = ctx->uc_sigmask;
	int s;

	/*
	 * Ours runs with every signal blocked; the old handler gets the mask
	 * the kernel would have given it.
	 */
	for (s = 1; s < NSIG; s++)
		if (sigismember(&mp_old.sa_mask, s) == 1)
			sigaddset(&mask, s);
	if (!(mp_old.sa_flags & SA_NODEFER))
		sigaddset(&mask, sig);
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	if (mp_old.sa_flags & SA_SIGINFO) {
		mp_old.sa_sigaction(sig, si, uc);
	} else if (mp_old.sa_handler == SIG_DFL ||
		   mp_old.sa_handler == SIG_IGN) {
		/* Re-executing the access now kills us as it would have. */
		struct sigaction dfl;

		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigaction(sig, &dfl, NULL);
	} else {
		mp_old.sa_handler(sig);
	}
}

static const struct mp_entry *mp_lookup(const struct mp_table *t, uintptr_t a)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a >= t->e[mid].end)
			lo = mid + 1;
		else if (a < t->e[mid].start)
			hi = mid;
		else
			return &t->e[mid];
	}
	return NULL;
}

/*
 * Make one page writable and record the write: handler and prepare_write.
 * Returns false with errno set if mprotect() failed.  With !wait (the
 * handler), a page another thread is opening is left to it: the faulting
 * access runs again once the page is open.  prepare_write waits instead,
 * since the kernel's own write that follows does not fault.
 */
static bool mp_mark_written(const struct mp_entry *e, uintptr_t addr,
			    bool wait)
{
	uintptr_t page = addr & ~(mp_page_size - 1);
	_Atomic unsigned char *st = &e->state[(page - e->start) / mp_page_size];
	unsigned char s = atomic_load(st);
	int err;

	for (;;) {
		if (s == MW_PG_OPENING) {
			if (!wait)
				return true;
			sched_yield();
			s = atomic_load(st);
			continue;
		}
		if (atomic_compare_exchange_weak(st, &s, MW_PG_OPENING))
			break;
	}
	err = mprotect((void *)page, mp_page_size, e->prot) < 0 ? errno : 0;
	/* WRITTEN after a failure too: maybe writable, so report it. */
	atomic_store(st, MW_PG_WRITTEN);
	errno = err;
	return err == 0;
}

static void mp_handler(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno;
	const struct mp_entry *e;
	struct mp_table *t;
	bool handled = false;

	atomic_fetch_add(&mp_readers, 1);
	t = atomic_load(&mp_table);
	if (t && si->si_code == SEGV_ACCERR && fault_is_write(uc)) {
		e = mp_lookup(t, (uintptr_t)si->si_addr);
		if (e)
			handled = mp_mark_written(e, (uintptr_t)si->si_addr,
						  false);
	}
	atomic_fetch_sub(&mp_readers, 1);
	errno = saved_errno;
	if (!handled)
		mp_chain(sig, si, uc);
}

/* Swap in a new table and free the old once no handler can see it. */
static void mp_publish(struct mp_table *t)
{
	struct mp_table *old = atomic_exchange(&mp_table, t);

	while (atomic_load(&mp_readers))
		sched_yield();
	free(old);
}

static int mp_install(void)
{
	struct sigaction sa;

	if (mp_installed)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = mp_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigfillset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &mp_old) < 0)
		return -errno;
	/* Stays installed: restoring could clobber a handler set after us. */
	mp_installed = true;
	return 0;
}

/* Insert (add) or drop (!add) the entry for r; called with mp_lock held. */
static int mp_update(struct memwatch *mw, struct mw_range *r, bool add)
{
	struct mp_table *cur = atomic_load(&mp_table), *t;
	size_t n = cur ? cur->n : 0, i, j = 0;

	t = malloc(sizeof(*t) + (n + 1) * sizeof(t->e[0]));
	if (!t)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct mp_entry *e = &cur->e[i];

		if (add && e->start < r->end && r->start < e->end) {
			free(t);
			return -EEXIST;	/* watched by another context */
		}
		if (!add && e->start == r->start && e->owner == mw)
			continue;
		if (add && j == i && e->start > r->start)
			t->e[j++] = (struct mp_entry){ r->start, r->end,
						       r->state, mw, r->prot };
		t->e[j++] = *e;
	}
	if (add && j == n)
		t->e[j++] = (struct mp_entry){ r->start, r->end, r->state, mw,
					       r->prot };
	t->n = j;
	mp_publish(t);
	return 0;
}

static int mp_open(struct memwatch *mw)
{
	int ret;

	pthread_mutex_lock(&mp_lock);
	mp_page_size = mw->page_size;
	ret = mp_install();
	pthread_mutex_unlock(&mp_lock);
	return ret;
}

/* Parse "START-END PERMS" at the start of a /proc/self/maps line. */
static bool mp_maps_line(const char *line, uintptr_t *lo, uintptr_t *hi,
			 int *prot)
{
	char *end;

	*lo = (uintptr_t)strtoull(line, &end, 16);
	if (*end != '-')
		return false;
	*hi = (uintptr_t)strtoull(end + 1, &end, 16);
	if (*end != ' ' || strlen(end) < 5)
		return false;
	*prot = (end[1] == 'r' ? PROT_READ : 0) |
		(end[2] == 'w' ? PROT_WRITE : 0) |
		(end[3] == 'x' ? PROT_EXEC : 0);
	return true;
}

/*
 * The protection of [a, b) from /proc/self/maps: 0 and *prot when it is
 * one protection throughout that includes read and write, -EACCES when it
 * is not, -ENOMEM when part of [a, b) is not mapped.
 */
static int mp_range_prot(uintptr_t a, uintptr_t b, int *prot)
{
	size_t len = 0, cap = 16384;
	char *text = malloc(cap), *line, *eol;
	uintptr_t at = a, lo, hi;
	int fd, p, ret = -ENOMEM;

	if (!text)
		return -ENOMEM;
	fd = mw_open_proc(0, "maps", O_RDONLY);
	if (fd < 0) {
		free(text);
		return fd;
	}
	for (;;) {
		ssize_t n;

		if (cap - len < 4096) {
			char *nt = realloc(text, cap * 2);

			if (!nt) {
				ret = -ENOMEM;
				goto out;
			}
			text = nt;
			cap *= 2;
		}
		n = read(fd, text + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	text[len] = '\0';
	*prot = -1;
	for (line = text; *line && at < b; line = eol ? eol + 1 : line + strlen(line)) {
		eol = strchr(line, '\n');
		if (eol)
			*eol = '\0';
		if (!mp_maps_line(line, &lo, &hi, &p) || hi <= at)
			continue;
		if (lo > at)
			break;			/* a hole: -ENOMEM */
		if ((p & (PROT_READ | PROT_WRITE)) != (PROT_READ | PROT_WRITE) ||
		    (*prot != -1 && p != *prot)) {
			ret = -EACCES;
			goto out;
		}
		*prot = p;
		at = hi;
	}
	if (at >= b)
		ret = 0;
out:
	close(fd);
	free(text);
	return ret;
}

static int mp_add(struct memwatch *mw, struct mw_range *r)
{
	int ret;

	ret = mp_range_prot(r->start, r->end, &r->prot);
	if (ret)
		return ret;
	pthread_mutex_lock(&mp_lock);
	ret = mp_update(mw, r, true);
	if (ret == 0 && mprotect((void *)r->start, r->end - r->start,
				 r->prot & ~PROT_WRITE) < 0) {
		ret = -errno;
		mp_update(mw, r, false);
	}
	pthread_mutex_unlock(&mp_lock);
	return ret;
}

/*
 * Put back the protection found at add.  Part of the range may have been
 * unmapped without memwatch_remove() (memwatch(7)): then the rest.
 */
static int mp_unprotect(struct memwatch *mw, struct mw_range *r)
{
	uintptr_t a;

	if (mprotect((void *)r->start, r->end - r->start, r->prot) == 0)
		return 0;
	if (errno != ENOMEM)
		return -errno;
	for (a = r->start; a < r->end; a += mw->page_size)
		if (mprotect((void *)a, mw->page_size, r->prot) < 0 &&
		    errno != ENOMEM)
			return -errno;
	return 0;
}

static int mp_remove(struct memwatch *mw, struct mw_range *r)
{
	int ret;

	pthread_mutex_lock(&mp_lock);
	ret = mp_unprotect(mw, r);
	if (!ret)
		ret = mp_update(mw, r, false);
	pthread_mutex_unlock(&mp_lock);
	return ret;
}

static void mp_close(struct memwatch *mw)
{
	size_t i;

	for (i = 0; i < mw->nranges; i++)
		mp_remove(mw, &mw->ranges[i]);
}

/*
 * Re-arm the written pages among pages [i, j) of r; with a sink, only
 * those it takes, in order, until it is full.  Protect first, report
 * after (see the top of the file): exactly the pages moved to ARMING are
 * protected and handed to the sink; after a failure the sink holds none.
 */
static int mp_arm(struct memwatch *mw, struct mw_range *r, size_t i,
		  size_t j, struct mw_sink *sink)
{
	size_t k, end, run = 0, run_start = i;
	uintptr_t page;
	int ret = 0;

	for (k = i; k < j; k++) {
		unsigned char s = atomic_load(&r->state[k]);

		page = r->start + k * mw->page_size;
		if (s != MW_PG_WRITTEN && s != MW_PG_OPENING)
			continue;
		if (sink && !mw_sink_fits(sink, page))
			break;
		/* An OPENING page is reported and left to its opener. */
		while (s == MW_PG_WRITTEN &&
		       !atomic_compare_exchange_weak(&r->state[k], &s,
						     MW_PG_ARMING))
			;
		if (sink && (s == MW_PG_WRITTEN || s == MW_PG_OPENING))
			mw_sink_put(sink, page, page + mw->page_size);
	}
	end = k;
	for (k = i; k <= end && !ret; k++) {
		if (k < end && atomic_load(&r->state[k]) == MW_PG_ARMING) {
			if (!run++)
				run_start = k;
			continue;
		}
		if (run && mprotect((void *)(r->start +
					     run_start * mw->page_size),
				    run * mw->page_size, r->prot & ~PROT_WRITE) < 0)
			ret = -errno;
		run = 0;
	}
	for (k = i; k < end; k++) {
		unsigned char expect = MW_PG_ARMING;

		/*
		 * After a failure, pages left ARMING may still be writable:
		 * WRITTEN again, they are reported next time (nothing lost).
		 */
		atomic_compare_exchange_strong(&r->state[k], &expect,
					       ret ? MW_PG_WRITTEN : MW_PG_CLEAN);
	}
	if (ret && sink)
		sink->n = 0;
	return ret;
}

static int mp_get(struct memwatch *mw, struct mw_range *r, uintptr_t a,
		  uintptr_t b, bool reset, struct mw_sink *sink)
{
	size_t first = (a - r->start) / mw->page_size;
	size_t last = (b - r->start) / mw->page_size, k;
	uintptr_t page;

	if (reset)
		return mp_arm(mw, r, first, last, sink);
	for (k = first; k < last; k++) {
		if (atomic_load(&r->state[k]) == MW_PG_CLEAN)
			continue;
		page = r->start + k * mw->page_size;
		if (mw_sink_put(sink, page, page + mw->page_size) == page)
			break;
	}
	return 0;
}

static int mp_reset(struct memwatch *mw, struct mw_range *r, uintptr_t a,
		    uintptr_t b)
{
	return mp_arm(mw, r, (a - r->start) / mw->page_size,
		      (b - r->start) / mw->page_size, NULL);
}

static int mp_prepare_write(struct memwatch *mw, struct mw_range *r,
			    uintptr_t a, uintptr_t b)
{
	struct mp_entry e = { r->start, r->end, r->state, mw, r->prot };
	sigset_t all, old;
	int ret = 0;

	/* No signal handler may fault on a page this thread holds OPENING. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (; a < b && !ret; a += mw->page_size)
		if (!mp_mark_written(&e, a, true))
			ret = -errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

const struct mw_backend_ops mw_mprotect_ops = {
	.name = "mprotect",
	.open = mp_open,
	.close = mp_close,
	.add = mp_add,
	.remove = mp_remove,
	.get = mp_get,
	.reset = mp_reset,
	.prepare_write = mp_prepare_write,
};
