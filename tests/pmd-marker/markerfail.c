// SPDX-License-Identifier: MIT
/*
 * markerfail: every -ENOMEM path of the PMD-level uffd-wp marker's expansion
 * (the failure table of Documentation/mm/uffd-wp-pmd-marker.rst in the
 * series), run with the kernel's fault injection
 * (CONFIG_FAIL_UFFD_WP_PMD_MARKER: /sys/kernel/debug/fail_uffd_wp_pmd_marker
 * with its task filter, so only this process's expansions fail).
 *
 * Each case builds two identical 8 MiB regions, A and B: anonymous,
 * MADV_NOHUGEPAGE, registered uffd-wp with WP_UNPOPULATED and WP_ASYNC,
 * one page written in the second 2 MiB, then armed whole, which leaves a
 * marker in the three untouched 2 MiB (the case may turn one into an
 * empty marker by un-protecting it whole).  Then, with the next expansion
 * of this process made to fail:
 *
 *   1. the operation on A answers as that failure table says (-ENOMEM,
 *      or for a CPU fault a transparent retry), and the kernel's
 *      expand_failed counter moved by one, so the injection met the
 *      marker, not something else;
 *   2. for an operation that fails, A reads exactly as before it (the
 *      marker left as it was): pagemap's flag bits, PAGEMAP_SCAN's
 *      categories of every page, mincore and the VMAs, relative to A;
 *   3. the operation again, without injection, succeeds, and the expansion
 *      site's counter moved;
 *   4. B, which never met an injection, after the same operation reads
 *      exactly as A: the failure left nothing behind.
 *
 * The oracle for 2 and 4 is the same process's other region, not a model:
 * whatever the kernel answers for B after a clean run is what A must
 * answer after a failed and repeated one.
 *
 *   markerfail [--case NAME] [--list]
 *
 * Runs only in the memwatch guest (it writes debugfs); a kernel without
 * the marker or without its fault injection fails (not a skip: make check
 * runs it on the debug kernel, whose config has both).
 */
#include "mw-test.h"
#include "mw-marker.h"

#include <sys/syscall.h>

#define PG	4096UL
#define PMD	(2UL << 20)
#define NPMD	4
#define LEN	(NPMD * PMD)
#define NPG	(LEN / PG)
#define FAIL_DIR "/sys/kernel/debug/fail_uffd_wp_pmd_marker"
#define PM_FLAGS 0xff80000000000000ULL	/* pagemap bits 55-63, no PFN */
#define MAXVMA	16

struct vma_rec {
	long start, end;	/* relative to the region */
	char perms[8];
};

/* What a region reads: the answers a marker must not change. */
struct snap {
	uint64_t pm[NPG];	/* pagemap flag bits */
	uint64_t cat[NPG];	/* PAGEMAP_SCAN categories */
	unsigned char mc[NPG];	/* mincore */
	struct vma_rec vma[MAXVMA];
	int nvma;
};

struct ctx {
	int pagemap;		/* /proc/self/pagemap */
	int uffd;
	char *base;		/* reservation: A, B, a destination each, gaps */
	char *a, *b, *dst_a, *dst_b;
	struct snap s0, s1, s2;
	struct page_region vec[NPG];
};

/* ---- fault injection ---------------------------------------------------- */

static int write_str(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : n < 0 ? -errno : -EIO;
}

static long read_long(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	return strtol(buf, NULL, 10);
}

/* Fail this task's expansions, none yet; 0 or -errno. */
static int fail_setup(void)
{
	static const char *const set[][2] = {
		{ FAIL_DIR "/verbose", "0" },
		{ FAIL_DIR "/times", "0" },
		{ FAIL_DIR "/space", "0" },
		{ FAIL_DIR "/interval", "1" },
		{ FAIL_DIR "/probability", "100" },
		{ FAIL_DIR "/task-filter", "Y" },
		{ "/proc/self/make-it-fail", "1" },
	};

	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++) {
		int r = write_str(set[i][0], set[i][1]);

		if (r) {
			tap_diag("%s: %s", set[i][0], strerror(-r));
			return r;
		}
	}
	return 0;
}

static void fail_next(int n)
{
	char v[16];

	snprintf(v, sizeof(v), "%d", n);
	if (write_str(FAIL_DIR "/times", v))
		mw_bail("arming the fault injection", NULL);
}

