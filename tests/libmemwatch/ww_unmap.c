// SPDX-License-Identifier: MIT
/*
 * Unmapping watched memory without memwatch_remove(), per backend, as
 * memwatch(7) defines it: the watch of that memory ends, the range stays
 * in the table, memwatch_remove() of it succeeds and the range can be
 * added again; until then:
 *   uffd        an unmapped part reports nothing; memory mapped there again
 *               is not registered: get and reset fail with -EPERM;
 *   soft-dirty  an unmapped part reports nothing; new memory there reports
 *               every page written (a new mapping is soft-dirty), then is
 *               tracked like the rest;
 *   mprotect    writes made before the unmap stay reported until a reset;
 *               a reset (or get with reset) over an unmapped part fails
 *               with -ENOMEM; new memory there is not protected, so its
 *               writes are not seen.
 *   ./ww_unmap BACKEND [available|unavailable]
 */
#include "mw-test.h"
#include "expect.h"

#include <sys/mman.h>

#include "memwatch.h"

static size_t ps;
static struct memwatch *mw;

static char *fresh(char *at, size_t n)
{
	return mmap(at, n * ps, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);
}

static int get(char *p, size_t n, unsigned int flags, void **pages, size_t *cnt)
{
	*cnt = 64;
	return memwatch_get(mw, p, n * ps, flags, pages, cnt);
}

/* The protection /proc/self/maps shows at p ("rw-p"), or "". */
static void prot_at(char *p, char out[5])
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi;

	out[0] = '\0';
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, out) == 3 &&
		    lo <= (uintptr_t)p && (uintptr_t)p < hi)
			break;
		else
			out[0] = '\0';
	if (f)
		fclose(f);
}

int main(int argc, char **argv)
{
	enum memwatch_backend be;
	void *pages[64];
	char *p, prot[5];
	size_t cnt;
	int ret;
	bool uf, sd, mp;

	tap_guest_only();
	be = mw_test_backend(argc, argv);
	uf = be == MEMWATCH_BACKEND_UFFD;
	sd = be == MEMWATCH_BACKEND_SOFT_DIRTY;
	mp = be == MEMWATCH_BACKEND_MPROTECT;
	ps = (size_t)sysconf(_SC_PAGESIZE);
	tap_plan(19);
	ret = memwatch_open(&mw, be, MEMWATCH_OPEN_NO_ENV);
	if (!tap_ok(ret == 0, "open the %s backend", argv[1]))
		return 1;

	/* 1. The whole range unmapped. */
	p = fresh(NULL, 16);
	CHECK_EQ(memwatch_add(mw, p, 16 * ps, 0), 0, "watch 16 pages");
	p[0] = 1;
	munmap(p, 16 * ps);
	ret = get(p, 16, 0, pages, &cnt);
	tap_ok(ret == 0 && cnt == (mp ? 1u : 0u),
	       "unmapped: a get succeeds, %s (ret %d, %zu pages)",
	       mp ? "the write made before the unmap still reported" : "nothing reported",
	       ret, cnt);
	ret = get(p, 16, MEMWATCH_GET_RESET, pages, &cnt);
	CHECK_EQ(ret, mp ? -ENOMEM : 0, "unmapped: a get with reset %s",
		 mp ? "cannot protect it: -ENOMEM" : "succeeds");
	CHECK_EQ(memwatch_reset(mw, p, 16 * ps), mp ? -ENOMEM : 0,
		 "unmapped: a reset %s", mp ? "-ENOMEM" : "succeeds");
	CHECK_EQ(memwatch_remove(mw, p, 16 * ps), 0, "memwatch_remove of it succeeds");
	CHECK_EQ(memwatch_add(mw, p, 16 * ps, 0), -ENOMEM,
		 "and adding it again, still unmapped: -ENOMEM");

	/* 2. Unmapped and mapped again. */
	p = fresh(NULL, 16);
	CHECK_EQ(memwatch_add(mw, p, 16 * ps, 0), 0, "watch 16 new pages");
	munmap(p, 16 * ps);
	p = fresh(p, 16);
	p[2 * ps] = 1;
	ret = get(p, 16, 0, pages, &cnt);
	if (uf)
		CHECK_EQ(ret, -EPERM, "mapped again: a get is -EPERM (not registered)");
	else
		tap_ok(ret == 0 && cnt == (sd ? 16u : 0u),
		       "mapped again: %s (ret %d, %zu pages)",
		       sd ? "every page reads written" : "its writes are not seen",
		       ret, cnt);
	ret = get(p, 16, MEMWATCH_GET_RESET, pages, &cnt);
	if (uf)
		CHECK_EQ(ret, -EPERM, "mapped again: a get with reset is -EPERM");
	else
		tap_ok(ret == 0 && cnt == (sd ? 16u : 0u),
		       "mapped again: get with reset (ret %d, %zu pages)", ret, cnt);
	p[3 * ps] = 1;
	ret = get(p, 16, 0, pages, &cnt);
	if (uf)
		CHECK_EQ(memwatch_reset(mw, p, 16 * ps), -EPERM,
			 "mapped again: a reset is -EPERM");
	else
		tap_ok(ret == 0 && cnt == (sd ? 1u : 0u) &&
		       (!sd || pages[0] == p + 3 * ps),
		       "mapped again, written after the reset: %s (%zu)",
		       sd ? "tracked again" : "not seen", cnt);
	CHECK_EQ(memwatch_remove(mw, p, 16 * ps), 0, "memwatch_remove of it succeeds");
	prot_at(p, prot);
	tap_ok(!strcmp(prot, "rw-p"), "the new memory is left rw-p (%s)", prot);
	CHECK_EQ(memwatch_add(mw, p, 16 * ps, 0), 0, "it can be added again");
	p[5 * ps] = 1;
	ret = get(p, 16, 0, pages, &cnt);
	tap_ok(ret == 0 && cnt == 1 && pages[0] == p + 5 * ps,
	       "and is watched again: exactly the page written (%zu)", cnt);
	CHECK_EQ(memwatch_remove(mw, p, 16 * ps), 0, "remove it");

	/* 3. Half of the range unmapped: the other half is still watched. */
	CHECK_EQ(memwatch_add(mw, p, 16 * ps, 0), 0, "watch 16 pages again");
	munmap(p + 8 * ps, 8 * ps);
	p[ps] = 1;
	ret = get(p, 16, 0, pages, &cnt);
	tap_ok(ret == 0 && cnt == 1 && pages[0] == p + ps,
	       "half unmapped: the write in the mapped half is reported (%zu)", cnt);
	CHECK_EQ(memwatch_remove(mw, p, 16 * ps), 0, "memwatch_remove succeeds");
	munmap(p, 8 * ps);
	memwatch_close(mw);
	return tap_done();
}
