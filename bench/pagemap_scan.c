// SPDX-License-Identifier: GPL-2.0
/*
 * PAGEMAP_SCAN path costs, measured side by side in one guest run.
 *
 *   pagemap_scan [PAGES [ROUNDS]]
 *
 * Each case runs ROUNDS times, its variants interleaved round by round (so
 * that drift hits them alike); the median and minimum per call are printed
 * with the ratio of the medians.  Run it under `scripts/vm-run --icount` for
 * repeatable figures: guest time then counts executed instructions.
 *
 *   write-watch: get+reset (category_mask = return_mask = WRITTEN,
 *     WP_MATCHING) takes the fast path; its "generic twin" adds PFNZERO to
 *     category_mask and category_inverted, which matches the same pages
 *     (none of them is the zero page) but forces the generic pte loop.
 *   FILE cost (rule 14): PRESENT scan of a tmpfs mapping with return_mask
 *     PRESENT vs PRESENT|FILE (the latter looks up each page).
 *   generic queries: CRIU's dump query, Wasmtime's reset query and a
 *     PRESENT-only scan of the same armed range, 1/64 written.
 *   alternatives: the same get+reset answered by soft-dirty (pagemap read
 *     + clear_refs 4) and by mprotect (range PROT_READ; a SIGSEGV handler
 *     records the page and mprotect(RW)s it; the harvest copies the list out
 *     and re-protects the range: the write faults are untimed, as the
 *     uffd-wp ones are), at every fraction written, before the range is
 *     registered; then PAGEMAP_SCAN at 1/64.
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

#define MAXR 32768

struct bench {
	int pagemap, uffd;
	long psz, pages;
	char *mem;
	struct page_region vec[MAXR];
};

static long pm_scan(struct bench *b, char *start, long pages, int out,
		    uint64_t flags, uint64_t inv, uint64_t mask, uint64_t ret)
{
	struct pm_scan_arg arg = {
		.size = sizeof(arg), .flags = flags,
		.start = (uintptr_t)start,
		.end = (uintptr_t)start + pages * b->psz,
		.vec = out ? (uintptr_t)b->vec : 0, .vec_len = out ? MAXR : 0,
		.category_inverted = inv, .category_mask = mask,
		.return_mask = ret,
	};

	return bench_scan(b->pagemap, &arg);
}

/* Write every stride-th page of the anon range. */
static void dirty(struct bench *b, int stride)
{
	long i;

	for (i = 0; i < b->pages; i += stride)
		b->mem[i * b->psz] ^= 1;
}

typedef long (*variant_fn)(struct bench *b);

/* Variants run in turn each round; prep() runs untimed before each call. */
static void run_case(struct bench *b, const char *name, int rounds,
		     void (*prep)(struct bench *b), int nvar,
		     const char *const *vname, const variant_fn *fn)
{
	double *t = calloc((size_t)rounds * nvar, sizeof(*t)), med[4], lo[4];
	long result[4];
	int r, v;

	if (!t)
		bench_die("calloc");
	for (r = 0; r < rounds; r++) {
		for (v = 0; v < nvar; v++) {
			double t0;

			if (prep)
				prep(b);
			t0 = now_us();
			result[v] = fn[v](b);
			t[v * rounds + r] = now_us() - t0;
		}
	}
	for (v = 0; v < nvar; v++) {
		med[v] = median(t + v * rounds, rounds);
		lo[v] = t[v * rounds];	/* sorted by median() */
		printf("%-34s %-22s %10.1f us  (min %10.1f)  result %ld\n",
		       v ? "" : name, vname[v], med[v], lo[v], result[v]);
	}
	for (v = 1; v < nvar; v++)
		printf("%-34s %-22s %10.2fx\n", "", "ratio to the first", med[v] / med[0]);
	free(t);
}

static long ww_fast(struct bench *b)
{
	return pm_scan(b, b->mem, b->pages, 1, PM_SCAN_WP_MATCHING, 0,
		       PAGE_IS_WRITTEN, PAGE_IS_WRITTEN);
}