/* The injections armed but not used (0: every one met an expansion). */
static long fail_left(void)
{
	long left = read_long(FAIL_DIR "/times");

	fail_next(0);
	return left;
}

static uint64_t counter(enum mw_marker_counter i)
{
	struct mw_marker_stats s;

	if (mw_marker_read(&s) || !s.seen[i])
		mw_bail("reading " MW_MARKER_DIR "/stats", NULL);
	return s.v[i];
}

/* ---- regions ------------------------------------------------------------ */

static int wp(struct ctx *c, char *p, size_t len, bool on)
{
	return mw_uffd_wp(c->uffd, p, len, on);
}

/* Region r fresh: written page in 2 MiB number 1, armed whole. */
static void region_setup(struct ctx *c, char *r)
{
	if (mmap(r, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
		 MAP_FIXED, -1, 0) != r)
		mw_bail("mmap", NULL);
	if (madvise(r, LEN, MADV_NOHUGEPAGE))
		mw_bail("MADV_NOHUGEPAGE", NULL);
	if (mw_uffd_register_wp(c->uffd, r, LEN))
		mw_bail("UFFDIO_REGISTER", NULL);
	r[PMD + 5 * PG] = 1;
	if (wp(c, r, LEN, true))
		mw_bail("UFFDIO_WRITEPROTECT", NULL);
}

static void setup(struct ctx *c)
{
	uint64_t inst = counter(MWM_installed);

	if (c->uffd >= 0)
		close(c->uffd);
	c->uffd = mw_uffd_open(O_CLOEXEC | O_NONBLOCK,
			       UFFD_FEATURE_WP_UNPOPULATED |
			       UFFD_FEATURE_WP_ASYNC);
	if (c->uffd < 0)
		mw_bail("userfaultfd", NULL);
	if (mmap(c->base, 8 * LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
		 MAP_NORESERVE | MAP_FIXED, -1, 0) != c->base)
		mw_bail("mmap of the reservation", NULL);
	region_setup(c, c->a);
	region_setup(c, c->b);
	if (counter(MWM_installed) - inst != 6)
		tap_diag("  %" PRIu64 " markers installed, 6 expected",
			 counter(MWM_installed) - inst);
}

/* ---- what a region reads ------------------------------------------------ */

static void snap(struct ctx *c, char *r, struct snap *s)
{
	struct pm_scan_arg arg = {
		.size = sizeof(arg),
		.start = (uintptr_t)r,
		.end = (uintptr_t)r + LEN,
		.vec = (uintptr_t)c->vec,
		.vec_len = NPG,
		.category_anyof_mask = 0xff,
		.return_mask = 0xff,
	};
	char line[512];
	FILE *f;
	long n;

	memset(s, 0, sizeof(*s));
	if (pread(c->pagemap, s->pm, sizeof(s->pm),
		  (uintptr_t)r / PG * 8) != sizeof(s->pm))
		mw_bail("pread of /proc/self/pagemap", NULL);
	for (size_t i = 0; i < NPG; i++)
		s->pm[i] &= PM_FLAGS;
	n = ioctl(c->pagemap, PAGEMAP_SCAN, &arg);
	if (n < 0)
		mw_bail("PAGEMAP_SCAN", NULL);
	for (long i = 0; i < n; i++)
		for (uint64_t p = c->vec[i].start; p < c->vec[i].end; p += PG)
			if (p >= (uintptr_t)r && p < (uintptr_t)r + LEN)
				s->cat[(p - (uintptr_t)r) / PG] =
					c->vec[i].categories;
	/* mincore fails on the holes an unmapping case leaves: page by page */
	for (size_t i = 0; i < NPG; i++)
		if (mincore(r + i * PG, PG, &s->mc[i]))
			s->mc[i] = errno == ENOMEM ? 0xfe : 0xff;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		mw_bail("/proc/self/maps", NULL);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[8] = "";

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 ||
		    hi <= (uintptr_t)r || lo >= (uintptr_t)r + LEN)
			continue;
		lo = lo > (uintptr_t)r ? lo : (uintptr_t)r;
		hi = hi < (uintptr_t)r + LEN ? hi : (uintptr_t)r + LEN;
		if (s->nvma < MAXVMA) {
			s->vma[s->nvma].start = (long)(lo - (uintptr_t)r);
			s->vma[s->nvma].end = (long)(hi - (uintptr_t)r);
			memcpy(s->vma[s->nvma].perms, perms, sizeof(perms));
		}
		s->nvma++;
	}
	fclose(f);
}

