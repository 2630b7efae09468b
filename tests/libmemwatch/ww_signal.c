// SPDX-License-Identifier: MIT
/*
 * The mprotect backend's SIGSEGV handler chains to the handler that was
 * installed before it, and leaves faults outside watched ranges alone:
 *  - a prior SA_SIGINFO handler sees exactly the unrelated faults (write to
 *    a read-only page, read of a PROT_NONE page), never the watched ones;
 *  - with SIG_DFL before it, an unrelated fault still kills the process
 *    with SIGSEGV (checked in a re-executed child);
 *  - two contexts coexist; overlapping ranges across contexts are -EEXIST.
 */
#include "mw-test.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "memwatch.h"

static size_t ps;
static volatile sig_atomic_t prior_calls;
static void *volatile prior_addr;

static void prior(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	prior_calls++;
	prior_addr = si->si_addr;
	mprotect((void *)((uintptr_t)si->si_addr & ~(ps - 1)), ps,
		 PROT_READ | PROT_WRITE);
}

static int dfl_child(void)
{
	struct memwatch *mw;
	char *a, *ro;

	ps = (size_t)sysconf(_SC_PAGESIZE);
	signal(SIGSEGV, SIG_DFL);
	a = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro = mmap(NULL, ps, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (memwatch_open(&mw, MEMWATCH_BACKEND_MPROTECT, 0) ||
	    memwatch_add(mw, a, 4 * ps, 0))
		return 3;
	*(volatile char *)a = 1;	/* handled */
	*(volatile char *)ro = 1;	/* not ours: must kill us */
	return 4;
}

int main(int argc, char **argv)
{
	struct memwatch *mw, *mw2;
	struct sigaction sa;
	void *pages[4];
	size_t cnt;
	char *a, *b, *ro, *none;
	char cmd[64];
	int st;
	pid_t pid;

	if (argc == 2 && !strcmp(argv[1], "dfl-child"))
		return dfl_child();
	tap_guest_only();
	tap_plan(9);
	ps = (size_t)sysconf(_SC_PAGESIZE);

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = prior;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);

	a = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	b = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro = mmap(NULL, ps, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	none = mmap(NULL, ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	tap_ok(memwatch_open(&mw, MEMWATCH_BACKEND_MPROTECT, 0) == 0 &&
	       memwatch_add(mw, a, 4 * ps, 0) == 0, "watch a range (mprotect backend)");
	*(volatile char *)(a + ps) = 1;
	*(volatile char *)(a + 3 * ps) = 1;
	CHECK_EQ(prior_calls, 0, "watched writes never reach the prior handler");
	*(volatile char *)ro = 1;
	tap_ok(prior_calls == 1 && prior_addr == ro,
	       "a write to an unrelated read-only page reaches it, with its address");
	(void)*(volatile char *)none;
	tap_ok(prior_calls == 2 && prior_addr == none,
	       "a read of an unrelated PROT_NONE page reaches it");

	tap_ok(memwatch_open(&mw2, MEMWATCH_BACKEND_MPROTECT, 0) == 0 &&
	       memwatch_add(mw2, b, 4 * ps, 0) == 0, "a second context watches another range");
	CHECK_EQ(memwatch_add(mw2, a + ps, ps, 0), -EEXIST,
		 "a range watched by another context: -EEXIST");
	*(volatile char *)(b + 2 * ps) = 1;
	cnt = 4;
	memwatch_get(mw, a, 4 * ps, 0, pages, &cnt);
	tap_ok(cnt == 2 && pages[0] == a + ps && pages[1] == a + 3 * ps,
	       "first context: pages 1, 3");
	cnt = 4;
	memwatch_get(mw2, b, 4 * ps, 0, pages, &cnt);
	tap_ok(cnt == 1 && pages[0] == b + 2 * ps && prior_calls == 2,
	       "second context: page 2; prior handler still untouched");
	memwatch_close(mw2);
	memwatch_close(mw);

	snprintf(cmd, sizeof(cmd), "/proc/%d/exe", (int)getpid());
	pid = fork();
	if (pid == 0) {
		execl(cmd, argv[0], "dfl-child", (char *)NULL);
		_exit(5);
	}
	waitpid(pid, &st, 0);
	tap_ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV,
	       "with SIG_DFL before us an unrelated fault still kills with SIGSEGV (status 0x%x)", st);
	return tap_done();
}
