// SPDX-License-Identifier: GPL-2.0
/*
 * Differential conformance test for PAGEMAP_SCAN and uffd-wp async.
 *
 *   conformance [-n STEPS] UNIT...      UNIT = SEED | FIRST-LAST | probe:NAME
 *   conformance -l                      list the fixed probes
 *
 * For every seed, builds memory states from a seeded PRNG (mappings of
 * several kinds placed at fixed, 2 MiB-aligned slots of a reserved arena;
 * random operations on them) and after each step prints, as canonical text,
 * every answer of a battery of PAGEMAP_SCAN queries and the /proc/self/pagemap
 * bits 55, 57, 61, 62, 63 of every page.  Addresses are printed relative to
 * the mapping ("m2+0x3000"), so the output of one seed is the same on every
 * kernel that answers the same; tests/conformance/run runs the same seeds on
 * our kernel and on upstream 6.12 and diffs the outputs.
 *
 * Output lines start with the step number and the mapping ("7 m2 is:present
 * +0x0-0x3000 c=0x4a"); "== 7 ..." is the header of step 7 and names the
 * operation and its result.  Every unit runs in its own process, between
 * "#### unit NAME" and "#### end NAME status=S".
 *
 * Besides the single-threaded operations, some are done by a second thread
 * on the other CPU (cross-CPU TLB flushes on arming), some move pages
 * between two fake NUMA nodes (the guest boots with numa=fake=2, which
 * needs CONFIG_NUMA_EMU), and probes ksm/ksm-unmerge let ksmd merge pages
 * (CONFIG_KSM).  The probes fail on a kernel without them.
 *
 * Runs only inside a memwatch test guest (memwatch.guest=1): it writes
 * sysfs/debugfs/procfs knobs to make the kernels comparable (see
 * guest_setup()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/fs.h>
#include <linux/userfaultfd.h>

#include "mw-test.h"

#define PS		4096UL
#define HPS		(2UL << 20)
#define SLOT		(8UL << 20)		/* one mapping per slot */
#define NSLOT		10
#define ARENA		(NSLOT * SLOT)
#define MAXPG		(SLOT / PS)
#define MAXMAP		6
#define ALLCAT		0xffULL
#define NVEC		8192
#define VLEN		512			/* see probe bounce-refill */
#define LOOPCAP		512			/* calls per resumption loop */

#define WPALLOWED	PAGE_IS_WPALLOWED
#define WRITTEN		PAGE_IS_WRITTEN
#define FILEB		PAGE_IS_FILE
#define PRESENT		PAGE_IS_PRESENT
#define SWAPPED		PAGE_IS_SWAPPED
#define PFNZERO		PAGE_IS_PFNZERO
#define HUGE		PAGE_IS_HUGE
#define SOFTDIRTY	PAGE_IS_SOFT_DIRTY

static const char *const catname[8] = {
	"wpallowed", "written", "file", "present",
	"swapped", "pfnzero", "huge", "softdirty",
};

/* ---- PRNG: splitmix64 (mw_rnd), seeded per unit ---- */
static uint64_t rng;
static size_t rn(size_t n) { return (size_t)mw_rndn(&rng, n); }
static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* ---- mappings ---- */
enum kind {
	K_ANON, K_THP, K_SHANON, K_MEMFD, K_TMPFS, K_EXT4, K_HUGE_ANON,
	K_HUGE_MEMFD, NKIND
};
static const char *const kindname[NKIND] = {
	"anon", "thp", "shared-anon", "memfd", "tmpfs-file", "ext4-file",
	"hugetlb", "hugetlb-memfd",
};
/* creation weights (sum 14) */
static const unsigned kindweight[NKIND] = { 3, 3, 1, 2, 1, 2, 1, 1 };

#define P_UNMAPPED 0x80		/* prot[] value of a page we munmapped */

struct map {
	int live, kind, shared, fd, slot;
	size_t off, len, g;			/* offset in slot, length, granule */
	unsigned char prot[MAXPG];		/* per 4 KiB page */
};

static char *arena;
static struct map maps[MAXMAP];
static int pmfd = -1, uffd = -1;
static int stepno;
static struct page_region vec[NVEC];
static uint64_t pme[MAXPG];

static char *mbase(const struct map *m) { return arena + m->slot * SLOT + m->off; }
static size_t npg(const struct map *m) { return m->len / PS; }
static int is_huge(const struct map *m) { return m->g == HPS; }
static int is_anon(const struct map *m) { return m->kind == K_ANON || m->kind == K_THP; }

static const char *ename(int e)
{
	static char buf[16];

	switch (e) {
	case 0: return "0";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EINTR: return "EINTR";
	case EAGAIN: return "EAGAIN";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case EINVAL: return "EINVAL";
	case ENOTTY: return "ENOTTY";
	case ENOSPC: return "ENOSPC";
	case ESRCH: return "ESRCH";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	}
	snprintf(buf, sizeof(buf), "E%d", e);
	return buf;
}

/* "0" or the errno name of a -1 return */
static const char *res(int r) { return r < 0 ? ename(errno) : "0"; }

static void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	va_start(ap, fmt);
	fprintf(stdout, "FATAL: ");
	vfprintf(stdout, fmt, ap);
	fprintf(stdout, " (%s)\n", strerror(errno));
	va_end(ap);
	fflush(stdout);
	_exit(3);
}

/* Signed offset of addr from base as text. */
static const char *rel(uintptr_t base, uint64_t addr, char *buf)
{
	if (addr >= base)
		sprintf(buf, "+0x%" PRIx64, addr - base);
	else
		sprintf(buf, "-0x%" PRIx64, base - addr);
	return buf;
}

/* ---- PAGEMAP_SCAN ---- */
struct q {
	const char *name;
	uint64_t flags, inv, mask, anyof, ret, vec_len, max_pages;
};

/*
 * One ioctl, printed: "<pfx> <name> ret=N end=+0x..", then one line per
 * region unless the call failed (after an error the vector's contents are
 * unspecified).  Returns the ioctl's result, walk_end in *we.
 */
static long scan1(const char *pfx, const char *name, uintptr_t base,
		  uint64_t start, uint64_t end, const struct q *q, uint64_t *we)
{
	struct pm_scan_arg a = {
		.size = sizeof(a), .flags = q->flags, .start = start, .end = end,
		.vec = q->vec_len ? (uintptr_t)vec : 0, .vec_len = q->vec_len,
		.max_pages = q->max_pages, .category_inverted = q->inv,
		.category_mask = q->mask, .category_anyof_mask = q->anyof,
		.return_mask = q->ret,
	};
	char b1[32], b2[32];
	long r, i;

	r = ioctl(pmfd, PAGEMAP_SCAN, &a);
	*we = a.walk_end;
	if (r < 0) {
		printf("%s %s ret=%s end=%s\n", pfx, name, ename(errno),
		       rel(base, a.walk_end, b1));
		return r;
	}
	printf("%s %s ret=%ld end=%s\n", pfx, name, r, rel(base, a.walk_end, b1));
	for (i = 0; i < r && i < NVEC; i++)
		printf("%s %s %s-%s c=0x%llx\n", pfx, name,
		       rel(base, vec[i].start, b1),
		       rel(base, vec[i].end, b2) + 1, (unsigned long long)vec[i].categories);
	return r;
}

/*
 * With loop set, resume at walk_end until it reaches end (a client's loop),
 * numbering the calls; stops after an error, after a call that made no
 * progress and after LOOPCAP calls.
 */
static void scan(const char *pfx, const char *name, uintptr_t base,
		 uint64_t start, uint64_t end, const struct q *q, int loop)
{
	uint64_t cur = start, we;
	char nm[64];
	int i;

	if (!loop) {
		scan1(pfx, name, base, start, end, q, &we);
		return;
	}
	for (i = 0; i < LOOPCAP; i++) {
		snprintf(nm, sizeof(nm), "%s#%d", name, i);
		if (scan1(pfx, nm, base, cur, end, q, &we) < 0)
			return;
		if (we >= ((end + PS - 1) & ~(PS - 1)))
			return;
		if (we <= cur) {
			printf("%s %s no-progress\n", pfx, name);
			return;
		}
		cur = we;
	}
	printf("%s %s loop-cap\n", pfx, name);
}

/* /proc/self/pagemap bits 63 present, 62 swapped, 61 file/shared-anon,
 * 57 uffd-wp, 55 soft-dirty: run-length encoded */
static void pagemap(const char *pfx, const struct map *m)
{
	uintptr_t b = (uintptr_t)mbase(m);
	size_t n = npg(m), i, s = 0;
	char code[6], prev[6] = "", b1[32], b2[32];

	if (pread(pmfd, pme, n * 8, (off_t)(b / PS * 8)) != (ssize_t)(n * 8)) {
		printf("%s pagemap read failed %s\n", pfx, ename(errno));
		return;
	}
	for (i = 0; i <= n; i++) {
		if (i < n) {
			uint64_t e = pme[i];

			code[0] = e >> 63 & 1 ? 'p' : '-';
			code[1] = e >> 62 & 1 ? 's' : '-';
			code[2] = e >> 61 & 1 ? 'f' : '-';
			code[3] = e >> 57 & 1 ? 'w' : '-';
			code[4] = e >> 55 & 1 ? 'd' : '-';
			code[5] = 0;
			if (i && !strcmp(code, prev))
				continue;
		}
		if (i)
			printf("%s pm %s-%s %s\n", pfx, rel(b, b + s * PS, b1),
			       rel(b, b + i * PS, b2) + 1, prev);
		s = i;
		memcpy(prev, code, sizeof(prev));
	}
}