static long ww_twin(struct bench *b)
{
	return pm_scan(b, b->mem, b->pages, 1, PM_SCAN_WP_MATCHING, PAGE_IS_PFNZERO,
		       PAGE_IS_WRITTEN | PAGE_IS_PFNZERO, PAGE_IS_WRITTEN);
}

static long get_fast(struct bench *b)
{
	return pm_scan(b, b->mem, b->pages, 1, 0, 0, PAGE_IS_WRITTEN, PAGE_IS_WRITTEN);
}

static long get_twin(struct bench *b)
{
	return pm_scan(b, b->mem, b->pages, 1, 0, PAGE_IS_PFNZERO,
		       PAGE_IS_WRITTEN | PAGE_IS_PFNZERO, PAGE_IS_WRITTEN);
}

static long wp_fast(struct bench *b)
{
	return pm_scan(b, b->mem, b->pages, 0, PM_SCAN_WP_MATCHING, 0,
		       PAGE_IS_WRITTEN, 0);
}

static long wp_twin(struct bench *b)
{
	return pm_scan(b, b->mem, b->pages, 0, PM_SCAN_WP_MATCHING, PAGE_IS_PFNZERO,
		       PAGE_IS_WRITTEN | PAGE_IS_PFNZERO, 0);
}

static void prep_none(struct bench *b)
{
	(void)b;
}

static void prep_64(struct bench *b)
{
	dirty(b, 64);
}

static void prep_2(struct bench *b)
{
	dirty(b, 2);
}

/* 0.1% and 1% written: the write-watch harvests of a GetWriteWatch user. */
static void prep_1000(struct bench *b)
{
	dirty(b, 1000);
}

static void prep_100(struct bench *b)
{
	dirty(b, 100);
}

/*
 * CRIU 4.2's dump query (criu/pagemap-cache.c): pages in RAM or swap,
 * neither the zero page nor file-backed.
 */
static long criu_query(struct bench *b)
{
	return pm_scan(b, b->mem, b->pages, 1, 0, PAGE_IS_PFNZERO | PAGE_IS_FILE,
		       PAGE_IS_PFNZERO | PAGE_IS_FILE | PAGE_IS_PRESENT,
		       PAGE_IS_PRESENT | PAGE_IS_SWAPPED | PAGE_IS_SOFT_DIRTY);
}

/* Wasmtime's reset query: written, present, not zero page, not file. */
static long wasmtime_query(struct bench *b)
{
	return pm_scan(b, b->mem, b->pages, 1, 0, PAGE_IS_PFNZERO | PAGE_IS_FILE,
		       PAGE_IS_WRITTEN | PAGE_IS_PRESENT | PAGE_IS_PFNZERO | PAGE_IS_FILE, 0);
}

static long present_query(struct bench *b)
{
	return pm_scan(b, b->mem, b->pages, 1, 0, 0, PAGE_IS_PRESENT, PAGE_IS_PRESENT);
}

/* Re-arm everything, then write 1/64: the state a get-only call sees. */
static void prep_reset_64(struct bench *b)
{
	wp_fast(b);
	dirty(b, 64);
}

/* soft-dirty: read the pagemap of the range, collect bit 55, clear_refs 4. */
static long softdirty_get_reset(struct bench *b)
{
	static uint64_t ent[1 << 16];
	long i, n = 0, chunk;
	off_t off = (uintptr_t)b->mem / b->psz * sizeof(uint64_t);
	int fd;

	for (i = 0; i < b->pages; i += chunk) {
		chunk = b->pages - i < (1 << 16) ? b->pages - i : (1 << 16);
		if (pread(b->pagemap, ent, chunk * sizeof(uint64_t),
			  off + i * sizeof(uint64_t)) != (ssize_t)(chunk * sizeof(uint64_t)))
			bench_die("pagemap read");
		for (long j = 0; j < chunk; j++)
			n += (ent[j] >> 55) & 1;
	}
	fd = open("/proc/self/clear_refs", O_WRONLY);
	if (fd < 0 || write(fd, "4", 1) != 1)
		bench_die("clear_refs");
	close(fd);
	return n;
}

