// SPDX-License-Identifier: GPL-2.0
/*
 * What arming costs, and what the first write after it costs.
 *
 *   arming [REPS]
 *
 * Every range is anonymous MAP_PRIVATE|MAP_NORESERVE, MADV_NOHUGEPAGE (4K
 * ptes), registered MODE_WP on one uffd with WP_ASYNC|WP_UNPOPULATED.
 * Arming cost, for 64 MiB .. 16 GiB (populated cases only for the sizes
 * that fit in MemAvailable with a margin; the others print "# skip"):
 *   untouched_wp        UFFDIO_WRITEPROTECT(WP) of a never-touched range:
 *                       page tables and one marker per pte.  Each rep maps
 *                       a fresh range (munmap + mmap + register).
 *   populated_wp        UFFDIO_WRITEPROTECT(WP) of a range written first;
 *                       between reps UFFDIO_WRITEPROTECT(0) un-arms it
 *                       (timed too: populated_unwp).
 *   scan_reset_written  PAGEMAP_SCAN reset only (vec = NULL, WP_MATCHING |
 *                       CHECK_WPASYNC, mask = return = WRITTEN) of the armed
 *                       populated range after every page was written again
 *                       (untimed) before each rep.
 *   scan_reset_untouched_armed    the same call on the never-touched range
 *                       after untouched_wp (markers only; nothing to reset).
 *   scan_reset_untouched_unarmed  the same call on a registered, never-armed,
 *                       never-touched range (no page tables before the first
 *                       rep: see the first-rep columns).
 *   thp_populated_wp    populated_wp on MADV_HUGEPAGE memory (one huge pmd
 *                       per 2 MiB), up to 1 GiB; AnonHugePages printed.
 * Each case prints "size_mib case us pagetables_kb first_us first_kb": the
 * median of REPS calls (default 7) and the median change of /proc/meminfo
 * PageTables over the call (counters folded by /proc/sys/vm/stat_refresh
 * before each read), then the same two for the first rep alone.
 *
 * First write, ns per page: each of 4096 pages is written once, each write
 * timed alone (clock_gettime around one store); median and mean, raw and
 * net of the same timed store on a present writable page (fw_present):
 *   fw_armed_present      armed present page: the async uffd-wp fault
 *   fw_armed_untouched    never-touched armed page: marker -> new page
 *   fw_unarmed_untouched  never-touched page, no uffd: plain anon fault
 *   fw_softdirty          present page after clear_refs 4: soft-dirty fault
 *   fw_mprotect           present page under mprotect(PROT_READ): SIGSEGV,
 *                         handler records it and mprotect(RW)s the page
 * Run it under `scripts/vm-run --icount` (guest time = instructions).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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
#define FW_PAGES 4096

static int uffd, pagemap;
static long psz;

/* A /proc/meminfo field in kB, per-cpu counters folded first. */
static long meminfo_kb(const char *field)
{
	char line[256];
	size_t len = strlen(field);
	long kb = -1;
	FILE *f;
	int fd;

	fd = open("/proc/sys/vm/stat_refresh", O_WRONLY);
	if (fd >= 0) {
		/* EINVAL if a counter went negative: folded anyway */
		if (write(fd, "1", 1) < 0 && errno != EINVAL)
			bench_die("stat_refresh");
		close(fd);
	}
	f = fopen("/proc/meminfo", "r");
	if (!f)
		bench_die("/proc/meminfo");
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, len) && line[len] == ':')
			kb = atol(line + len + 1);
	fclose(f);
	return kb;
}

static long smaps_kb(const char *field)
{
	char line[256];
	size_t len = strlen(field);
	long kb = -1;
	FILE *f = fopen("/proc/self/smaps_rollup", "r");

	if (!f)
		bench_die("smaps_rollup");
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, len) && line[len] == ':')
			kb = atol(line + len + 1);
	fclose(f);
	return kb;
}

static char *map_range(long size, int reg)
{
	return bench_map_range(uffd, size, reg);
}

static void wp(char *m, long size, int on)
{
	bench_wp(uffd, m, size, on);
}

static long scan_reset(char *m, long size)
{
	struct pm_scan_arg arg = mw_ww_arg((uintptr_t)m, (uintptr_t)m + size,
					   true, NULL, 0);

	return bench_scan(pagemap, &arg);
}