/* Number of 4 KiB pages in `pages` huge-granule units for max_pages. */
static uint64_t max_pages_for(const struct map *m, uint64_t want)
{
	/*
	 * A max_pages that ends inside a hugetlb page under WP_MATCHING is a
	 * deliberate difference (allow-list (1)): keep it to whole pages here,
	 * the probes exercise the partial case.
	 */
	if (is_huge(m) && want)
		return (want + 511) / 512 * 512;
	return want;
}

/* The read-only battery: every answer on the mapping's range. */
static void battery(const char *tag, const struct map *m)
{
	uintptr_t b = (uintptr_t)mbase(m);
	uint64_t e = b + m->len;
	char pfx[32], nm[32];
	struct q q;
	size_t s, l;
	int c;

	snprintf(pfx, sizeof(pfx), "%d %sm%d", stepno, tag, (int)(m - maps));
	q = (struct q){ "all", 0, 0, 0, 0, ALLCAT, VLEN, 0 };
	scan(pfx, q.name, b, b, e, &q, 1);
	for (c = 0; c < 8; c++) {
		snprintf(nm, sizeof(nm), "is:%s", catname[c]);
		q = (struct q){ nm, 0, 0, 1ULL << c, 0, ALLCAT, VLEN, 0 };
		scan(pfx, nm, b, b, e, &q, 1);
		snprintf(nm, sizeof(nm), "not:%s", catname[c]);
		q = (struct q){ nm, 0, 1ULL << c, 1ULL << c, 0, ALLCAT, VLEN, 0 };
		scan(pfx, nm, b, b, e, &q, 1);
	}
	/* the write-watch fast path's shape */
	q = (struct q){ "ww", 0, 0, WRITTEN, 0, WRITTEN, VLEN, 0 };
	scan(pfx, q.name, b, b, e, &q, 1);
	/* Wine's get without the reset: EPERM outside uffd-wp-async VMAs */
	q = (struct q){ "wine-get", PM_SCAN_CHECK_WPASYNC, 0, WRITTEN, 0, WRITTEN, 256, 0 };
	scan(pfx, q.name, b, b, e, &q, 1);
	/* CRIU's dump query */
	q = (struct q){ "criu", 0, PFNZERO | FILEB, PFNZERO | FILEB, PRESENT | SWAPPED,
			PRESENT | SWAPPED | SOFTDIRTY, VLEN, 0 };
	scan(pfx, q.name, b, b, e, &q, 1);
	/* Wasmtime's reset query, return mask 0 (runs merge), with and without max_pages */
	q = (struct q){ "wasm", 0, PFNZERO | FILEB, WRITTEN | PRESENT | PFNZERO | FILEB, 0,
			0, VLEN, 0 };
	scan(pfx, q.name, b, b, e, &q, 1);
	q.name = "wasm-max";
	q.max_pages = 1 + rn(64);
	scan(pfx, q.name, b, b, e, &q, 1);
	q = (struct q){ "any:present|swapped", 0, 0, 0, PRESENT | SWAPPED, ALLCAT, VLEN, 0 };
	scan(pfx, q.name, b, b, e, &q, 1);
	q = (struct q){ "any:written|softdirty", 0, 0, 0, WRITTEN | SOFTDIRTY, ALLCAT, VLEN, 0 };
	scan(pfx, q.name, b, b, e, &q, 1);
	q = (struct q){ "any:huge|pfnzero", 0, 0, 0, HUGE | PFNZERO, ALLCAT, VLEN, 0 };
	scan(pfx, q.name, b, b, e, &q, 1);
	q = (struct q){ "present+any:file|huge", 0, 0, PRESENT, FILEB | HUGE,
			PRESENT | FILEB | HUGE, VLEN, 0 };
	scan(pfx, q.name, b, b, e, &q, 1);
	q = (struct q){ "wpallowed-not-present", 0, PRESENT, PRESENT | WPALLOWED, 0,
			ALLCAT, VLEN, 0 };
	scan(pfx, q.name, b, b, e, &q, 1);
	q = (struct q){ "ret:written|present", 0, 0, 0, 0, WRITTEN | PRESENT, VLEN, 0 };
	scan(pfx, q.name, b, b, e, &q, 1);
	/* small buffers and max_pages, resumed at walk_end */
	q = (struct q){ "all/vec1", 0, 0, 0, 0, ALLCAT, 1, 0 };
	scan(pfx, q.name, b, b, e, &q, 1);
	q = (struct q){ "ww/vec2", 0, 0, WRITTEN, 0, WRITTEN, 2, 0 };
	scan(pfx, q.name, b, b, e, &q, 1);
	q = (struct q){ "present/max", 0, 0, PRESENT, 0, ALLCAT, 64, 1 + rn(40) };
	snprintf(nm, sizeof(nm), "present/max%llu", (unsigned long long)q.max_pages);
	scan(pfx, nm, b, b, e, &q, 1);
	q = (struct q){ "all/vec3max", 0, 0, 0, 0, ALLCAT, 3, 1 + rn(300) };
	snprintf(nm, sizeof(nm), "all/vec3max%llu", (unsigned long long)q.max_pages);
	scan(pfx, nm, b, b, e, &q, 1);
	/* a sub-range at 4 KiB granularity, and an unaligned end */
	s = rn(npg(m));
	l = 1 + rn(npg(m) - s);
	q = (struct q){ "sub", 0, 0, 0, 0, ALLCAT, VLEN, 0 };
	snprintf(nm, sizeof(nm), "sub[%zx-%zx]", s, s + l);
	scan(pfx, nm, b, b + s * PS, b + (s + l) * PS, &q, 1);
	l = 1 + rn(m->len - 1);
	snprintf(nm, sizeof(nm), "end+%zx", l);
	scan(pfx, nm, b, b, b + l, &q, 1);
	q = (struct q){ "empty", 0, 0, 0, 0, ALLCAT, VLEN, 0 };
	scan(pfx, q.name, b, b + s * PS, b + s * PS, &q, 1);
	pagemap(pfx, m);
}

/* The whole arena in one call: VMA boundaries, reservations, holes. */
static void span(void)
{
	char pfx[32];
	struct q q = { "span", 0, 0, 0, 0, ALLCAT, VLEN, 0 };

	snprintf(pfx, sizeof(pfx), "%d A", stepno);
	scan(pfx, q.name, (uintptr_t)arena, (uintptr_t)arena, (uintptr_t)arena + ARENA, &q, 1);
	q = (struct q){ "span-ww", 0, 0, WRITTEN, 0, WRITTEN, VLEN, 0 };
	scan(pfx, q.name, (uintptr_t)arena, (uintptr_t)arena, (uintptr_t)arena + ARENA, &q, 1);
}

static void battery_all(const char *tag)
{
	int i;

	for (i = 0; i < MAXMAP; i++)
		if (maps[i].live)
			battery(tag, &maps[i]);
	if (!*tag)
		span();
	fflush(stdout);
}

/* ---- mapping management ---- */
static void reserve(char *a, size_t len)
{
	if (mmap(a, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
		 -1, 0) != a)
		die("reserve %p+%zx", (void *)a, len);
}

/*
 * The arena sits at a fixed address, alone in its 1 GiB: whether a hugetlb
 * range has page tables above its PMDs (a PUD entry: hugetlb_walk() finds
 * an empty entry, PAGE_IS_HUGE) or not (a hole, no HUGE) then depends only
 * on what the scenario did, not on where each kernel's mmap layout put the
 * arena and what else shares its 1 GiB (6.12 aligns large anonymous
 * mappings differently from 6.1).
 */
#define ARENA_AT	0x600000000000UL

static void make_arena(void)
{
	char *p = mmap((void *)ARENA_AT, ARENA, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
		       MAP_FIXED_NOREPLACE, -1, 0);

	if (p != (char *)ARENA_AT)
		die("arena at %#lx: %s", ARENA_AT, strerror(errno));
	arena = p;
}

static int free_slot(void)
{
	int used[NSLOT] = { 0 }, i, n = 0, pick;

	for (i = 0; i < MAXMAP; i++)
		if (maps[i].live)
			used[maps[i].slot] = 1;
	for (i = 0; i < NSLOT; i++)
		n += !used[i];
	if (!n)
		return -1;
	pick = (int)rn((size_t)n);
	for (i = 0; i < NSLOT; i++)
		if (!used[i] && pick-- == 0)
			return i;
	return -1;
}

static int backing_fd(int kind, int id)
{
	char path[64];
	int fd = -1;
	off_t size = 2 * SLOT;

	switch (kind) {
	case K_MEMFD:
		fd = memfd_create("conformance", MFD_CLOEXEC);
		break;
	case K_HUGE_MEMFD:
		fd = memfd_create("conformance", MFD_CLOEXEC | MFD_HUGETLB);
		size = 4 * HPS;
		break;
	case K_TMPFS:
	case K_EXT4:
		snprintf(path, sizeof(path), "%s/conformance-%d-%d",
			 kind == K_TMPFS ? "/dev/shm" : "/mnt/disk", (int)getpid(), id);
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd >= 0)
			unlink(path);
		break;
	default:
		return -1;
	}
	if (fd < 0)
		die("backing file for %s", kindname[kind]);
	if (ftruncate(fd, size))
		die("ftruncate %s", kindname[kind]);
	return fd;
}