/* mprotect: the pages written since the last harvest, in fault order. */
static struct {
	char *base;
	long psz, pages, n;
	uintptr_t *rec, *out;
} mp;

static void mp_segv(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr, lo = (uintptr_t)mp.base;
	char *p = (char *)(a & ~(uintptr_t)(mp.psz - 1));

	(void)uc;
	if (a < lo || a >= lo + mp.pages * mp.psz || mp.n >= mp.pages) {
		signal(sig, SIG_DFL);	/* a real fault: die of it */
		return;
	}
	mp.rec[mp.n++] = (uintptr_t)p;
	if (mprotect(p, mp.psz, PROT_READ | PROT_WRITE))
		abort();
}

static void mprotect_arm(struct bench *b)
{
	struct sigaction sa = { .sa_sigaction = mp_segv, .sa_flags = SA_SIGINFO };

	mp.base = b->mem;
	mp.psz = b->psz;
	mp.pages = b->pages;
	mp.n = 0;
	mp.rec = calloc(b->pages, sizeof(*mp.rec));
	mp.out = calloc(b->pages, sizeof(*mp.out));
	if (!mp.rec || !mp.out || sigaction(SIGSEGV, &sa, NULL))
		bench_die("mprotect arm");
	if (mprotect(b->mem, b->pages * b->psz, PROT_READ))
		bench_die("mprotect");
}

static void mprotect_disarm(struct bench *b)
{
	if (mprotect(b->mem, b->pages * b->psz, PROT_READ | PROT_WRITE))
		bench_die("mprotect");
	signal(SIGSEGV, SIG_DFL);
	free(mp.rec);
	free(mp.out);
}

static long mprotect_get_reset(struct bench *b)
{
	long n = mp.n;

	memcpy(mp.out, mp.rec, n * sizeof(*mp.out));
	mp.n = 0;
	if (mprotect(b->mem, b->pages * b->psz, PROT_READ))
		bench_die("mprotect");
	return n;
}

static long file_present(struct bench *b)
{
	return pm_scan(b, b->mem + b->pages * b->psz, b->pages, 1, 0, 0,
		       PAGE_IS_PRESENT, PAGE_IS_PRESENT);
}

static long file_present_file(struct bench *b)
{
	return pm_scan(b, b->mem + b->pages * b->psz, b->pages, 1, 0, 0,
		       PAGE_IS_PRESENT, PAGE_IS_PRESENT | PAGE_IS_FILE);
}

