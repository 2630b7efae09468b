/* SPDX-License-Identifier: MIT */
/*
 * Writer threads racing harvests (ww_threads, ww_outputs).  Each page has
 * one writer, which counts writes started and done around its store.  For
 * harvest h, with S_h = "done" counts read just before it and T_h =
 * "started" counts read just after it:
 *   nothing lost:   done writes that started after harvest h-1 finished,
 *                   S_h[p] > T_{h-1}[p], must be reported by harvest h;
 *   nothing false:  a page reported by h needs a write that was not done
 *                   before h-1 began: T_h[p] > S_{h-1}[p].
 * The writers run for at least WRITERS_MIN_SECONDS and until
 * WRITERS_MIN_HARVESTS harvests have raced them and they have done
 * WRITERS_MIN_WRITES writes, whichever is later (a loaded host slows the
 * harvests and the writes, not what they must show: under the mprotect
 * backend each write after a harvest is a fault, and a debug kernel's
 * guest beside others managed 450 in 3 s), but no longer than
 * WRITERS_MAX_SECONDS; the final harvest sees a quiet range.
 */
#ifndef MW_TEST_WRITERS_H
#define MW_TEST_WRITERS_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WRITERS_MAX 16
#define WRITERS_MIN_SECONDS 3
#define WRITERS_MIN_HARVESTS 10
#define WRITERS_MIN_WRITES 2000
#define WRITERS_MAX_SECONDS 60

struct writers;

struct writer_slot {
	struct writers *w;
	int t;
};

struct writers {
	char *base;
	size_t ps;
	int npages, n;
	atomic_bool stop;
	atomic_ulong *started, *done, total;
	unsigned long *S, *T, *Sprev, *Tprev;
	unsigned long harvests, lost, falsepos;
	struct timespec t0;
	pthread_t th[WRITERS_MAX];
	struct writer_slot slot[WRITERS_MAX];
};

static void *writers_thread(void *arg)
{
	const struct writer_slot *s = arg;
	struct writers *w = s->w;
	unsigned int x = (unsigned int)s->t * 2654435761u + 1;
	unsigned int per = (unsigned int)(w->npages / w->n);
	unsigned long n = 0;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET((int)(s->t % sysconf(_SC_NPROCESSORS_ONLN)), &set);
	sched_setaffinity(0, sizeof(set), &set);
	while (!atomic_load(&w->stop)) {
		int p;

		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p = (int)((x % per) * (unsigned int)w->n + (unsigned int)s->t);
		atomic_fetch_add(&w->started[p], 1);
		((volatile char *)w->base)[(size_t)p * w->ps + (x & 63)] = (char)x;
		atomic_fetch_add(&w->done[p], 1);
		n++;
		if ((x & 7) == 0)
			sched_yield();
	}
	atomic_fetch_add(&w->total, n);
	return NULL;
}

/* Two writers per CPU (at most WRITERS_MAX) on npages pages at base. */
static inline void writers_start(struct writers *w, char *base, size_t ps,
				 int npages)
{
	int t;

	memset(w, 0, sizeof(*w));
	w->base = base;
	w->ps = ps;
	w->npages = npages;
	w->n = (int)sysconf(_SC_NPROCESSORS_ONLN) * 2;
	if (w->n > WRITERS_MAX)
		w->n = WRITERS_MAX;
	w->started = calloc((size_t)npages, sizeof(*w->started));
	w->done = calloc((size_t)npages, sizeof(*w->done));
	w->S = calloc((size_t)npages * 4, sizeof(*w->S));
	if (!w->started || !w->done || !w->S)
		exit(1);
	w->T = w->S + npages;
	w->Sprev = w->T + npages;
	w->Tprev = w->Sprev + npages;
	clock_gettime(CLOCK_MONOTONIC, &w->t0);
	for (t = 0; t < w->n; t++) {
		w->slot[t] = (struct writer_slot){ w, t };
		pthread_create(&w->th[t], NULL, writers_thread, &w->slot[t]);
	}
}

/*
 * Before harvest h: true when it is the last (the writers are then
 * stopped), and S_h taken.
 */
static inline bool writers_before(struct writers *w)
{
	struct timespec now;
	unsigned long done = 0;
	bool last;
	int p, t;

	for (p = 0; p < w->npages; p++)
		done += atomic_load(&w->done[p]);
	clock_gettime(CLOCK_MONOTONIC, &now);
	last = (now.tv_sec - w->t0.tv_sec >= WRITERS_MIN_SECONDS &&
		w->harvests >= WRITERS_MIN_HARVESTS &&
		done >= WRITERS_MIN_WRITES) ||
	       now.tv_sec - w->t0.tv_sec >= WRITERS_MAX_SECONDS;
	if (last) {
		atomic_store(&w->stop, true);
		for (t = 0; t < w->n; t++)
			pthread_join(w->th[t], NULL);
	}
	for (p = 0; p < w->npages; p++)
		w->S[p] = atomic_load(&w->done[p]);
	return last;
}

/* After harvest h, which reported the pages with rep[p] set. */
static inline void writers_after(struct writers *w, const bool *rep)
{
	int p;

	for (p = 0; p < w->npages; p++)
		w->T[p] = atomic_load(&w->started[p]);
	for (p = 0; p < w->npages; p++) {
		if (w->S[p] > w->Tprev[p] && !rep[p])
			w->lost++;
		if (rep[p] && !(w->T[p] > w->Sprev[p]))
			w->falsepos++;
	}
	w->harvests++;
	memcpy(w->Tprev, w->T, (size_t)w->npages * sizeof(*w->T));
	memcpy(w->Sprev, w->S, (size_t)w->npages * sizeof(*w->S));
}

static inline void writers_free(struct writers *w)
{
	free(w->started);
	free(w->done);
	free(w->S);
}

#endif /* MW_TEST_WRITERS_H */
