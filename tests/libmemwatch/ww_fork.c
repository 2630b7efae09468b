// SPDX-License-Identifier: MIT
/*
 * A write-watch context across fork(): ./ww_fork uffd|soft-dirty|mprotect [available|unavailable]
 * The context belongs to the process that opened it: in the child every
 * call but memwatch_close() fails with -ECHILD (a soft-dirty reset there
 * would otherwise clear the parent's bits through the inherited fds), the
 * child can still write its copy of the memory, and the parent's state is
 * untouched by anything the child does.
 */
#include "mw-test.h"
#include "expect.h"

#include <sys/mman.h>
#include <sys/wait.h>

#include "memwatch.h"

static size_t ps;

static int child(struct memwatch *mw, char *a)
{
	void *pages[8];
	size_t cnt = 8;
	int bad = 0;

	if (memwatch_get(mw, a, 8 * ps, 0, pages, &cnt) != -ECHILD)
		bad |= 1;
	if (memwatch_reset(mw, a, 8 * ps) != -ECHILD)
		bad |= 2;
	if (memwatch_add(mw, a + 8 * ps, ps, 0) != -ECHILD)
		bad |= 4;
	a[2 * ps] = 2;
	a[3 * ps] = 3;
	memwatch_close(mw);
	a[4 * ps] = 4;
	return bad;
}

int main(int argc, char **argv)
{
	enum memwatch_backend be;
	struct memwatch *mw;
	void *pages[8];
	size_t cnt;
	char *a;
	int st, ret;
	pid_t pid;

	tap_guest_only();
	be = mw_test_backend(argc, argv);
	tap_plan(6);
	ps = (size_t)sysconf(_SC_PAGESIZE);
	a = mmap(NULL, 10 * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	a += ps;
	mprotect(a, 9 * ps, PROT_READ | PROT_WRITE);
	ret = memwatch_open(&mw, be, MEMWATCH_OPEN_NO_ENV);
	if (ret == 0)
		ret = memwatch_add(mw, a, 8 * ps, 0);
	if (!tap_ok(ret == 0, "watch 8 pages with %s", argv[1]))
		return 1;
	a[1 * ps] = 1;

	pid = fork();
	if (pid == 0)
		_exit(child(mw, a));
	waitpid(pid, &st, 0);
	tap_ok(WIFEXITED(st), "the child wrote its copy of watched memory and exited normally");
	CHECK_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0,
		 "in the child get/reset/add fail with -ECHILD");

	cnt = 8;
	ret = memwatch_get(mw, a, 8 * ps, 0, pages, &cnt);
	tap_ok(ret == 0 && cnt == 1 && pages[0] == a + ps,
	       "parent: only its own write (page 1), nothing from the child");
	a[5 * ps] = 5;
	cnt = 8;
	ret = memwatch_get(mw, a, 8 * ps, MEMWATCH_GET_RESET, pages, &cnt);
	tap_ok(ret == 0 && cnt == 2 && pages[0] == a + ps && pages[1] == a + 5 * ps,
	       "parent keeps tracking after the fork (pages 1, 5)");
	cnt = 8;
	ret = memwatch_get(mw, a, 8 * ps, 0, pages, &cnt);
	tap_ok(ret == 0 && cnt == 0, "and its reset still works");
	memwatch_close(mw);
	return tap_done();
}