/* Create mapping id in a free slot; kind < 0: random kind. */
static void map_create(int id, int kind, int shared, size_t off, size_t len)
{
	struct map *m = &maps[id];
	int flags, slot = free_slot(), r;
	size_t i, w;
	char *p;

	if (slot < 0)
		return;
	if (kind < 0) {
		w = rn(14);
		for (kind = 0; w >= kindweight[kind]; kind++)
			w -= kindweight[kind];
		shared = rn(2);
		if (kind == K_SHANON)
			shared = 1;
		if (kind == K_ANON || kind == K_THP)
			shared = 0;
		switch (kind) {
		case K_THP: {
			size_t head = rn(2) ? rn(17) : 0, tail = rn(2) ? rn(65) : 0;

			off = head ? HPS - head * PS : rn(2) * HPS;
			len = head * PS + (1 + rn(2)) * HPS + tail * PS;
			break;
		}
		case K_HUGE_ANON:
		case K_HUGE_MEMFD:
			off = rn(2) * HPS;
			len = (1 + rn(3)) * HPS;
			break;
		default:
			off = rn(512) * PS;
			len = (rn(4) ? 1 + rn(700) : 1 + rn(16)) * PS;
		}
	}
	memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->shared = shared;
	m->slot = slot;
	m->off = off;
	m->len = len;
	m->g = (kind == K_HUGE_ANON || kind == K_HUGE_MEMFD) ? HPS : PS;
	m->fd = backing_fd(kind, id);
	flags = MAP_FIXED | (shared ? MAP_SHARED : MAP_PRIVATE);
	if (m->fd < 0)
		flags |= MAP_ANONYMOUS;
	if (kind == K_HUGE_ANON)
		flags |= MAP_HUGETLB;
	p = mmap(mbase(m), len, PROT_READ | PROT_WRITE, flags, m->fd, 0);
	r = p == MAP_FAILED ? -1 : 0;
	printf("== %d new m%d %s %s len=0x%zx off=0x%zx -> %s\n", stepno, id,
	       kindname[kind], shared ? "shared" : "private", len, off, res(r));
	if (r) {
		if (m->fd >= 0)
			close(m->fd);
		return;
	}
	if (kind == K_THP && madvise(p, len, MADV_HUGEPAGE))
		die("MADV_HUGEPAGE");
	for (i = 0; i < npg(m); i++)
		m->prot[i] = PROT_READ | PROT_WRITE;
	m->live = 1;
}

static int nlive(void)
{
	int i, n = 0;

	for (i = 0; i < MAXMAP; i++)
		n += maps[i].live;
	return n;
}

static struct map *pick_map(void)
{
	int i, k = (int)rn((size_t)nlive());

	for (i = 0; i < MAXMAP; i++)
		if (maps[i].live && k-- == 0)
			return &maps[i];
	return NULL;
}

/* Number of whole aligned 2 MiB blocks in m, the first at byte *first. */
static size_t thp_blocks(const struct map *m, size_t *first)
{
	uintptr_t b = (uintptr_t)mbase(m);

	*first = (b + HPS - 1) / HPS * HPS - b;
	return m->len > *first ? (m->len - *first) / HPS : 0;
}

/* A range of m in 4 KiB pages [*a, *b), aligned to the mapping's granule. */
static void pick_range(const struct map *m, size_t *a, size_t *b)
{
	size_t gp = m->g / PS, n = m->len / m->g, s, l, nb, first;

	if (rn(3) == 0) {
		s = 0;
		l = n;
	} else if (m->kind == K_THP && rn(2) && (nb = thp_blocks(m, &first))) {
		/* one or two whole PMD-aligned 2 MiB blocks */
		s = first / PS + rn(nb) * 512;
		l = min_sz(n - s, 512 * (1 + rn(2)));
	} else {
		s = rn(n);
		l = 1 + rn(rn(2) ? n - s : min_sz(n - s, 8));
	}
	*a = s * gp;
	*b = (s + l) * gp;
}

static void range_text(char *buf, size_t sz, const struct map *m, size_t a, size_t b)
{
	snprintf(buf, sz, "m%d+0x%zx-0x%zx", (int)(m - maps), a * PS, b * PS);
}

/* Read or write one byte in every stride'th page of [a, b) that allows it. */
/* Is the page at addr mapped by a THP's PMD (PAGE_IS_HUGE, not hugetlb)? */
static int pmd_mapped(uintptr_t addr)
{
	struct page_region r;
	struct pm_scan_arg a = {
		.size = sizeof(a), .start = addr & ~(PS - 1),
		.end = (addr & ~(PS - 1)) + PS,
		.vec = (uintptr_t)&r, .vec_len = 1,
		.category_mask = HUGE, .return_mask = HUGE,
	};

	long n = ioctl(pmfd, PAGEMAP_SCAN, &a);

	if (n < 0)
		die("PAGEMAP_SCAN for a THP at %#lx: %s", (unsigned long)addr,
		    strerror(errno));
	return n == 1;
}

/*
 * 6.12 maps the zero-filled subpages of an anonymous THP it splits
 * (MADV_PAGEOUT, reclaim) to the shared zero page; 6.1 keeps them.  That is
 * a memory-management difference, not a PAGEMAP_SCAN one, and the
 * scenarios would diverge from there on.  So no THP the scenario creates
 * keeps a zero-filled subpage: when a write or MADV_COLLAPSE leaves the
 * page at addr in a PMD-mapped THP, every subpage gets a non-zero byte.
 * The THP is not armed (a write to an armed THP splits it, a collapse
 * never takes uffd-wp ptes), so no category changes.
 */
static void fill_thp(const struct map *m, uintptr_t addr)
{
	volatile char *blk = (char *)(addr & ~(HPS - 1));
	uintptr_t b = (uintptr_t)mbase(m);
	size_t j, first;

	if (!is_anon(m) || (uintptr_t)blk < b || (uintptr_t)blk + HPS > b + m->len)
		return;
	/* A THP collapsed in a read-only part cannot be written: left so. */
	first = ((uintptr_t)blk - b) / PS;
	for (j = 0; j < HPS / PS; j++)
		if (!(m->prot[first + j] & PROT_WRITE) ||
		    (m->prot[first + j] & P_UNMAPPED))
			return;
	if (!pmd_mapped(addr))
		return;
	for (j = 0; j < HPS / PS; j++)
		blk[j * PS + PS - 1] = 1;
}

static size_t touch(struct map *m, size_t a, size_t b, int write, size_t stride)
{
	volatile char *base = mbase(m);
	uintptr_t last_blk = 0;
	size_t i, n = 0;

	for (i = a; i < b; i += stride) {
		if (m->prot[i] & P_UNMAPPED)
			continue;
		if (write && (m->prot[i] & PROT_WRITE)) {
			/* never 0: a written page is never zero-filled */
			base[i * PS + (i % 61) * 8] = (char)(i % 255 + 1);
			if (((uintptr_t)base + i * PS) / HPS != last_blk) {
				last_blk = ((uintptr_t)base + i * PS) / HPS;
				fill_thp(m, (uintptr_t)base + i * PS);
			}
			n++;
		} else if (!write && (m->prot[i] & PROT_READ)) {
			(void)base[i * PS + 64];
			n++;
		}
	}
	return n;
}

/* ---- userfaultfd ---- */
static int uffd_get(void)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED,
	};

	if (uffd >= 0)
		return uffd;
	uffd = (int)syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (uffd < 0)
		uffd = (int)syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0)
		die("userfaultfd");
	if (ioctl(uffd, UFFDIO_API, &api))
		die("UFFDIO_API");
	printf("== %d uffd open: wp-async=%d wp-unpopulated=%d\n", stepno,
	       !!(api.features & UFFD_FEATURE_WP_ASYNC),
	       !!(api.features & UFFD_FEATURE_WP_UNPOPULATED));
	return uffd;
}

static int uffd_register(char *a, size_t len, int on, char *out, size_t outsz)
{
	struct uffdio_register reg = {
		.range = { (uintptr_t)a, len }, .mode = UFFDIO_REGISTER_MODE_WP,
	};
	struct uffdio_range rg = { (uintptr_t)a, len };
	int r;

	uffd_get();
	if (on) {
		r = ioctl(uffd, UFFDIO_REGISTER, &reg);
		snprintf(out, outsz, "%s%s", res(r),
			 r ? "" : (reg.ioctls & (1ULL << _UFFDIO_WRITEPROTECT)) ?
			 " wp-ioctl" : " no-wp-ioctl");
	} else {
		r = ioctl(uffd, UFFDIO_UNREGISTER, &rg);
		snprintf(out, outsz, "%s", res(r));
	}
	return r;
}