/* Equal snapshots, or a diagnostic of the first difference. */
static bool same(const struct snap *x, const struct snap *y, const char *what)
{
	for (size_t i = 0; i < NPG; i++) {
		if (x->pm[i] != y->pm[i] || x->cat[i] != y->cat[i] ||
		    x->mc[i] != y->mc[i]) {
			tap_diag("  %s: page %zu: pagemap %#" PRIx64 "/%#" PRIx64
				 ", categories %#" PRIx64 "/%#" PRIx64
				 ", mincore %u/%u", what, i, x->pm[i], y->pm[i],
				 x->cat[i], y->cat[i], x->mc[i], y->mc[i]);
			return false;
		}
	}
	if (x->nvma != y->nvma ||
	    memcmp(x->vma, y->vma, sizeof(x->vma[0]) *
		   (x->nvma < MAXVMA ? x->nvma : MAXVMA))) {
		tap_diag("  %s: %d and %d VMAs, or different ones", what,
			 x->nvma, y->nvma);
		return false;
	}
	return true;
}

/* ---- the cases ---------------------------------------------------------- */

/* An operation on region r (its destination d): 0 or -errno. */
typedef int (*op_fn)(struct ctx *c, char *r, char *d);

struct fcase {
	const char *name;
	const char *doc;		/* what the design's failure table says */
	op_fn op;
	int want;			/* the failed call's answer */
	enum mw_marker_counter site;	/* the counter the retry moves */
	bool empty;			/* un-protect 2 MiB number 3 first */
};

static int op_write(struct ctx *c, char *r, char *d)
{
	(void)c, (void)d;
	r[2 * PMD + 7 * PG] = 42;
	return 0;
}

static int op_procmem(struct ctx *c, char *r, char *d)
{
	char v = 43;
	int fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	ssize_t n;

	(void)c, (void)d;
	if (fd < 0)
		mw_bail("/proc/self/mem", NULL);
	n = pwrite(fd, &v, 1, (uintptr_t)r + 2 * PMD + 9 * PG);
	if (n < 0)
		n = -errno;
	close(fd);
	return n == 1 ? 0 : n < 0 ? (int)n : -EIO;
}

static int op_unprotect_part(struct ctx *c, char *r, char *d)
{
	(void)d;
	return wp(c, r + 2 * PMD + PG, PG, false);
}

static int op_protect_part_empty(struct ctx *c, char *r, char *d)
{
	(void)d;
	return wp(c, r + 3 * PMD + PG, 2 * PG, true);
}

static int op_scan_wp_part_empty(struct ctx *c, char *r, char *d)
{
	struct pm_scan_arg arg = {
		.size = sizeof(arg),
		.flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
		.start = (uintptr_t)r + 3 * PMD,
		.end = (uintptr_t)r + 3 * PMD + 5 * PG,
		.vec = (uintptr_t)c->vec,
		.vec_len = NPG,
		.category_anyof_mask = PAGE_IS_WPALLOWED,
		.return_mask = PAGE_IS_WPALLOWED,
	};
	long n;

	(void)d;
	n = ioctl(c->pagemap, PAGEMAP_SCAN, &arg);
	if (n >= 0)
		return 0;
	n = -errno;
	/* upstream's answer after an error: where the walk last stopped for
	 * a full buffer, else the end of the range
	 */
	if (arg.walk_end != arg.end) {
		tap_diag("  walk_end %+lld from the end of the range",
			 (long long)(arg.walk_end - arg.end));
		return -EPROTO;
	}
	return (int)n;
}

static int op_dontneed_edges(struct ctx *c, char *r, char *d)
{
	(void)c, (void)d;
	return madvise(r + PMD / 2, 2 * PMD, MADV_DONTNEED) ? -errno : 0;
}

static int op_mprotect_split(struct ctx *c, char *r, char *d)
{
	(void)c, (void)d;
	return mprotect(r + 2 * PMD + 3 * PG, 4 * PG, PROT_READ) ? -errno : 0;
}

static int op_munmap_split(struct ctx *c, char *r, char *d)
{
	(void)c, (void)d;
	return munmap(r + 3 * PMD + 4 * PG, 8 * PG) ? -errno : 0;
}

static int op_mremap_part(struct ctx *c, char *r, char *d)
{
	void *p;

	(void)c;
	p = mremap(r + 2 * PMD + 8 * PG, 16 * PG, 16 * PG,
		   MREMAP_MAYMOVE | MREMAP_FIXED, d);
	if (p == MAP_FAILED)
		return -errno;
	return p == d ? 0 : -EPROTO;
}