/*
 * A plain store per page: no read first, which would map the zero page
 * (the huge zero page on THP memory, whose write fault then splits).
 */
static void touch_all(char *m, long size)
{
	for (long off = 0; off < size; off += psz)
		m[off] = 1;
}

static void report(long mib, const char *name, double *us, double *pt, int reps)
{
	double us0 = us[0], pt0 = pt[0];

	printf("%6ld %-30s %12.1f %10.0f %12.1f %10.0f\n", mib, name, median(us, reps),
	       median(pt, reps), us0, pt0);
	fflush(stdout);
}

struct range {
	char *m;
	long size;
};

static void op_fresh(struct range *r)
{
	if (r->m && munmap(r->m, r->size))
		bench_die("munmap");
	r->m = map_range(r->size, 1);
}

static void op_wp(struct range *r)
{
	wp(r->m, r->size, 1);
}

static void op_unwp(struct range *r)
{
	wp(r->m, r->size, 0);
}

static void op_scan(struct range *r)
{
	scan_reset(r->m, r->size);
}

static void op_touch(struct range *r)
{
	touch_all(r->m, r->size);
}

/*
 * REPS times: prep (untimed), then call timed, with the change of
 * PageTables over the call; the medians are printed.
 */
static void measure(long mib, const char *name, int reps, struct range *r,
		    void (*prep)(struct range *r), void (*call)(struct range *r))
{
	double us[64], pt[64];

	for (int i = 0; i < reps; i++) {
		double t0;
		long p0;

		if (prep)
			prep(r);
		p0 = meminfo_kb("PageTables");
		t0 = now_us();
		call(r);
		us[i] = now_us() - t0;
		pt[i] = meminfo_kb("PageTables") - p0;
	}
	report(mib, name, us, pt, reps);
}

/*
 * The same populated arming on THPs: one pmd per 2 MiB (what a pmd marker
 * would cost to install is of this order).  Up to 1 GiB.
 */