static int uffd_wp(char *a, size_t len, int on)
{
	struct uffdio_writeprotect wp = {
		.range = { (uintptr_t)a, len }, .mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	uffd_get();
	return ioctl(uffd, UFFDIO_WRITEPROTECT, &wp);
}


static void put(const char *path, const char *val);

/* ---- a second thread, on the other CPU ---- */
/*
 * The main thread runs on CPU 0 (guest_setup()); this thread is pinned to
 * CPU 1 and writes one byte at each address it is handed, then answers.
 * It writes only pages the main thread has just written (no fault that
 * allocates a page on CPU 1: its LRU batch would hold the page back from
 * a later MADV_PAGEOUT, differently on 6.1 and 6.12), so a first write
 * only caches the translation in CPU 1's TLB; arming must then flush that
 * TLB, else a second write goes through the cached writable entry without
 * a fault and is never seen.  The main thread waits for each answer, so
 * the order of events, and the output, is fixed.
 */
#define XMAX	16
static struct {
	int started, req[2], ack[2], n;
	volatile char *at[XMAX];
	char val;
} xc;

static void *xc_main(void *arg)
{
	cpu_set_t c;
	char b;
	int i;

	(void)arg;
	CPU_ZERO(&c);
	CPU_SET(1, &c);
	b = !sched_setaffinity(0, sizeof(c), &c) && sched_getcpu() == 1;
	if (write(xc.ack[1], &b, 1) != 1)
		_exit(4);
	for (;;) {
		if (read(xc.req[0], &b, 1) != 1)
			_exit(4);
		for (i = 0; i < xc.n; i++)
			*xc.at[i] = xc.val;
		b = sched_getcpu() == 1;
		if (write(xc.ack[1], &b, 1) != 1)
			_exit(4);
	}
	return NULL;
}

/* CPU 1 writes val at each of at[0..n), then returns. */
static void xc_write(volatile char *const *at, int n, char val)
{
	pthread_t t;
	char b;
	int i;

	if (!xc.started) {
		if (pipe(xc.req) || pipe(xc.ack))
			die("pipe");
		errno = pthread_create(&t, NULL, xc_main, NULL);
		if (errno)
			die("pthread_create");
		if (read(xc.ack[0], &b, 1) != 1 || !b)
			die("the second thread cannot run on CPU 1");
		xc.started = 1;
	}
	for (i = 0; i < n && i < XMAX; i++)
		xc.at[i] = at[i];
	xc.n = i;
	xc.val = val;
	if (write(xc.req[1], &b, 1) != 1 || read(xc.ack[0], &b, 1) != 1)
		die("second thread");
	if (!b)
		die("the second thread left CPU 1");
}

/* ---- page migration between the two (fake, numa=fake=2) NUMA nodes ---- */
static int two_nodes(void)
{
	return !access("/sys/devices/system/node/node1", F_OK);
}

/* The frame of the page at addr, 0 if not present. */
static uint64_t pfn_of(uintptr_t addr)
{
	uint64_t e;

	if (pread(pmfd, &e, 8, (off_t)(addr / PS * 8)) != 8)
		die("pagemap read");
	return e >> 63 ? e & ((1ULL << 55) - 1) : 0;
}

/*
 * move_pages() of every stride'th 4 KiB page of [from, to) to the node it
 * is not on.  Returns the syscall's result; *present and *moved count the
 * pages present before and those whose frame changed (the guest runs as
 * root: pagemap shows frames), so the output shows that pages really
 * moved without showing any frame number.
 */
static long migrate(uintptr_t from, uintptr_t to, size_t stride, int *present, int *moved)
{
	static void *pages[MAXPG];
	static int nodes[MAXPG], st[MAXPG];
	static uint64_t pfn[MAXPG];
	unsigned long n = 0, i;
	long r;

	for (; from < to && n < MAXPG; from += stride * PS, n++) {
		pages[n] = (void *)from;
		pfn[n] = pfn_of(from);
	}
	*present = *moved = 0;
	if (!n)
		return 0;
	if (syscall(__NR_move_pages, 0, n, pages, NULL, st, 0))
		return -1;
	for (i = 0; i < n; i++)
		nodes[i] = st[i] == 0 ? 1 : 0;
	r = syscall(__NR_move_pages, 0, n, pages, nodes, st, MPOL_MF_MOVE);
	for (i = 0; i < n; i++) {
		uint64_t now = pfn_of((uintptr_t)pages[i]);

		*present += pfn[i] != 0;
		*moved += pfn[i] && now && now != pfn[i];
	}
	return r;
}

/* ---- KSM ---- */
static long ksm_get(const char *knob)
{
	char p[96], buf[32] = "";
	long v = -1;
	FILE *f;

	snprintf(p, sizeof(p), "/sys/kernel/mm/ksm/%s", knob);
	f = fopen(p, "r");
	if (f && fgets(buf, sizeof(buf), f))
		v = strtol(buf, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

static void ksm_set(const char *knob, const char *val, int must)
{
	char p[96];
	int fd;

	snprintf(p, sizeof(p), "/sys/kernel/mm/ksm/%s", knob);
	fd = open(p, O_WRONLY);
	if ((fd < 0 || write(fd, val, strlen(val)) != (ssize_t)strlen(val)) && must)
		die("%s=%s", p, val);
	if (fd >= 0)
		close(fd);
}

/*
 * Let ksmd merge what is mergeable now, then stop it: it runs flat out
 * until it has finished two whole passes that started after the call (the
 * first pass only notes each page's checksum, the second merges the pages
 * still unchanged), then stops so that nothing merges behind the
 * scenario's back.
 */
static void ksm_merge(void)
{
	long first = ksm_get("full_scans");
	int i;

	ksm_set("smart_scan", "0", 0);		/* 6.12: scan every page every pass */
	ksm_set("pages_to_scan", "10000", 1);
	ksm_set("sleep_millisecs", "1", 1);
	ksm_set("run", "1", 1);
	for (i = 0; i < 20000 && ksm_get("full_scans") < first + 3; i++)
		usleep(1000);
	ksm_set("run", "0", 1);
	if (ksm_get("full_scans") < first + 3)
		die("ksmd made no 3 passes in 20 s");
}

/*
 * Which pages of m share a frame: "[0-7,16-23] [8-11]" (page numbers),
 * from the frames pagemap shows.
 */
static void ksm_groups(const struct map *m)
{
	uintptr_t b = (uintptr_t)mbase(m);
	size_t n = npg(m), i, j;
	static uint64_t f[MAXPG];
	static char done[MAXPG];
	int ng = 0;

	for (i = 0; i < n; i++) {
		f[i] = pfn_of(b + i * PS);
		done[i] = 0;
	}
	printf("%d m%d sharing", stepno, (int)(m - maps));
	for (i = 0; i < n; i++) {
		size_t run = SIZE_MAX, cnt = 0;
		const char *sep = "[";

		if (done[i] || !f[i])
			continue;
		for (j = i + 1; j < n; j++)
			cnt += f[j] == f[i];
		if (!cnt)
			continue;
		for (j = i; j <= n; j++) {
			int in = j < n && f[j] == f[i];

			if (in) {
				done[j] = 1;
				if (run == SIZE_MAX)
					run = j;
			} else if (run != SIZE_MAX) {
				if (run == j - 1)
					printf("%s%zu", sep, run);
				else
					printf("%s%zu-%zu", sep, run, j - 1);
				sep = ",";
				run = SIZE_MAX;
			}
		}
		printf("]");
		ng++;
	}
	printf(ng ? "\n" : " none\n");
}

/* ---- operations ---- */
enum op {
	OP_WRITE, OP_READ, OP_DONTNEED, OP_REMOVE, OP_PAGEOUT, OP_COLLAPSE,
	OP_THPADV, OP_MPROTECT, OP_MREMAP, OP_MUNMAP, OP_FORK, OP_WATCH,
	OP_REGISTER, OP_UNREGISTER, OP_WP, OP_UNWP, OP_ARM, OP_ARM_WRITE,
	OP_CLEAR_REFS, OP_CLOSE_UFFD, OP_NEWMAP, OP_FREE, OP_COLD, OP_MLOCK,
	OP_PUNCH, OP_PWRITE, OP_ARM_ALL, OP_XCPU, OP_MIGRATE, NOP
};
static const unsigned opweight[NOP] = {
	[OP_WRITE] = 20, [OP_READ] = 10, [OP_DONTNEED] = 6, [OP_REMOVE] = 3,
	[OP_PAGEOUT] = 6, [OP_COLLAPSE] = 3, [OP_THPADV] = 1, [OP_MPROTECT] = 6,
	[OP_MREMAP] = 3, [OP_MUNMAP] = 2, [OP_FORK] = 4, [OP_WATCH] = 4,
	[OP_REGISTER] = 5, [OP_UNREGISTER] = 2, [OP_WP] = 6, [OP_UNWP] = 2,
	[OP_ARM] = 12, [OP_ARM_WRITE] = 6, [OP_CLEAR_REFS] = 3,
	[OP_CLOSE_UFFD] = 1, [OP_NEWMAP] = 2, [OP_FREE] = 2, [OP_COLD] = 1,
	[OP_MLOCK] = 2, [OP_PUNCH] = 2, [OP_PWRITE] = 1, [OP_ARM_ALL] = 1,
	[OP_XCPU] = 3, [OP_MIGRATE] = 1,	/* sum 120 */
};

static const char *madv_name(int adv)
{
	switch (adv) {
	case MADV_DONTNEED: return "MADV_DONTNEED";
	case MADV_REMOVE: return "MADV_REMOVE";
	case MADV_PAGEOUT: return "MADV_PAGEOUT";
	case MADV_COLLAPSE: return "MADV_COLLAPSE";
	case MADV_HUGEPAGE: return "MADV_HUGEPAGE";
	case MADV_NOHUGEPAGE: return "MADV_NOHUGEPAGE";
	case MADV_FREE: return "MADV_FREE";
	case MADV_COLD: return "MADV_COLD";
	}
	return "MADV_?";
}

static void mark_unmapped(struct map *m, size_t a, size_t b)
{
	size_t i;

	for (i = a; i < b; i++)
		m->prot[i] = P_UNMAPPED;
	for (i = 0; i < npg(m); i++)
		if (!(m->prot[i] & P_UNMAPPED))
			return;
	m->live = 0;
	if (m->fd >= 0)
		close(m->fd);
}

/*
 * Arm by PAGEMAP_SCAN with PM_SCAN_WP_MATCHING on [a, b) of m.  The
 * WP-only loop (vec == NULL) is used only with a filter that selects every
 * page upstream's loop arms (none, or exactly WRITTEN): with any other
 * filter ours honours it and upstream arms everything, a deliberate
 * difference (allow-list (2)) that the probes exercise.
 */
static void arm(struct map *m, size_t a, size_t b, int variant, char *desc, size_t dsz)
{
	uintptr_t base = (uintptr_t)mbase(m);
	char rt[64], pfx[32];
	struct q q;
	static const struct { uint64_t inv, mask, anyof; } filt[] = {
		{ 0, PRESENT, 0 }, { 0, WRITTEN | PRESENT, 0 }, { 0, SWAPPED, 0 },
		{ PRESENT, PRESENT, 0 }, { 0, 0, PRESENT | SWAPPED }, { 0, SOFTDIRTY, 0 },
		{ 0, 0, 0 }, { PFNZERO, PFNZERO, 0 }, { 0, WRITTEN | HUGE, 0 },
	};
	int f;

	range_text(rt, sizeof(rt), m, a, b);
	snprintf(pfx, sizeof(pfx), "%d m%d", stepno, (int)(m - maps));
	switch (variant) {
	case 0:	/* Wine's reset */
		q = (struct q){ "arm:reset", PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC, 0,
				WRITTEN, 0, WRITTEN, 0, 0 };
		if (rn(4) == 0)
			q.max_pages = max_pages_for(m, 1 + rn(64));
		break;
	case 1:	/* WP-only, no filter, silently skipping VMAs without wp-async */
		q = (struct q){ "arm:wp-only", PM_SCAN_WP_MATCHING, 0, 0, 0, 0, 0, 0 };
		break;
	case 2:	/* Wine's get+reset: 256 regions / max_pages, resumed */
		q = (struct q){ "arm:get-reset", PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC, 0,
				WRITTEN, 0, WRITTEN, rn(2) ? 256 : 1 + rn(4), 0 };
		if (rn(2))
			q.max_pages = max_pages_for(m, 1 + rn(100));
		break;
	default: /* generic loop with a filter and a vector */
		f = (int)rn(sizeof(filt) / sizeof(filt[0]));
		q = (struct q){ "arm:generic", PM_SCAN_WP_MATCHING, filt[f].inv, filt[f].mask,
				filt[f].anyof, ALLCAT, rn(2) ? 64 : 1 + rn(3), 0 };
		if (rn(2))
			q.flags |= PM_SCAN_CHECK_WPASYNC;
		if (rn(3) == 0)
			q.max_pages = max_pages_for(m, 1 + rn(100));
		break;
	}
	snprintf(desc, dsz, "%s %s flags=%llx inv=%llx mask=%llx anyof=%llx ret=%llx vec_len=%llu max=%llu",
		 q.name, rt, (unsigned long long)q.flags, (unsigned long long)q.inv,
		 (unsigned long long)q.mask, (unsigned long long)q.anyof,
		 (unsigned long long)q.ret, (unsigned long long)q.vec_len,
		 (unsigned long long)q.max_pages);
	printf("== %d %s\n", stepno, desc);
	scan(pfx, q.name, base, base + a * PS, base + b * PS, &q, 1);
}

static void do_fork(struct map *m, size_t a, size_t b, size_t stride)
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		/* a pagemap fd belongs to the mm that opened it */
		close(pmfd);
		pmfd = open("/proc/self/pagemap", O_RDONLY);
		if (pmfd < 0)
			die("child pagemap");
		printf("%d child wrote %zu pages\n", stepno, touch(m, a, b, 1, stride));
		battery_all("c");
		fflush(stdout);
		_exit(0);
	}
	if (waitpid(pid, &st, 0) != pid)
		die("waitpid");
	printf("%d child status=0x%x\n", stepno, st);
}

static void do_mremap(struct map *m)
{
	int slot = free_slot(), r;
	size_t noff = m->off, nlen = m->len, i, n0 = npg(m);
	char *old = mbase(m), *p, rt[64];

	if (slot < 0)
		return;
	if (rn(2)) {
		if (is_huge(m))
			noff = rn(2) * HPS;
		else if (m->kind == K_THP && rn(2))
			noff = rn(2) * HPS;
		else
			noff = rn(512) * PS;
	}
	switch (rn(4)) {
	case 0:
		nlen = m->len + (1 + rn(m->len / m->g / 2 + 1)) * m->g;
		break;
	case 1:
		if (m->len > m->g)
			nlen = m->len - (1 + rn(m->len / m->g - 1)) * m->g;
		break;
	}
	nlen = min_sz(nlen, (SLOT - noff) / m->g * m->g);
	range_text(rt, sizeof(rt), m, 0, n0);
	p = mremap(old, m->len, nlen, MREMAP_MAYMOVE | MREMAP_FIXED,
		   arena + slot * SLOT + noff);
	r = p == MAP_FAILED ? -1 : 0;
	printf("== %d mremap %s len=0x%zx -> slot off=0x%zx len=0x%zx -> %s\n", stepno, rt,
	       m->len, noff, nlen, res(r));
	if (r)
		return;
	reserve(old, m->len);
	for (i = n0; i < nlen / PS; i++)
		m->prot[i] = m->prot[n0 - 1];
	m->slot = slot;
	m->off = noff;
	m->len = nlen;
}

static void do_op(void)
{
	struct map *m = pick_map();
	size_t a, b, stride = 1 + (rn(2) ? 0 : rn(4)), i, w, n;
	char rt[64], desc[256], out[64];
	int op, r, adv, prot;

	if (!m) {
		map_create(0, -1, 0, 0, 0);
		return;
	}
	w = rn(120);
	for (op = 0; op < NOP && w >= opweight[op]; op++)
		w -= opweight[op];
	if (op >= NOP)
		op = OP_WRITE;
	pick_range(m, &a, &b);
	range_text(rt, sizeof(rt), m, a, b);
	switch (op) {
	case OP_WRITE:
	case OP_READ:
		n = touch(m, a, b, op == OP_WRITE, stride);
		printf("== %d %s %s /%zu -> %zu pages\n", stepno, op == OP_WRITE ? "write" : "read",
		       rt, stride, n);
		break;
	case OP_DONTNEED:
	case OP_REMOVE:
	case OP_PAGEOUT:
	case OP_COLLAPSE:
	case OP_THPADV:
	case OP_FREE:
	case OP_COLD:
		adv = op == OP_DONTNEED ? MADV_DONTNEED : op == OP_REMOVE ? MADV_REMOVE :
		      op == OP_PAGEOUT ? MADV_PAGEOUT : op == OP_COLLAPSE ? MADV_COLLAPSE :
		      op == OP_FREE ? MADV_FREE : op == OP_COLD ? MADV_COLD :
		      rn(2) ? MADV_HUGEPAGE : MADV_NOHUGEPAGE;
		/*
		 * MADV_COLLAPSE of file/shmem memory depends on page cache
		 * details unrelated to this series: anonymous mappings only.
		 */
		if (adv == MADV_COLLAPSE && !is_anon(m)) {
			printf("== %d nop\n", stepno);
			break;
		}
		r = madvise(mbase(m) + a * PS, (b - a) * PS, adv);
		printf("== %d %s %s -> %s\n", stepno, madv_name(adv), rt, res(r));
		if (adv == MADV_COLLAPSE) {
			uintptr_t from = (uintptr_t)mbase(m) + a * PS;
			uintptr_t to = (uintptr_t)mbase(m) + b * PS, at;

			for (at = from & ~(HPS - 1); at < to; at += HPS)
				fill_thp(m, at > from ? at : from);
		}
		break;
	case OP_MPROTECT:
		prot = rn(3) == 0 ? PROT_NONE : rn(2) ? PROT_READ : PROT_READ | PROT_WRITE;
		r = mprotect(mbase(m) + a * PS, (b - a) * PS, prot);
		printf("== %d mprotect %s %s -> %s\n", stepno, rt,
		       prot == PROT_NONE ? "none" : prot == PROT_READ ? "r" : "rw", res(r));
		if (!r)
			for (i = a; i < b; i++)
				if (!(m->prot[i] & P_UNMAPPED))
					m->prot[i] = (unsigned char)prot;
		break;
	case OP_MREMAP:
		do_mremap(m);
		break;
	case OP_MUNMAP:
		if (a == 0 && b == npg(m) && rn(2)) {
			/* keep most mappings alive: unmap a part instead */
			a = b / 2;
			a -= a % (m->g / PS);
			range_text(rt, sizeof(rt), m, a, b);
		}
		r = munmap(mbase(m) + a * PS, (b - a) * PS);
		printf("== %d munmap %s -> %s\n", stepno, rt, res(r));
		if (!r) {
			reserve(mbase(m) + a * PS, (b - a) * PS);
			mark_unmapped(m, a, b);
		}
		break;
	case OP_FORK:
		printf("== %d fork, child writes %s /%zu\n", stepno, rt, stride);
		do_fork(m, a, b, stride);
		break;
	case OP_WATCH:
		/* Wine's set-up of a view: register the whole mapping, protect it */
		uffd_register(mbase(m), m->len, 1, out, sizeof(out));
		r = uffd_wp(mbase(m), m->len, 1);
		printf("== %d watch m%d: register %s, writeprotect %s\n", stepno,
		       (int)(m - maps), out, res(r));
		break;
	case OP_REGISTER:
	case OP_UNREGISTER:
		uffd_register(mbase(m) + a * PS, (b - a) * PS, op == OP_REGISTER, out, sizeof(out));
		printf("== %d %s %s -> %s\n", stepno, op == OP_REGISTER ? "register" : "unregister",
		       rt, out);
		break;
	case OP_WP:
	case OP_UNWP:
		r = uffd_wp(mbase(m) + a * PS, (b - a) * PS, op == OP_WP);
		printf("== %d %s %s -> %s\n", stepno, op == OP_WP ? "writeprotect" : "unprotect",
		       rt, res(r));
		break;
	case OP_ARM:
		arm(m, a, b, (int)rn(4), desc, sizeof(desc));
		break;
	case OP_ARM_WRITE: {
		/*
		 * Write a page (its translation is then cached), arm, write it
		 * again at once: the second write must be seen, which needs
		 * the arming to flush the TLB (a THP armed at PMD level too).
		 */
		size_t p = a + rn(b - a);
		volatile char *c = mbase(m) + p * PS + 128;

		if (!(m->prot[p] & PROT_WRITE) || (m->prot[p] & P_UNMAPPED)) {
			printf("== %d nop\n", stepno);
			break;
		}
		*c = 1;
		fill_thp(m, (uintptr_t)c);
		arm(m, a, b, (int)rn(3) == 0 ? 2 : 0, desc, sizeof(desc));
		*c = 2;
		printf("== %d wrote m%d+0x%zx before and after arming\n", stepno,
		       (int)(m - maps), p * PS);
		break;
	}
	case OP_XCPU: {
		/*
		 * OP_ARM_WRITE with the writes done by the other CPU: the main
		 * thread writes up to 4 pages of the range (faults, if any,
		 * happen here), CPU 1 writes them (its TLB caches them), the
		 * range is armed, CPU 1 writes them again: the arming must
		 * have flushed CPU 1's TLB for those writes to be seen.
		 */
		volatile char *at[4];
		char pages[64] = "";
		size_t p, k, len;
		int nat = 0;

		for (k = 0; k < 4; k++) {
			p = a + rn(b - a);
			if (!(m->prot[p] & PROT_WRITE) || (m->prot[p] & P_UNMAPPED))
				continue;
			at[nat] = mbase(m) + p * PS + 256 + 8 * k;
			*at[nat] = 5;
			fill_thp(m, (uintptr_t)at[nat]);
			len = strlen(pages);
			snprintf(pages + len, sizeof(pages) - len, "%s0x%zx", nat ? "," : "", p * PS);
			nat++;
		}
		if (!nat) {
			printf("== %d nop\n", stepno);
			break;
		}
		xc_write(at, nat, 6);
		arm(m, a, b, (int)rn(3) == 0 ? 2 : 0, desc, sizeof(desc));
		xc_write(at, nat, 7);
		printf("== %d cpu1 wrote m%d+{%s} before and after arming\n", stepno,
		       (int)(m - maps), pages);
		break;
	}
	case OP_MIGRATE: {
		/*
		 * Move the pages of the range to the other node.  What moved
		 * is not printed (6.1 and 6.12 may refuse different pages);
		 * the next battery shows the state each page kept.
		 */
		int pr, mv;

		if (!two_nodes()) {
			printf("== %d nop\n", stepno);
			break;
		}
		migrate((uintptr_t)mbase(m) + a * PS, (uintptr_t)mbase(m) + b * PS,
			m->g / PS, &pr, &mv);
		printf("== %d migrate %s\n", stepno, rt);
		break;
	}
	case OP_CLEAR_REFS: {
		int fd = open("/proc/self/clear_refs", O_WRONLY);

		r = fd < 0 ? -1 : (int)write(fd, "4", 1);
		if (fd >= 0)
			close(fd);
		printf("== %d clear_refs 4 -> %s\n", stepno, res(r < 0 ? -1 : 0));
		break;
	}
	case OP_CLOSE_UFFD:
		printf("== %d close uffd (%s)\n", stepno, uffd >= 0 ? "open" : "none");
		if (uffd >= 0)
			close(uffd);
		uffd = -1;
		break;
	case OP_MLOCK:
		adv = (int)rn(2);	/* 1: lock */
		r = adv ? mlock(mbase(m) + a * PS, (b - a) * PS) :
			  munlock(mbase(m) + a * PS, (b - a) * PS);
		printf("== %d %s %s -> %s\n", stepno, adv ? "mlock" : "munlock", rt, res(r));
		break;
	case OP_PUNCH:
	case OP_PWRITE:
		/*
		 * The backing file changes under the mapping: page i of m is
		 * at file offset i * PS (mapped at 0, moved whole by mremap).
		 */
		if (m->fd < 0) {
			printf("== %d nop\n", stepno);
			break;
		}
		if (op == OP_PUNCH) {
			r = fallocate(m->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				      (off_t)(a * PS), (off_t)((b - a) * PS));
			printf("== %d punch-hole %s -> %s\n", stepno, rt, res(r));
		} else {
			static const char data[PS] = { [0] = 7, [PS / 2] = 7 };

			for (i = a, r = 0; i < b && r >= 0; i += stride)
				r = (int)pwrite(m->fd, data, PS, (off_t)(i * PS));
			printf("== %d pwrite %s /%zu -> %s\n", stepno, rt, stride,
			       res(r < 0 ? -1 : 0));
		}
		break;
	case OP_ARM_ALL: {
		/*
		 * One arming call over the whole arena: several VMAs (of
		 * several kinds, registered or not) and the holes between.
		 */
		struct q q = rn(2) ?
			(struct q){ "arm-all:wp-only", PM_SCAN_WP_MATCHING, 0, 0, 0, 0, 0, 0 } :
			(struct q){ "arm-all:get-reset", PM_SCAN_WP_MATCHING, 0, WRITTEN, 0,
				    WRITTEN, 256, 0 };
		char pfx[32];

		snprintf(pfx, sizeof(pfx), "%d arena", stepno);
		printf("== %d %s\n", stepno, q.name);
		scan(pfx, q.name, (uintptr_t)arena, (uintptr_t)arena,
		     (uintptr_t)arena + ARENA, &q, 1);
		break;
	}
	case OP_NEWMAP:
		for (i = 0; i < MAXMAP; i++)
			if (!maps[i].live)
				break;
		if (i < MAXMAP)
			map_create((int)i, -1, 0, 0, 0);
		else
			printf("== %d nop\n", stepno);
		break;
	}
}

/* ---- units ---- */
static void open_pagemap(void)
{
	pmfd = open("/proc/self/pagemap", O_RDONLY);
	if (pmfd < 0)
		die("/proc/self/pagemap");
}

static void run_seed(uint64_t seed, int steps)
{
	int i, n;

	rng = seed;
	open_pagemap();
	make_arena();
	n = 3 + (int)rn(3);
	for (i = 0; i < n; i++)
		map_create(i, -1, 0, 0, 0);
	/* half the mappings start registered (and some protected) */
	for (i = 0; i < n; i++) {
		char out[64];

		if (!maps[i].live || rn(2))
			continue;
		uffd_register(mbase(&maps[i]), maps[i].len, 1, out, sizeof(out));
		printf("== 0 register m%d -> %s\n", i, out);
		if (rn(2))
			printf("== 0 writeprotect m%d -> %s\n", i,
			       res(uffd_wp(mbase(&maps[i]), maps[i].len, 1)));
	}
	battery_all("");
	for (stepno = 1; stepno <= steps; stepno++) {
		do_op();
		battery_all("");
	}
}

/*
 * Fixed probes of the deliberate differences (tests/conformance/allow-list):
 * each ends right after the differing answer, so nothing cascades.
 */
static void probe_common(int kind, int shared, size_t off, size_t len)
{
	char out[64];

	rng = 1;
	open_pagemap();
	make_arena();
	map_create(0, kind, shared, off, len);
	uffd_register(mbase(&maps[0]), len, 1, out, sizeof(out));
	printf("== 0 register m0 -> %s\n", out);
}

static void probe_short_battery(void)
{
	uintptr_t b = (uintptr_t)mbase(&maps[0]);
	struct q q = { "all", 0, 0, 0, 0, ALLCAT, VLEN, 0 };
	char pfx[32];

	snprintf(pfx, sizeof(pfx), "%d m0", stepno);
	scan(pfx, q.name, b, b, b + maps[0].len, &q, 0);
	pagemap(pfx, &maps[0]);
}

/* "== N arm:get-reset m0+X-Y" and the call: Wine's get+reset of [a, b) bytes */
static void probe_get_reset(size_t a, size_t b)
{
	uintptr_t base = (uintptr_t)mbase(&maps[0]);
	struct q q = { "arm:get-reset", PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC, 0,
		       WRITTEN, 0, WRITTEN, 256, 0 };
	char pfx[32];

	snprintf(pfx, sizeof(pfx), "%d m0", stepno);
	printf("== %d arm:get-reset m0+0x%zx-0x%zx\n", stepno, a, b);
	scan(pfx, q.name, base, base + a, base + b, &q, 1);
}

/*
 * Cross-CPU arming, one mapping kind: three blocks, armed one after the
 * other; before and after each arming CPU 1 writes 4 pages of the block
 * (the main thread wrote every page first).  A block armed without a TLB
 * flush that reaches CPU 1 shows up as a block with no WRITTEN page.
 */
static void probe_xcpu(int kind, int shared, size_t len)
{
	struct map *m = &maps[0];
	char *b;
	size_t blk = len / 3, r, k;
	volatile char *at[4];

	probe_common(kind, shared, 0, len);
	b = mbase(m);
	stepno = 1;
	printf("== 1 write m0 -> %zu pages\n", touch(m, 0, npg(m), 1, 1));
	probe_short_battery();
	for (r = 0; r < 3; r++) {
		stepno = 2 + (int)r;
		for (k = 0; k < 4; k++)
			at[k] = b + r * blk + k * (blk / 4) + (blk / 8 & ~(PS - 1)) + 200;
		xc_write(at, 4, (char)(0x40 + r));
		printf("== %d cpu1 writes 4 pages of block %zu, before and after:\n",
		       stepno, r);
		probe_get_reset(r * blk, (r + 1) * blk);
		xc_write(at, 4, (char)(0x50 + r));
		probe_short_battery();
	}
	stepno = 5;
	probe_get_reset(0, len);
}

/*
 * KSM: pages 0-7 and 16-23 hold one content, 8-11 another, the rest
 * differ; 16-31 are armed before merging.  The merged pages are mapped
 * read-only by KSM; arming them, then writing some (a copy-on-write break)
 * must show exactly the written ones.  unmerge: MADV_UNMERGEABLE of armed
 * merged pages breaks the sharing without a write.  clear_refs first: the
 * soft-dirty bits are then the pages' own (the fill's writes), which a
 * merge must keep.
 */
static void probe_ksm(int unmerge)
{
	struct map *m = &maps[0];
	char *b;
	size_t i;
	int r, fd, bad = 0;
	static const size_t wr[] = { 0, 3, 9, 13, 17 };

	probe_common(K_ANON, 0, 0, 32 * PS);
	b = mbase(m);
	if (access("/sys/kernel/mm/ksm/run", F_OK))
		die("no KSM in this kernel (CONFIG_KSM): the probe would test nothing");
	stepno = 1;
	/* soft-dirty from here on is per page: the fill sets it, merging must keep it */
	fd = open("/proc/self/clear_refs", O_WRONLY);
	if (fd < 0 || write(fd, "4", 1) != 1)
		die("clear_refs 4");
	close(fd);
	for (i = 0; i < 32; i++)
		memset(b + i * PS, i < 8 || (i >= 16 && i < 24) ? 0x5a :
		       i < 12 ? 0xa5 : (int)(i + 1), PS);
	printf("== 1 clear_refs 4, fill m0: 0-7,16-23 same, 8-11 same, others unique\n");
	probe_short_battery();
	stepno = 2;
	probe_get_reset(16 * PS, 32 * PS);
	stepno = 3;
	r = madvise(b, m->len, MADV_MERGEABLE);
	ksm_merge();
	printf("== 3 MADV_MERGEABLE m0 -> %s, ksmd ran\n", res(r));
	ksm_groups(m);
	probe_short_battery();
	stepno = 4;
	probe_get_reset(0, m->len);
	probe_short_battery();
	stepno = 5;
	if (unmerge) {
		r = madvise(b, 12 * PS, MADV_UNMERGEABLE);
		printf("== 5 MADV_UNMERGEABLE m0+0x0-0xc000 -> %s\n", res(r));
		ksm_groups(m);
		probe_short_battery();
		return;
	}
	for (i = 0; i < sizeof(wr) / sizeof(wr[0]); i++)
		b[wr[i] * PS + 100] = 0x77;
	printf("== 5 write m0 pages 0,3,9,13,17\n");
	ksm_groups(m);
	probe_short_battery();
	stepno = 6;
	probe_get_reset(0, m->len);
	for (i = 0; i < 32; i++) {
		unsigned char want = i < 8 || (i >= 16 && i < 24) ? 0x5a : i < 12 ? 0xa5 : i + 1;
		int w = i == 0 || i == 3 || i == 9 || i == 13 || i == 17;

		bad += (unsigned char)b[i * PS] != want || (unsigned char)b[i * PS + PS - 1] != want ||
		       (unsigned char)b[i * PS + 100] != (w ? 0x77 : want);
	}
	printf("6 m0 contents %s\n", bad ? "WRONG" : "ok");
}

/*
 * Migration (two fake NUMA nodes): written, armed and armed-then-written
 * pages of each kind moved to the other node keep their state; a write to
 * an armed page after the move is seen.
 */
static void probe_migrate(int kind, int shared, size_t len)
{
	struct map *m = &maps[0];
	char *b;
	size_t half = len / 2, g, w2;
	int pr, mv;
	long r;

	probe_common(kind, shared, 0, len);
	b = mbase(m);
	g = m->g / PS;
	if (!two_nodes())
		die("one NUMA node (CONFIG_NUMA_EMU, numa=fake=2): the probe would test nothing");
	stepno = 1;
	printf("== 1 write m0 -> %zu pages\n", touch(m, 0, npg(m), 1, 1));
	probe_short_battery();
	stepno = 2;
	/* arm the first half, write its first page (granule) again */
	probe_get_reset(0, half);
	b[100] = 9;
	printf("== 2 write m0+0x0\n");
	probe_short_battery();
	stepno = 3;
	r = migrate((uintptr_t)b, (uintptr_t)b + len, kind == K_THP ? 512 : g, &pr, &mv);
	printf("== 3 migrate m0 -> %s, %d of %d pages moved\n", r < 0 ? ename(errno) : "0",
	       mv, pr);
	probe_short_battery();
	stepno = 4;
	w2 = half - m->g;	/* an armed page (granule) not written yet */
	b[w2 + 100] = 9;
	printf("== 4 write m0+0x%zx\n", w2);
	probe_short_battery();
	stepno = 5;
	r = migrate((uintptr_t)b, (uintptr_t)b + len, kind == K_THP ? 512 : g, &pr, &mv);
	printf("== 5 migrate m0 back -> %s, %d of %d pages moved\n", r < 0 ? ename(errno) : "0",
	       mv, pr);
	probe_get_reset(0, len);
	/* everything armed (a THP's second half at PMD level), moved again */
	stepno = 6;
	r = migrate((uintptr_t)b, (uintptr_t)b + len, kind == K_THP ? 512 : g, &pr, &mv);
	printf("== 6 migrate m0 -> %s, %d of %d pages moved\n", r < 0 ? ename(errno) : "0",
	       mv, pr);
	probe_short_battery();
	stepno = 7;
	b[len - m->g + 100] = 9;
	printf("== 7 write m0+0x%zx\n", len - m->g);
	probe_short_battery();
}

/*
 * A shmem THP (shmem_enabled=always), PMD-mapped, armed over ranges that
 * are not 2 MiB aligned; writes inside and outside the armed part, by
 * both CPUs.
 */
static void probe_shmem_thp(void)
{
	static const char *const knob = "/sys/kernel/mm/transparent_hugepage/shmem_enabled";
	struct map *m = &maps[0];
	volatile char *at[2];
	char *b;

	put(knob, "always");
	probe_common(K_MEMFD, 1, 0, 3 * HPS);
	b = mbase(m);
	stepno = 1;
	printf("== 1 write m0 -> %zu pages\n", touch(m, 0, npg(m), 1, 1));
	probe_short_battery();

	stepno = 2;
	at[0] = b + 0x6000 + 300;
	at[1] = b + 0x100000 + 300;
	xc_write(at, 2, 0x21);
	probe_get_reset(0x5000, 0x9000);
	xc_write(at, 2, 0x22);
	b[0x7000 + 300] = 0x23;
	b[0x20000 + 300] = 0x23;
	printf("== 2 cpu1 wrote m0+0x6000,0x100000 before and after; cpu0 wrote m0+0x7000,0x20000\n");
	probe_short_battery();

	stepno = 3;
	at[0] = b + 0x201000 + 300;
	at[1] = b + 0x300000 + 300;
	xc_write(at, 2, 0x31);
	probe_get_reset(0x1fe000, 0x203000);
	xc_write(at, 2, 0x32);
	b[0x1ff000 + 300] = 0x33;
	b[0x205000 + 300] = 0x33;
	printf("== 3 cpu1 wrote m0+0x201000,0x300000 before and after; cpu0 wrote m0+0x1ff000,0x205000\n");
	probe_short_battery();

	/* the third THP is still PMD-mapped: armed whole, at PMD level */
	stepno = 4;
	at[0] = b + 0x403000 + 300;
	xc_write(at, 1, 0x41);
	probe_get_reset(0, m->len);
	xc_write(at, 1, 0x42);
	b[0x8000 + 300] = 0x43;
	b[0x5ff000 + 300] = 0x43;
	printf("== 4 cpu1 wrote m0+0x403000 before and after; cpu0 wrote m0+0x8000,0x5ff000\n");
	probe_short_battery();
	stepno = 5;
	probe_get_reset(0, m->len);
	put(knob, "never");
}

static int run_probe(const char *name)
{
	struct map *m = &maps[0];
	uintptr_t b;
	struct q q;
	char pfx[32];

	if (!strcmp(name, "hugetlb-partial-start") || !strcmp(name, "hugetlb-max-pages")) {
		/* (1) a hugetlb page only partly inside the walk under WP_MATCHING */
		probe_common(K_HUGE_ANON, 0, 0, 3 * HPS);
		b = (uintptr_t)mbase(m);
		stepno = 1;
		printf("== 1 write m0 -> %zu pages\n", touch(m, 0, npg(m), 1, 512));
		probe_short_battery();
		stepno = 2;
		snprintf(pfx, sizeof(pfx), "2 m0");
		q = (struct q){ "arm:get-reset", PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC, 0,
				WRITTEN, 0, WRITTEN, 16, 0 };
		if (!strcmp(name, "hugetlb-partial-start")) {
			printf("== 2 arm m0+0x100000-0x600000\n");
			scan(pfx, q.name, b, b + HPS / 2, b + 3 * HPS, &q, 0);
		} else {
			q.max_pages = 100;
			printf("== 2 arm m0 max_pages=100\n");
			scan(pfx, q.name, b, b, b + 3 * HPS, &q, 0);
		}
		probe_short_battery();
		return 0;
	}
	if (!strcmp(name, "wp-only-filter")) {
		/* (2) the WP-only loop (vec == NULL) with a category filter */
		probe_common(K_ANON, 0, 0, 64 * PS);
		b = (uintptr_t)mbase(m);
		stepno = 1;
		printf("== 1 write m0+0x0-0x8000 -> %zu pages\n", touch(m, 0, 8, 1, 1));
		probe_short_battery();
		stepno = 2;
		snprintf(pfx, sizeof(pfx), "2 m0");
		q = (struct q){ "arm:wp-only-present", PM_SCAN_WP_MATCHING, 0, PRESENT, 0, 0, 0, 0 };
		printf("== 2 arm m0 vec=NULL mask=present\n");
		scan(pfx, q.name, b, b, b + m->len, &q, 0);
		probe_short_battery();
		return 0;
	}
	if (!strcmp(name, "bounce-refill")) {
		/*
		 * More regions than one 512-entry kernel bounce buffer, fewer
		 * than vec_len: the walk is resumed inside the ioctl and
		 * completes.  The random scenarios never ask for more than
		 * VLEN (512) regions per call.
		 */
		probe_common(K_ANON, 0, 0, 600 * PS);
		b = (uintptr_t)mbase(m);
		stepno = 1;
		printf("== 1 write m0 /2 -> %zu pages\n", touch(m, 0, npg(m), 1, 2));
		snprintf(pfx, sizeof(pfx), "1 m0");
		q = (struct q){ "all/vec1024", 0, 0, 0, 0, ALLCAT, 1024, 0 };
		scan(pfx, q.name, b, b, b + m->len, &q, 0);
		return 0;
	}
	if (!strcmp(name, "xcpu-anon"))
		probe_xcpu(K_ANON, 0, 48 * PS);
	else if (!strcmp(name, "xcpu-thp"))
		probe_xcpu(K_THP, 0, 3 * HPS);
	else if (!strcmp(name, "xcpu-shmem"))
		probe_xcpu(K_MEMFD, 1, 48 * PS);
	else if (!strcmp(name, "xcpu-hugetlb"))
		probe_xcpu(K_HUGE_ANON, 0, 3 * HPS);
	else if (!strcmp(name, "ksm"))
		probe_ksm(0);
	else if (!strcmp(name, "ksm-unmerge"))
		probe_ksm(1);
	else if (!strcmp(name, "migrate-anon"))
		probe_migrate(K_ANON, 0, 32 * PS);
	else if (!strcmp(name, "migrate-thp"))
		probe_migrate(K_THP, 0, 2 * HPS);
	else if (!strcmp(name, "migrate-shmem"))
		probe_migrate(K_MEMFD, 1, 32 * PS);
	else if (!strcmp(name, "migrate-hugetlb"))
		probe_migrate(K_HUGE_ANON, 0, 2 * HPS);
	else if (!strcmp(name, "shmem-thp-partial"))
		probe_shmem_thp();
	else
		return -1;
	return 0;
}

static const char *const probes[] = {
	"hugetlb-partial-start", "hugetlb-max-pages", "wp-only-filter", "bounce-refill",
	"xcpu-anon", "xcpu-thp", "xcpu-shmem", "xcpu-hugetlb", "shmem-thp-partial",
	"ksm", "ksm-unmerge", "migrate-anon", "migrate-thp", "migrate-shmem", "migrate-hugetlb",
};

/* ---- guest set-up ---- */
static void put(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);

	if (fd < 0 || write(fd, val, strlen(val)) != (ssize_t)strlen(val)) {
		fprintf(stderr, "conformance: cannot write %s to %s: %s\n", val, path,
			strerror(errno));
		exit(2);
	}
	close(fd);
}

