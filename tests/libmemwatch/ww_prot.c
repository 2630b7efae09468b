// SPDX-License-Identifier: MIT
/*
 * Watching must not change the protection of the caller's memory, checked
 * in /proc/self/maps:
 *   ./ww_prot uffd|soft-dirty|mprotect [available|unavailable]
 * The mprotect backend write-protects what it watches, so it refuses
 * memory that is not readable and writable with one protection throughout
 * (PROT_NONE, PROT_READ, a mix) with -EACCES and leaves it as it was; it
 * watches rw- and rwx memory, keeps PROT_EXEC while watching (code there
 * still runs) and puts back exactly the protection it found on
 * memwatch_remove() and memwatch_close().  The uffd and soft-dirty
 * backends never touch protections.
 */
#include "mw-test.h"
#include "expect.h"

#include <stdint.h>
#include <sys/mman.h>

#include "memwatch.h"

static size_t ps;

/* The permissions ("rw-p") of the mapping containing addr, or "none". */
static const char *perms(const void *addr)
{
	static char out[8];
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	strcpy(out, "none");
	if (!f)
		return out;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char p[8];

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, p) == 3 &&
		    lo <= (uintptr_t)addr && (uintptr_t)addr < hi) {
			snprintf(out, sizeof(out), "%s", p);
			break;
		}
	}
	fclose(f);
	return out;
}

/* "p0,p1,..." of each page of [a, a + n pages) */
static const char *perms_of(const char *a, int n)
{
	static char out[256];
	int i;

	out[0] = '\0';
	for (i = 0; i < n; i++) {
		if (i)
			strcat(out, ",");
		strcat(out, perms(a + (size_t)i * ps));
	}
	return out;
}

static void check_perms(const char *what, const char *a, int n, const char *want)
{
	const char *got = perms_of(a, n);

	if (!tap_ok(!strcmp(got, want), "%s: %s", what, want))
		tap_diag("  got %s", got);
}

/* n pages between two PROT_NONE guards (so they merge with nothing). */
static char *region(int n, int prot)
{
	char *p = mmap(NULL, ((size_t)n + 2) * ps, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		exit(1);
	p += ps;
	if (prot != PROT_NONE && mprotect(p, (size_t)n * ps, prot))
		exit(1);
	return p;
}

/* Pages of [a, a + n pages) written since the last get, as "i,j,...". */
static const char *written(struct memwatch *mw, char *a, int n, unsigned int flags)
{
	static char out[256];
	void *pages[64];
	size_t cnt = 64, i;
	int ret = memwatch_get(mw, a, (size_t)n * ps, flags, pages, &cnt);

	if (ret) {
		snprintf(out, sizeof(out), "error %d", ret);
		return out;
	}
	out[0] = '\0';
	for (i = 0; i < cnt; i++)
		snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%zu",
			 i ? "," : "", (size_t)((char *)pages[i] - a) / ps);
	return out;
}

static int run_code(const char *p)
{
#if defined(__x86_64__) || defined(__i386__)
	int (*fn)(void);

	memcpy(&fn, &p, sizeof(fn));
	return fn();
#else
	(void)p;
	return 42;
#endif
}

/* mov $42, %eax; ret */
static const unsigned char code42[] = { 0xb8, 42, 0, 0, 0, 0xc3 };

