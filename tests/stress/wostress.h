/* SPDX-License-Identifier: MIT */
/*
 * wostress's parts (tests/stress/wostress.c tells what it checks): the
 * regions, the logs and the context they share, the helpers small enough
 * to inline, and what each file offers the others:
 *   wostress.c          main(): the options, the guest check, the mode
 *   wostress-oracle.c   set-up, writers, the harvester, the checks
 *   wostress-dense.c    the default mode (dense_main)
 *   wostress-hot.c      --hot-thp (hot_main)
 *   wostress-sparse.c   --sparse (sparse_main)
 */
#ifndef WOSTRESS_H
#define WOSTRESS_H

#include "mw-test.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <linux/fs.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mw-marker.h"


#define PSZ	4096UL
#define HPSZ	(2UL << 20)
#define NSLOT	8		/* value slots per unit; the last is the child's */
#define LOGCAP	(1U << 23)	/* writes logged per writer (8M: ~1 h) */
#define MAXW	(NSLOT - 1)
#define NHOT	4		/* --hot-thp: hot pages in the THP */
#define HOTCAP	(1U << 20)	/* --hot-thp: writes logged per writer */

/* K_SPARSE*: --sparse only, and only they (see sparse_main()). */
enum kind { K_ANON, K_THP, K_SHMEM, K_MEMFD, K_TMPFS, K_EXT4, K_HUGE_PRIV,
	    K_HUGE_SHARED, K_SPARSE, K_SPARSE_THP, K_NKINDS };

extern const char *const kind_name[K_NKINDS];

/* The ops from OP_REARM on: --sparse's disruptor only. */
enum op { OP_DONTNEED, OP_PAGEOUT, OP_COLLAPSE, OP_MPROTECT, OP_MREMAP,
	  OP_REMAP, OP_REREGISTER, OP_FORK, OP_COMPACT, OP_REARM,
	  OP_UNPROTECT, OP_NOPS };
#define OP_NDENSE OP_REARM

extern const char *const op_name[OP_NOPS];

struct chunkops;

/*
 * A sparse region (--sparse) is a large reservation whose units are a few
 * scattered 4K pages: unit i is page tgt[i] (ascending), the other pages
 * are never written by anyone.  Its 2 MiB chunks keep the disruptions of
 * each (struct chunkops), some of which legitimately let a page nobody
 * wrote read as written for a while, and its spare 2 MiB after the end
 * (park) receives the chunks mremap moves out and back.
 */
struct region {
	enum kind kind;
	char *base;		/* under lock */
	size_t len, unit, nunits;
	uint32_t first;		/* global index of unit 0 */
	bool priv, huge;
	int fd;			/* backing object, or -1 */
	pthread_rwlock_t lock;
	uint32_t *tgt;		/* sparse: the page of each unit */
	size_t nchunks;		/* sparse: len / 2 MiB */
	struct chunkops *cops;	/* sparse: per chunk (the disruptor's) */
};

/*
 * Every event is stamped with the shared clock (one atomic counter): a
 * write with [tb, te] around its store, a PAGEMAP_SCAN call with [c0, c1]
 * around the ioctl, a disruption with [t0, t1] around the operation.
 */
struct span {
	uint64_t a, b;
};

/* One logged write: its unit, its writer, the value it stored, its span. */
struct wlog {
	uint32_t unit, w;
	uint64_t seq;
	uint64_t tb, te;
};

/*
 * A PAGEMAP_SCAN call that reported (or reset) a unit: its span, and what
 * the harvester read back from the unit's slots right after the ioctl
 * returned (at clock rd).  Each writer stores its own increasing sequence
 * number into its slot, so a write whose number is above snap[w] had not
 * landed when the call had returned: it landed after the call armed the
 * unit and this call cannot have reported it.
 */
struct rep {
	uint64_t a, b, rd;
	uint64_t snap[MAXW];
};

struct repv {
	struct rep *v;
	size_t n, cap;
};

/* A growable list of spans (per unit: reports and disruptions). */
struct spanv {
	struct span *v;
	size_t n, cap;
};

/* Per unit and slot: the last value written and when (for the data check). */
struct slotst {
	uint64_t val;
	uint64_t t_begin, t_end;
};

/* The disruptions of a sparse chunk: their spans and kinds. */
struct chunkops {
	struct spanv s;
	uint8_t *k;
};

struct unitst {
	struct repv reports;	/* the calls that reported it */
	struct repv resets;	/* the reset-only calls that covered it */
	struct repv rearms;	/* the disruptor's arms that covered it */
	struct spanv ops;	/* disruptions of the unit */
	uint8_t *op_kind;	/* their kinds, ops.n of them (ops.cap) */
	uint64_t d_begin, d_end;	/* last destructive op (clock) */
	struct slotst slot[NSLOT];
};

