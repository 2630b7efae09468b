// SPDX-License-Identifier: MIT
/*
 * Writers sharing pages while GetWriteWatch(RESET) harvests, as a new user
 * of the library would write it:
 *   ./ww_shared uffd|soft-dirty|mprotect [available|unavailable [MIB [WRITES]]]
 * WRITERS (4) threads write random pages of a MIB (default 64) MiB range,
 * 15 of 16 writes going to HOT pages spread over the range so that two
 * threads often write one page at once (the mprotect backend's fault
 * handler and a second writer then race) and most writes do not fault.  They stop after WRITES (default 10^7) writes in all, or
 * MAX_SECONDS.  The main thread harvests with memwatch_GetWriteWatch(RESET)
 * in a loop; one harvest in four passes a short array (1..SHORT pages).
 *
 * Around each store a writer counts the page's writes started and done
 * (atomically: several writers share a page).  For harvest h, S_h = the
 * "done" counts read just before it, T_h = the "started" counts read just
 * after it.  C[p] = T at the last harvest that reported p: every write of
 * p that began before that harvest ended is covered.  A harvest examined
 * the whole range, or, when its short array filled, the pages up to its
 * last reported one (the rest it leaves for later, as Windows does):
 *   late:   an examined page that h did not report although S_h[p] > C[p]
 *           (a write done before h began, covered by no report): that write
 *           is missing from the harvest that had to report it (each such
 *           write counted once);
 *   lost:   after the writers are joined, a final whole-range harvest;
 *           done[p] - C[p] writes of p were then never reported;
 *   false:  a page reported by h with T_h[p] <= S_{h'}[p], h' the harvest
 *           that reported p last (no write since h' began).
 * The soft-dirty backend documents that get+reset is not atomic (a write
 * between its pagemap read and its clear_refs is lost): for it late and
 * lost writes are counted, not asserted; uffd and mprotect must have none.
 */
#include "mw-test.h"
#include "expect.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>

#include "memwatch.h"

#define WRITERS 4
#define HOT 64
#define SHORT 64
#define MAX_SECONDS 120

struct shared {
	char *base;
	size_t ps, npages;
	unsigned long target;		/* writes in all */
	_Atomic uint32_t *started, *done;
	atomic_ulong total;
	atomic_bool stop;
};

struct writer_arg {
	struct shared *sh;
	unsigned int seed;
};

static void *writer(void *argp)
{
	const struct writer_arg *arg = argp;
	struct shared *sh = arg->sh;
	unsigned int x = arg->seed;
	unsigned long n = 0;

	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
		size_t p;

		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		if (x & 15)	/* a hot page: HOT of them, evenly spread */
			p = (x >> 4) % HOT * (sh->npages / HOT);
		else
			p = (x >> 4) % sh->npages;
		atomic_fetch_add(&sh->started[p], 1);
		((volatile char *)sh->base)[p * sh->ps + (x >> 20 & 63)] = (char)x;
		atomic_fetch_add(&sh->done[p], 1);
		if (++n % 4096 == 0 &&
		    atomic_fetch_add(&sh->total, 4096) + 4096 >= sh->target)
			atomic_store(&sh->stop, true);
	}
	atomic_fetch_add(&sh->total, n % 4096);
	return NULL;
}