static int op_copy(struct ctx *c, char *r, char *d)
{
	static char src[PG] = { 7 };
	struct uffdio_copy cp = {
		.dst = (uintptr_t)r + 2 * PMD + 11 * PG,
		.src = (uintptr_t)src,
		.len = PG,
	};

	(void)d;
	if (!ioctl(c->uffd, UFFDIO_COPY, &cp))
		return 0;
	if (cp.copy != -errno) {
		tap_diag("  UFFDIO_COPY: copy %lld, errno %d",
			 (long long)cp.copy, errno);
		return -EPROTO;
	}
	return -errno;
}

static int op_zeropage_empty(struct ctx *c, char *r, char *d)
{
	struct uffdio_zeropage z = {
		.range = { (uintptr_t)r + 3 * PMD + PG, PG },
	};

	(void)d;
	if (!ioctl(c->uffd, UFFDIO_ZEROPAGE, &z))
		return 0;
	if (z.zeropage != -errno) {
		tap_diag("  UFFDIO_ZEROPAGE: zeropage %lld, errno %d",
			 (long long)z.zeropage, errno);
		return -EPROTO;
	}
	return -errno;
}

static const struct fcase cases[] = {
	{ "write", "a CPU write: VM_FAULT_OOM, the fault retried",
	  op_write, 0, MWM_expanded_fault, false },
	{ "procmem", "a write through /proc/self/mem (GUP): the fault's -ENOMEM, EIO",
	  op_procmem, -EIO, MWM_expanded_fault, false },
	{ "unprotect-part", "UFFDIO_WRITEPROTECT un-protect of one page: -ENOMEM",
	  op_unprotect_part, -ENOMEM, MWM_expanded_protect, false },
	{ "protect-part-empty", "UFFDIO_WRITEPROTECT of two pages of an empty marker: -ENOMEM",
	  op_protect_part_empty, -ENOMEM, MWM_expanded_protect, true },
	{ "scan-wp-part-empty", "PAGEMAP_SCAN WP_MATCHING of part of an empty marker: -ENOMEM, walk_end at the end",
	  op_scan_wp_part_empty, -ENOMEM, MWM_expanded_scan, true },
	{ "dontneed-edges", "MADV_DONTNEED with both edges inside markers: -ENOMEM before any zap",
	  op_dontneed_edges, -ENOMEM, MWM_expanded_madvise, false },
	{ "mprotect-split", "mprotect splitting a marked 2 MiB: -ENOMEM, no split",
	  op_mprotect_split, -ENOMEM, MWM_expanded_split, false },
	{ "munmap-split", "munmap of part of a marked 2 MiB: -ENOMEM, nothing unmapped",
	  op_munmap_split, -ENOMEM, MWM_expanded_split, false },
	{ "mremap-part", "mremap of part of a marked 2 MiB: -ENOMEM, moved back",
	  op_mremap_part, -ENOMEM, MWM_expanded_mremap, false },
	{ "copy", "UFFDIO_COPY into a marked page: -ENOMEM, copy = -ENOMEM",
	  op_copy, -ENOMEM, MWM_expanded_mfill, false },
	{ "zeropage-empty", "UFFDIO_ZEROPAGE into an empty marker: -ENOMEM",
	  op_zeropage_empty, -ENOMEM, MWM_expanded_mfill, true },
};
#define NCASES	(sizeof(cases) / sizeof(cases[0]))
#define POINTS	5	/* per case */

static const char *err_name(int e)
{
	static char buf[32];

	if (!e)
		return "0";
	snprintf(buf, sizeof(buf), "-%s", strerror(-e));
	return buf;
}

