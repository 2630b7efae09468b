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
 * began and started before the end of the first whole-range harvest that
 * started after the write completed.  Data must read back intact and
 * shared files must hold what was written.  False positives are counted
 * by cause (the disruption that explains them) and reported, not failed.
 *
 *   wostress [--seed N] [--seconds S] [--writers N] [--quiet] [--self-test]
 *
 * --self-test proves the oracle can fail: it drops a region the kernel
 * reported in each of 8 harvests (on 4K memory, once writes were seen) and
 * passes only if the oracle then finds writes lost.
 *
 * TAP output; a failure prints the seed and the replay command.  Runs only
 * in the memwatch test guest (it compacts memory and needs the hugetlb
 * pool and /mnt/disk).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
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

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MFD_HUGETLB
#define MFD_HUGETLB 4U
#endif

#define PSZ	4096UL
#define HPSZ	(2UL << 20)
#define NSLOT	8		/* value slots per unit; the last is the child's */
#define LOGCAP	(1U << 23)	/* writes logged per writer (8M: ~1 h) */
#define MAXW	(NSLOT - 1)

enum kind { K_ANON, K_THP, K_SHMEM, K_MEMFD, K_TMPFS, K_EXT4, K_HUGE_PRIV,
	    K_HUGE_SHARED, K_NKINDS };

static const char *const kind_name[K_NKINDS] = {
	"anon", "thp", "shmem", "memfd", "tmpfs-file", "ext4-file",
	"hugetlb-private", "hugetlb-shared",
};

enum op { OP_DONTNEED, OP_PAGEOUT, OP_COLLAPSE, OP_MPROTECT, OP_MREMAP,
	  OP_REMAP, OP_REREGISTER, OP_FORK, OP_COMPACT, OP_NOPS };

static const char *const op_name[OP_NOPS] = {
	"dontneed", "pageout", "collapse", "mprotect", "mremap",
	"munmap+mmap", "unregister+register", "fork", "compact",
};

struct region {
	enum kind kind;
	char *base;		/* under lock */
	size_t len, unit, nunits;
	uint32_t first;		/* global index of unit 0 */
	bool priv, huge;
	int fd;			/* backing object, or -1 */
	pthread_rwlock_t lock;
};

/*
 * Every event is stamped with the shared clock (one atomic counter): a
 * write with [tb, te] around its store, a PAGEMAP_SCAN call with [c0, c1]
 * around the ioctl, a disruption with [t0, t1] around the operation.
 */
struct span {
	uint64_t a, b;
};