/*
 * Make both kernels' answers depend only on what the program does:
 * - khugepaged: it would collapse THPs behind our back at times we do not
 *   control.  Its first pass over a new mm is immediate, so besides a
 *   day-long sleep it may scan only one PMD and only collapse fully
 *   populated, unshared, unswapped ones (which never exist that early).
 * - fault-around maps neighbouring page-cache pages on a read fault, so
 *   file PRESENT would depend on page cache (and readahead) state: off.
 * - periodic writeback would clean and write-protect shared file pages at
 *   random times: off (nothing here syncs).  So are ext4's periodic
 *   journal commits (commit=86400 on /mnt/disk): in data=ordered mode a
 *   commit writes out the file's dirty pages and holds their locks
 *   meanwhile, and MADV_PAGEOUT skips a page it cannot lock (once in CI,
 *   seed 10 of the debug guest kept 39 pages of an ext4 mapping that
 *   upstream's guest paged out; three replays agreed: a suspected cause,
 *   not a reproduced one).
 * - proactive compaction would migrate pages (transient migration entries).
 * - one CPU: MADV_PAGEOUT isolates only pages that reached the LRU, and
 *   lru_add_drain() drains the local CPU's batches only.  The second
 *   thread (CPU 1, see xc_write()) never faults a page in.
 * - shmem THPs off (shmem_enabled=never), but in probe shmem-thp-partial;
 *   ksmd stopped (run=0) but inside ksm_merge().
 */
