// SPDX-License-Identifier: GPL-2.0
/*
 * brkexec: run a program with a fixed address-space layout, or with its
 * program break placed where we ask, to show and to remove a flake of the
 * programs whose set-up maps at fixed hints.
 *
 *   brkexec --no-randomize PROG [ARG...]
 *	exec PROG with ADDR_NO_RANDOMIZE (setarch -R, which the guest's
 *	busybox lacks): the break right after the program's bss, mmap's
 *	base fixed, the same layout on every run.
 *   brkexec --brk-in LO:HI [--tries N] PROG [ARG...]
 *	start PROG (randomized as usual) under ptrace until the kernel puts
 *	its initial break (/proc/PID/stat's start_brk) in [LO, HI), then let
 *	it run; at most N tries (default 100000).  Exits with PROG's status.
 *
 * Why: x86-64 places the break of a program at a random page up to 1 GiB
 * above its bss (arch_randomize_brk(), in 6.1 and 6.12 alike).  Upstream's
 * uffd-unit-tests maps its shmem areas at the hint 0x40000000 (1 GiB,
 * BASE_PMD_ADDR in uffd-common.c) and fails ("mmap of memfd failed at
 * 0x40000000") when the break of the static binary, about 5 MiB above
 * 0, was put within a few MiB of that hint: rarely, so a flake.
 * --brk-in reproduces it at will, --no-randomize removes the cause.
 *
 * Messages go to stderr, one line each, prefixed "brkexec: ".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

static void usage(void)
{
	fprintf(stderr,
		"usage: brkexec --no-randomize PROG [ARG...]\n"
		"       brkexec --brk-in LO:HI [--tries N] PROG [ARG...]\n");
	exit(2);
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end == s || *end ? -EINVAL : 0;
}

/* The 47th field of /proc/PID/stat: the address of the initial break. */
static int start_brk(pid_t pid, uint64_t *brk)
{
	char path[64], buf[4096], *p;
	FILE *f;
	size_t n;
	int field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: count from its last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	for (field = 2; field < 47; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EINVAL;
	}
	return parse_u64(strtok(p + 1, " "), brk);
}

static int run_with_brk_in(uint64_t lo, uint64_t hi, long tries, char **argv)
{
	long i;

	for (i = 1; i <= tries; i++) {
		uint64_t brk;
		int status, err;
		pid_t pid = fork();

		if (pid < 0) {
			perror("brkexec: fork");
			return 1;
		}
		if (pid == 0) {
			if (ptrace(PTRACE_TRACEME, 0, NULL, NULL)) {
				perror("brkexec: PTRACE_TRACEME");
				_exit(127);
			}
			execv(argv[0], argv);
			fprintf(stderr, "brkexec: cannot run %s: %s\n", argv[0],
				strerror(errno));
			_exit(127);
		}
		/* A traced child stops with SIGTRAP once execve() succeeded. */
		if (waitpid(pid, &status, 0) != pid) {
			perror("brkexec: waitpid");
			return 1;
		}
		if (!WIFSTOPPED(status)) {
			fprintf(stderr, "brkexec: %s did not start (status %#x)\n",
				argv[0], status);
			return 1;
		}
		err = start_brk(pid, &brk);
		if (err) {
			fprintf(stderr, "brkexec: /proc/%d/stat: %s\n", (int)pid,
				strerror(-err));
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return 1;
		}
		if (brk < lo || brk >= hi) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			continue;
		}
		fprintf(stderr, "brkexec: start_brk %#" PRIx64 " after %ld tries\n",
			brk, i);
		if (ptrace(PTRACE_DETACH, pid, NULL, NULL)) {
			perror("brkexec: PTRACE_DETACH");
			kill(pid, SIGKILL);
			return 1;
		}
		if (waitpid(pid, &status, 0) != pid) {
			perror("brkexec: waitpid");
			return 1;
		}
		if (WIFSIGNALED(status))
			return 128 + WTERMSIG(status);
		return WEXITSTATUS(status);
	}
	fprintf(stderr, "brkexec: no start_brk in [%#" PRIx64 ", %#" PRIx64
		") in %ld tries\n", lo, hi, tries);
	return 1;
}

int main(int argc, char **argv)
{
	uint64_t lo = 0, hi = 0, n;
	long tries = 100000;
	int norand = 0, brk_in = 0, i = 1;
	char *colon;

	while (i < argc && !strncmp(argv[i], "--", 2)) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else if (!strcmp(argv[i], "--no-randomize")) {
			norand = 1;
			i++;
		} else if (!strcmp(argv[i], "--brk-in") && i + 1 < argc) {
			colon = strchr(argv[i + 1], ':');
			if (!colon)
				usage();
			*colon = '\0';
			if (parse_u64(argv[i + 1], &lo) ||
			    parse_u64(colon + 1, &hi) || lo >= hi)
				usage();
			brk_in = 1;
			i += 2;
		} else if (!strcmp(argv[i], "--tries") && i + 1 < argc) {
			if (parse_u64(argv[i + 1], &n) || !n || n > 100000000)
				usage();
			tries = (long)n;
			i += 2;
		} else {
			usage();
		}
	}
	if (i >= argc || norand == brk_in)
		usage();
	if (brk_in)
		return run_with_brk_in(lo, hi, tries, argv + i);
	if (personality(personality(0xffffffff) | ADDR_NO_RANDOMIZE) < 0) {
		perror("brkexec: personality(ADDR_NO_RANDOMIZE)");
		return 1;
	}
	fprintf(stderr, "brkexec: ADDR_NO_RANDOMIZE set, running %s\n",
		argv[i]);
	execv(argv[i], argv + i);
	fprintf(stderr, "brkexec: cannot run %s: %s\n", argv[i],
		strerror(errno));
	return 127;
}
