// SPDX-License-Identifier: MIT
/*
 * wostress: the write oracle.  Writer threads write tracked memory of every
 * kind while a harvester runs Wine's get+reset (PAGEMAP_SCAN with
 * PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC, mask = return = WRITTEN)
 * with random vec_len and max_pages, and a disruptor does what processes
 * do to memory (DONTNEED, PAGEOUT, COLLAPSE, mprotect splits, mremap,
 * munmap + mmap, uffd unregister + register, fork with a writing child,
 * compaction).  Writes, PAGEMAP_SCAN calls and disruptions are stamped
 * with one shared clock.  At the end each write must have been reported
 * (or consumed by a reset-only call) by a call that ended after the write
 * began, started before the end of the first whole-range harvest that
 * started after the write completed, and saw the write land: each writer
 * stores its own increasing sequence number into its slot of the unit, and
 * right after each call returns the harvester reads back the slots of the
 * units it reported.  A write whose number is above the read-back landed
 * after the call had armed the unit (the call overlapping it cannot have
 * seen it), so a later call must report it: without the read-back, a
 * write that a CPU with a stale writable TLB entry made after the arm was
 * credited to the overlapping call and its loss went unseen.  The
 * read-back cannot tell when a disruption zeroed the unit (private memory
 * dropped or replaced, a new shmem object) between the write and the
 * read-back: such a call credits the write as before.  The read-back is
 * exact for every kind: a slot is 8 aligned bytes at the start of the unit
 * (a 4K page or a 2M hugetlb page) and the data check shows that nothing
 * else changes it.  Data must read back intact and shared files must hold
 * what was written.  False positives are counted by cause (the disruption
 * that explains them) and reported, not failed.
 *
 *   wostress [--seed N] [--seconds S] [--writers N] [--quiet] [--self-test]
 *            [--hot-thp | --sparse [--sparse-mib M]]
 *
 * --sparse: two reservations of M MiB (default 1024) armed untouched, a
 * few scattered pages written, a disruptor on 2 MiB chunks, page tables
 * and the PMD-level marker's counters checked (see sparse_main()).  Its
 * --self-test drops reports as below and adds a report of a page nobody
 * wrote, and must find both.
 *
 * --hot-thp: two writers pinned to different CPUs hammer 4 pages of a
 * PMD-mapped THP while the harvester does get+reset on the whole huge page
 * (see hot_main()); the same oracle.
 *
 * --self-test proves the oracle can fail: it drops a region the kernel
 * reported in each of 8 harvests (on 4K memory, once writes were seen) and
 * passes only if the oracle then finds writes lost.  With --hot-thp it
 * injects 8 writes that land after a call armed the page and that the
 * kernel never sees (through an unregistered view of a memfd page), which
 * the old rule credited to that call, and passes only if the read-back
 * rule finds all 8 lost and the old rule none.
 *
 * TAP output; a failure prints the seed and the replay command.  Runs only
 * in the memwatch test guest (it compacts memory and needs the hugetlb
 * pool and /mnt/disk).
 */
#define _GNU_SOURCE
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

#include "mw-test.h"
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

static const char *const kind_name[K_NKINDS] = {
	"anon", "thp", "shmem", "memfd", "tmpfs-file", "ext4-file",
	"hugetlb-private", "hugetlb-shared", "sparse", "sparse-thp",
};

/* The ops from OP_REARM on: --sparse's disruptor only. */
enum op { OP_DONTNEED, OP_PAGEOUT, OP_COLLAPSE, OP_MPROTECT, OP_MREMAP,
	  OP_REMAP, OP_REREGISTER, OP_FORK, OP_COMPACT, OP_REARM,
	  OP_UNPROTECT, OP_NOPS };
#define OP_NDENSE OP_REARM

static const char *const op_name[OP_NOPS] = {
	"dontneed", "pageout", "collapse", "mprotect", "mremap",
	"munmap+mmap", "unregister+register", "fork", "compact",
	"re-arm", "unprotect+protect",
};

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

/*
 * A fatal signal in the test itself (a SIGSEGV or SIGBUS of a writer,
 * the harvester or the disruptor) must say where, with what the
 * disruptor was doing and the mappings: a soak that only prints
 * "Segmentation fault" cannot tell a test bug from a kernel that mapped
 * the wrong thing.  A handler takes no argument, hence the one pointer.
 */
static struct ctx *crash_ctx;
static _Thread_local int crash_role = -1;	/* -1 harvester, -2 disruptor */

static void crash_write(const char *buf, int n)
{
	while (n > 0) {
		ssize_t k = write(STDOUT_FILENO, buf, (size_t)n);

		if (k <= 0)
			return;
		buf += k;
		n -= (int)k;
	}
}

static void crash_report(int sig, siginfo_t *si, void *ucv)
{
	const ucontext_t *uc = ucv;
	const struct ctx *c = crash_ctx;
	char buf[512];
	int n, op = atomic_load(&c->dis_op), fd;

	n = snprintf(buf, sizeof(buf),
		     "# signal %d (si_code %d) at %p, ip %#llx, in %s %d of pid %d\n",
		     sig, si->si_code, si->si_addr,
		     (unsigned long long)uc->uc_mcontext.gregs[REG_RIP],
		     crash_role >= 0 ? "writer" : crash_role == -1 ?
		     "the harvester" : "the disruptor (or its fork child)",
		     crash_role, (int)getpid());
	crash_write(buf, n);
	n = snprintf(buf, sizeof(buf), "# disruptor: %s at %#lx, %zu bytes\n",
		     op >= 0 && op < OP_NOPS ? op_name[op] : "(between operations)",
		     (unsigned long)atomic_load(&c->dis_p),
		     (size_t)atomic_load(&c->dis_len));
	crash_write(buf, n);
	for (int i = 0; i < c->nact; i++) {
		const struct region *r = &c->reg[c->act[i]];

		n = snprintf(buf, sizeof(buf), "# region %s [%p, %p)\n",
			     kind_name[r->kind], (void *)r->base,
			     (void *)(r->base + r->len));
		crash_write(buf, n);
	}
	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	while (fd >= 0 && (n = (int)read(fd, buf, sizeof(buf))) > 0)
		crash_write(buf, n);
	n = snprintf(buf, sizeof(buf), "Bail out! signal %d; replay with --seed %" PRIu64 "\n",
		     sig, c->seed);
	crash_write(buf, n);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void crash_setup(struct ctx *c)
{
	struct sigaction sa = { .sa_sigaction = crash_report,
				.sa_flags = SA_SIGINFO };

	crash_ctx = c;
	atomic_store(&c->dis_op, -1);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		puts("Bail out! out of memory");
		exit(1);
	}
	return p;
}

static void push(struct spanv *v, uint64_t a, uint64_t b)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? 2 * v->cap : 8;
		v->v = xrealloc(v->v, v->cap * sizeof(*v->v));
	}
	v->v[v->n++] = (struct span){ a, b };
}

static uint64_t tick(struct ctx *c)
{
	return atomic_fetch_add(&c->clock, 1);
}

/* The address of unit i of r. */
static char *unit_ptr(const struct region *r, size_t i)
{
	return r->base + (r->tgt ? (size_t)r->tgt[i] * PSZ : i * r->unit);
}

/* The first unit of r at or after byte offset off. */
static size_t unit_at(const struct region *r, uintptr_t off)
{
	size_t l = 0, h = r->nunits;

	if (!r->tgt)
		return (off + r->unit - 1) / r->unit;
	while (l < h) {
		size_t m = l + (h - l) / 2;

		if ((uintptr_t)r->tgt[m] * PSZ < off)
			l = m + 1;
		else
			h = m;
	}
	return l;
}

static int uffd_wp_register(struct ctx *c, void *p, size_t len)
{
	return mw_uffd_register_wp(c->uffd, p, len);
}

static int uffd_wp_unregister(struct ctx *c, void *p, size_t len)
{
	struct uffdio_range r = { (uintptr_t)p, len };

	return ioctl(c->uffd, UFFDIO_UNREGISTER, &r);
}

static int uffd_arm(struct ctx *c, void *p, size_t len)
{
	return mw_uffd_wp(c->uffd, p, len, true);
}

static int uffd_unprotect(struct ctx *c, void *p, size_t len)
{
	return mw_uffd_wp(c->uffd, p, len, false);
}