struct ctx {
	uint64_t seed;
	unsigned int seconds, nwriters;
	bool quiet;
	bool self_test;
	unsigned int dropped;		/* --self-test: regions dropped, */
	uint64_t drop_harvest;		/* one per harvest, the last one */
	bool hot;			/* --hot-thp */
	uint32_t hotu[NHOT];		/* its hot units (THP lock) */
	char *alias;			/* --self-test: unregistered view */
	_Atomic int inj;		/* --hot-thp --self-test handshake */
	unsigned int injected;		/* stale writes injected */
	int uffd, pagemap;
	struct region reg[K_NKINDS];
	size_t nunits;
	struct unitst *u;
	uint32_t harvests;			/* started so far */
	struct spanv full;			/* whole-range harvests */
	_Atomic uint64_t clock;			/* orders every event */
	atomic_bool stop, go;
	int act[K_NKINDS], nact;		/* the kinds in this run */
	/* --sparse */
	bool sparse, sparse_self;
	size_t sparse_mib;
	struct ntrep *nt;			/* pages nobody wrote, reported */
	size_t nnt, capnt;
	uint64_t nt_pages, nt_excused;
	/* results */
	uint64_t harvest_calls, reset_only, fp_by_op[OP_NOPS];
	uint64_t fp_unexplained[K_NKINDS], zapped[K_NKINDS];
	uint64_t ops_done[OP_NOPS], ops_failed[OP_NOPS];
	uint64_t late, excused_zero;
	unsigned int walk_errors;
	char walk_error[256];
	/* the disruptor's operation in progress, for crash_report() */
	_Atomic int dis_op;			/* -1: none */
	_Atomic uintptr_t dis_p;
	_Atomic size_t dis_len;
};

/*
 * --sparse: a PAGEMAP_SCAN call [a, b] reported n pages of chunk ch of
 * region k that are no unit's: nobody ever wrote them.
 */
struct ntrep {
	uint32_t k, ch, n;
	uint64_t a, b;
};

struct writer {
	struct ctx *c;
	unsigned int id;
	uint64_t rng;
	struct wlog *log;
	uint32_t n, cap;
	uint64_t seq;
};

/* This thread's part for crash_report(): writer N, -1 harvester, -2 disruptor. */
extern _Thread_local int crash_role;

/*
 * Units [a, b) of r reported by the call that ran in [c0, c1], or with
 * reset_only covered by a reset-only call: their writes are consumed, which
 * the loss check counts as reported and the false-positive count ignores.
 */
enum rec { REC_REPORT, REC_RESET, REC_REARM };

/*
 * --hot-thp --self-test: writer 0 stages a write that the kernel never
 * sees, as a CPU with a stale TLB entry would make it: it takes its clock
 * stamp while the harvest call that reports the cold page is still open
 * (so the old rule credited it to that call), and stores through an
 * unregistered view of the page once the call returned and the harvester
 * read the page back.  The states of c->inj:
 */
enum { INJ_IDLE, INJ_PREP, INJ_READY, INJ_GO, INJ_STAMPED, INJ_LAND };

static inline uint64_t tick(struct ctx *c)
{
	return atomic_fetch_add(&c->clock, 1);
}

/* The address of unit i of r. */
static inline char *unit_ptr(const struct region *r, size_t i)
{
	return r->base + (r->tgt ? (size_t)r->tgt[i] * PSZ : i * r->unit);
}

static inline int uffd_wp_register(struct ctx *c, void *p, size_t len)
{
	return mw_uffd_register_wp(c->uffd, p, len);
}

static inline int uffd_wp_unregister(struct ctx *c, void *p, size_t len)
{
	struct uffdio_range r = { (uintptr_t)p, len };

	return ioctl(c->uffd, UFFDIO_UNREGISTER, &r);
}

static inline int uffd_arm(struct ctx *c, void *p, size_t len)
{
	return mw_uffd_wp(c->uffd, p, len, true);
}

static inline int uffd_unprotect(struct ctx *c, void *p, size_t len)
{
	return mw_uffd_wp(c->uffd, p, len, false);
}

void crash_setup(struct ctx *c);
void *xrealloc(void *p, size_t n);
void push(struct spanv *v, uint64_t a, uint64_t b);
size_t unit_at(const struct region *r, uintptr_t off);
char *reserve(size_t len, size_t align);
int map_part(struct region *r, char *at, size_t len, size_t off);
void setup_region(struct ctx *c, enum kind k, uint32_t first,
		  size_t rlen);
struct region *unit_region(struct ctx *c, uint32_t g, size_t *idx);
void *writer_main(void *arg);
void record_in(struct ctx *c, struct region *r, size_t a, size_t b,
	       uint64_t c0, uint64_t c1, enum rec which);
void walk_error(struct ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
bool inj_wait(struct ctx *c, int state);
void harvest_region(struct ctx *c, struct region *r, uint64_t *rng,
		    bool whole);
void harvest(struct ctx *c, uint64_t *rng);
void harvest_run(struct ctx *c, uint64_t *rng, time_t t_end,
		 const struct writer *w, const pthread_t *wt, pthread_t dt);
void note_op(struct ctx *c, struct region *r, size_t a, size_t b,
	     enum op op, bool destructive, uint64_t t0);
void child_writes(struct ctx *c, uint64_t seed);
int fork_writer(struct ctx *c, uint64_t *rng);
uint64_t deadline(const struct ctx *c, uint64_t te);
uint64_t check_writes(struct ctx *c, const struct wlog *all,
		      uint64_t writes, uint64_t *lost_old);
void count_false(struct ctx *c, const struct wlog *all,
		 uint64_t writes);
struct wlog *gather_writes(struct ctx *c, const struct writer *w,
			   uint64_t *nwrites);
void check_slots(struct ctx *c, uint32_t g, uint64_t *bad);
void print_common_points(const struct ctx *c, uint64_t lost, uint64_t writes,
			 uint64_t bad_data);
int hot_main(struct ctx *c, const char *argv0);
int sparse_main(struct ctx *c, const char *argv0);
int dense_main(struct ctx *c, const char *argv0);

#endif
