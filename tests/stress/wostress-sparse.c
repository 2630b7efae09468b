// SPDX-License-Identifier: MIT
/*
 * wostress --sparse (tests/stress/wostress.c): the sparse regions, their
 * set-up and mapping, the disruptor on their 2 MiB chunks, the windows in
 * which a page nobody wrote may read as written, and sparse_main().
 */
#include "wostress.h"

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

/*
 * --sparse's disruptor, on the 2 MiB chunks of the sparse regions: re-arm
 * (a whole chunk or a range with edges inside chunks), un-protect and
 * re-protect, MADV_DONTNEED with edges inside chunks, mremap of an aligned
 * chunk to the park and back, munmap + mmap of a chunk registered and
 * armed again (an empty 2 MiB anew), fork with a writing child.  Half the
 * chunks it picks hold units, half are any (mostly never written).  An arm
 * consumes the writes before it, as a reset-only call does (REC_REARM).
 */
static void *sparse_disruptor(void *arg)
{
	static const enum op ops[] = { OP_REARM, OP_UNPROTECT, OP_DONTNEED,
				       OP_MREMAP, OP_REMAP, OP_FORK };
	struct ctx *c = arg;
	uint64_t rng = c->seed ^ 0xd15c0;

	crash_role = -2;

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
		case OP_FORK:
			a = b = 0;
			ret = fork_writer(c, &rng);
			break;
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
int sparse_main(struct ctx *c, const char *argv0)
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
	int npoints, failed;

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
	if (pthread_create(&dt, NULL, sparse_disruptor, c))
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
	harvest_run(c, &rng, time(NULL) + c->seconds, w, wt, dt);
	/* Data: the last value of each slot, unless a destructive op won. */
	for (uint32_t gi = 0; gi < c->nunits; gi++)
		check_slots(c, gi, &bad_data);
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
	print_common_points(c, lost, writes, bad_data);
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
