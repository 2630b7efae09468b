// SPDX-License-Identifier: MIT
/*
 * Writers on every CPU while the main thread harvests with get+reset:
 *   ./ww_threads uffd|soft-dirty|mprotect [available|unavailable]
 * Each page has one writer, which counts writes started and done around the
 * store.  For harvest h, with S_h = "done" counts read just before the get
 * and T_h = "started" counts read just after it:
 *   nothing lost:   done writes that started after harvest h-1 finished,
 *                   S_h[p] > T_{h-1}[p], must be reported by harvest h;
 *   nothing false:  a page reported by h needs a write that was not done
 *                   before h-1 began: T_h[p] > S_{h-1}[p].
 * The soft-dirty backend documents that get+reset is not atomic: its lost
 * writes are counted and reported, and only "nothing false" is asserted.
 */
#include "tap.h"
#include "expect.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>

#include "memwatch.h"

#define NPAGES 64
#define MAXW 16

static char *base;
static size_t ps;
static int nwriters;
static atomic_bool stop;
static atomic_ulong started[NPAGES], done[NPAGES];
static atomic_ulong total_writes;

static void *writer(void *arg)
{
	long t = (long)arg;
	unsigned int x = (unsigned int)t * 2654435761u + 1;
	cpu_set_t set;
	unsigned long n = 0;

	CPU_ZERO(&set);
	CPU_SET((int)(t % sysconf(_SC_NPROCESSORS_ONLN)), &set);
	sched_setaffinity(0, sizeof(set), &set);
	while (!atomic_load(&stop)) {
		int p;

		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p = (int)((x % (NPAGES / nwriters)) * (unsigned int)nwriters + (unsigned int)t);
		atomic_fetch_add(&started[p], 1);
		((volatile char *)base)[(size_t)p * ps + (x & 63)] = (char)x;
		atomic_fetch_add(&done[p], 1);
		n++;
		if ((x & 7) == 0)
			sched_yield();
	}
	atomic_fetch_add(&total_writes, n);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long S[NPAGES], T[NPAGES], Tprev[NPAGES], Sprev[NPAGES];
	pthread_t th[MAXW];
	enum memwatch_backend be;
	struct memwatch *mw;
	unsigned long lost = 0, falsepos = 0, harvests = 0, reported = 0;
	struct timespec t0, now;
	void *pages[NPAGES];
	int p, i, ret;
	long t;

	tap_guest_only();
	be = mw_test_backend(argc, argv);
	tap_plan(5);
	ps = (size_t)sysconf(_SC_PAGESIZE);
	nwriters = (int)sysconf(_SC_NPROCESSORS_ONLN) * 2;
	if (nwriters > MAXW)
		nwriters = MAXW;
	/*
	 * PROT_NONE guards: the thread stacks mapped next would otherwise merge
	 * with the range, and under soft-dirty a merge marks every page
	 * written (the VM_SOFTDIRTY deviation that ww_contract asserts).
	 */
	base = mmap(NULL, (NPAGES + 2) * ps, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	base += ps;
	mprotect(base, NPAGES * ps, PROT_READ | PROT_WRITE);
	ret = memwatch_open(&mw, be, MEMWATCH_OPEN_NO_ENV);
	if (ret == 0)
		ret = memwatch_add(mw, base, NPAGES * ps, 0);
	if (!tap_ok(ret == 0, "open %s and watch %d pages", argv[1], NPAGES))
		return 1;
	memset(Tprev, 0, sizeof(Tprev));
	memset(Sprev, 0, sizeof(Sprev));
	for (t = 0; t < nwriters; t++)
		pthread_create(&th[t], NULL, writer, (void *)t);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		size_t count = NPAGES;
		bool rep[NPAGES] = { false };
		bool last;

		clock_gettime(CLOCK_MONOTONIC, &now);
		last = now.tv_sec - t0.tv_sec >= 3;
		if (last) {	/* the final harvest sees a quiet range */
			atomic_store(&stop, true);
			for (t = 0; t < nwriters; t++)
				pthread_join(th[t], NULL);
		}
		for (p = 0; p < NPAGES; p++)
			S[p] = atomic_load(&done[p]);
		ret = memwatch_get(mw, base, NPAGES * ps, MEMWATCH_GET_RESET,
				   pages, &count);
		for (p = 0; p < NPAGES; p++)
			T[p] = atomic_load(&started[p]);
		if (ret) {
			tap_diag("memwatch_get: %s", strerror(-ret));
			break;
		}
		for (i = 0; i < (int)count; i++)
			rep[((char *)pages[i] - base) / (long)ps] = true;
		for (p = 0; p < NPAGES; p++) {
			if (S[p] > Tprev[p] && !rep[p])
				lost++;
			if (rep[p] && !(T[p] > Sprev[p]))
				falsepos++;
		}
		reported += count;
		harvests++;
		memcpy(Tprev, T, sizeof(T));
		memcpy(Sprev, S, sizeof(S));
		if (last)
			break;
		if (harvests % 4 == 0)
			usleep(1000);
	}
	tap_diag("%d writers, %lu writes, %lu harvests, %lu pages reported, %lu lost, %lu false",
		 nwriters, atomic_load(&total_writes), harvests, reported, lost, falsepos);
	tap_ok(ret == 0 && harvests >= 10, "harvested %lu times while writers ran", harvests);
	tap_ok(atomic_load(&total_writes) > 1000, "writers made progress");
	CHECK_EQ(falsepos, 0, "every reported page had a write since the previous harvest");
	if (be == MEMWATCH_BACKEND_SOFT_DIRTY)
		tap_ok(1, "soft-dirty deviation (documented): %lu writes racing a reset lost", lost);
	else
		CHECK_EQ(lost, 0, "no write lost");
	memwatch_close(mw);
	return tap_done();
}