int main(int argc, char **argv)
{
	enum memwatch_backend be;
	struct writer_arg args[WRITERS];
	pthread_t th[WRITERS];
	struct shared sh = { 0 };
	unsigned long late = 0, lost = 0, falsepos = 0, harvests = 0;
	unsigned long shorts = 0, reported = 0, first_late = ~0UL;
	uint32_t *S, *T, *C, *D, *L;
	struct memwatch *mw;
	void **addrs;
	bool *rep;
	size_t mib = 64, p;
	double t0;
	int i, ret;

	tap_guest_only();
	be = mw_test_backend(argc > 3 ? 3 : argc, argv);
	if (argc > 3)
		mib = strtoul(argv[3], NULL, 0);
	sh.target = argc > 4 ? strtoul(argv[4], NULL, 0) : 10000000UL;
	tap_plan(6);
	sh.ps = (size_t)sysconf(_SC_PAGESIZE);
	sh.npages = mib * 1024 * 1024 / sh.ps;
	/* PROT_NONE guards keep the thread stacks from merging with it. */
	sh.base = mmap(NULL, (sh.npages + 2) * sh.ps, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (sh.base == MAP_FAILED)
		return 1;
	sh.base += sh.ps;
	mprotect(sh.base, sh.npages * sh.ps, PROT_READ | PROT_WRITE);
	sh.started = calloc(sh.npages, sizeof(*sh.started));
	sh.done = calloc(sh.npages, sizeof(*sh.done));
	S = calloc(sh.npages * 5, sizeof(*S));
	rep = calloc(sh.npages, sizeof(*rep));
	addrs = calloc(sh.npages, sizeof(*addrs));
	if (!sh.started || !sh.done || !S || !rep || !addrs)
		return 1;
	T = S + sh.npages;
	C = T + sh.npages;
	D = C + sh.npages;
	L = D + sh.npages;
	ret = memwatch_open(&mw, be, MEMWATCH_OPEN_NO_ENV);
	if (ret == 0)
		ret = memwatch_add(mw, sh.base, sh.npages * sh.ps, 0);
	if (!tap_ok(ret == 0, "open %s and watch %zu MiB", argv[1], mib))
		return 1;
	t0 = mw_now_s();
	for (i = 0; i < WRITERS; i++) {
		args[i] = (struct writer_arg){ &sh, 2654435761u * (unsigned int)(i + 1) };
		pthread_create(&th[i], NULL, writer, &args[i]);
	}
	for (;;) {
		bool last = atomic_load(&sh.stop) || mw_now_s() - t0 > MAX_SECONDS;
		bool is_short = !last && harvests % 4 == 3;
		uintptr_t cap = is_short ? 1 + harvests / 4 % SHORT : sh.npages;
		uintptr_t count = cap;
		uint32_t gran;
		size_t examined;

		if (last) {
			atomic_store(&sh.stop, true);
			for (i = 0; i < WRITERS; i++)
				pthread_join(th[i], NULL);
		}
		for (p = 0; p < sh.npages; p++)
			S[p] = atomic_load(&sh.done[p]);
		ret = (int)memwatch_GetWriteWatch(mw, MEMWATCH_WRITE_WATCH_FLAG_RESET,
						  sh.base, sh.npages * sh.ps,
						  addrs, &count, &gran);
		for (p = 0; p < sh.npages; p++)
			T[p] = atomic_load(&sh.started[p]);
		if (ret) {
			tap_diag("GetWriteWatch: %s", strerror(ret));
			break;
		}
		examined = sh.npages;
		if (count == cap && count < sh.npages)
			examined = count ? (size_t)((char *)addrs[count - 1] - sh.base) /
					   sh.ps + 1 : 0;
		memset(rep, 0, sh.npages * sizeof(*rep));
		for (i = 0; i < (int)count; i++)
			rep[((char *)addrs[i] - sh.base) / (long)sh.ps] = true;
		for (p = 0; p < examined; p++) {
			if (rep[p]) {
				if (T[p] <= D[p])
					falsepos++;
				C[p] = T[p];
				D[p] = S[p];
			} else if (S[p] > C[p] && S[p] > L[p]) {
				if (late++ == 0)
					first_late = harvests;
				L[p] = S[p];	/* count each miss once */
			}
		}
		for (p = 0; last && p < sh.npages; p++)
			lost += S[p] > C[p] ? S[p] - C[p] : 0;
		reported += count;
		shorts += is_short;
		harvests++;
		if (last)
			break;
	}
	tap_diag("%d writers, %lu writes in %.1f s, %lu harvests (%lu short), %lu pages reported",
		 WRITERS, atomic_load(&sh.total), mw_now_s() - t0, harvests, shorts,
		 reported);
	tap_diag("%lu late (first at harvest %lu), %lu never reported, %lu false",
		 late, first_late == ~0UL ? 0 : first_late, lost, falsepos);
	tap_ok(ret == 0 && harvests > 8, "harvested %lu times while writers ran",
	       harvests - 1);
	tap_ok(atomic_load(&sh.total) >= sh.target,
	       "writers made %lu writes (at least %lu)", atomic_load(&sh.total),
	       sh.target);
	CHECK_EQ(falsepos, 0, "every reported page had a write since it was last reported");
	if (be == MEMWATCH_BACKEND_SOFT_DIRTY) {
		tap_ok(1, "soft-dirty deviation (documented): %lu writes never reported", lost);
		tap_ok(1, "soft-dirty deviation (documented): %lu writes reported late", late);
	} else {
		CHECK_EQ(lost, 0, "every write reported in the end");
		CHECK_EQ(late, 0, "every write done before a harvest began reported by it");
	}
	memwatch_close(mw);
	free(sh.started);
	free(sh.done);
	free(S);
	free(rep);
	free(addrs);
	return tap_done();
}