static void thp_arming(long mib, int reps)
{
	struct range r = { .size = mib * MIB };
	long huge = 2 * MIB, thp;
	char *raw;

	if (mib > 1024)
		return;
	raw = mmap(NULL, r.size + huge, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		bench_die("mmap");
	r.m = (char *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
	if (madvise(r.m, r.size, MADV_HUGEPAGE))
		bench_die("MADV_HUGEPAGE");
	touch_all(r.m, r.size);
	thp = smaps_kb("AnonHugePages");
	bench_check(mw_uffd_register_wp(uffd, r.m, r.size), "UFFDIO_REGISTER");
	measure(mib, "thp_populated_wp", reps, &r, op_unwp, op_wp);
	printf("# thp: AnonHugePages %ld kB of %ld (before), %ld kB (after)\n",
	       thp, mib * 1024, smaps_kb("AnonHugePages"));
	if (munmap(raw, r.size + huge))
		bench_die("munmap");
}

static void arming(long mib, int reps)
{
	struct range r = { .m = NULL, .size = mib * MIB };

	/* a: a fresh never-touched range each rep, armed (markers) */
	measure(mib, "untouched_wp", reps, &r, op_fresh, op_wp);
	/* c, untouched: the same armed range, markers only */
	measure(mib, "scan_reset_untouched_armed", reps, &r, NULL, op_scan);
	/* c, untouched and never armed: no page tables */
	op_fresh(&r);
	measure(mib, "scan_reset_untouched_unarmed", reps, &r, NULL, op_scan);
	if (munmap(r.m, r.size))
		bench_die("munmap");

	/* b, c: populated; only when it fits with 256 MiB to spare */
	if (meminfo_kb("MemAvailable") / 1024 < mib + 256) {
		printf("# skip %ld MiB populated: MemAvailable %ld MiB\n", mib,
		       meminfo_kb("MemAvailable") / 1024);
		return;
	}
	r.m = map_range(r.size, 1);
	touch_all(r.m, r.size);
	/* b: arm, un-arm (UFFDIO_WRITEPROTECT mode 0 between reps) */
	measure(mib, "populated_wp", reps, &r, op_unwp, op_wp);
	measure(mib, "populated_unwp", reps, &r, op_wp, op_unwp);
	/* c: every page written again before each reset */
	op_wp(&r);
	measure(mib, "scan_reset_written", reps, &r, op_touch, op_scan);
	if (munmap(r.m, r.size))
		bench_die("munmap");
	thp_arming(mib, reps);
}

/* The mprotect alternative: a write fault records the page and opens it. */
static char *mp_base;
static long mp_hits;

static void mp_segv(int sig, siginfo_t *si, void *uc)
{
	char *p = (char *)((uintptr_t)si->si_addr & ~(uintptr_t)(psz - 1));

	(void)uc;
	if (!mp_base || p < mp_base || p >= mp_base + FW_PAGES * psz) {
		signal(sig, SIG_DFL);
		return;
	}
	mp_hits++;
	if (mprotect(p, psz, PROT_READ | PROT_WRITE))
		abort();
}

static void first_write(const char *name, char *m, double base)
{
	static double t[FW_PAGES];
	double sum = 0, med;

	for (long i = 0; i < FW_PAGES; i++) {
		volatile char *p = m + i * psz;
		double t0 = now_us();

		*p = 1;
		t[i] = (now_us() - t0) * 1e3;
		sum += t[i];
	}
	med = median(t, FW_PAGES);
	printf("%-22s %10.0f %10.0f %10.0f %10.0f %6d\n", name, med, sum / FW_PAGES,
	       base >= 0 ? med - base : 0.0, base >= 0 ? sum / FW_PAGES - base : 0.0,
	       FW_PAGES);
	fflush(stdout);
}

static double fw_base(char *m)
{
	static double t[FW_PAGES];

	for (long i = 0; i < FW_PAGES; i++) {
		volatile char *p = m + i * psz;
		double t0 = now_us();

		*p = 2;
		t[i] = (now_us() - t0) * 1e3;
	}
	return median(t, FW_PAGES);
}

static void first_writes(void)
{
	long size = FW_PAGES * psz;
	struct sigaction sa = { .sa_sigaction = mp_segv, .sa_flags = SA_SIGINFO };
	double base;
	char *m;
	int fd;

	printf("# first write, ns per write over %d pages (one clock_gettime pair "
	       "per write): case median mean net_median net_mean pages\n", FW_PAGES);
	m = map_range(size, 0);
	touch_all(m, size);
	base = fw_base(m);
	first_write("fw_present", m, -1);
	munmap(m, size);

	m = map_range(size, 1);
	touch_all(m, size);
	wp(m, size, 1);
	first_write("fw_armed_present", m, base);
	munmap(m, size);

	m = map_range(size, 1);
	wp(m, size, 1);
	first_write("fw_armed_untouched", m, base);
	munmap(m, size);

	m = map_range(size, 0);
	first_write("fw_unarmed_untouched", m, base);
	munmap(m, size);

	m = map_range(size, 0);
	touch_all(m, size);
	fd = open("/proc/self/clear_refs", O_WRONLY);
	if (fd < 0 || write(fd, "4", 1) != 1)
		bench_die("clear_refs");
	close(fd);
	first_write("fw_softdirty", m, base);
	munmap(m, size);

	m = map_range(size, 0);
	touch_all(m, size);
	if (sigaction(SIGSEGV, &sa, NULL))
		bench_die("sigaction");
	mp_base = m;
	if (mprotect(m, size, PROT_READ))
		bench_die("mprotect");
	first_write("fw_mprotect", m, base);
	if (mp_hits != FW_PAGES)
		fprintf(stderr, "arming: mprotect: %ld faults for %d pages\n", mp_hits, FW_PAGES);
	mp_base = NULL;
	munmap(m, size);
}

int main(int argc, char **argv)
{
	static const long sizes[] = { 64, 256, 1024, 2048, 4096, 16384 };
	int reps = argc > 1 ? atoi(argv[1]) : 7;

	if (reps < 1 || reps > 64) {
		fprintf(stderr, "usage: arming [REPS (1..64)]\n");
		return 2;
	}
	tap_guest_only();
	psz = sysconf(_SC_PAGESIZE);
	if (bench_open_wp_async(&pagemap, &uffd))
		bench_die("pagemap, userfaultfd WP_ASYNC|WP_UNPOPULATED");

	printf("# arming: anon 4K ranges, uffd WP_ASYNC|WP_UNPOPULATED, median of %d reps; "
	       "MemTotal %ld MiB\n", reps, meminfo_kb("MemTotal") / 1024);
	printf("# size_mib case us pagetables_kb first_us first_pagetables_kb\n");
	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		arming(sizes[i], reps);
	first_writes();
	return 0;
}
