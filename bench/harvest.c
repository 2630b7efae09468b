// SPDX-License-Identifier: GPL-2.0
/*
 * What a harvest costs on memory that was touched and is clean since: a
 * collector's old generation, a mostly idle process between CRIU
 * pre-dumps, a game's heap under Wine.  The series skips the page tables
 * of such memory in which nothing was written since the last harvest
 * (Documentation/mm/uffd-wp-harvest-skip.rst of the patched tree).
 *
 *   harvest [SIZE_MIB [REPS]]      (default 1024 7)
 *
 * A range of SIZE_MIB, anonymous MAP_PRIVATE, MADV_NOHUGEPAGE (4K ptes, as
 * Wine maps its views), registered MODE_WP on a uffd with WP_ASYNC |
 * WP_UNPOPULATED, every page written once, then harvested twice: all of it
 * present and armed, every table read all armed.  Each case writes pages
 * (untimed), then times one GetWriteWatch(RESET): PAGEMAP_SCAN with
 * PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC, category and return mask
 * WRITTEN, over the whole range into a buffer large enough for it:
 *   tables_P     one page written in P per mille of the page tables
 *                (0, 10, 20, 50, 100, 250, 500, 1000), spread evenly;
 *                tables_0 is the harvest of clean memory
 *   pages_0.1    one page in a thousand written, chosen at random (about
 *                40 % of the tables get one)
 * and every harvest must report exactly the pages written (the run fails
 * otherwise: a benchmark of a wrong answer measures nothing).  Then
 *   first_write  the first write to an armed page (the async fault that
 *                unarms it), ns per write, each timed alone around one
 *                store, net of the same store to a writable page
 * Where debugfs uffd_wp_harvest_skip/enabled exists (our kernel), every
 * case runs with it at 1 and at 0, side by side in the same process;
 * elsewhere (upstream, or our kernel without it) once, as "n/a".
 * Output, one line per case, scripts/bench parses it:
 *   hv SKIP CASE MEDIAN P90 PAGES UNIT
 * SKIP is on, off or n/a; MEDIAN and P90 over REPS harvests (us) or the
 * first writes (ns); PAGES: the pages each harvest reported.  Lines that
 * start with "#" are comments (the skip's counters around each mode).  Run
 * it under `scripts/vm-run --icount` (guest time = instructions).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/fs.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "bench.h"

#define KNOB		"/sys/kernel/debug/uffd_wp_harvest_skip"
#define PMD		(2UL << 20)
#define PAGE		4096UL
#define FW_WRITES	512

struct hv {
	int pagemap, uffd;
	char *m;
	unsigned long size, pages, tables;
	struct page_region *vec;
	unsigned long vec_len;
	int reps;
	double *t;
	uint64_t rnd;
};

/* One harvest of the whole range; the pages it reported. */
static unsigned long harvest(struct hv *h)
{
	struct pm_scan_arg arg = mw_ww_arg((uintptr_t)h->m,
					   (uintptr_t)h->m + h->size, true,
					   h->vec, h->vec_len);
	unsigned long n = 0;
	long r = bench_scan(h->pagemap, &arg);

	if (arg.walk_end != arg.end) {
		fprintf(stderr, "harvest: stopped at %#llx, not %#llx\n",
			(unsigned long long)arg.walk_end,
			(unsigned long long)arg.end);
		exit(1);
	}
	for (long i = 0; i < r; i++)
		n += (h->vec[i].end - h->vec[i].start) / PAGE;
	return n;
}

/* Writes the pages of a case; how many. */
static unsigned long write_case(struct hv *h, int permille, bool random)
{
	unsigned long n = 0;

	if (random) {
		/* one in a thousand pages, at random: distinct by construction */
		for (unsigned long p = 0; p < h->pages; p += 1000) {
			unsigned long q = p + mw_rndn(&h->rnd, 1000);

			if (q < h->pages) {
				h->m[q * PAGE] = (char)q;
				n++;
			}
		}
		return n;
	}
	if (!permille)
		return 0;
	/* permille of the tables, spread evenly, one page each */
	for (unsigned long k = 0; k < h->tables * permille / 1000; k++) {
		unsigned long t = k * 1000 / permille;
		unsigned long q = t * (PMD / PAGE) + (k * 37) % (PMD / PAGE);

		h->m[q * PAGE] = (char)k;
		n++;
	}
	return n;
}