/* One logged write: its unit and its span. */
struct wlog {
	uint32_t unit;
	uint64_t tb, te;
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

struct unitst {
	struct spanv reports;	/* the calls that reported it */
	struct spanv resets;	/* the reset-only calls that covered it */
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
	int uffd, pagemap;
	struct region reg[K_NKINDS];
	size_t nunits;
	struct unitst *u;
	uint32_t harvests;			/* started so far */
	struct spanv full;			/* whole-range harvests */
	_Atomic uint64_t clock;			/* orders every event */
	atomic_bool stop;
	/* results */
	uint64_t harvest_calls, reset_only, fp_by_op[OP_NOPS];
	uint64_t fp_unexplained[K_NKINDS], zapped[K_NKINDS];
	uint64_t ops_done[OP_NOPS], ops_failed[OP_NOPS];
	unsigned int walk_errors;
	char walk_error[256];
};

struct writer {
	struct ctx *c;
	unsigned int id;
	uint64_t rng;
	struct wlog *log;
	uint32_t n;
	uint64_t seq;
};

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rndn(uint64_t *s, uint64_t n)
{
	return n ? rnd(s) % n : 0;
}

static void die(const struct ctx *c, const char *what)
{
	printf("Bail out! %s: %s (seed %" PRIu64 ")\n", what, strerror(errno),
	       c->seed);
	exit(1);
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

static int uffd_wp_register(struct ctx *c, void *p, size_t len)
{
	struct uffdio_register r = {
		.range = { (uintptr_t)p, len },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	return ioctl(c->uffd, UFFDIO_REGISTER, &r);
}

static int uffd_wp_unregister(struct ctx *c, void *p, size_t len)
{
	struct uffdio_range r = { (uintptr_t)p, len };

	return ioctl(c->uffd, UFFDIO_UNREGISTER, &r);
}

static int uffd_arm(struct ctx *c, void *p, size_t len)
{
	struct uffdio_writeprotect wp = {
		.range = { (uintptr_t)p, len },
		.mode = UFFDIO_WRITEPROTECT_MODE_WP,
	};

	return ioctl(c->uffd, UFFDIO_WRITEPROTECT, &wp);
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
	if (r->kind == K_THP)
		madvise(at, len, MADV_HUGEPAGE);
	if (r->kind == K_ANON)
		madvise(at, len, MADV_NOHUGEPAGE);
	return 0;
}

static void setup_region(struct ctx *c, enum kind k, uint32_t first)
{
	static const size_t len[K_NKINDS] = {
		2 << 20, 4 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20,
		4 * HPSZ, 4 * HPSZ,
	};
	struct region *r = &c->reg[k];
	pthread_rwlockattr_t at;
	char path[64];

	r->kind = k;
	r->len = len[k];
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
		die(c, kind_name[k]);
	if ((k == K_MEMFD || k == K_HUGE_SHARED || k == K_TMPFS ||
	     k == K_EXT4) && r->fd < 0)
		die(c, kind_name[k]);
	r->base = reserve(r->len, r->huge || k == K_THP ? HPSZ : PSZ);
	if (!r->base || map_part(r, r->base, r->len, 0))
		die(c, kind_name[k]);
	/* Half the units touched before arming, half never. */
	for (size_t i = 0; i < r->nunits; i += 2)
		r->base[i * r->unit + 8 * MAXW] = 1;
	if (uffd_wp_register(c, r->base, r->len) ||
	    uffd_arm(c, r->base, r->len))
		die(c, "register/arm");
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

	while (!atomic_load(&c->stop) && w->n < LOGCAP) {
		uint32_t g = rndn(&w->rng, c->nunits);
		struct slotst *s = &c->u[g].slot[w->id];
		size_t i;
		struct region *r = unit_region(c, g, &i);
		uint64_t tb, te;

		pthread_rwlock_rdlock(&r->lock);
		tb = tick(c);
		*(volatile uint64_t *)(r->base + i * r->unit + 8 * w->id) =
			++w->seq;
		te = tick(c);
		pthread_rwlock_unlock(&r->lock);
		w->log[w->n++] = (struct wlog){ g, tb, te };
		*s = (struct slotst){ w->seq, tb, te };
	}
	return NULL;
}

/*
 * Units [a, b) of r reported by the call that ran in [c0, c1], or with
 * reset_only covered by a reset-only call: their writes are consumed, which
 * the loss check counts as reported and the false-positive count ignores.
 */
static void record(struct ctx *c, struct region *r, size_t a, size_t b,
		   uint64_t c0, uint64_t c1, bool reset_only)
{
	for (size_t i = a; i < b; i++) {
		struct unitst *u = &c->u[r->first + i];
		struct spanv *v = reset_only ? &u->resets : &u->reports;

		if (!v->n || v->v[v->n - 1].a != c0)
			push(v, c0, c1);
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

/* One get+reset of region r in chunks, as Wine does; r->lock held. */
static void harvest_region(struct ctx *c, struct region *r, uint64_t *rng)
{
	struct page_region vec[64];
	uintptr_t base = (uintptr_t)r->base, end = base + r->len;
	uintptr_t pos = base;
	unsigned int stuck = 0;

	while (pos < end) {
		unsigned long vlen = 1 + rndn(rng, 64), maxp = 0, pages = 0;
		struct pm_scan_arg a;
		uint64_t c0, c1;
		long n;

		if (rndn(rng, 2))
			maxp = r->huge ? 512 * (1 + rndn(rng, 2)) :
					 1 + rndn(rng, 40);
		a = (struct pm_scan_arg){
			.size = sizeof(a),
			.flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
			.start = pos, .end = end,
			.vec = (uintptr_t)vec, .vec_len = vlen,
			.max_pages = maxp,
			.category_mask = PAGE_IS_WRITTEN,
			.return_mask = PAGE_IS_WRITTEN,
		};
		c0 = tick(c);
		n = ioctl(c->pagemap, PAGEMAP_SCAN, &a);
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
			if (c->self_test && c->dropped < 8 && !r->huge &&
			    c->harvests > 20 &&
			    c->drop_harvest != c->harvests) {
				c->dropped++;
				c->drop_harvest = c->harvests;
				continue;
			}
			record(c, r, (e->start - base) / r->unit,
			       (e->end - base) / r->unit, c0, c1, false);
		}
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
	if (rndn(rng, 8) == 0) {
		/* Reset only, on a sub-range: the writes there are consumed. */
		struct region *r = &c->reg[rndn(rng, K_NKINDS)];
		size_t a = rndn(rng, r->nunits), b;
		struct pm_scan_arg arg;
		uint64_t c0, c1;

		b = a + 1 + rndn(rng, r->nunits - a);
		pthread_rwlock_rdlock(&r->lock);
		arg = (struct pm_scan_arg){
			.size = sizeof(arg),
			.flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
			.start = (uintptr_t)r->base + a * r->unit,
			.end = (uintptr_t)r->base + b * r->unit,
			.category_mask = PAGE_IS_WRITTEN,
			.return_mask = PAGE_IS_WRITTEN,
		};
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

		for (int k = 0; k < K_NKINDS; k++) {
			struct region *r = &c->reg[k];

			pthread_rwlock_rdlock(&r->lock);
			harvest_region(c, r, rng);
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
		struct region *r = &c->reg[rndn(&rng, K_NKINDS)];
		size_t i = rndn(&rng, r->nunits);

		/* A shared page written by the child would be a real write
		 * into the parent's memory that its own ptes do not see. */
		if (r->priv)
			*(volatile uint64_t *)(r->base + i * r->unit +
					       8 * MAXW) = ~0ULL;
	}
	_exit(0);
}

static void *disruptor_main(void *arg)
{
	struct ctx *c = arg;
	uint64_t rng = c->seed ^ 0xd15c0;

	while (!atomic_load(&c->stop)) {
		enum op op = rndn(&rng, OP_NOPS);
		struct region *r = &c->reg[rndn(&rng, K_NKINDS)];
		size_t a = rndn(&rng, r->nunits), b;
		uint64_t t0 = tick(c);
		bool wlock = op == OP_MREMAP || op == OP_REMAP ||
			     op == OP_REREGISTER, destr = false;
		int ret = 0;
		char *p;

		b = a + 1 + rndn(&rng, (r->nunits - a) < 64 ? r->nunits - a : 64);
		usleep(rndn(&rng, 3000));
		if (wlock)
			pthread_rwlock_wrlock(&r->lock);
		else
			pthread_rwlock_rdlock(&r->lock);
		p = r->base + a * r->unit;
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
				munmap(to, r->len);
				ret = -1;
				break;
			}
			r->base = q;
			/* Without EVENT_REMAP the moved VMA lost its uffd:
			 * register again, no arming (nothing gets lost). */
			ret = uffd_wp_register(c, r->base, r->len);
			if (ret)
				die(c, "register after mremap");
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
				die(c, "munmap+mmap");
			if (uffd_wp_register(c, p, (b - a) * r->unit))
				die(c, "register after mmap");
			destr = r->priv || r->kind == K_SHMEM;
			break;
		case OP_REREGISTER:
			if (uffd_wp_unregister(c, p, (b - a) * r->unit) ||
			    uffd_wp_register(c, p, (b - a) * r->unit))
				die(c, "unregister+register");
			break;
		case OP_FORK: {
			pid_t pid = fork();
			int st;

			a = b = 0;
			if (pid == 0)
				child_writes(c, rnd(&rng));
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

/* The first span of v (ordered) that ends after t, or v->n. */
static size_t first_ending_after(const struct spanv *v, uint64_t t)
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

static int cmp_wlog(const void *a, const void *b)
{
	const struct wlog *x = a, *y = b;

	if (x->unit != y->unit)
		return (x->unit > y->unit) - (x->unit < y->unit);
	return (x->tb > y->tb) - (x->tb < y->tb);
}

static bool in_guest(void)
{
	char buf[4096] = "";
	int fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t r = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	return r > 0 && strstr(buf, " memwatch.guest=1");
}

int main(int argc, char **argv)
{
	struct ctx *c = calloc(1, sizeof(*c));
	struct writer w[MAXW];
	pthread_t wt[MAXW], dt;
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED,
	};
	uint64_t rng, writes = 0, lost = 0, bad_data = 0, bad_file = 0;
	struct wlog *all;
	int dfd[K_NKINDS];
	void *dbuf;
	uint32_t g = 0;
	time_t t_end;
	int t = 0;

	c->seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	c->seconds = 20;
	c->nwriters = 2;
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
		else {
			fprintf(stderr, "usage: %s [--seed N] [--seconds S] [--writers N (1..%d)] [--quiet] [--self-test]\n",
				argv[0], MAXW);
			return 2;
		}
	}
	if (c->nwriters < 1 || c->nwriters > MAXW) {
		fprintf(stderr, "wostress: --writers must be 1..%d\n", MAXW);
		return 2;
	}
	if (!in_guest()) {
		fprintf(stderr, "wostress: not in the memwatch guest, refusing (it compacts memory)\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n1..%d\n", c->self_test ? 2 : 4);
	printf("# seed %" PRIu64 "; replay: %s --seed %" PRIu64 " --seconds %u --writers %u\n",
	       c->seed, argv[0], c->seed, c->seconds, c->nwriters);
	rng = c->seed;

	c->uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (c->uffd < 0 || ioctl(c->uffd, UFFDIO_API, &api))
		die(c, "userfaultfd with WP_ASYNC");
	c->pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (c->pagemap < 0)
		die(c, "pagemap");
	for (int k = 0; k < K_NKINDS; k++) {
		setup_region(c, k, g);
		g += c->reg[k].nunits;
	}
	c->nunits = g;
	c->u = calloc(c->nunits, sizeof(*c->u));
	if (!c->u)
		die(c, "calloc");

	for (unsigned int i = 0; i < c->nwriters; i++) {
		w[i] = (struct writer){ .c = c, .id = i, .rng = rnd(&rng) };
		w[i].log = malloc(LOGCAP * sizeof(*w[i].log));
		if (!w[i].log || pthread_create(&wt[i], NULL, writer_main, &w[i]))
			die(c, "writer");
	}
	if (pthread_create(&dt, NULL, disruptor_main, c))
		die(c, "disruptor");
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
		for (int k = 0; k < K_NKINDS; k++)
			harvest_region(c, &c->reg[k], &rng);
		push(&c->full, t0, tick(c));
	}

	/* The oracle. */
	for (unsigned int i = 0; i < c->nwriters; i++) {
		writes += w[i].n;
		if (w[i].n == LOGCAP)
			printf("# writer %u filled its log (%u writes) and stopped early\n",
			       i, LOGCAP);
	}
	all = malloc((writes ? writes : 1) * sizeof(*all));
	if (!all)
		die(c, "malloc");
	writes = 0;
	for (unsigned int i = 0; i < c->nwriters; i++) {
		memcpy(all + writes, w[i].log, w[i].n * sizeof(*all));
		writes += w[i].n;
	}
	qsort(all, writes, sizeof(*all), cmp_wlog);
	for (uint64_t i = 0; i < writes; i++) {
		struct wlog *l = &all[i];
		const struct spanv *rep = &c->u[l->unit].reports;
		const struct spanv *rst = &c->u[l->unit].resets;
		size_t k = first_ending_after(rep, l->tb);
		size_t kr = first_ending_after(rst, l->tb);
		uint64_t d = deadline(c, l->te);

		if (kr < rst->n && rst->v[kr].a < d)
			continue;	/* consumed by a reset-only call */
		if (k == rep->n || rep->v[k].a >= d) {
			size_t idx;
			struct region *r = unit_region(c, l->unit, &idx);

			if (r->huge && zapped_in(c, l->unit, l->tb, d)) {
				c->zapped[r->kind]++;
				continue;
			}

			if (lost++ < 10)
				printf("# LOST: %s unit %zu written at [%" PRIu64 ", %" PRIu64 "], next report of the unit %s%" PRIu64 ", deadline %" PRIu64 "\n",
				       kind_name[r->kind], idx, l->tb, l->te,
				       k == rep->n ? "none " : "at ",
				       k == rep->n ? 0 : rep->v[k].a, d);
			if (lost <= 10)
				print_ops(c, l->unit, l->tb, d);
		}
	}
	/*
	 * False positives: a report that no write and no disruption of the
	 * unit since the previous report explains.  A write explains report
	 * R if it began before R ended and completed after the previous
	 * report began (one that completed during the previous call may have
	 * been consumed by it: counted as explained, so this undercounts).
	 */
	for (uint32_t gi = 0, wi = 0; gi < c->nunits; gi++) {
		struct unitst *u = &c->u[gi];
		uint64_t max_te = 0, prev = 0;
		bool any = false;

		while (wi < writes && all[wi].unit < gi)
			wi++;
		for (size_t k = 0; k < u->reports.n; k++) {
			const struct span *rp = &u->reports.v[k];
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
	/*
	 * Shared files are read back through a second descriptor; ext4's
	 * with O_DIRECT after msync(), so the data must be on the disk.
	 */
	dbuf = aligned_alloc(PSZ, PSZ);
	for (int k = 0; k < K_NKINDS; k++) {
		struct region *r = &c->reg[k];
		char path[64];

		dfd[k] = -1;
		if (r->fd < 0 || r->huge)
			continue;
		if (k == K_EXT4 && msync(r->base, r->len, MS_SYNC))
			die(c, "msync");
		snprintf(path, sizeof(path), "/proc/self/fd/%d", r->fd);
		dfd[k] = open(path, O_RDONLY | (k == K_EXT4 ? O_DIRECT : 0));
		if (dfd[k] < 0 || !dbuf)
			die(c, "reopen for the file check");
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
			if (!u->d_end || u->d_end < e->t_begin)
				ok = got == e->val;
			else if (e->t_end < u->d_begin)
				ok = got == 0;
			else
				ok = got == 0 || got == e->val;
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
	for (int o = 0; o < OP_NOPS; o++)
		printf("# op %-20s %6" PRIu64 " done %6" PRIu64 " failed, %6" PRIu64 " false positives\n",
		       op_name[o], c->ops_done[o], c->ops_failed[o],
		       c->fp_by_op[o]);
	for (int k = 0; k < K_NKINDS; k++)
		printf("# %-16s %6" PRIu64 " false positives without a cause, %4" PRIu64 " writes zapped before a harvest\n",
		       kind_name[k], c->fp_unexplained[k], c->zapped[k]);
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