static void guest_setup(void)
{
	static const char *const thp = "/sys/kernel/mm/transparent_hugepage/";
	char p[128];
	cpu_set_t cpus;

	tap_guest_only();
	snprintf(p, sizeof(p), "%skhugepaged/pages_to_scan", thp);
	put(p, "8");
	snprintf(p, sizeof(p), "%skhugepaged/max_ptes_none", thp);
	put(p, "0");
	snprintf(p, sizeof(p), "%skhugepaged/max_ptes_swap", thp);
	put(p, "0");
	snprintf(p, sizeof(p), "%skhugepaged/max_ptes_shared", thp);
	put(p, "0");
	snprintf(p, sizeof(p), "%skhugepaged/scan_sleep_millisecs", thp);
	put(p, "86400000");
	snprintf(p, sizeof(p), "%skhugepaged/alloc_sleep_millisecs", thp);
	put(p, "86400000");
	snprintf(p, sizeof(p), "%senabled", thp);
	put(p, "madvise");
	snprintf(p, sizeof(p), "%suse_zero_page", thp);
	put(p, "1");
	/* probe shmem-thp-partial alone turns it on */
	snprintf(p, sizeof(p), "%sshmem_enabled", thp);
	put(p, "never");
	if (!access("/sys/kernel/mm/ksm/run", F_OK))
		put("/sys/kernel/mm/ksm/run", "0");
	put("/sys/kernel/debug/fault_around_bytes", "4096");
	put("/proc/sys/vm/dirty_writeback_centisecs", "0");
	/* syscall(): glibc's <sys/mount.h> clashes with <linux/fs.h> */
	if (syscall(SYS_mount, NULL, "/mnt/disk", NULL, MS_REMOUNT, "commit=86400"))
		die("remount /mnt/disk commit=86400");
	if (!access("/proc/sys/vm/compaction_proactiveness", F_OK))
		put("/proc/sys/vm/compaction_proactiveness", "0");
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	if (sched_setaffinity(0, sizeof(cpus), &cpus))
		die("sched_setaffinity");
}

