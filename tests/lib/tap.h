/* SPDX-License-Identifier: MIT */
/*
 * Minimal kselftest-style TAP for the libmemwatch tests.  Every check states
 * the exact expected answer; a failing check prints what it got.
 */
#ifndef MW_TEST_TAP_H
#define MW_TEST_TAP_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int tap_n, tap_failed;

static inline void tap_guest_only(void)
{
	char buf[4096] = " ";
	int fd = open("/proc/cmdline", O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf + 1, sizeof(buf) - 3) : -1;

	if (fd >= 0)
		close(fd);
	if (n > 0) {
		buf[n + 1] = '\0';
		if (buf[n] == '\n')
			buf[n] = ' ';
		else
			strcat(buf, " ");
	}
	if (n <= 0 || !strstr(buf, " memwatch.guest=1 ")) {
		printf("not in the memwatch guest, refusing\n");
		exit(1);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
}

static inline void tap_plan(int n)
{
	printf("TAP version 13\n1..%d\n", n);
}

static inline void tap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static inline int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d ", cond ? "ok" : "not ok", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond)
		tap_failed++;
	return cond;
}

static inline int tap_done(void)
{
	return tap_failed ? 1 : 0;
}

/* Check an int result against the expected one, printing both. */
#define CHECK_EQ(got, want, ...) do {					\
	long long g_ = (long long)(got), w_ = (long long)(want);	\
	if (!tap_ok(g_ == w_, __VA_ARGS__))				\
		tap_diag("  got %lld, want %lld (%s)", g_, w_, #got);	\
} while (0)

#endif /* MW_TEST_TAP_H */
