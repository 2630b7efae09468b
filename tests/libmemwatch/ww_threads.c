// SPDX-License-Identifier: MIT
/*
 * Writers on every CPU while the main thread harvests with get+reset:
 *   ./ww_threads uffd|soft-dirty|mprotect [available|unavailable]
 * The rules (nothing lost, nothing false) and how long the writers run are
 * in writers.h.  The soft-dirty backend documents that get+reset is not
 * atomic: its lost writes are counted and reported, and only "nothing
 * false" is asserted.
 */
#include "mw-test.h"
#include "expect.h"
#include "writers.h"

#include <sys/mman.h>

#include "memwatch.h"

#define NPAGES 64

int main(int argc, char **argv)
{
	enum memwatch_backend be;
	struct memwatch *mw;
	struct writers w;
	unsigned long reported = 0;
	void *pages[NPAGES];
	size_t ps;
	char *base;
	int i, ret;

	tap_guest_only();
	be = mw_test_backend(argc, argv);
	tap_plan(5);
	ps = (size_t)sysconf(_SC_PAGESIZE);
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
	writers_start(&w, base, ps, NPAGES);
	for (;;) {
		size_t count = NPAGES;
		bool rep[NPAGES] = { false };
		bool last = writers_before(&w);

		ret = memwatch_get(mw, base, NPAGES * ps, MEMWATCH_GET_RESET,
				   pages, &count);
		if (ret) {
			tap_diag("memwatch_get: %s", strerror(-ret));
			break;
		}
		for (i = 0; i < (int)count; i++)
			rep[((char *)pages[i] - base) / (long)ps] = true;
		writers_after(&w, rep);
		reported += count;
		if (last)
			break;
		if (w.harvests % 4 == 0)
			usleep(1000);
	}
	tap_diag("%d writers, %lu writes, %lu harvests, %lu pages reported, %lu lost, %lu false",
		 w.n, atomic_load(&w.total), w.harvests, reported, w.lost, w.falsepos);
	/* The final harvest, after the writers stopped, does not count. */
	tap_ok(ret == 0 && w.harvests - 1 >= WRITERS_MIN_HARVESTS,
	       "harvested %lu times while writers ran (at least %d)",
	       w.harvests - 1, WRITERS_MIN_HARVESTS);
	tap_ok(atomic_load(&w.total) > 1000, "writers made progress");
	CHECK_EQ(w.falsepos, 0, "every reported page had a write since the previous harvest");
	if (be == MEMWATCH_BACKEND_SOFT_DIRTY)
		tap_ok(1, "soft-dirty deviation (documented): %lu writes racing a reset lost", w.lost);
	else
		CHECK_EQ(w.lost, 0, "no write lost");
	memwatch_close(mw);
	writers_free(&w);
	return tap_done();
}