static int run_unit(const char *u, int steps)
{
	pid_t pid;
	int st;

	printf("#### unit %s\n", u);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		if (!strncmp(u, "probe:", 6)) {
			if (run_probe(u + 6)) {
				printf("FATAL: unknown probe %s\n", u + 6);
				fflush(stdout);
				_exit(2);
			}
		} else {
			run_seed(strtoull(u, NULL, 0), steps);
		}
		fflush(stdout);
		_exit(0);
	}
	if (waitpid(pid, &st, 0) != pid)
		die("waitpid");
	printf("#### end %s status=0x%x\n", u, st);
	fflush(stdout);
	return st != 0;
}

int main(int argc, char **argv)
{
	int steps = 20, i, bad = 0, opt;
	char u[64];

	while ((opt = getopt(argc, argv, "n:l")) != -1) {
		switch (opt) {
		case 'n':
			steps = atoi(optarg);
			break;
		case 'l':
			for (i = 0; i < (int)(sizeof(probes) / sizeof(probes[0])); i++)
				printf("probe:%s\n", probes[i]);
			return 0;
		default:
			fprintf(stderr, "usage: %s [-n STEPS] SEED|FIRST-LAST|probe:NAME...\n",
				argv[0]);
			return 2;
		}
	}
	guest_setup();
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	for (i = optind; i < argc; i++) {
		unsigned long long f, l;
		char *dash = strchr(argv[i], '-');

		if (dash && strncmp(argv[i], "probe:", 6)) {
			f = strtoull(argv[i], NULL, 0);
			l = strtoull(dash + 1, NULL, 0);
			for (; f <= l; f++) {
				snprintf(u, sizeof(u), "%llu", f);
				bad |= run_unit(u, steps);
			}
		} else {
			bad |= run_unit(argv[i], steps);
		}
	}
	return bad;
}
