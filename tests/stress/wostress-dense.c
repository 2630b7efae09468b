// SPDX-License-Identifier: MIT
/*
 * wostress's default mode (tests/stress/wostress.c): every kind of memory
 * at once, the disruptor of disruptor_main(), the data and shared-file
 * checks.
 */
#include "wostress.h"

/*
 * The disruptor: what processes do to memory, on random units of a random
 * region, under the region's lock (write-locked for what moves or replaces
 * the mapping): DONTNEED, PAGEOUT, COLLAPSE, mprotect splits, mremap,
 * munmap + mmap, uffd unregister + register, fork with a writing child,
 * compaction.
 */
static void *disruptor_main(void *arg)
{
	struct ctx *c = arg;
	uint64_t rng = c->seed ^ 0xd15c0;

	crash_role = -2;
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
		case OP_FORK:
			a = b = 0;
			ret = fork_writer(c, &rng);
			break;
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

/*
 * The default mode: every kind of memory (K_ANON .. K_HUGE_SHARED), writers,
 * the harvester in this thread and disruptor_main() beside them; then the
 * oracle, the data and the shared files.
 */
int dense_main(struct ctx *c, const char *argv0)
{
	struct writer w[MAXW];
	pthread_t wt[MAXW], dt;
	uint64_t rng, writes = 0, lost = 0, lost_old, bad_data = 0;
	uint64_t bad_file = 0;
	struct wlog *all;
	int dfd[K_NKINDS];
	void *dbuf;
	uint32_t g = 0;

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
	       c->seed, argv0, c->seed, c->seconds, c->nwriters);
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
	harvest_run(c, &rng, time(NULL) + c->seconds, w, wt, dt);

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

		check_slots(c, gi, &bad_data);
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
	print_common_points(c, lost, writes, bad_data);
	printf("%s 4 shared files hold the data (%" PRIu64 " units differ)\n",
	       bad_file ? "not ok" : "ok", bad_file);
	if (lost || c->walk_errors || bad_data || bad_file || !writes) {
		printf("# FAILED: seed %" PRIu64 "; replay: %s --seed %" PRIu64 " --seconds %u --writers %u\n",
		       c->seed, argv0, c->seed, c->seconds, c->nwriters);
		return 1;
	}
	return 0;
}