int main(int argc, char **argv)
{
	struct bench *b = calloc(1, sizeof(*b));
	int rounds = argc > 2 ? atoi(argv[2]) : 21, memfd;
	char *file;

	if (!b)
		bench_die("calloc");
	b->psz = sysconf(_SC_PAGESIZE);
	b->pages = argc > 1 ? atol(argv[1]) : 32768;
	if (b->pages <= 0 || rounds <= 0) {
		fprintf(stderr, "usage: pagemap_scan [PAGES [ROUNDS]]\n");
		return 2;
	}
	tap_guest_only();
	b->pagemap = open("/proc/self/pagemap", O_RDONLY);
	if (b->pagemap < 0)
		bench_die("open pagemap");
	b->mem = mmap(NULL, 2 * b->pages * b->psz, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->mem == MAP_FAILED)
		bench_die("mmap");
	/* The anon half stays in 4K pages: the pte loop is what is measured. */
	madvise(b->mem, b->pages * b->psz, MADV_NOHUGEPAGE);
	memset(b->mem, 1, b->pages * b->psz);

	printf("# %ld pages of 4K anon, %d rounds, median per call\n", b->pages, rounds);

	/*
	 * The alternatives first, on the range not registered yet (soft-dirty's
	 * answer would not change, its cost might): soft-dirty, then mprotect,
	 * each at every fraction written.
	 */
	{
		static const char *const name[] = {
			"alt: get+reset, nothing written", "alt: get+reset, 0.1% written",
			"alt: get+reset, 1% written", "alt: get+reset, 1/64 written",
			"alt: get+reset, 1/2 written",
		};
		static void (*const prep[])(struct bench *b) = {
			prep_none, prep_1000, prep_100, prep_64, prep_2,
		};
		static const char *const sd[] = { "soft-dirty pagemap+clear_refs" };
		static const variant_fn sdf[] = { softdirty_get_reset };
		static const char *const mpv[] = { "mprotect+SIGSEGV" };
		static const variant_fn mpf[] = { mprotect_get_reset };
		unsigned int i;

		for (i = 0; i < sizeof(name) / sizeof(name[0]); i++)
			run_case(b, name[i], rounds, prep[i], 1, sd, sdf);
		mprotect_arm(b);
		for (i = 0; i < sizeof(name) / sizeof(name[0]); i++)
			run_case(b, name[i], rounds, prep[i], 1, mpv, mpf);
		mprotect_disarm(b);
	}

	b->uffd = bench_check(mw_uffd_open(O_CLOEXEC | O_NONBLOCK,
					   UFFD_FEATURE_WP_ASYNC |
					   UFFD_FEATURE_WP_UNPOPULATED),
			      "userfaultfd WP_ASYNC");
	bench_arm(b->uffd, b->mem, b->pages * b->psz);

	{
		static const char *const vn[] = { "PAGEMAP_SCAN fast path" };
		static const variant_fn fn[] = { ww_fast };

		run_case(b, "alt: get+reset, 1/64 written", rounds, prep_64, 1, vn, fn);
	}
	{
		static const char *const vn[] = { "fast path", "generic twin" };
		static const variant_fn fn[] = { ww_fast, ww_twin };

		run_case(b, "get+reset, nothing written", rounds, prep_none, 2, vn, fn);
		run_case(b, "get+reset, 0.1% written", rounds, prep_1000, 2, vn, fn);
		run_case(b, "get+reset, 1% written", rounds, prep_100, 2, vn, fn);
		run_case(b, "get+reset, 1/64 written", rounds, prep_64, 2, vn, fn);
		run_case(b, "get+reset, 1/2 written", rounds, prep_2, 2, vn, fn);
	}
	{
		static const char *const vn[] = { "fast path", "generic twin" };
		static const variant_fn fn[] = { get_fast, get_twin };

		run_case(b, "get only, 1/64 written", rounds, prep_reset_64, 2, vn, fn);
	}
	{
		static const char *const vn[] = { "fast path", "generic twin" };
		static const variant_fn fn[] = { wp_fast, wp_twin };

		run_case(b, "WP only, 1/64 written", rounds, prep_64, 2, vn, fn);
	}
	{
		static const char *const vn[] = { "CRIU dump query", "Wasmtime reset query",
						  "PRESENT only" };
		static const variant_fn fn[] = { criu_query, wasmtime_query, present_query };

		run_case(b, "generic queries, 1/64 written", rounds, prep_reset_64, 3, vn, fn);
	}

	/* Rule 14: PAGE_IS_FILE costs a page lookup per pte, only when asked. */
	memfd = syscall(__NR_memfd_create, "bench", 0);
	if (memfd < 0 || ftruncate(memfd, b->pages * b->psz))
		bench_die("memfd");
	file = mmap(b->mem + b->pages * b->psz, b->pages * b->psz, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_FIXED, memfd, 0);
	if (file == MAP_FAILED)
		bench_die("mmap memfd");
	memset(file, 1, b->pages * b->psz);
	{
		static const char *const vn[] = { "return PRESENT", "return PRESENT|FILE" };
		static const variant_fn fn[] = { file_present, file_present_file };

		run_case(b, "shmem PRESENT scan (rule 14)", rounds, prep_none, 2, vn, fn);
	}
	return 0;
}