static void run_case(struct hv *h, const char *skip, const char *name,
		     int permille, bool random)
{
	unsigned long want = 0, got = 0;

	for (int r = 0; r < h->reps; r++) {
		double t0;

		want = write_case(h, permille, random);
		t0 = now_us();
		got = harvest(h);
		h->t[r] = now_us() - t0;
		if (got != want) {
			fprintf(stderr, "harvest: %s %s reported %lu pages, %lu were written\n",
				skip, name, got, want);
			exit(1);
		}
	}
	median(h->t, h->reps);
	printf("hv %s %s %.1f %.1f %lu us\n", skip, name, h->t[h->reps / 2],
	       h->t[h->reps * 9 / 10], got);
}

static void first_writes(struct hv *h, const char *skip)
{
	double t[FW_WRITES], base[FW_WRITES];
	static char plain[PAGE] __attribute__((aligned(4096)));
	unsigned long step = h->pages / FW_WRITES;

	plain[0] = 1;
	for (int i = 0; i < FW_WRITES; i++) {
		volatile char *p = h->m + (i * step + 7) * PAGE;
		double t0 = now_us();

		*p = 1;
		t[i] = (now_us() - t0) * 1e3;
		t0 = now_us();
		*(volatile char *)plain = (char)i;
		base[i] = (now_us() - t0) * 1e3;
	}
	median(t, FW_WRITES);
	median(base, FW_WRITES);
	printf("hv %s first_write %.1f %.1f %d ns\n", skip,
	       t[FW_WRITES / 2] - base[FW_WRITES / 2],
	       t[FW_WRITES * 9 / 10] - base[FW_WRITES / 2], FW_WRITES);
	if (harvest(h) != FW_WRITES) {
		fprintf(stderr, "harvest: the first writes were not all reported\n");
		exit(1);
	}
}

static void stats(const char *when)
{
	char buf[512];
	int fd = open(KNOB "/stats", O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"))
		printf("# %s: %s\n", when, l);
}

static bool set_knob(const char *v)
{
	int fd = open(KNOB "/enabled", O_WRONLY);
	bool ok;

	if (fd < 0)
		return false;
	ok = write(fd, v, strlen(v)) == (ssize_t)strlen(v);
	close(fd);
	return ok;
}

static void run_mode(struct hv *h, const char *skip)
{
	static const int permille[] = { 0, 10, 20, 50, 100, 250, 500, 1000 };
	char name[32];

	/* Every table read all armed (and, skipping, made clean) */
	harvest(h);
	harvest(h);
	stats("before");
	for (size_t i = 0; i < sizeof(permille) / sizeof(permille[0]); i++) {
		snprintf(name, sizeof(name), "tables_%d", permille[i]);
		run_case(h, skip, name, permille[i], false);
	}
	run_case(h, skip, "pages_0.1", 0, true);
	first_writes(h, skip);
	stats("after");
}

int main(int argc, char **argv)
{
	struct hv h = { .reps = 7, .rnd = 42 };
	unsigned long mib = argc > 1 ? strtoul(argv[1], NULL, 0) : 1024;
	char *raw;

	tap_guest_only();
	if (argc > 2)
		h.reps = atoi(argv[2]);
	if (!mib || h.reps < 1) {
		fprintf(stderr, "usage: harvest [SIZE_MIB [REPS]]\n");
		return 2;
	}
	h.size = mib << 20;
	h.pages = h.size / PAGE;
	h.tables = h.size / PMD;
	h.vec_len = h.pages / 2 + 1;
	h.vec = calloc(h.vec_len, sizeof(*h.vec));
	h.t = calloc(h.reps, sizeof(*h.t));
	if (!h.vec || !h.t)
		bench_die("calloc");
	if (bench_open_wp_async(&h.pagemap, &h.uffd))
		bench_die("pagemap / userfaultfd");
	/* 2 MiB aligned, so that every table is the range's alone */
	raw = mmap(NULL, h.size + PMD, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		bench_die("mmap");
	h.m = (char *)(((uintptr_t)raw + PMD - 1) & ~(PMD - 1));
	if (madvise(h.m, h.size, MADV_NOHUGEPAGE))
		bench_die("MADV_NOHUGEPAGE");
	bench_arm(h.uffd, h.m, h.size);
	for (unsigned long p = 0; p < h.pages; p++)
		h.m[p * PAGE] = 1;
	printf("# harvest: %lu MiB, %lu tables, %d reps\n", mib, h.tables,
	       h.reps);
	if (set_knob("1")) {
		run_mode(&h, "on");
		if (!set_knob("0"))
			bench_die(KNOB "/enabled");
		run_mode(&h, "off");
		set_knob("1");
	} else {
		printf("# %s: absent, one run as the kernel is\n", KNOB);
		run_mode(&h, "n/a");
	}
	return 0;
}