int main(int argc, char **argv)
{
	enum memwatch_backend be;
	struct memwatch *mw;
	char *none, *ro, *rw, *rwx, *mix, *mixx;
	const char *w;
	bool mp;
	int ret, want;

	tap_guest_only();
	be = mw_test_backend(argc, argv);
	mp = be == MEMWATCH_BACKEND_MPROTECT;
	tap_plan(39);
	ps = (size_t)sysconf(_SC_PAGESIZE);
	ret = memwatch_open(&mw, be, MEMWATCH_OPEN_NO_ENV);
	if (!tap_ok(ret == 0, "open the %s backend", argv[1]))
		return 1;
	want = mp ? -EACCES : 0;

	/* PROT_NONE: a guard page must stay one. */
	none = region(4, PROT_NONE);
	CHECK_EQ(memwatch_add(mw, none, 4 * ps, 0), want, "add PROT_NONE memory: %s",
		 mp ? "-EACCES" : "0");
	check_perms("PROT_NONE memory after add", none, 4, "---p,---p,---p,---p");
	CHECK_EQ(memwatch_remove(mw, none, 4 * ps), mp ? -ENOENT : 0,
		 "remove it: %s", mp ? "-ENOENT (never watched)" : "0");
	check_perms("PROT_NONE memory after remove", none, 4, "---p,---p,---p,---p");

	/* PROT_READ, left watched (if accepted) until memwatch_close(). */
	ro = region(4, PROT_READ);
	CHECK_EQ(memwatch_add(mw, ro, 4 * ps, 0), want, "add PROT_READ memory: %s",
		 mp ? "-EACCES" : "0");
	check_perms("PROT_READ memory after add", ro, 4, "r--p,r--p,r--p,r--p");
	CHECK_EQ(memwatch_reset(mw, ro, 4 * ps), mp ? -ENOENT : 0,
		 "reset it: %s", mp ? "-ENOENT (not watched)" : "0");

	/* A range mixing rw- and r--, and one mixing rw- and rwx. */
	mix = region(4, PROT_READ | PROT_WRITE);
	mprotect(mix + 2 * ps, 2 * ps, PROT_READ);
	CHECK_EQ(memwatch_add(mw, mix, 4 * ps, 0), want, "add rw- + r-- memory: %s",
		 mp ? "-EACCES" : "0");
	check_perms("rw- + r-- memory after add", mix, 4, "rw-p,rw-p,r--p,r--p");
	mixx = region(4, PROT_READ | PROT_WRITE);
	mprotect(mixx + 2 * ps, 2 * ps, PROT_READ | PROT_WRITE | PROT_EXEC);
	CHECK_EQ(memwatch_add(mw, mixx, 4 * ps, 0), want, "add rw- + rwx memory: %s",
		 mp ? "-EACCES (one protection per range)" : "0");
	check_perms("rw- + rwx memory after add", mixx, 4, "rw-p,rw-p,rwxp,rwxp");

	/* Read-write memory: back to rw- on remove. */
	rw = region(4, PROT_READ | PROT_WRITE);
	CHECK_EQ(memwatch_add(mw, rw, 4 * ps, 0), 0, "add rw- memory");
	check_perms("rw- memory while watched", rw, 4,
		    mp ? "r--p,r--p,r--p,r--p" : "rw-p,rw-p,rw-p,rw-p");
	rw[ps] = 1;
	check_perms("after a write to page 1", rw, 4,
		    mp ? "r--p,rw-p,r--p,r--p" : "rw-p,rw-p,rw-p,rw-p");
	w = written(mw, rw, 4, MEMWATCH_GET_RESET);
	tap_ok(!strcmp(w, "1"), "page 1 reported (got %s)", w);
	check_perms("after get+reset", rw, 4,
		    mp ? "r--p,r--p,r--p,r--p" : "rw-p,rw-p,rw-p,rw-p");
	rw[2 * ps] = 1;
	CHECK_EQ(memwatch_remove(mw, rw, 4 * ps), 0, "remove it");
	check_perms("rw- memory after remove", rw, 4, "rw-p,rw-p,rw-p,rw-p");

	/* Read-write-execute memory: code keeps running, rwx comes back. */
	rwx = region(4, PROT_READ | PROT_WRITE | PROT_EXEC);
	memcpy(rwx, code42, sizeof(code42));
	CHECK_EQ(memwatch_add(mw, rwx, 4 * ps, 0), 0, "add rwx memory");
	check_perms("rwx memory while watched", rwx, 4,
		    mp ? "r-xp,r-xp,r-xp,r-xp" : "rwxp,rwxp,rwxp,rwxp");
	CHECK_EQ(run_code(rwx), 42, "code in the watched page runs");
	rwx[2 * ps] = 1;
	check_perms("after a write to page 2", rwx, 4,
		    mp ? "r-xp,r-xp,rwxp,r-xp" : "rwxp,rwxp,rwxp,rwxp");
	w = written(mw, rwx, 4, 0);
	tap_ok(!strcmp(w, "2"), "page 2 reported (got %s)", w);
	memcpy(rwx + 2 * ps, code42, sizeof(code42));
	CHECK_EQ(run_code(rwx + 2 * ps), 42, "code written into a watched page runs");
	CHECK_EQ(memwatch_reset(mw, rwx, 4 * ps), 0, "reset it");
	check_perms("after the reset", rwx, 4,
		    mp ? "r-xp,r-xp,r-xp,r-xp" : "rwxp,rwxp,rwxp,rwxp");
	CHECK_EQ(memwatch_prepare_write(mw, rwx + 3 * ps, ps), 0,
		 "prepare_write page 3");
	check_perms("after prepare_write", rwx, 4,
		    mp ? "r-xp,r-xp,r-xp,rwxp" : "rwxp,rwxp,rwxp,rwxp");
	CHECK_EQ(memwatch_remove(mw, rwx, 4 * ps), 0, "remove it");
	check_perms("rwx memory after remove", rwx, 4, "rwxp,rwxp,rwxp,rwxp");

	/* memwatch_close() puts back what it found, too. */
	CHECK_EQ(memwatch_add(mw, rw, 4 * ps, 0), 0, "add the rw- memory again");
	CHECK_EQ(memwatch_add(mw, rwx, 4 * ps, 0), 0, "add the rwx memory again");
	rwx[ps] = 1;
	memwatch_close(mw);
	check_perms("rw- memory after close", rw, 4, "rw-p,rw-p,rw-p,rw-p");
	check_perms("rwx memory after close", rwx, 4, "rwxp,rwxp,rwxp,rwxp");
	check_perms("PROT_READ memory after close", ro, 4, "r--p,r--p,r--p,r--p");
	check_perms("rw- + r-- memory after close", mix, 4, "rw-p,rw-p,r--p,r--p");
	check_perms("rw- + rwx memory after close", mixx, 4, "rw-p,rw-p,rwxp,rwxp");
	check_perms("PROT_NONE memory after close", none, 4, "---p,---p,---p,---p");
	return tap_done();
}