static void run_case(struct ctx *c, const struct fcase *k)
{
	const uint64_t written = PAGE_IS_WRITTEN | PAGE_IS_PRESENT;
	uint64_t failed0, failed1, site0, site1;
	int got, again;
	long left;

	tap_diag("%s: %s", k->name, k->doc);
	setup(c);
	if (k->empty && (wp(c, c->a + 3 * PMD, PMD, false) ||
			 wp(c, c->b + 3 * PMD, PMD, false)))
		mw_bail("un-protecting a whole 2 MiB", NULL);
	snap(c, c->a, &c->s0);

	failed0 = counter(MWM_expand_failed);
	site0 = counter(k->site);
	fail_next(1);
	got = k->op(c, c->a, c->dst_a);
	left = fail_left();
	failed1 = counter(MWM_expand_failed);
	site1 = counter(k->site);
	/* a failed call expanded nothing; a CPU fault expanded on its retry */
	if (!tap_ok(got == k->want && left == 0 && failed1 - failed0 == 1 &&
		    (k->want ? site1 == site0 : site1 > site0),
		    "%s: the failed expansion answers %s", k->name,
		    err_name(k->want)))
		tap_diag("  got %s, injections left %ld, expand_failed +%" PRIu64
			 ", %s +%" PRIu64, err_name(got), left,
			 failed1 - failed0, mw_marker_name[k->site],
			 site1 - site0);

	snap(c, c->a, &c->s1);
	if (k->want)
		tap_ok(same(&c->s0, &c->s1, "before/after"),
		       "%s: the failed call changed nothing", k->name);
	else
		tap_ok((c->s1.cat[2 * PMD / PG + 7] & written) == written &&
		       c->a[2 * PMD + 7 * PG] == 42,
		       "%s: the retried fault wrote, and a scan reports it",
		       k->name);

	if (k->want) {
		site0 = counter(k->site);
		again = k->op(c, c->a, c->dst_a);
		site1 = counter(k->site);
		if (!tap_ok(again == 0 && site1 > site0,
			    "%s: again without injection: 0, %s moved",
			    k->name, mw_marker_name[k->site]))
			tap_diag("  got %s, %s +%" PRIu64, err_name(again),
				 mw_marker_name[k->site], site1 - site0);
	} else {
		/* the point above saw the retry expand: count its place */
		tap_ok(site1 > site0, "%s: the retry expanded (%s +%" PRIu64 ")",
		       k->name, mw_marker_name[k->site], site1 - site0);
	}

	site0 = counter(k->site);
	got = k->op(c, c->b, c->dst_b);
	site1 = counter(k->site);
	if (!tap_ok(got == 0 && site1 - site0 >= 1,
		    "%s: the twin without injection: 0, %s moved", k->name,
		    mw_marker_name[k->site]))
		tap_diag("  got %s, %s +%" PRIu64, err_name(got),
			 mw_marker_name[k->site], site1 - site0);

	snap(c, c->a, &c->s1);
	snap(c, c->b, &c->s2);
	got = same(&c->s1, &c->s2, "A/B");
	snap(c, c->dst_a, &c->s1);
	snap(c, c->dst_b, &c->s2);
	tap_ok(got && same(&c->s1, &c->s2, "destinations A/B"),
	       "%s: A after failure and retry reads as B", k->name);
}

int main(int argc, char **argv)
{
	const char *only = NULL;
	struct ctx *c;
	int n = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--case") && i + 1 < argc) {
			only = argv[++i];
		} else if (!strcmp(argv[i], "--list")) {
			for (size_t k = 0; k < NCASES; k++)
				printf("%-20s %s\n", cases[k].name, cases[k].doc);
			return 0;
		} else {
			fprintf(stderr, "usage: %s [--case NAME] [--list]\n",
				argv[0]);
			return 2;
		}
	}
	for (size_t k = 0; k < NCASES; k++)
		n += !only || !strcmp(only, cases[k].name);
	if (!n) {
		fprintf(stderr, "%s: no case %s (--list)\n", argv[0], only);
		return 2;
	}
	tap_guest_only();
	tap_plan(1 + n * POINTS);

	c = calloc(1, sizeof(*c));
	if (!c)
		mw_bail("calloc", NULL);
	c->uffd = -1;
	c->pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	c->base = mw_reserve_alone(8 * LEN);
	if (c->pagemap < 0 || !c->base)
		mw_bail("pagemap or a reservation", NULL);
	/* PROT_NONE between them: no region merges with another */
	c->a = c->base + LEN;
	c->b = c->base + 3 * LEN;
	c->dst_a = c->base + 5 * LEN;
	c->dst_b = c->base + 7 * LEN;

	if (!tap_ok(mw_marker_enabled() == 1 && !fail_setup(),
		    "the marker is on and " FAIL_DIR " fails this task's expansions"))
		return tap_done();
	for (size_t k = 0; k < NCASES; k++)
		if (!only || !strcmp(only, cases[k].name))
			run_case(c, &cases[k]);
	return tap_done();
}