/* An address range of len, aligned to align, reserved PROT_NONE. */
static char *reserve(size_t len, size_t align)
{
	char *p = mmap(NULL, len + align, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uintptr_t a;

	if (p == MAP_FAILED)
		return NULL;
	a = ((uintptr_t)p + align - 1) & ~(align - 1);
	if (a > (uintptr_t)p)
		munmap(p, a - (uintptr_t)p);
	munmap((char *)a + len, (uintptr_t)p + len + align - a - len);
	return (char *)a;
}

/* Map [at, at + len) of region r (MAP_FIXED), offset off in its object. */
static int map_part(struct region *r, char *at, size_t len, size_t off)
{
	int prot = PROT_READ | PROT_WRITE, flags = MAP_FIXED;
	void *p;

	switch (r->kind) {
	case K_ANON:
	case K_THP:
		p = mmap(at, len, prot, flags | MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
		break;
	case K_SPARSE:
	case K_SPARSE_THP:
		p = mmap(at, len, prot, flags | MAP_PRIVATE | MAP_ANONYMOUS |
			 MAP_NORESERVE, -1, 0);
		break;
	case K_HUGE_PRIV:
		p = mmap(at, len, prot,
			 flags | MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
			 -1, 0);
		break;
	case K_SHMEM:
		if (off || len != r->len)
			return -1;	/* an anonymous shared object: whole */
		p = mmap(at, len, prot, flags | MAP_SHARED | MAP_ANONYMOUS,
			 -1, 0);
		break;
	default:
		p = mmap(at, len, prot, flags | MAP_SHARED, r->fd, off);
		break;
	}
	if (p == MAP_FAILED)
		return -1;
	if (r->kind == K_THP || r->kind == K_SPARSE_THP)
		madvise(at, len, MADV_HUGEPAGE);
	if (r->kind == K_ANON || r->kind == K_SPARSE)	/* as Wine does */
		madvise(at, len, MADV_NOHUGEPAGE);
	return 0;
}

/* Region k as units first on; len 0: its usual length. */
static void setup_region(struct ctx *c, enum kind k, uint32_t first,
			 size_t rlen)
{
	static const size_t len[K_NKINDS] = {
		2 << 20, 4 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20,
		4 * HPSZ, 4 * HPSZ,
	};
	struct region *r = &c->reg[k];
	pthread_rwlockattr_t at;
	char path[64];

	r->kind = k;
	r->len = rlen ? rlen : len[k];
	r->huge = k == K_HUGE_PRIV || k == K_HUGE_SHARED;
	r->unit = r->huge ? HPSZ : PSZ;
	r->nunits = r->len / r->unit;
	r->first = first;
	r->priv = k == K_ANON || k == K_THP || k == K_HUGE_PRIV;
	r->fd = -1;
	pthread_rwlockattr_init(&at);
	pthread_rwlockattr_setkind_np(&at,
		PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&r->lock, &at);
	switch (k) {
	case K_MEMFD:
		r->fd = memfd_create("wostress", MFD_CLOEXEC);
		break;
	case K_HUGE_SHARED:
		r->fd = memfd_create("wostress-huge", MFD_CLOEXEC | MFD_HUGETLB);
		break;
	case K_TMPFS:
	case K_EXT4:
		snprintf(path, sizeof(path), "%s/wostress.%d",
			 k == K_TMPFS ? "/dev/shm" : "/mnt/disk", getpid());
		r->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		unlink(path);
		break;
	default:
		break;
	}
	if (r->fd >= 0 && ftruncate(r->fd, r->len))
		mw_bail(kind_name[k], &c->seed);
	if ((k == K_MEMFD || k == K_HUGE_SHARED || k == K_TMPFS ||
	     k == K_EXT4) && r->fd < 0)
		mw_bail(kind_name[k], &c->seed);
	r->base = reserve(r->len, r->huge || k == K_THP ? HPSZ : PSZ);
	if (!r->base || map_part(r, r->base, r->len, 0))
		mw_bail(kind_name[k], &c->seed);
	/* Half the units touched before arming, half never. */
	for (size_t i = 0; i < r->nunits; i += 2)
		r->base[i * r->unit + 8 * MAXW] = 1;
	if (uffd_wp_register(c, r->base, r->len) ||
	    uffd_arm(c, r->base, r->len))
		mw_bail("register/arm", &c->seed);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/*
 * Sparse region k of len bytes as units first on, not mapped yet: a 16th
 * of its 2 MiB chunks hot (24 pages each written), an 8th with 2 pages,
 * the rest never written (their pages are no unit's).
 */
static void sparse_setup(struct ctx *c, enum kind k, uint32_t first,
			 size_t len, uint64_t *rng)
{
	struct region *r = &c->reg[k];
	size_t nch = len / HPSZ, nhot = nch / 16 ? nch / 16 : 2;
	size_t nsc = nch / 8 ? nch / 8 : 2, n = 0;
	uint8_t *used = calloc(nch, 1);
	pthread_rwlockattr_t at;

	if (nhot + nsc > nch)
		mw_bail("--sparse-mib: too small", &c->seed);
	*r = (struct region){ .kind = k, .len = len, .unit = PSZ,
			      .first = first, .priv = true, .fd = -1,
			      .nchunks = nch };
	r->tgt = calloc(nhot * 24 + nsc * 2, sizeof(*r->tgt));
	r->cops = calloc(nch, sizeof(*r->cops));
	if (!used || !r->tgt || !r->cops)
		mw_bail("calloc", &c->seed);
	for (size_t i = 0; i < nhot + nsc; i++) {
		size_t ch, np = i < nhot ? 24 : 2;
		uint8_t pg[512] = { 0 };

		do
			ch = mw_rndn(rng, nch);
		while (used[ch]);
		used[ch] = 1;
		for (size_t j = 0; j < np; j++) {
			size_t p;

			do
				p = mw_rndn(rng, 512);
			while (pg[p]);
			pg[p] = 1;
			r->tgt[n++] = ch * 512 + p;
		}
	}
	qsort(r->tgt, n, sizeof(*r->tgt), cmp_u32);
	r->nunits = n;
	free(used);
	pthread_rwlockattr_init(&at);
	pthread_rwlockattr_setkind_np(&at,
		PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&r->lock, &at);
}

/* The whole reservation of sparse region r: its length and the park. */
static size_t sparse_span(const struct region *r)
{
	return r->len + HPSZ;
}

/*
 * Map sparse region r untouched, alone in its 512 GiB (no other mapping
 * shares its page tables: munmap frees them all), with its park behind
 * it, register it and arm it; returns the arming time in µs.
 */
static double sparse_map(struct ctx *c, struct region *r)
{
	struct timespec t0, t1;

	r->base = mw_reserve_alone(sparse_span(r));
	if (!r->base || map_part(r, r->base, r->len, 0) ||
	    uffd_wp_register(c, r->base, r->len))
		mw_bail(kind_name[r->kind], &c->seed);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (uffd_arm(c, r->base, r->len))
		mw_bail("arm", &c->seed);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3;
}

static struct region *unit_region(struct ctx *c, uint32_t g, size_t *idx)
{
	*idx = 0;
	for (int k = 0; k < K_NKINDS; k++) {
		struct region *r = &c->reg[k];

		if (g >= r->first && g < r->first + r->nunits) {
			*idx = g - r->first;
			return r;
		}
	}
	return &c->reg[0];	/* not reached: g < c->nunits */
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct ctx *c = w->c;

	crash_role = (int)w->id;
	while (c->sparse && !atomic_load(&c->go))
		usleep(1000);
	while (!atomic_load(&c->stop) && w->n < w->cap) {
		uint32_t g = mw_rndn(&w->rng, c->nunits);
		struct slotst *s = &c->u[g].slot[w->id];
		size_t i;
		struct region *r = unit_region(c, g, &i);
		uint64_t tb, te;

		pthread_rwlock_rdlock(&r->lock);
		tb = tick(c);
		*(volatile uint64_t *)(unit_ptr(r, i) + 8 * w->id) = ++w->seq;
		te = tick(c);
		pthread_rwlock_unlock(&r->lock);
		w->log[w->n++] = (struct wlog){ g, w->id, w->seq, tb, te };
		*s = (struct slotst){ w->seq, tb, te };
	}
	return NULL;
}

/*
 * Units [a, b) of r reported by the call that ran in [c0, c1], or with
 * reset_only covered by a reset-only call: their writes are consumed, which
 * the loss check counts as reported and the false-positive count ignores.
 */
enum rec { REC_REPORT, REC_RESET, REC_REARM };

static void record_in(struct ctx *c, struct region *r, size_t a, size_t b,
		      uint64_t c0, uint64_t c1, enum rec which)
{
	for (size_t i = a; i < b; i++) {
		struct unitst *u = &c->u[r->first + i];
		struct repv *v = which == REC_RESET ? &u->resets :
				 which == REC_REARM ? &u->rearms : &u->reports;
		const volatile uint64_t *slot =
			(const volatile uint64_t *)unit_ptr(r, i);
		struct rep *e;

		if (v->n && v->v[v->n - 1].a == c0)
			continue;
		if (v->n == v->cap) {
			v->cap = v->cap ? 2 * v->cap : 8;
			v->v = xrealloc(v->v, v->cap * sizeof(*v->v));
		}
		e = &v->v[v->n++];
		e->a = c0;
		e->b = c1;
		/* The read-back: after the ioctl returned, r->lock held. */
		for (unsigned int w = 0; w < c->nwriters; w++)
			e->snap[w] = slot[w];
		e->rd = tick(c);
	}
}

static void record(struct ctx *c, struct region *r, size_t a, size_t b,
		   uint64_t c0, uint64_t c1, bool reset_only)
{
	record_in(c, r, a, b, c0, c1, reset_only ? REC_RESET : REC_REPORT);
}

/*
 * --sparse: a call [c0, c1] reported pages [p0, p1) of sparse region r:
 * the units among them are recorded, the others (written by nobody)
 * noted per chunk for the check after the run.
 */
static void record_sparse(struct ctx *c, struct region *r, uintptr_t p0,
			  uintptr_t p1, uint64_t c0, uint64_t c1)
{
	size_t a = unit_at(r, p0 * PSZ), b = unit_at(r, p1 * PSZ);

	record(c, r, a, b, c0, c1, false);
	for (uintptr_t ch = p0 / 512; ch * 512 < p1; ch++) {
		uintptr_t s = ch * 512 > p0 ? ch * 512 : p0;
		uintptr_t e = (ch + 1) * 512 < p1 ? (ch + 1) * 512 : p1;
		size_t n = e - s - (unit_at(r, e * PSZ) - unit_at(r, s * PSZ));

		if (!n)
			continue;
		if (c->nnt == c->capnt) {
			c->capnt = c->capnt ? 2 * c->capnt : 64;
			c->nt = xrealloc(c->nt, c->capnt * sizeof(*c->nt));
		}
		c->nt[c->nnt++] = (struct ntrep){ r->kind, ch, n, c0, c1 };
		c->nt_pages += n;
	}
}

static void walk_error(struct ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void walk_error(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (!c->walk_errors++) {
		va_start(ap, fmt);
		vsnprintf(c->walk_error, sizeof(c->walk_error), fmt, ap);
		va_end(ap);
	}
}

/*
 * --hot-thp --self-test: writer 0 stages a write that the kernel never
 * sees, as a CPU with a stale TLB entry would make it: it takes its clock
 * stamp while the harvest call that reports the cold page is still open
 * (so the old rule credited it to that call), and stores through an
 * unregistered view of the page once the call returned and the harvester
 * read the page back.  The states of c->inj:
 */
enum { INJ_IDLE, INJ_PREP, INJ_READY, INJ_GO, INJ_STAMPED, INJ_LAND };

static bool inj_wait(struct ctx *c, int state)
{
	time_t t = time(NULL) + 10;

	while (atomic_load(&c->inj) != state) {
		if (atomic_load(&c->stop))
			return false;
		if (time(NULL) > t) {
			printf("# self-test: no handshake (state %d, waiting for %d)\n",
			       atomic_load(&c->inj), state);
			return false;
		}
		sched_yield();
	}
	return true;
}

/*
 * One get+reset of region r in chunks, as Wine does; r->lock held.
 * whole: in one call (vec_len 64, no max_pages), so that a huge pmd is
 * armed whole instead of split.
 */
static void harvest_region(struct ctx *c, struct region *r, uint64_t *rng,
			   bool whole)
{
	struct page_region vec[64];
	uintptr_t base = (uintptr_t)r->base, end = base + r->len;
	uintptr_t pos = base;
	unsigned int stuck = 0;

	while (pos < end) {
		unsigned long vlen = 1 + mw_rndn(rng, 64), maxp = 0, pages = 0;
		bool inj = false;
		struct pm_scan_arg a;
		uint64_t c0, c1;
		long n;

		if (whole)
			vlen = 64;
		else if (mw_rndn(rng, 2))
			maxp = r->huge ? 512 * (1 + mw_rndn(rng, 2)) :
					 1 + mw_rndn(rng, 40);
		a = mw_ww_arg(pos, end, true, vec, vlen);
		a.max_pages = maxp;
		c0 = tick(c);
		n = ioctl(c->pagemap, PAGEMAP_SCAN, &a);
		if (c->alias && r->kind == K_MEMFD &&
		    atomic_load(&c->inj) == INJ_READY) {
			/* Writer 0 stamps its write before c1. */
			atomic_store(&c->inj, INJ_GO);
			inj = inj_wait(c, INJ_STAMPED) ||
			      !atomic_compare_exchange_strong(&c->inj,
						&(int){ INJ_GO }, INJ_IDLE);
		}
		c1 = tick(c);
		c->harvest_calls++;
		if (n < 0) {
			walk_error(c, "%s: PAGEMAP_SCAN at +%#lx: %s",
				   kind_name[r->kind], (unsigned long)(pos - base),
				   strerror(errno));
			return;
		}
		if ((unsigned long)n > vlen || a.walk_end < pos ||
		    a.walk_end > end) {
			walk_error(c, "%s: ret %ld of %lu, walk_end +%#llx",
				   kind_name[r->kind], n, vlen,
				   (unsigned long long)(a.walk_end - base));
			return;
		}
		for (long i = 0; i < n; i++) {
			struct page_region *e = &vec[i];

			if (e->start >= e->end || e->start < pos ||
			    e->end > a.walk_end || e->categories != PAGE_IS_WRITTEN ||
			    (i && e->start <= vec[i - 1].end) ||
			    (e->start - base) % r->unit ||
			    (e->end - base) % r->unit) {
				walk_error(c, "%s: bad region %ld [+%#llx, +%#llx) %#llx, walk [+%#lx, +%#llx)",
					   kind_name[r->kind], i,
					   (unsigned long long)(e->start - base),
					   (unsigned long long)(e->end - base),
					   (unsigned long long)e->categories,
					   (unsigned long)(pos - base),
					   (unsigned long long)(a.walk_end - base));
				return;
			}
			pages += (e->end - e->start) / PSZ;
			/*
			 * One region in each of 8 harvests, as if never
			 * reported: a single region may hold only writes still
			 * in flight or false positives, whose loss the oracle
			 * rightly does not count.
			 */
			if (c->self_test && !c->hot && c->dropped < 8 &&
			    !r->huge &&
			    c->harvests > 20 &&
			    c->drop_harvest != c->harvests) {
				c->dropped++;
				c->drop_harvest = c->harvests;
				continue;
			}
			if (r->tgt)
				record_sparse(c, r, (e->start - base) / PSZ,
					      (e->end - base) / PSZ, c0, c1);
			else
				record(c, r, (e->start - base) / r->unit,
				       (e->end - base) / r->unit, c0, c1,
				       false);
		}
		if (inj)	/* read back: now the store may land */
			atomic_store(&c->inj, INJ_LAND);
		if (maxp && pages > maxp)
			walk_error(c, "%s: %lu pages reported, max_pages %lu",
				   kind_name[r->kind], pages, maxp);
		if ((unsigned long)n < vlen && (!maxp || pages < maxp) &&
		    a.walk_end != end)
			walk_error(c, "%s: stopped at +%#llx with room left (%ld of %lu regions, %lu of %lu pages)",
				   kind_name[r->kind],
				   (unsigned long long)(a.walk_end - base), n,
				   vlen, pages, maxp);
		if (a.walk_end == pos && ++stuck > 1000) {
			walk_error(c, "%s: no progress at +%#lx",
				   kind_name[r->kind],
				   (unsigned long)(pos - base));
			return;
		}
		pos = a.walk_end;
	}
}

static void harvest(struct ctx *c, uint64_t *rng)
{
	c->harvests++;
	if (mw_rndn(rng, 8) == 0) {
		/* Reset only, on a sub-range: the writes there are consumed. */
		struct region *r = &c->reg[c->act[mw_rndn(rng, c->nact)]];
		size_t a = mw_rndn(rng, r->nunits), b;
		struct pm_scan_arg arg;
		uint64_t c0, c1;

		b = a + 1 + mw_rndn(rng, r->nunits - a);
		pthread_rwlock_rdlock(&r->lock);
		arg = mw_ww_arg((uintptr_t)unit_ptr(r, a),
				(uintptr_t)unit_ptr(r, b - 1) + r->unit, true,
				NULL, 0);
		c0 = tick(c);
		if (ioctl(c->pagemap, PAGEMAP_SCAN, &arg) != 0 ||
		    arg.walk_end != arg.end)
			walk_error(c, "%s: reset-only [%zu, %zu): %s, walk_end %s",
				   kind_name[r->kind], a, b, strerror(errno),
				   arg.walk_end == arg.end ? "end" : "short");
		c1 = tick(c);
		record(c, r, a, b, c0, c1, true);
		pthread_rwlock_unlock(&r->lock);
		c->reset_only++;
	} else {
		uint64_t t0 = tick(c);

		for (int j = 0; j < c->nact; j++) {
			struct region *r = &c->reg[c->act[j]];

			pthread_rwlock_rdlock(&r->lock);
			harvest_region(c, r, rng, false);
			pthread_rwlock_unlock(&r->lock);
		}
		push(&c->full, t0, tick(c));
	}
}

/* A disruption of units [a, b) of r during [t0, now]. */
static void note_op(struct ctx *c, struct region *r, size_t a, size_t b,
		    enum op op, bool destructive, uint64_t t0)
{
	uint64_t t1 = tick(c);

	for (size_t i = a; i < b; i++) {
		struct unitst *u = &c->u[r->first + i];
		size_t cap = u->ops.cap;

		push(&u->ops, t0, t1);
		if (u->ops.cap != cap)
			u->op_kind = xrealloc(u->op_kind, u->ops.cap);
		u->op_kind[u->ops.n - 1] = op;
		if (destructive) {
			u->d_begin = t0;
			u->d_end = t1;
		}
	}
}

static void child_writes(struct ctx *c, uint64_t seed)
{
	uint64_t rng = seed;

	for (int n = 0; n < 64; n++) {
		struct region *r = &c->reg[c->act[mw_rndn(&rng, c->nact)]];
		size_t i = mw_rndn(&rng, r->nunits);

		/* A shared page written by the child would be a real write
		 * into the parent's memory that its own ptes do not see. */
		if (r->priv)
			*(volatile uint64_t *)(unit_ptr(r, i) + 8 * MAXW) =
				~0ULL;
	}
	_exit(0);
}

/*
 * --sparse's disruptor, on the 2 MiB chunks of the sparse regions: re-arm
 * (a whole chunk or a range with edges inside chunks), un-protect and
 * re-protect, MADV_DONTNEED with edges inside chunks, mremap of an aligned
 * chunk to the park and back, munmap + mmap of a chunk registered and
 * armed again (an empty 2 MiB anew), fork with a writing child.  Half the
 * chunks it picks hold units, half are any (mostly never written).  An arm
 * consumes the writes before it, as a reset-only call does (REC_REARM).
 */
static void *sparse_disruptor(struct ctx *c)
{
	static const enum op ops[] = { OP_REARM, OP_UNPROTECT, OP_DONTNEED,
				       OP_MREMAP, OP_REMAP, OP_FORK };
	uint64_t rng = c->seed ^ 0xd15c0;

	while (!atomic_load(&c->go))
		usleep(1000);
	while (!atomic_load(&c->stop)) {
		enum op op = ops[mw_rndn(&rng, sizeof(ops) / sizeof(ops[0]))];
		struct region *r = &c->reg[c->act[mw_rndn(&rng, c->nact)]];
		size_t ch = mw_rndn(&rng, 2) ?
			    r->tgt[mw_rndn(&rng, r->nunits)] / 512 :
			    mw_rndn(&rng, r->nchunks);
		uintptr_t p0 = ch * 512, p1 = p0 + 512;	/* pages */
		bool wlock = op == OP_MREMAP || op == OP_REMAP, destr = false;
		uint64_t t0, c1;
		size_t a, b, len;
		int ret = 0;
		char *p, *park;

		if (op == OP_DONTNEED ||
		    ((op == OP_REARM || op == OP_UNPROTECT) &&
		     mw_rndn(&rng, 2))) {
			p0 += mw_rndn(&rng, 512);
			p1 = p0 + 1 + mw_rndn(&rng, 768);
			if (p1 > r->nchunks * 512)
				p1 = r->nchunks * 512;
		}
		usleep(mw_rndn(&rng, 3000));
		if (wlock)
			pthread_rwlock_wrlock(&r->lock);
		else
			pthread_rwlock_rdlock(&r->lock);
		t0 = tick(c);
		p = r->base + p0 * PSZ;
		len = (p1 - p0) * PSZ;
		park = r->base + r->len;
		atomic_store(&c->dis_p, (uintptr_t)p);
		atomic_store(&c->dis_len, len);
		atomic_store(&c->dis_op, (int)op);
		a = unit_at(r, p0 * PSZ);
		b = unit_at(r, p1 * PSZ);
		switch (op) {
		case OP_REARM:
			ret = uffd_arm(c, p, len);
			record_in(c, r, a, b, t0, tick(c), REC_REARM);
			break;
		case OP_UNPROTECT:
			ret = uffd_unprotect(c, p, len);
			usleep(mw_rndn(&rng, 500));
			ret |= uffd_arm(c, p, len);
			record_in(c, r, a, b, t0, tick(c), REC_REARM);
			break;
		case OP_DONTNEED:
			ret = madvise(p, len, MADV_DONTNEED);
			destr = true;
			break;
		case OP_MREMAP:
			if (mremap(p, HPSZ, HPSZ, MREMAP_MAYMOVE | MREMAP_FIXED,
				   park) == MAP_FAILED) {
				ret = -1;
				break;
			}
			if (mremap(park, HPSZ, HPSZ,
				   MREMAP_MAYMOVE | MREMAP_FIXED, p) == MAP_FAILED ||
			    mmap(park, HPSZ, PROT_NONE, MAP_PRIVATE |
				 MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
				 -1, 0) == MAP_FAILED)
				mw_bail("mremap back", &c->seed);
			/* Without EVENT_REMAP it lost its uffd: register
			 * again, no arming (its ptes or marker moved). */
			if (uffd_wp_register(c, p, HPSZ))
				mw_bail("register after mremap", &c->seed);
			break;
		case OP_REMAP:
			if (map_part(r, p, HPSZ, 0) ||
			    uffd_wp_register(c, p, HPSZ))
				mw_bail("munmap+mmap", &c->seed);
			ret = uffd_arm(c, p, HPSZ);
			record_in(c, r, a, b, t0, tick(c), REC_REARM);
			destr = true;
			break;
		case OP_FORK: {
			pid_t pid = fork();
			int st;

			a = b = 0;
			if (pid == 0)
				child_writes(c, mw_rnd(&rng));
			ret = pid < 0 || waitpid(pid, &st, 0) != pid ||
			      !WIFEXITED(st) || WEXITSTATUS(st);
			break;
		}
		default:
			break;
		}
		atomic_store(&c->dis_op, -1);
		if (ret)
			c->ops_failed[op]++;
		else
			c->ops_done[op]++;
		note_op(c, r, a, b, op, destr, t0);
		c1 = tick(c);
		for (uintptr_t k = p0 / 512; op != OP_FORK && k * 512 < p1; k++) {
			struct chunkops *o = &r->cops[k];
			size_t cap = o->s.cap;

			push(&o->s, t0, c1);
			if (o->s.cap != cap)
				o->k = xrealloc(o->k, o->s.cap);
			o->k[o->s.n - 1] = op;
		}
		pthread_rwlock_unlock(&r->lock);
	}
	return NULL;
}

static void *disruptor_main(void *arg)
{
	struct ctx *c = arg;
	uint64_t rng = c->seed ^ 0xd15c0;

	crash_role = -2;
	if (c->sparse)
		return sparse_disruptor(c);
	while (!atomic_load(&c->stop)) {
		enum op op = mw_rndn(&rng, OP_NDENSE);
		struct region *r = &c->reg[c->act[mw_rndn(&rng, c->nact)]];
		size_t a = mw_rndn(&rng, r->nunits), b;
		uint64_t t0 = tick(c);
		bool wlock = op == OP_MREMAP || op == OP_REMAP ||
			     op == OP_REREGISTER, destr = false;
		int ret = 0;
		char *p;

		b = a + 1 + mw_rndn(&rng, (r->nunits - a) < 64 ? r->nunits - a : 64);
		usleep(mw_rndn(&rng, 3000));
		if (wlock)
			pthread_rwlock_wrlock(&r->lock);
		else
			pthread_rwlock_rdlock(&r->lock);
		p = r->base + a * r->unit;
		atomic_store(&c->dis_p, (uintptr_t)p);
		atomic_store(&c->dis_len, (b - a) * r->unit);
		atomic_store(&c->dis_op, (int)op);
		switch (op) {
		case OP_DONTNEED:
			ret = madvise(p, (b - a) * r->unit, MADV_DONTNEED);
			destr = r->priv;
			break;
		case OP_PAGEOUT:
			ret = r->huge ? 0 : madvise(p, (b - a) * r->unit,
						    MADV_PAGEOUT);
			break;
		case OP_COLLAPSE:
			a = 0;
			b = r->nunits;
			ret = r->kind == K_THP ?
				madvise(r->base, r->len, MADV_COLLAPSE) : 0;
			break;
		case OP_MPROTECT:
			ret = mprotect(p, (b - a) * r->unit,
				       PROT_READ | PROT_WRITE | PROT_EXEC) ||
			      mprotect(p, (b - a) * r->unit,
				       PROT_READ | PROT_WRITE);
			break;
		case OP_MREMAP: {
			char *to = reserve(r->len, r->huge || r->kind == K_THP ?
						   HPSZ : PSZ);
			void *q;

			a = 0;
			b = r->nunits;
			if (!to) {
				ret = -1;
				break;
			}
			q = mremap(r->base, r->len, r->len,
				   MREMAP_MAYMOVE | MREMAP_FIXED, to);
			if (q == MAP_FAILED) {
				/* the kernel may have unmapped the destination
				 * before failing: what is there now may not be
				 * the reservation (see main()'s mallopt()) */
				munmap(to, r->len);
				ret = -1;
				break;
			}
			r->base = q;
			/* Without EVENT_REMAP the moved VMA lost its uffd:
			 * register again, no arming (nothing gets lost). */
			ret = uffd_wp_register(c, r->base, r->len);
			if (ret)
				mw_bail("register after mremap", &c->seed);
			break;
		}
		case OP_REMAP:
			if (r->kind == K_SHMEM) {
				a = 0;
				b = r->nunits;
				p = r->base;
			}
			ret = map_part(r, p, (b - a) * r->unit, a * r->unit);
			if (ret)
				mw_bail("munmap+mmap", &c->seed);
			if (uffd_wp_register(c, p, (b - a) * r->unit))
				mw_bail("register after mmap", &c->seed);
			destr = r->priv || r->kind == K_SHMEM;
			break;
		case OP_REREGISTER:
			if (uffd_wp_unregister(c, p, (b - a) * r->unit) ||
			    uffd_wp_register(c, p, (b - a) * r->unit))
				mw_bail("unregister+register", &c->seed);
			break;
		case OP_FORK: {
			pid_t pid = fork();
			int st;

			a = b = 0;
			if (pid == 0)
				child_writes(c, mw_rnd(&rng));
			ret = pid < 0 || waitpid(pid, &st, 0) != pid ||
			      !WIFEXITED(st) || WEXITSTATUS(st);
			break;
		}
		case OP_COMPACT: {
			int fd = open("/proc/sys/vm/compact_memory", O_WRONLY);

			a = b = 0;
			ret = fd < 0 || write(fd, "1", 1) != 1;
			if (fd >= 0)
				close(fd);
			break;
		}
		default:
			break;
		}
		if (ret)
			c->ops_failed[op]++;
		else
			c->ops_done[op]++;
		atomic_store(&c->dis_op, -1);
		note_op(c, r, a, b, op, destr, t0);
		pthread_rwlock_unlock(&r->lock);
	}
	return NULL;
}

/* The disruptions of unit g that overlap [from, to]. */
static void print_ops(const struct ctx *c, uint32_t g, uint64_t from,
		      uint64_t to)
{
	const struct unitst *u = &c->u[g];

	for (size_t j = 0; j < u->ops.n; j++)
		if (u->ops.v[j].b >= from && u->ops.v[j].a <= to)
			printf("#   %s at [%" PRIu64 ", %" PRIu64 "]\n",
			       op_name[u->op_kind[j]], u->ops.v[j].a,
			       u->ops.v[j].b);
}

/*
 * Was hugetlb unit g zapped (MADV_DONTNEED, munmap + mmap) after a write
 * began at from and before to?  A zapped hugetlb pte leaves no marker:
 * PAGEMAP_SCAN reports a hugetlb hole as not written, on upstream 6.12 as
 * here, so a write whose pte was dropped before a harvest saw it is not
 * reported, even where a shared page keeps the data.  (Smaller pages
 * leave a hole that reads as written.)
 */
static bool zapped_in(const struct ctx *c, uint32_t g, uint64_t from,
		      uint64_t to)
{
	const struct unitst *u = &c->u[g];

	for (size_t j = 0; j < u->ops.n; j++)
		if ((u->op_kind[j] == OP_DONTNEED || u->op_kind[j] == OP_REMAP) &&
		    u->ops.v[j].b > from && u->ops.v[j].a < to)
			return true;
	return false;
}

/*
 * A write completed at te must be reported no later than by the first
 * whole-range harvest that started after te: the end of that harvest.
 */
static uint64_t deadline(const struct ctx *c, uint64_t te)
{
	size_t l = 0, h = c->full.n;

	while (l < h) {
		size_t m = l + (h - l) / 2;

		if (c->full.v[m].a <= te)
			l = m + 1;
		else
			h = m;
	}
	return l < c->full.n ? c->full.v[l].b : UINT64_MAX;
}

/*
 * Did a disruption zero unit g (private memory dropped or replaced, a new
 * shmem object) after a write began at from and before the read-back at
 * to?  Then the read-back cannot tell whether the write had landed.
 */
static bool zeroed_in(const struct ctx *c, uint32_t g, uint64_t from,
		      uint64_t to)
{
	const struct unitst *u = &c->u[g];
	size_t idx;
	const struct region *r = unit_region((struct ctx *)c, g, &idx);

	for (size_t j = 0; j < u->ops.n; j++)
		if (((u->op_kind[j] == OP_DONTNEED && r->priv) ||
		     (u->op_kind[j] == OP_REMAP &&
		      (r->priv || r->kind == K_SHMEM))) &&
		    u->ops.v[j].b > from && u->ops.v[j].a < to)
			return true;
	return false;
}

/* The first entry of v (ordered) that ends after t, or v->n. */
static size_t first_rep_ending_after(const struct repv *v, uint64_t t)
{
	size_t l = 0, h = v->n;

	while (l < h) {
		size_t m = l + (h - l) / 2;

		if (v->v[m].b <= t)
			l = m + 1;
		else
			h = m;
	}
	return l;
}

/*
 * Which calls of v account for write l, whose deadline is d?  old: one
 * that ended after the write began and started before d (the old rule,
 * which credits a write to an overlapping call even when it landed after
 * the call armed the unit).  Returns whether one of them also had the
 * write in its read-back (or a zeroing disruption hides it): a write that
 * landed after a call armed the unit must be reported by a later one.
 */
static bool credited(struct ctx *c, const struct repv *v,
		     const struct wlog *l, uint64_t d, bool *old)
{
	for (size_t k = first_rep_ending_after(v, l->tb);
	     k < v->n && v->v[k].a < d; k++) {
		const struct rep *p = &v->v[k];

		*old = true;
		if (p->snap[l->w] >= l->seq)
			return true;
		if (zeroed_in(c, l->unit, l->tb, p->rd)) {
			c->excused_zero++;
			return true;
		}
	}
	return false;
}

/*
 * The loss check.  A write must have been reported (or consumed by a
 * reset-only call) by a call that ended after the write began, started
 * before the end of the first whole-range harvest that started after the
 * write completed, and read the write back from the unit after it
 * returned.  Returns the writes lost; *lost_old: those the old rule (no
 * read-back) finds lost.
 */
static uint64_t check_writes(struct ctx *c, const struct wlog *all,
			     uint64_t writes, uint64_t *lost_old)
{
	uint64_t lost = 0;

	*lost_old = 0;
	for (uint64_t i = 0; i < writes; i++) {
		const struct wlog *l = &all[i];
		const struct unitst *u = &c->u[l->unit];
		uint64_t d = deadline(c, l->te);
		bool old = false, ok;
		size_t idx;
		struct region *r;

		ok = credited(c, &u->resets, l, d, &old) ||
		     credited(c, &u->rearms, l, d, &old) ||
		     credited(c, &u->reports, l, d, &old);
		if (ok && old) {
			/* credited, but maybe not by the first candidate */
			const struct repv *v = &u->reports;
			size_t k = first_rep_ending_after(v, l->tb);

			if (k < v->n && v->v[k].a < d &&
			    v->v[k].snap[l->w] < l->seq)
				c->late++;
		}
		if (ok)
			continue;
		r = unit_region(c, l->unit, &idx);
		if (r->huge && zapped_in(c, l->unit, l->tb, d)) {
			c->zapped[r->kind]++;
			continue;
		}
		if (!old)
			(*lost_old)++;
		if (lost++ < 10) {
			const struct repv *v = &u->reports;
			size_t k = first_rep_ending_after(v, l->tb);

			printf("# LOST: %s unit %zu: writer %u stored %" PRIu64 " at [%" PRIu64 ", %" PRIu64 "], deadline %" PRIu64 "; ",
			       kind_name[r->kind], idx, l->w, l->seq, l->tb,
			       l->te, d);
			if (k == v->n)
				printf("no report after it\n");
			else
				printf("next report [%" PRIu64 ", %" PRIu64 "] read back %" PRIu64 " at %" PRIu64 "%s\n",
				       v->v[k].a, v->v[k].b,
				       v->v[k].snap[l->w], v->v[k].rd,
				       v->v[k].a < d ?
				       " (the old rule credited it)" : "");
			print_ops(c, l->unit, l->tb, d);
		}
	}
	return lost;
}

/*
 * False positives: a report that no write and no disruption of the
 * unit since the previous report explains.  A write explains report
 * R if it began before R ended and completed after the previous
 * report began (one that completed during the previous call may have
 * been consumed by it: counted as explained, so this undercounts).
 */
static void count_false(struct ctx *c, const struct wlog *all,
			uint64_t writes)
{
	for (uint32_t gi = 0, wi = 0; gi < c->nunits; gi++) {
		struct unitst *u = &c->u[gi];
		uint64_t max_te = 0, prev = 0;
		bool any = false;

		while (wi < writes && all[wi].unit < gi)
			wi++;
		for (size_t k = 0; k < u->reports.n; k++) {
			const struct rep *rp = &u->reports.v[k];
			bool explained;

			/* the latest completion of a write begun before R ended */
			for (; wi < writes && all[wi].unit == gi &&
			       all[wi].tb < rp->b; wi++) {
				any = true;
				if (all[wi].te > max_te)
					max_te = all[wi].te;
			}
			explained = any && max_te > prev;
			for (size_t j = 0; !explained && j < u->ops.n; j++)
				if (u->ops.v[j].a < rp->b &&
				    u->ops.v[j].b > prev) {
					c->fp_by_op[u->op_kind[j]]++;
					explained = true;
				}
			if (!explained)
				c->fp_unexplained[unit_region(c, gi, &(size_t){ 0 })->kind]++;
			prev = rp->a;
		}
	}
}

static int cmp_wlog(const void *a, const void *b)
{
	const struct wlog *x = a, *y = b;

	if (x->unit != y->unit)
		return (x->unit > y->unit) - (x->unit < y->unit);
	return (x->tb > y->tb) - (x->tb < y->tb);
}

/* Every writer's log in one array, ordered by unit and start. */
static struct wlog *gather_writes(struct ctx *c, const struct writer *w,
				  uint64_t *nwrites)
{
	uint64_t writes = 0;
	struct wlog *all;

	for (unsigned int i = 0; i < c->nwriters; i++) {
		writes += w[i].n;
		if (w[i].n == w[i].cap)
			printf("# writer %u filled its log (%u writes) and stopped early\n",
			       i, w[i].cap);
	}
	all = malloc((writes ? writes : 1) * sizeof(*all));
	if (!all)
		mw_bail("malloc", &c->seed);
	writes = 0;
	for (unsigned int i = 0; i < c->nwriters; i++) {
		memcpy(all + writes, w[i].log, w[i].n * sizeof(*all));
		writes += w[i].n;
	}
	qsort(all, writes, sizeof(*all), cmp_wlog);
	*nwrites = writes;
	return all;
}

/*
 * --hot-thp: two writers pinned to different CPUs hammer NHOT 4K pages
 * of a PMD-mapped THP while the harvester does get+reset on the whole
 * huge page.  Each round maps a fresh THP (MAP_FIXED over the last one,
 * the writers held off), faults it in by a write, checks with a non-arming
 * PAGEMAP_SCAN that it is PMD-mapped (PAGE_IS_HUGE over the whole 2M:
 * nothing splits an unarmed written pmd before the first harvest arms it),
 * then harvests it 2 to 4 times, the last time with the writers held off.
 * The first harvest arms the huge pmd; a write after it must fault (the
 * fault splits the pmd) and be reported by a later harvest: the read-back
 * rule finds a write that landed after the arm and was never reported,
 * which a CPU keeping a stale writable TLB entry for the huge page makes.
 * With --self-test a memfd page (the cold page) is harvested too and
 * writer 0 injects such writes there (see INJ_*).
 */
static void pin_cpu(unsigned int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		printf("Bail out! sched_setaffinity(%u): %s\n", cpu,
		       strerror(errno));
		exit(1);
	}
}

static void hot_log(struct writer *w, uint32_t g, uint64_t seq, uint64_t tb,
		    uint64_t te)
{
	w->log[w->n++] = (struct wlog){ g, w->id, seq, tb, te };
}

static void *hot_writer_main(void *arg)
{
	struct writer *w = arg;
	struct ctx *c = w->c;
	struct region *r = &c->reg[K_THP], *cold = &c->reg[K_MEMFD];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	crash_role = (int)w->id;

	pin_cpu(w->id % (ncpu > 0 ? ncpu : 1));
	while (!atomic_load(&c->stop) && w->n < w->cap) {
		int st = c->alias && !w->id ? atomic_load(&c->inj) : INJ_IDLE;
		uint64_t tb, te, seq;
		size_t i;

		if (st == INJ_PREP) {
			/* a real write, so that the next harvest reports it */
			pthread_rwlock_rdlock(&cold->lock);
			tb = tick(c);
			*(volatile uint64_t *)(cold->base + 8 * w->id) =
				++w->seq;
			te = tick(c);
			pthread_rwlock_unlock(&cold->lock);
			hot_log(w, cold->first, w->seq, tb, te);
			atomic_store(&c->inj, INJ_READY);
			continue;
		}
		if (st == INJ_GO) {
			tb = tick(c);
			seq = ++w->seq;
			if (!atomic_compare_exchange_strong(&c->inj,
						&(int){ INJ_GO }, INJ_STAMPED))
				continue;	/* the harvester gave up */
			if (!inj_wait(c, INJ_LAND))
				break;
			/* the kernel never sees this one */
			*(volatile uint64_t *)(c->alias + 8 * w->id) = seq;
			te = tick(c);
			hot_log(w, cold->first, seq, tb, te);
			c->injected++;
			atomic_store(&c->inj, INJ_IDLE);
			continue;
		}
		pthread_rwlock_rdlock(&r->lock);
		i = c->hotu[mw_rndn(&w->rng, NHOT)];
		tb = tick(c);
		*(volatile uint64_t *)(r->base + i * PSZ + 8 * w->id) =
			++w->seq;
		te = tick(c);
		pthread_rwlock_unlock(&r->lock);
		hot_log(w, r->first + i, w->seq, tb, te);
	}
	atomic_store(&c->stop, true);	/* the log is full: end the run */
	return NULL;
}

/* Is [p, p + 2M) one present huge pmd?  (Does not arm anything.) */
static bool pmd_mapped(struct ctx *c, char *p)
{
	struct page_region v[4];
	struct pm_scan_arg a = {
		.size = sizeof(a),
		.start = (uintptr_t)p, .end = (uintptr_t)p + HPSZ,
		.vec = (uintptr_t)v, .vec_len = 4,
		.category_anyof_mask = PAGE_IS_PRESENT,
		.return_mask = PAGE_IS_PRESENT | PAGE_IS_HUGE,
	};
	long n = ioctl(c->pagemap, PAGEMAP_SCAN, &a);

	return n == 1 && v[0].start == a.start && v[0].end == a.end &&
	       v[0].categories == (PAGE_IS_PRESENT | PAGE_IS_HUGE);
}

/* A whole-range harvest of the THP (and the cold page); r->lock held. */
static void hot_harvest(struct ctx *c, uint64_t *rng)
{
	struct region *cold = &c->reg[K_MEMFD];
	uint64_t t0 = tick(c);

	c->harvests++;
	harvest_region(c, &c->reg[K_THP], rng, true);
	if (cold->nunits) {
		pthread_rwlock_rdlock(&cold->lock);
		harvest_region(c, cold, rng, true);
		pthread_rwlock_unlock(&cold->lock);
	}
	push(&c->full, t0, tick(c));
}

static int hot_main(struct ctx *c, const char *argv0)
{
	struct region *r = &c->reg[K_THP];
	struct writer w[MAXW];
	pthread_t wt[MAXW];
	uint64_t rng = c->seed, writes = 0, lost, lost_old;
	uint64_t rounds = 0, pmd_rounds = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct wlog *all;
	time_t t_start = time(NULL), t_end, t_ran;
	bool ok;

	printf("TAP version 13\n1..%d\n", c->self_test ? 2 : 3);
	printf("# seed %" PRIu64 "; replay: %s --hot-thp --seed %" PRIu64 " --seconds %u --writers %u%s\n",
	       c->seed, argv0, c->seed, c->seconds, c->nwriters,
	       c->self_test ? " --self-test" : "");
	if (ncpu < 2)
		printf("# only %ld CPU: the writers share it\n", ncpu);
	setup_region(c, K_THP, 0, HPSZ);
	c->nunits = r->nunits;
	if (c->self_test) {
		struct region *cold = &c->reg[K_MEMFD];

		setup_region(c, K_MEMFD, c->nunits, PSZ);
		c->nunits += cold->nunits;
		c->alias = mmap(NULL, PSZ, PROT_READ | PROT_WRITE, MAP_SHARED,
				cold->fd, 0);
		if (c->alias == MAP_FAILED)
			mw_bail("alias", &c->seed);
	}
	c->u = calloc(c->nunits, sizeof(*c->u));
	if (!c->u)
		mw_bail("calloc", &c->seed);
	for (int j = 0; j < NHOT; j++)
		c->hotu[j] = j;
	for (unsigned int i = 0; i < c->nwriters; i++) {
		w[i] = (struct writer){ .c = c, .id = i, .rng = mw_rnd(&rng),
					.cap = HOTCAP };
		w[i].log = malloc(HOTCAP * sizeof(*w[i].log));
		if (!w[i].log ||
		    pthread_create(&wt[i], NULL, hot_writer_main, &w[i]))
			mw_bail("writer", &c->seed);
	}
	t_end = t_start + c->seconds;
	/*
	 * The self-test goes on until it injected 8, and every run until
	 * it made 4 rounds (a loaded host): 4 times as long at most.
	 */
	while ((time(NULL) < t_end ||
		((rounds < 4 || (c->alias && c->injected < 8)) &&
		 time(NULL) < t_end + 3 * (time_t)c->seconds)) &&
	       !atomic_load(&c->stop)) {
		unsigned int nh = 2 + mw_rndn(&rng, 3);
		uint64_t t0;

		/* The last harvest of a round and the new THP: writers off. */
		pthread_rwlock_wrlock(&r->lock);
		if (rounds)
			hot_harvest(c, &rng);
		t0 = tick(c);
		if (map_part(r, r->base, r->len, 0) ||
		    uffd_wp_register(c, r->base, r->len))
			mw_bail("a fresh THP", &c->seed);
		note_op(c, r, 0, r->nunits, OP_REMAP, true, t0);
		for (int j = 0; j < NHOT; j++) {
			uint32_t u;
			bool dup;

			do {
				u = mw_rndn(&rng, r->nunits);
				dup = false;
				for (int k = 0; k < j; k++)
					dup |= c->hotu[k] == u;
			} while (dup);
			c->hotu[j] = u;
		}
		*(volatile char *)(r->base + 8 * MAXW) = 1;	/* fault it in */
		if (!pmd_mapped(c, r->base))
			madvise(r->base, r->len, MADV_COLLAPSE);
		pthread_rwlock_unlock(&r->lock);
		rounds++;
		if (c->alias && c->injected < 8) {
			atomic_store(&c->inj, INJ_PREP);
			if (!inj_wait(c, INJ_READY))
				atomic_store(&c->inj, INJ_IDLE);
		}
		for (unsigned int h = 0; h + 1 < nh; h++) {
			usleep(200 + mw_rndn(&rng, 2000));
			pthread_rwlock_rdlock(&r->lock);
			if (!h)
				pmd_rounds += pmd_mapped(c, r->base);
			hot_harvest(c, &rng);
			pthread_rwlock_unlock(&r->lock);
			/* the injected store lands before the next harvest */
			if (!h && c->alias && atomic_load(&c->inj) != INJ_IDLE &&
			    !inj_wait(c, INJ_IDLE))
				atomic_store(&c->inj, INJ_IDLE);
		}
		usleep(200 + mw_rndn(&rng, 2000));
	}
	atomic_store(&c->stop, true);
	for (unsigned int i = 0; i < c->nwriters; i++)
		pthread_join(wt[i], NULL);
	for (int i = 0; i < 2; i++) {
		pthread_rwlock_rdlock(&r->lock);
		hot_harvest(c, &rng);
		pthread_rwlock_unlock(&r->lock);
	}
	t_ran = time(NULL) - t_start;

	all = gather_writes(c, w, &writes);
	lost = check_writes(c, all, writes, &lost_old);
	printf("# %" PRIu64 " rounds, the THP PMD-mapped at the first harvest in %" PRIu64 "; %u harvests (%" PRIu64 " PAGEMAP_SCAN calls); %" PRIu64 " writes by %u writers in %u s\n",
	       rounds, pmd_rounds, c->harvests, c->harvest_calls, writes,
	       c->nwriters, (unsigned int)t_ran);
	printf("# %" PRIu64 " writes landed after the arm of a call they overlapped and were reported later; the old rule (no read-back) finds %" PRIu64 " lost\n",
	       c->late, lost_old);
	if (c->walk_errors)
		printf("# %u walk errors, the first: %s\n", c->walk_errors,
		       c->walk_error);
	if (c->self_test) {
		ok = c->injected && lost >= c->injected && !lost_old;
		printf("%s 1 self-test: %u stale writes injected, the read-back rule finds %" PRIu64 " lost, the old rule %" PRIu64 "\n",
		       ok ? "ok" : "not ok", c->injected, lost, lost_old);
		printf("%s 2 self-test: nothing else wrong (walk %u)\n",
		       c->walk_errors ? "not ok" : "ok", c->walk_errors);
		return ok && !c->walk_errors ? 0 : 1;
	}
	ok = rounds >= 4 && pmd_rounds * 2 >= rounds;
	printf("%s 1 the THP was PMD-mapped when the first harvest armed it (%" PRIu64 " of %" PRIu64 " rounds)\n",
	       ok ? "ok" : "not ok", pmd_rounds, rounds);
	printf("%s 2 no write lost (%" PRIu64 " lost of %" PRIu64 ")\n",
	       lost ? "not ok" : "ok", lost, writes);
	printf("%s 3 every PAGEMAP_SCAN answer well-formed\n",
	       c->walk_errors ? "not ok" : "ok");
	if (!ok || lost || c->walk_errors || !writes) {
		printf("# FAILED: seed %" PRIu64 "; replay: %s --hot-thp --seed %" PRIu64 " --seconds %u --writers %u\n",
		       c->seed, argv0, c->seed, c->seconds, c->nwriters);
		return 1;
	}
	return 0;
}

/*
 * May pages nobody wrote in chunk ch of r read as written to a call that
 * ran in [a, b]?  During an un-protect + re-protect (a none pte then), and
 * after MADV_DONTNEED (the zap leaves none ptes, markers included) or an
 * mremap (without EVENT_REMAP the moved range is no longer armed) until
 * the end of the first whole harvest that started after it (which arms
 * them again).
 */
static bool in_window(const struct ctx *c, const struct region *r,
		      uint32_t ch, uint64_t a, uint64_t b)
{
	const struct chunkops *o = &r->cops[ch];

	for (size_t j = 0; j < o->s.n; j++) {
		const struct span *v = &o->s.v[j];

		if (o->k[j] == OP_UNPROTECT && v->a < b && v->b > a)
			return true;
		if ((o->k[j] == OP_MREMAP || o->k[j] == OP_DONTNEED) &&
		    v->a < b && deadline(c, v->b) > a)
			return true;
	}
	return false;
}

/* The disruptions of chunk ch of r (a diagnostic). */
static void print_chunk_ops(const struct region *r, uint32_t ch)
{
	const struct chunkops *o = &r->cops[ch];

	for (size_t j = 0; j < o->s.n; j++)
		printf("#   %s at [%" PRIu64 ", %" PRIu64 "]\n",
		       op_name[o->k[j]], o->s.v[j].a, o->s.v[j].b);
}

/*
 * Touch one byte in each 2 MiB of [p, p + len): its page table exists from
 * now on, so that VmPTE moves only with the sparse regions' tables.
 */
static void pretouch(void *p, size_t len)
{
	for (size_t off = 0; off < len; off += HPSZ)
		((volatile char *)p)[off] = 0;
	if (len)
		((volatile char *)p)[len - 1] = 0;
}

/*
 * --sparse: two large reservations (--sparse-mib each; Wine's
 * MADV_NOHUGEPAGE and one with THP allowed), MAP_NORESERVE, registered
 * with WP_UNPOPULATED | WP_ASYNC and armed untouched; writers on a few
 * scattered pages of a few chunks, the harvester's get+reset over the
 * whole of each, sparse_disruptor() beside them.  The same oracle, and:
 * a page that no unit holds (nobody writes it) is never reported outside
 * an un-protect window; VmPTE is back at its start after munmap of the
 * reservations (the harness's own memory has its page tables before:
 * pretouch(), and one malloc arena whose heap is a pre-touched pad); the
 * marker's counters, where the kernel has them, moved.
 */

/*
 * A slot's last value read back: what its writer stored, unless a
 * destructive disruption (zap, remap) overlapped or followed the store.
 */
static bool slot_value_ok(const struct unitst *u, const struct slotst *e,
			  uint64_t got)
{
	if (!u->d_end || u->d_end < e->t_begin)
		return got == e->val;
	if (e->t_end < u->d_begin)
		return got == 0;
	return got == 0 || got == e->val;
}
static int sparse_main(struct ctx *c, const char *argv0)
{
	static const enum kind sk[] = { K_SPARSE, K_SPARSE_THP };
	struct writer w[MAXW];
	pthread_t wt[MAXW], dt;
	uint64_t rng = c->seed, writes = 0, lost, lost_old, bad_data = 0;
	uint64_t nt_bad = 0, nt_shown = 0;
	/* the heap grows by about 2 MiB a second on the debug kernel */
	size_t len = c->sparse_mib << 20, pad = (128UL << 20) +
		     ((size_t)c->seconds << 22), logcap;
	struct mw_marker_stats m0, m1;
	bool marker, enabled, heap_ok, pte_ok, ops_ok;
	long pte0, pte_armed, pte_run, pte_end, pt0, pt_end;
	struct wlog *all;
	char *heap_end, *pads[64];
	double arm_us[2];
	time_t t_end;
	int npoints, failed, t = 0;

	mallopt(M_ARENA_MAX, 1);
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, INT32_MAX);
	marker = mw_marker_read(&m0) == 0;
	enabled = marker && mw_marker_enabled() == 1;
	npoints = c->self_test ? 3 : enabled ? 7 : 6;
	printf("TAP version 13\n1..%d\n", npoints);
	printf("# seed %" PRIu64 "; replay: %s --sparse --sparse-mib %zu --seed %" PRIu64 " --seconds %u --writers %u%s\n",
	       c->seed, argv0, c->sparse_mib, c->seed, c->seconds,
	       c->nwriters, c->self_test ? " --self-test" : "");
	if (marker)
		printf("# marker present: %s/stats, %s\n", MW_MARKER_DIR,
		       enabled ? "enabled: it must be used" :
		       "disabled (enabled is not 1): its counters are printed, their use not required");
	else
		printf("# marker absent (no %s/stats): this run covers 512 pte markers per armed 2 MiB, not the PMD-level marker\n",
		       MW_MARKER_DIR);
	c->sparse = true;
	c->nact = 0;
	for (int i = 0; i < 2; i++) {
		sparse_setup(c, sk[i], c->nunits, len, &rng);
		c->act[c->nact++] = sk[i];
		c->nunits += c->reg[sk[i]].nunits;
	}
	c->u = calloc(c->nunits, sizeof(*c->u));
	if (!c->u)
		mw_bail("calloc", &c->seed);
	/* The writers' logs: a write every ~5 µs per writer at most. */
	logcap = (size_t)c->seconds * 200000 + 100000;
	if (logcap > LOGCAP)
		logcap = LOGCAP;
	for (unsigned int i = 0; i < c->nwriters; i++) {
		w[i] = (struct writer){ .c = c, .id = i, .rng = mw_rnd(&rng),
					.cap = logcap };
		w[i].log = malloc(logcap * sizeof(*w[i].log));
		if (!w[i].log)
			mw_bail("malloc", &c->seed);
		pretouch(w[i].log, logcap * sizeof(*w[i].log));
	}
	/* The heap the run allocates from: touched now, never trimmed. */
	for (size_t i = 0; i < 64; i++) {
		pads[i] = malloc(pad / 64);
		if (!pads[i])
			mw_bail("malloc", &c->seed);
		pretouch(pads[i], pad / 64);
	}
	for (int i = 63; i >= 0; i--)
		free(pads[i]);
	heap_end = sbrk(0);
	for (unsigned int i = 0; i < c->nwriters; i++)
		if (pthread_create(&wt[i], NULL, writer_main, &w[i]))
			mw_bail("writer", &c->seed);
	if (pthread_create(&dt, NULL, disruptor_main, c))
		mw_bail("disruptor", &c->seed);
	usleep(100000);		/* the threads wait for go */
	pte0 = mw_vmpte_kb();
	pt0 = mw_meminfo_kb("PageTables");
	for (int i = 0; i < 2; i++)
		arm_us[i] = sparse_map(c, &c->reg[sk[i]]);
	pte_armed = mw_vmpte_kb();
	printf("# %s and %s: %zu MiB each, %zu and %zu units in %zu chunks each; armed untouched in %.0f and %.0f us; VmPTE %ld kB before, %ld kB armed\n",
	       kind_name[sk[0]], kind_name[sk[1]], c->sparse_mib,
	       c->reg[sk[0]].nunits, c->reg[sk[1]].nunits,
	       c->reg[sk[0]].nchunks, arm_us[0], arm_us[1], pte0, pte_armed);
	atomic_store(&c->go, true);
	t_end = time(NULL) + c->seconds;
	while (time(NULL) < t_end ||
	       (c->self_test && c->dropped < 8 &&
		time(NULL) < t_end + 3 * (time_t)c->seconds)) {
		harvest(c, &rng);
		if (!c->quiet && ++t % 200 == 0)
			printf("# %u harvests, %" PRIu64 " writes so far\n",
			       c->harvests, (uint64_t)w[0].n * c->nwriters);
	}
	atomic_store(&c->stop, true);
	for (unsigned int i = 0; i < c->nwriters; i++)
		pthread_join(wt[i], NULL);
	pthread_join(dt, NULL);
	for (int i = 0; i < 2; i++) {
		uint64_t t0 = tick(c);

		c->harvests++;
		for (int j = 0; j < c->nact; j++)
			harvest_region(c, &c->reg[c->act[j]], &rng, false);
		push(&c->full, t0, tick(c));
	}
	/* Data: the last value of each slot, unless a destructive op won. */
	for (uint32_t gi = 0; gi < c->nunits; gi++) {
		size_t idx;
		struct region *r = unit_region(c, gi, &idx);
		struct unitst *u = &c->u[gi];

		for (unsigned int sl = 0; sl < c->nwriters; sl++) {
			uint64_t got = *(uint64_t *)(unit_ptr(r, idx) + 8 * sl);
			struct slotst *e = &u->slot[sl];
			bool ok;

			if (!e->val)
				continue;
			ok = slot_value_ok(u, e, got);
			if (!ok && bad_data++ < 10)
				printf("# DATA: %s unit %zu (page %u) slot %u: %#" PRIx64 ", wrote %#" PRIx64 "\n",
				       kind_name[r->kind], idx, r->tgt[idx], sl,
				       got, e->val);
		}
	}
	pte_run = mw_vmpte_kb();
	for (int i = 0; i < 2; i++)
		if (munmap(c->reg[sk[i]].base, sparse_span(&c->reg[sk[i]])))
			mw_bail("munmap", &c->seed);
	pte_end = mw_vmpte_kb();
	pt_end = mw_meminfo_kb("PageTables");
	heap_ok = (char *)sbrk(0) == heap_end;
	pte_ok = heap_ok && pte0 >= 0 && pte_end == pte0;
	if (marker)
		mw_marker_read(&m1);

	/* The oracle. */
	all = gather_writes(c, w, &writes);
	lost = check_writes(c, all, writes, &lost_old);
	count_false(c, all, writes);
	if (c->self_test && c->full.n > 2) {
		/* a page nobody wrote, as if a harvest had reported it */
		struct region *r = &c->reg[K_SPARSE];
		uint32_t ch = 0;

		while (ch + 1 < r->nchunks && r->cops[ch].s.n)
			ch++;
		c->nt = xrealloc(c->nt, (c->nnt + 1) * sizeof(*c->nt));
		c->nt[c->nnt++] = (struct ntrep){ K_SPARSE, ch, 1,
			c->full.v[1].a, c->full.v[1].b };
		c->capnt = c->nnt;
	}
	for (size_t i = 0; i < c->nnt; i++) {
		const struct ntrep *e = &c->nt[i];

		if (in_window(c, &c->reg[e->k], e->ch, e->a, e->b)) {
			c->nt_excused += e->n;
			continue;
		}
		nt_bad += e->n;
		if (nt_shown++ < 10) {
			printf("# NEVER WRITTEN: %s chunk %u: %u pages nobody wrote reported by the call at [%" PRIu64 ", %" PRIu64 "]\n",
			       kind_name[e->k], e->ch, e->n, e->a, e->b);
			print_chunk_ops(&c->reg[e->k], e->ch);
		}
	}

	printf("# %u harvests (%" PRIu64 " PAGEMAP_SCAN calls, %" PRIu64 " reset-only), %" PRIu64 " writes by %u writers in %u s\n",
	       c->harvests, c->harvest_calls, c->reset_only, writes,
	       c->nwriters, c->seconds);
	for (int o = 0; o < OP_NOPS; o++)
		if (c->ops_done[o] || c->ops_failed[o])
			printf("# op %-20s %6" PRIu64 " done %6" PRIu64 " failed, %6" PRIu64 " false positives\n",
			       op_name[o], c->ops_done[o], c->ops_failed[o],
			       c->fp_by_op[o]);
	for (int i = 0; i < 2; i++)
		printf("# %-16s %6" PRIu64 " false positives without a cause\n",
		       kind_name[sk[i]], c->fp_unexplained[sk[i]]);
	printf("# pages nobody wrote reported: %" PRIu64 " inside the windows of un-protect, DONTNEED or mremap, %" PRIu64 " outside\n",
	       c->nt_excused, nt_bad);
	printf("# %" PRIu64 " writes landed after the arm of a call they overlapped and were reported later (%" PRIu64 " read-backs blurred by a zeroing disruption); the old rule finds %" PRIu64 " lost\n",
	       c->late, c->excused_zero, lost_old);
	printf("# VmPTE: %ld kB at the start, %ld kB armed, %ld kB at the end of the run, %ld kB after munmap; PageTables (machine) %ld -> %ld kB\n",
	       pte0, pte_armed, pte_run, pte_end, pt0, pt_end);
	printf("# the harness's heap: %zu MiB in use at the end, pre-touched pad %zu MiB%s\n",
	       mallinfo2().uordblks >> 20, pad >> 20,
	       heap_ok ? "" : ": outgrown, VmPTE cannot be compared");
	if (marker)
		mw_marker_print(&m0, &m1);
	if (c->walk_errors)
		printf("# %u walk errors, the first: %s\n", c->walk_errors,
		       c->walk_error);
	if (c->self_test) {
		printf("%s 1 self-test: %u reports dropped, the oracle finds writes lost (%" PRIu64 " lost)\n",
		       c->dropped && lost ? "ok" : "not ok", c->dropped, lost);
		printf("%s 2 self-test: a page nobody wrote, reported outside a window, is found (%" PRIu64 ")\n",
		       nt_bad ? "ok" : "not ok", nt_bad);
		printf("%s 3 self-test: nothing else wrong (walk %u, data %" PRIu64 ", VmPTE %ld -> %ld kB)\n",
		       c->walk_errors || bad_data || !pte_ok ? "not ok" : "ok",
		       c->walk_errors, bad_data, pte0, pte_end);
		return c->dropped && lost && nt_bad && !c->walk_errors &&
		       !bad_data && pte_ok ? 0 : 1;
	}
	ops_ok = c->ops_done[OP_REARM] && c->ops_done[OP_UNPROTECT] &&
		 c->ops_done[OP_DONTNEED] && c->ops_done[OP_MREMAP] &&
		 c->ops_done[OP_REMAP] && c->ops_done[OP_FORK];
	failed = !!lost + !!c->walk_errors + !!bad_data + !!nt_bad + !pte_ok +
		 !ops_ok + !writes;
	printf("%s 1 no write lost (%" PRIu64 " lost of %" PRIu64 ")\n",
	       lost ? "not ok" : "ok", lost, writes);
	printf("%s 2 every PAGEMAP_SCAN answer well-formed\n",
	       c->walk_errors ? "not ok" : "ok");
	printf("%s 3 data intact (%" PRIu64 " bad slots)\n",
	       bad_data ? "not ok" : "ok", bad_data);
	printf("%s 4 nothing reported that nobody wrote, outside the windows of un-protect, DONTNEED and mremap (%" PRIu64 " pages)\n",
	       nt_bad ? "not ok" : "ok", nt_bad);
	printf("%s 5 no page-table leak: VmPTE back to %ld kB after munmap (%ld kB)\n",
	       pte_ok ? "ok" : "not ok", pte0, pte_end);
	printf("%s 6 every disruption ran (%" PRIu64 " re-arms, %" PRIu64 " un-protects, %" PRIu64 " DONTNEEDs, %" PRIu64 " mremaps, %" PRIu64 " munmap+mmaps, %" PRIu64 " forks)\n",
	       ops_ok ? "ok" : "not ok", c->ops_done[OP_REARM], c->ops_done[OP_UNPROTECT],
	       c->ops_done[OP_DONTNEED], c->ops_done[OP_MREMAP],
	       c->ops_done[OP_REMAP], c->ops_done[OP_FORK]);
	if (enabled) {
		uint64_t ins = mw_marker_delta(&m0, &m1, MWM_installed);
		uint64_t exp = mw_marker_delta(&m0, &m1, MWM_expanded_fault);

		failed += !ins || !exp;
		printf("%s 7 the PMD-level marker was used (installed +%" PRIu64 ", expanded_fault +%" PRIu64 ")\n",
		       ins && exp ? "ok" : "not ok", ins, exp);
	}
	if (failed) {
		printf("# FAILED: seed %" PRIu64 "; replay: %s --sparse --sparse-mib %zu --seed %" PRIu64 " --seconds %u --writers %u\n",
		       c->seed, argv0, c->sparse_mib, c->seed, c->seconds,
		       c->nwriters);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ctx *c = calloc(1, sizeof(*c));
	struct writer w[MAXW];
	pthread_t wt[MAXW], dt;
	uint64_t rng, writes = 0, lost = 0, lost_old, bad_data = 0;
	uint64_t bad_file = 0;
	struct wlog *all;
	int dfd[K_NKINDS];
	void *dbuf;
	uint32_t g = 0;
	time_t t_end;
	int t = 0;

	c->seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	c->seconds = 20;
	c->nwriters = 2;
	c->sparse_mib = 1024;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			c->seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			c->seconds = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--writers") && i + 1 < argc)
			c->nwriters = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--quiet"))
			c->quiet = true;
		else if (!strcmp(argv[i], "--self-test"))
			c->self_test = true;
		else if (!strcmp(argv[i], "--hot-thp"))
			c->hot = true;
		else if (!strcmp(argv[i], "--sparse"))
			c->sparse = true;
		else if (!strcmp(argv[i], "--sparse-mib") && i + 1 < argc)
			c->sparse_mib = strtoul(argv[++i], NULL, 0);
		else {
			fprintf(stderr, "usage: %s [--seed N] [--seconds S] [--writers N (1..%d)] [--quiet] [--self-test] [--hot-thp | --sparse [--sparse-mib M]]\n",
				argv[0], MAXW);
			return 2;
		}
	}
	if (c->sparse && (c->sparse_mib < 64 || c->sparse_mib > 65536 ||
			  c->sparse_mib % 2)) {
		fprintf(stderr, "wostress: --sparse-mib: an even number of MiB, 64 to 65536\n");
		return 2;
	}
	if (c->nwriters < 1 || c->nwriters > MAXW) {
		fprintf(stderr, "wostress: --writers must be 1..%d\n", MAXW);
		return 2;
	}
	/* It compacts memory. */
	tap_guest_only();
	crash_setup(c);
	c->uffd = mw_uffd_open(O_CLOEXEC | O_NONBLOCK, UFFD_FEATURE_WP_ASYNC |
			       UFFD_FEATURE_WP_UNPOPULATED);
	if (c->uffd < 0)
		mw_bail("userfaultfd with WP_ASYNC", &c->seed);
	c->pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (c->pagemap < 0)
		mw_bail("pagemap", &c->seed);
	if (c->hot)
		return hot_main(c, argv[0]);
	if (c->sparse)
		return sparse_main(c, argv[0]);
	/*
	 * The disruptor unmaps and maps at addresses it owns (reserve(), a
	 * failed MREMAP_FIXED, which may already have unmapped its
	 * destination, munmap+mmap), and between two of its calls the kernel
	 * may give such a hole to another thread's mmap: glibc's malloc in
	 * the harvester took one, the disruptor's munmap removed it, and the
	 * harvester died of a SIGSEGV in sysmalloc_mmap() (soak, release
	 * kernel, loaded host).  So no thread but the disruptor maps anything
	 * while it runs: one arena, grown by brk only.
	 */
	mallopt(M_ARENA_MAX, 1);
	mallopt(M_MMAP_MAX, 0);
	for (int k = 0; k < K_SPARSE; k++)
		c->act[c->nact++] = k;
	printf("TAP version 13\n1..%d\n", c->self_test ? 2 : 4);
	printf("# seed %" PRIu64 "; replay: %s --seed %" PRIu64 " --seconds %u --writers %u\n",
	       c->seed, argv[0], c->seed, c->seconds, c->nwriters);
	rng = c->seed;
	for (int k = 0; k < K_SPARSE; k++) {
		setup_region(c, k, g, 0);
		g += c->reg[k].nunits;
	}
	c->nunits = g;
	c->u = calloc(c->nunits, sizeof(*c->u));
	if (!c->u)
		mw_bail("calloc", &c->seed);

	for (unsigned int i = 0; i < c->nwriters; i++) {
		w[i] = (struct writer){ .c = c, .id = i, .rng = mw_rnd(&rng),
					.cap = LOGCAP };
		w[i].log = malloc(LOGCAP * sizeof(*w[i].log));
		if (!w[i].log || pthread_create(&wt[i], NULL, writer_main, &w[i]))
			mw_bail("writer", &c->seed);
	}
	if (pthread_create(&dt, NULL, disruptor_main, c))
		mw_bail("disruptor", &c->seed);
	t_end = time(NULL) + c->seconds;
	/*
	 * The self-test needs reports to drop, which starts after 20
	 * harvests: on a loaded machine it goes on past --seconds until it
	 * has dropped 8 (or for 4 times as long at most).
	 */
	while (time(NULL) < t_end ||
	       (c->self_test && c->dropped < 8 &&
		time(NULL) < t_end + 3 * (time_t)c->seconds)) {
		harvest(c, &rng);
		if (!c->quiet && ++t % 200 == 0)
			printf("# %u harvests, %" PRIu64 " writes so far\n",
			       c->harvests,
			       (uint64_t)w[0].n * c->nwriters);
	}
	atomic_store(&c->stop, true);
	for (unsigned int i = 0; i < c->nwriters; i++)
		pthread_join(wt[i], NULL);
	pthread_join(dt, NULL);
	/* Two final whole harvests: every write is covered by now. */
	for (int i = 0; i < 2; i++) {
		uint64_t t0 = tick(c);

		c->harvests++;
		for (int k = 0; k < K_SPARSE; k++)
			harvest_region(c, &c->reg[k], &rng, false);
		push(&c->full, t0, tick(c));
	}

	/* The oracle. */
	all = gather_writes(c, w, &writes);
	lost = check_writes(c, all, writes, &lost_old);
	count_false(c, all, writes);
	/*
	 * Shared files are read back through a second descriptor; ext4's
	 * with O_DIRECT after msync(), so the data must be on the disk.
	 */
	dbuf = aligned_alloc(PSZ, PSZ);
	for (int k = 0; k < K_SPARSE; k++) {
		struct region *r = &c->reg[k];
		char path[64];

		dfd[k] = -1;
		if (r->fd < 0 || r->huge)
			continue;
		if (k == K_EXT4 && msync(r->base, r->len, MS_SYNC))
			mw_bail("msync", &c->seed);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", r->fd);
		dfd[k] = open(path, O_RDONLY | (k == K_EXT4 ? O_DIRECT : 0));
		if (dfd[k] < 0 || !dbuf)
			mw_bail("reopen for the file check", &c->seed);
	}
	/* Data: the last value of each slot, unless a destructive op won. */
	for (uint32_t gi = 0; gi < c->nunits; gi++) {
		size_t idx;
		struct region *r = unit_region(c, gi, &idx);
		struct unitst *u = &c->u[gi];

		for (unsigned int s = 0; s < c->nwriters; s++) {
			uint64_t got = *(uint64_t *)(r->base + idx * r->unit +
						     8 * s);
			struct slotst *e = &u->slot[s];
			bool ok;

			if (!e->val)
				continue;
			ok = slot_value_ok(u, e, got);
			if (!ok && bad_data++ < 10)
				printf("# DATA: %s unit %zu slot %u: %#" PRIx64 ", wrote %#" PRIx64 "\n",
				       kind_name[r->kind], idx, s, got, e->val);
		}
		if (r->fd >= 0 && !r->huge) {
			if (pread(dfd[r->kind], dbuf, PSZ, idx * r->unit) !=
			    (ssize_t)PSZ ||
			    memcmp(dbuf, r->base + idx * r->unit, NSLOT * 8)) {
				if (bad_file++ < 10)
					printf("# FILE: %s unit %zu differs from memory\n",
					       kind_name[r->kind], idx);
			}
		}
	}

	printf("# %u harvests (%" PRIu64 " PAGEMAP_SCAN calls, %" PRIu64 " reset-only), %" PRIu64 " writes by %u writers in %u s\n",
	       c->harvests, c->harvest_calls, c->reset_only,
	       writes, c->nwriters, c->seconds);
	for (int o = 0; o < OP_NDENSE; o++)
		printf("# op %-20s %6" PRIu64 " done %6" PRIu64 " failed, %6" PRIu64 " false positives\n",
		       op_name[o], c->ops_done[o], c->ops_failed[o],
		       c->fp_by_op[o]);
	for (int k = 0; k < K_SPARSE; k++)
		printf("# %-16s %6" PRIu64 " false positives without a cause, %4" PRIu64 " writes zapped before a harvest\n",
		       kind_name[k], c->fp_unexplained[k], c->zapped[k]);
	printf("# %" PRIu64 " writes landed after the arm of a call they overlapped and were reported later (%" PRIu64 " read-backs blurred by a zeroing disruption); the old rule (no read-back) finds %" PRIu64 " lost\n",
	       c->late, c->excused_zero, lost_old);
	if (c->walk_errors)
		printf("# %u walk errors, the first: %s\n", c->walk_errors,
		       c->walk_error);
	if (c->self_test) {
		printf("%s 1 self-test: %u reports dropped, the oracle finds writes lost (%" PRIu64 " lost)\n",
		       c->dropped && lost ? "ok" : "not ok", c->dropped, lost);
		printf("%s 2 self-test: nothing else wrong (walk %u, data %" PRIu64 ", file %" PRIu64 ")\n",
		       c->walk_errors || bad_data || bad_file ? "not ok" : "ok",
		       c->walk_errors, bad_data, bad_file);
		return c->dropped && lost && !c->walk_errors && !bad_data &&
		       !bad_file ? 0 : 1;
	}
	printf("%s 1 no write lost (%" PRIu64 " lost of %" PRIu64 ")\n",
	       lost ? "not ok" : "ok", lost, writes);
	printf("%s 2 every PAGEMAP_SCAN answer well-formed\n",
	       c->walk_errors ? "not ok" : "ok");
	printf("%s 3 data intact (%" PRIu64 " bad slots)\n",
	       bad_data ? "not ok" : "ok", bad_data);
	printf("%s 4 shared files hold the data (%" PRIu64 " units differ)\n",
	       bad_file ? "not ok" : "ok", bad_file);
	if (lost || c->walk_errors || bad_data || bad_file || !writes) {
		printf("# FAILED: seed %" PRIu64 "; replay: %s --seed %" PRIu64 " --seconds %u --writers %u\n",
		       c->seed, argv[0], c->seed, c->seconds, c->nwriters);
		return 1;
	}
	return 0;
}
