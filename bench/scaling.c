// SPDX-License-Identifier: GPL-2.0
/*
 * Write-watch get+reset against the range size.
 *
 *   scaling [ROUNDS]
 *
 * The write-watch harvest of bench/pagemap_scan (PAGEMAP_SCAN with a vec,
 * WP_MATCHING | CHECK_WPASYNC, category_mask = return_mask = WRITTEN) on a
 * populated, armed range of 64 MiB .. 4 GiB of 4K anon pages (sizes that do
 * not fit in MemAvailable with a margin print "# skip"), then on 256 MiB of
 * THP (MADV_HUGEPAGE) and on 256 MiB of hugetlb (2 MiB pages, private), with
 * nothing, 0.1% (every 1000th 4K page) and 1% (every 100th) written before
 * each call (untimed).  Prints "size_mib backing written_pct us ns_per_page
 * regions pages_reported", us the median of ROUNDS calls (default 11) and
 * ns_per_page that median over the 4K pages of the range.  THP: the
 * AnonHugePages of /proc/self/smaps_rollup is printed after populating and
 * after each case (an async uffd-wp write fault splits the huge pmd, as
 * upstream does).
 * Run it under `scripts/vm-run --icount` (guest time = instructions).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "bench.h"

#define MIB (1024L * 1024)
#define HPAGE (2 * MIB)

enum backing { B_4K, B_THP, B_HUGETLB };

static const char *const bname[] = { "4k", "thp", "hugetlb" };
static int uffd, pagemap;
static long psz;
static struct page_region *vec;
static long vec_len, stale_walk_end;

static long field_kb(const char *path, const char *field)
{
	char line[256];
	size_t len = strlen(field);
	long kb = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, len) && line[len] == ':')
			kb = atol(line + len + 1);
	fclose(f);
	return kb;
}

/* get+reset of the write-watch kind; sets *pages to the pages reported */
static long ww_fast(char *m, long size, long *pages)
{
	struct pm_scan_arg arg = mw_ww_arg((uintptr_t)m, (uintptr_t)m + size,
					   true, vec, vec_len);
	long n = bench_scan(pagemap, &arg);

	if (n >= vec_len) {
		fprintf(stderr, "scaling: vec of %ld regions too short\n", vec_len);
		exit(1);
	}
	/*
	 * With room left in vec the walk covered the range, whatever walk_end
	 * says: upstream 6.12 returns the walk_end of its last internal
	 * "buffer full" restart instead of end (seen with > 512 regions).
	 */
	if (arg.walk_end != arg.end)
		stale_walk_end++;
	*pages = 0;
	for (long i = 0; i < n; i++)
		*pages += (vec[i].end - vec[i].start) / psz;
	return n;
}

static void thp_report(const char *when)
{
	printf("# thp: AnonHugePages %ld kB %s\n",
	       field_kb("/proc/self/smaps_rollup", "AnonHugePages"), when);
	fflush(stdout);
}

static void run(long mib, enum backing b, int rounds)
{
	static const int stride[] = { 0, 1000, 100 };
	static const char *const pct[] = { "0", "0.1", "1" };
	long size = mib * MIB, maplen = size + (b == B_HUGETLB ? 0 : HPAGE);
	double *t = calloc(rounds, sizeof(*t));
	char *raw, *m;
	int flags = MAP_PRIVATE | MAP_ANONYMOUS;

	if (!t)
		bench_die("calloc");
	if (b == B_HUGETLB)
		flags |= MAP_HUGETLB;
	/* 2 MiB aligned, so that THPs can back all of it */
	raw = mmap(NULL, maplen, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (raw == MAP_FAILED) {
		printf("# skip %ld MiB %s: mmap: %s\n", mib, bname[b], strerror(errno));
		free(t);
		return;
	}
	m = (char *)(((uintptr_t)raw + HPAGE - 1) & ~(uintptr_t)(HPAGE - 1));
	if (b != B_HUGETLB && madvise(m, size, b == B_THP ? MADV_HUGEPAGE : MADV_NOHUGEPAGE))
		bench_die("madvise");
	for (long off = 0; off < size; off += b == B_HUGETLB ? HPAGE : psz)
		m[off] = 1;
	if (b == B_THP)
		thp_report("after populating");
	bench_arm(uffd, m, size);

	for (int c = 0; c < 3; c++) {
		long n = 0, pages = 0;

		for (int r = 0; r < rounds; r++) {
			double t0;

			for (long i = 0; stride[c] && i < size / psz; i += stride[c])
				m[i * psz]++;
			t0 = now_us();
			n = ww_fast(m, size, &pages);
			t[r] = now_us() - t0;
		}
		{
			double med = median(t, rounds);

			printf("%6ld %-8s %-4s %12.1f %8.3f %8ld %8ld\n", mib, bname[b], pct[c],
			       med, med * 1e3 / (size / psz), n, pages);
		}
		if (stale_walk_end)
			printf("# walk_end != end with room left in vec: %ld of %d calls\n",
			       stale_walk_end, rounds);
		stale_walk_end = 0;
		fflush(stdout);
		if (b == B_THP)
			thp_report(c ? "after this case" : "after this case (armed)");
	}
	if (munmap(raw, maplen))
		bench_die("munmap");
	free(t);
}

int main(int argc, char **argv)
{
	static const long sizes[] = { 64, 256, 1024, 2048, 4096 };
	int rounds = argc > 1 ? atoi(argv[1]) : 11;
	long hfree;

	if (rounds < 1) {
		fprintf(stderr, "usage: scaling [ROUNDS]\n");
		return 2;
	}
	tap_guest_only();
	psz = sysconf(_SC_PAGESIZE);
	if (bench_open_wp_async(&pagemap, &uffd))
		bench_die("pagemap, userfaultfd WP_ASYNC|WP_UNPOPULATED");
	/* 1% written: one region per written page */
	vec_len = sizes[sizeof(sizes) / sizeof(sizes[0]) - 1] * MIB / psz / 100 + 64;
	vec = calloc(vec_len, sizeof(*vec));
	if (!vec)
		bench_die("calloc");

	printf("# scaling: write-watch get+reset, populated armed range, median of %d "
	       "rounds; MemTotal %ld MiB\n", rounds, field_kb("/proc/meminfo", "MemTotal") / 1024);
	printf("# size_mib backing written_pct us ns_per_page regions pages_reported\n");
	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		long avail = field_kb("/proc/meminfo", "MemAvailable") / 1024;

		if (avail < sizes[i] + 256) {
			printf("# skip %ld MiB 4k: MemAvailable %ld MiB\n", sizes[i], avail);
			continue;
		}
		run(sizes[i], B_4K, rounds);
	}
	run(256, B_THP, rounds);
	hfree = field_kb("/proc/meminfo", "HugePages_Free");
	if (hfree < 128) {
		/* the guest's pool (vm-run boots with hugepages=160): top it up */
		int fd = open("/proc/sys/vm/nr_hugepages", O_WRONLY);
		char buf[32];
		int len = snprintf(buf, sizeof(buf), "%ld",
				   field_kb("/proc/meminfo", "HugePages_Total") + 128 - hfree);

		if (fd < 0 || write(fd, buf, len) != len)
			printf("# nr_hugepages: %s\n", strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	printf("# hugetlb: HugePages_Free %ld (2 MiB)\n", field_kb("/proc/meminfo", "HugePages_Free"));
	run(256, B_HUGETLB, rounds);
	return 0;
}
