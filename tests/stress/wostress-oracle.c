// SPDX-License-Identifier: MIT
/*
 * wostress's oracle (tests/stress/wostress.c), which its modes share: the
 * regions and their set-up, the writers, the harvester (Wine's get+reset),
 * the record of what each call reported or reset and of the disruptions of
 * each unit, and the checks: no write lost, false positives by cause, the
 * data.
 */
#include "wostress.h"

const char *const kind_name[K_NKINDS] = {
	"anon", "thp", "shmem", "memfd", "tmpfs-file", "ext4-file",
	"hugetlb-private", "hugetlb-shared", "sparse", "sparse-thp",
};

const char *const op_name[OP_NOPS] = {
	"dontneed", "pageout", "collapse", "mprotect", "mremap",
	"munmap+mmap", "unregister+register", "fork", "compact",
	"re-arm", "unprotect+protect",
};

/*
 * A fatal signal in the test itself (a SIGSEGV or SIGBUS of a writer,
 * the harvester or the disruptor) must say where, with what the
 * disruptor was doing and the mappings: a soak that only prints
 * "Segmentation fault" cannot tell a test bug from a kernel that mapped
 * the wrong thing.  A handler takes no argument, hence the one pointer.
 */
static struct ctx *crash_ctx;
_Thread_local int crash_role = -1;	/* -1 harvester, -2 disruptor */

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

void crash_setup(struct ctx *c)
{
	struct sigaction sa = { .sa_sigaction = crash_report,
				.sa_flags = SA_SIGINFO };

	crash_ctx = c;
	atomic_store(&c->dis_op, -1);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		puts("Bail out! out of memory");
		exit(1);
	}
	return p;
}

void push(struct spanv *v, uint64_t a, uint64_t b)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? 2 * v->cap : 8;
		v->v = xrealloc(v->v, v->cap * sizeof(*v->v));
	}
	v->v[v->n++] = (struct span){ a, b };
}

/* The first unit of r at or after byte offset off. */
size_t unit_at(const struct region *r, uintptr_t off)
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

/* An address range of len, aligned to align, reserved PROT_NONE. */
char *reserve(size_t len, size_t align)
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
int map_part(struct region *r, char *at, size_t len, size_t off)
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
void setup_region(struct ctx *c, enum kind k, uint32_t first,
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

struct region *unit_region(struct ctx *c, uint32_t g, size_t *idx)
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

void *writer_main(void *arg)
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

void record_in(struct ctx *c, struct region *r, size_t a, size_t b,
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

void walk_error(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (!c->walk_errors++) {
		va_start(ap, fmt);
		vsnprintf(c->walk_error, sizeof(c->walk_error), fmt, ap);
		va_end(ap);
	}
}

bool inj_wait(struct ctx *c, int state)
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
void harvest_region(struct ctx *c, struct region *r, uint64_t *rng,
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

void harvest(struct ctx *c, uint64_t *rng)
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
/*
 * The harvester in the calling thread until t_end, a progress line every
 * 200 harvests.  The self-test needs reports to drop, which starts after
 * 20 harvests: on a loaded machine it goes on past t_end until it has
 * dropped 8 (or for 4 times as long at most).  Then the writers wt (w) and
 * the disruptor dt are stopped and joined, and two final whole harvests of
 * c->act run: every write is covered by then.
 */
void harvest_run(struct ctx *c, uint64_t *rng, time_t t_end,
		 const struct writer *w, const pthread_t *wt, pthread_t dt)
{
	int t = 0;

	while (time(NULL) < t_end ||
	       (c->self_test && c->dropped < 8 &&
		time(NULL) < t_end + 3 * (time_t)c->seconds)) {
		harvest(c, rng);
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
			harvest_region(c, &c->reg[c->act[j]], rng, false);
		push(&c->full, t0, tick(c));
	}
}

void note_op(struct ctx *c, struct region *r, size_t a, size_t b,
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

void child_writes(struct ctx *c, uint64_t seed)
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

/* OP_FORK: a child that writes (child_writes()); 0 if it exited 0. */
int fork_writer(struct ctx *c, uint64_t *rng)
{
	pid_t pid = fork();
	int st;

	if (pid == 0)
		child_writes(c, mw_rnd(rng));
	return pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	       WEXITSTATUS(st);
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
uint64_t deadline(const struct ctx *c, uint64_t te)
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
uint64_t check_writes(struct ctx *c, const struct wlog *all,
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
void count_false(struct ctx *c, const struct wlog *all,
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
struct wlog *gather_writes(struct ctx *c, const struct writer *w,
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

/*
 * The data check of unit g: each writer's slot read back against what it
 * stored last (slot_value_ok()); adds the bad slots to *bad, the first 10
 * of the run printed.
 */
void check_slots(struct ctx *c, uint32_t g, uint64_t *bad)
{
	size_t idx;
	struct region *r = unit_region(c, g, &idx);
	struct unitst *u = &c->u[g];

	for (unsigned int s = 0; s < c->nwriters; s++) {
		uint64_t got = *(uint64_t *)(unit_ptr(r, idx) + 8 * s);
		struct slotst *e = &u->slot[s];
		char page[32] = "";

		if (!e->val || slot_value_ok(u, e, got) || (*bad)++ >= 10)
			continue;
		if (r->tgt)	/* sparse: the page too */
			snprintf(page, sizeof(page), " (page %u)", r->tgt[idx]);
		printf("# DATA: %s unit %zu%s slot %u: %#" PRIx64 ", wrote %#" PRIx64 "\n",
		       kind_name[r->kind], idx, page, s, got, e->val);
	}
}

/*
 * TAP points 1-3 of the dense and the sparse modes: no write lost, every
 * PAGEMAP_SCAN answer well-formed, the data intact.
 */
void print_common_points(const struct ctx *c, uint64_t lost, uint64_t writes,
			 uint64_t bad_data)
{
	printf("%s 1 no write lost (%" PRIu64 " lost of %" PRIu64 ")\n",
	       lost ? "not ok" : "ok", lost, writes);
	printf("%s 2 every PAGEMAP_SCAN answer well-formed\n",
	       c->walk_errors ? "not ok" : "ok");
	printf("%s 3 data intact (%" PRIu64 " bad slots)\n",
	       bad_data ? "not ok" : "ok", bad_data);
}
