// SPDX-License-Identifier: MIT
/*
 * wostress --hot-thp (tests/stress/wostress.c): two writers pinned to
 * different CPUs hammer NHOT 4K pages of a PMD-mapped THP while the
 * harvester does get+reset on the whole huge page.  Each round maps a fresh
 * THP (MAP_FIXED over the last one, the writers held off), faults it in by
 * a write, checks with a non-arming PAGEMAP_SCAN that it is PMD-mapped
 * (PAGE_IS_HUGE over the whole 2M: nothing splits an unarmed written pmd
 * before the first harvest arms it), then harvests it 2 to 4 times, the
 * last time with the writers held off.  The first harvest arms the huge
 * pmd; a write after it must fault (the fault splits the pmd) and be
 * reported by a later harvest: the read-back rule finds a write that
 * landed after the arm and was never reported, which a CPU keeping a stale
 * writable TLB entry for the huge page makes.  With --self-test a memfd
 * page (the cold page) is harvested too and writer 0 injects such writes
 * there (see INJ_*).
 */
#include "wostress.h"

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

int hot_main(struct ctx *c, const char *argv0)
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
