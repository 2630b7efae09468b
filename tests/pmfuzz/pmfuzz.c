// SPDX-License-Identifier: MIT
/*
 * pmfuzz: a seeded random fuzzer of PAGEMAP_SCAN (the ioctl on
 * /proc/PID/pagemap) and of the userfaultfd ioctls it works with
 * (UFFDIO_API, REGISTER, UNREGISTER, WRITEPROTECT, CONTINUE with
 * MODE_WP, ZEROPAGE, COPY, WAKE), with random and hostile arguments:
 * every 64-bit field, ranges at the edges of the address space and of
 * VMAs, output buffers that are read-only, unmapped, the scanned memory
 * or the argument itself, the struct in unreadable or read-only memory,
 * on our own pagemap and on a forked child's (live and dead), while
 * disruptor threads madvise, mprotect, mremap, munmap + mmap and fork
 * over mappings of every kind (anon, THP, shmem, memfd, ext4 file,
 * hugetlb private and shared).
 *
 * It asserts what the interface documents (pagemap.rst, userfaultfd
 * ioctl man page), not only that nothing crashed:
 *  - every errno is in the documented set of its ioctl;
 *  - argument errors are exactly the errno upstream's argument checks
 *    give (size != sizeof: EINVAL whether smaller or larger; unknown flag
 *    or category bit: EINVAL; unaligned start: EINVAL; end < start or a
 *    range or vec outside the user address space: EFAULT; vec 0 with a
 *    vec_len: EINVAL; a dead process: ESRCH; another command: ENOTTY),
 *    and then walk_end is not written;
 *  - a PAGEMAP_SCAN answer is well-formed: ret <= vec_len (0 without
 *    vec), walk_end page aligned in [start, ALIGN(end)], regions sorted,
 *    disjoint, merged, non-empty, page aligned, inside [start, walk_end),
 *    never over a hole, categories within return_mask and agreeing with
 *    the filter, at most max_pages pages, an early stop only for a full
 *    vec, max_pages or a hugetlb page under PM_SCAN_WP_MATCHING;
 *  - the kernel writes nothing outside vec[0, ret) (canary) and nothing
 *    in the argument but walk_end;
 *  - categories fit the memory kind (no FILE in private anon, HUGE in
 *    hugetlb, ...) and, without disruptors, agree page by page with
 *    /proc/PID/pagemap read before the call; pages reported written by
 *    a PM_SCAN_WP_MATCHING call are write-protected after it;
 *  - without disruptors, complete: every page pagemap showed written
 *    (present or swapped, not uffd-wp) before walk_end that matches the
 *    filter was reported, and PM_SCAN_WP_MATCHING protected no written
 *    page it did not report; a PM_SCAN_WP_MATCHING call that failed
 *    part-way (EFAULT on vec, EPERM for a VMA not WP-async) armed the
 *    matching pages before where it stopped and nothing after, and a
 *    plain get then agrees with pagemap;
 *  - UFFDIO_* output fields (api/features/ioctls, copy/zeropage/mapped)
 *    are what the kernel documents.
 *
 *   pmfuzz [--seed N] [--calls N] [--seconds S] [--no-disrupt]
 *          [--threads N] [--hang-seconds S] [--trace] [--trace-state]
 *          [--diff] [--quiet]
 *
 * --calls bounds the number of fuzzed ioctls (default 100000 unless
 * --seconds is given; with both, whichever comes first).  --no-disrupt
 * runs the main thread alone: with the same seed, the same calls on the
 * same memory, so the per-errno counts and the digest can be compared
 * between kernels; --trace prints every call for that, --trace-state also a
 * hash of the arena's pagemap bits after each call, and --diff leaves out
 * the calls where our kernel deliberately differs from upstream 6.12 (a
 * register without WP of a protected range, a filter on a write-protect
 * only scan) and where 6.1 itself does (UFFDIO_API features 6.12 added,
 * UFFDIO_COPY's check of src).  A call or a
 * disruptor operation that has not returned after --hang-seconds (default
 * 60) is a hang: it fails with the last events of every thread (the
 * sequence that led there), as the kernel may never return.  TAP output; the
 * seed and the replay command come first, every failure names its call.
 * Runs only in the memwatch test guest (kernel command line
 * memwatch.guest=1): it needs the hugetlb pool and /mnt/disk, and it
 * disables address-space randomisation for itself (a re-exec) so that
 * a replay lays out the same memory.
 */
#define _GNU_SOURCE
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mw-test.h"

#define PSZ		4096ULL
#define HPSZ		(2ULL << 20)
#define RSZ		((uint64_t)sizeof(struct page_region))
#define PM_CATS		0xffULL		/* PAGE_IS_WPALLOWED .. SOFT_DIRTY */
#define PM_FLAGS	((uint64_t)(PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC))
#define KADDR64		0xffff888000000000ULL
#define CANARY		0xa5
#define SENTINEL	0x5a5a5a5a5a5a5a5aULL
#define NERR		136
#define ORACLE_MAX	1024		/* pages of pagemap read per call */
#define NPRINT		8		/* failures printed per check */
#define LOG_N		256		/* events the watchdog prints */

/*
 * Fixed addresses, far from anything the C library maps, so that a
 * replay (and the other kernel) sees the same layout: the arena holds
 * the fuzzed mappings, ctrl the argument and output buffers.
 */
#if UINTPTR_MAX == 0xffffffffu
#define ARENA		0x20000000ULL
#define CTRL_BASE		0x30000000ULL
#define KPTR		0xfffff000ULL	/* an ioctl argument above user space */
#else
#define ARENA		0x100000000000ULL
#define CTRL_BASE		0x110000000000ULL
#define KPTR		KADDR64
#endif

/*
 * ctrl: page 0 read-write (arguments), 1 read-only, 2 a hole, then the
 * canary buffer for vec, a read-only page after it and a hole.
 */
#define CANPG		16
#define P_ARG		0
#define P_RO		1
#define P_HOLE		2
#define P_CAN		3
#define P_CANRO		(P_CAN + CANPG)
#define P_END		(P_CANRO + 1)
#define CP(n)		(CTRL_BASE + (uint64_t)(n) * PSZ)
#define CAN_BYTES	((uint64_t)CANPG * PSZ)

enum kind { K_ANON, K_THP, K_SHMEM, K_MEMFD, K_EXT4, K_HUGE_PRIV,
	    K_HUGE_SHARED, K_NKINDS };

static const struct {
	const char *name;
	uint64_t len;
	bool shared, huge;
} kinds[K_NKINDS] = {
	[K_ANON]	= { "anon",		1ULL << 20, false, false },
	[K_THP]		= { "thp",		2 * HPSZ,   false, false },
	[K_SHMEM]	= { "shmem",		512 << 10,  true,  false },
	[K_MEMFD]	= { "memfd",		512 << 10,  true,  false },
	[K_EXT4]	= { "ext4-file",	512 << 10,  true,  false },
	[K_HUGE_PRIV]	= { "hugetlb-private",	2 * HPSZ,   false, true },
	[K_HUGE_SHARED]	= { "hugetlb-shared",	2 * HPSZ,   true,  true },
};

/*
 * A mapping of one kind.  It owns the reservation [res, res + 2 * len):
 * the mapping is in one half (base), a disruptor's mremap moves it to the
 * other; slots are 2 MiB apart, so that holes separate them.
 */
struct slot {
	enum kind kind;
	uint64_t res, len;
	_Atomic uintptr_t base;
	int fd;
	pthread_mutex_t mu;		/* disruptors only */
};

enum op {
	OP_SCAN, OP_SCAN_CHILD, OP_SCAN_DEAD, OP_SCAN_BADCMD, OP_SCAN_BADFD,
	OP_UFFD_CREATE, OP_API, OP_API_NEW, OP_REGISTER, OP_UNREGISTER,
	OP_WP, OP_CONTINUE, OP_ZEROPAGE, OP_COPY, OP_WAKE, OP_UFFD_BADCMD,
	OP_N
};

static const char *const op_name[OP_N] = {
	"scan", "scan-child", "scan-dead", "scan-badcmd", "scan-badfd",
	"uffd-create", "uffdio-api", "uffdio-api-newer", "uffdio-register",
	"uffdio-unregister", "uffdio-writeprotect", "uffdio-continue",
	"uffdio-zeropage", "uffdio-copy", "uffdio-wake", "uffd-badcmd",
};

#define EB(e)	(1ULL << (e))
#define E_FILL	(EB(EINVAL) | EB(EFAULT) | EB(ENOENT) | EB(EEXIST) |	\
		 EB(EAGAIN) | EB(ENOMEM) | EB(ESRCH) | EB(ENOSPC))
/* The documented errno of each ioctl (pagemap.rst, ioctl_userfaultfd(2)). */
static const uint64_t op_errs[OP_N] = {
	[OP_SCAN]	= EB(EINVAL) | EB(EFAULT) | EB(ENOMEM) | EB(EPERM) |
			  EB(EINTR),
	[OP_SCAN_CHILD]	= EB(EINVAL) | EB(EFAULT) | EB(ENOMEM) | EB(EPERM) |
			  EB(EINTR),
	[OP_SCAN_DEAD]	= EB(ESRCH),
	[OP_SCAN_BADCMD] = EB(ENOTTY),
	[OP_SCAN_BADFD]	= EB(ENOTTY),
	[OP_UFFD_CREATE] = EB(EINVAL) | EB(EPERM) | EB(ENOMEM) | EB(EMFILE) |
			  EB(ENFILE),
	[OP_API]	= EB(EINVAL) | EB(EFAULT) | EB(EPERM),
	[OP_API_NEW]	= EB(EINVAL) | EB(EFAULT) | EB(EPERM),
	[OP_REGISTER]	= EB(EINVAL) | EB(EFAULT) | EB(EPERM) | EB(EBUSY) |
			  EB(ENOMEM),
	[OP_UNREGISTER]	= EB(EINVAL) | EB(EFAULT) | EB(ENOMEM),
	[OP_WP]		= EB(EINVAL) | EB(EFAULT) | EB(ENOENT) | EB(EAGAIN) |
			  EB(ENOMEM) | EB(ESRCH),
	[OP_CONTINUE]	= E_FILL,
	[OP_ZEROPAGE]	= E_FILL,
	[OP_COPY]	= E_FILL,
	[OP_WAKE]	= EB(EINVAL) | EB(EFAULT),
	[OP_UFFD_BADCMD] = EB(EINVAL),
};

enum chk { C_ERRNO, C_PREDICT, C_RESULT, C_MEMORY, C_CATS, C_ORACLE,
	   C_UFFD_OUT, C_COMPLETE, C_ARMERR, C_N };

static const char *const chk_name[C_N] = {
	"every errno is in the documented set of its ioctl",
	"argument errors give exactly the documented errno",
	"PAGEMAP_SCAN answers are well-formed",
	"nothing written outside vec[0, ret) and walk_end",
	"categories agree with the filter and the memory kind",
	"categories agree with /proc/PID/pagemap, written pages re-protected",
	"UFFDIO_* output fields are consistent",
	"every written page that matches is reported, none armed unreported",
	"a failed PM_SCAN_WP_MATCHING arms just the pages before its stop",
};

/* The checks that need pagemap as an oracle: --no-disrupt only. */
static bool oracle_chk(enum chk c)
{
	return c == C_ORACLE || c == C_COMPLETE || c == C_ARMERR;
}

/* Where an ioctl's argument struct is put (ctrl pages). */
enum argk { A_RW, A_RO, A_CROSS_RO, A_CROSS_HOLE, A_HOLE, A_NULL, A_KERNEL };

/* Where PAGEMAP_SCAN's vec points. */
enum veck { V_CANARY, V_NULL, V_RO, V_HOLE, V_CROSS, V_KERNEL, V_TOP,
	    V_ARENA, V_ARG };

enum target { T_SELF, T_CHILD, T_DEAD };

enum dop { D_DONTNEED, D_PAGEOUT, D_COLLAPSE, D_MPROTECT, D_MREMAP,
	   D_REMAP, D_POPULATE, D_FORK, D_N };

static const char *const dop_name[D_N] = {
	"dontneed", "pageout", "collapse", "mprotect", "mremap",
	"munmap+mmap", "populate-write", "fork",
};

struct fz {
	/* options */
	uint64_t seed, max_calls;
	unsigned int seconds, nthreads;
	bool no_disrupt, trace, trace_state, diff, quiet;
	const char *argv0;
	/* state */
	uint64_t rng;
	uint64_t tsm;			/* access_ok() limit, TASK_SIZE_MAX */
	uint64_t uffd_ts;		/* mm->task_size, validate_range() */
	uint64_t arena_end;
	uint64_t zero_pfn;		/* 0: unknown */
	struct slot slot[K_NKINDS];
	int pm_self, pm_child, pm_dead, maps_fd;
	pid_t child;
	int child_pipe;
	int uffd_a, uffd_s, uffd_u;	/* async WP, SIGBUS, uninitialised */
	uint64_t *pm_pre, *pm_post;	/* oracle buffers */
	uint8_t *pm_rep;		/* pages reported, of pm_pre's */
	struct page_region *fup;	/* the get after a failed arming */
	uint8_t canary_page[PSZ];
	char desc[1024];		/* the current call, for failures */
	/* results */
	uint64_t calls, touches, touch_faults, clear_refs;
	uint64_t outcome[OP_N][NERR];
	uint64_t checks[C_N], fails[C_N];
	uint64_t oracle_pages, oracle_races, wp_checked;
	uint64_t cmpl_pages, cmpl_races, cmpl_probes, armerr_calls;
	uint64_t armerr_armed, armerr_kept;
	uint64_t digest;
	/* disruptors */
	atomic_bool stop;
	_Atomic unsigned long dops[D_N], dfail[D_N];
	/* the watchdog: what each thread does since when, the last events */
	_Atomic uint64_t busy_since[1 + 16];	/* ns, 0: between ops */
	char busy_what[1 + 16][160];
	pthread_mutex_t log_mu;
	struct { uint64_t t; int tid; char what[152]; } log[LOG_N];
	uint64_t log_next;
	unsigned int hang_s;
	atomic_bool wd_stop;
};

struct disruptor {
	struct fz *fz;
	uint64_t rng;
	pthread_t th;
	int tid;
};

static void mix(struct fz *fz, uint64_t v)
{
	uint64_t s = fz->digest ^ v;

	fz->digest = mw_rnd(&s);
}

/*
 * The event log: thread tid (0 main, 1.. disruptors) starts an operation
 * (begin) and finishes it (end).  A hang is an operation that never
 * ends; the watchdog then prints the log, which holds the last LOG_N
 * events of every thread, so that the sequence that led to it is known
 * even when the kernel never returns.
 */
static void log_event(struct fz *fz, int tid, const char *fmt, va_list ap)
{
	uint64_t t = mw_now_ns();

	pthread_mutex_lock(&fz->log_mu);
	fz->log[fz->log_next % LOG_N].t = t;
	fz->log[fz->log_next % LOG_N].tid = tid;
	vsnprintf(fz->log[fz->log_next % LOG_N].what,
		  sizeof(fz->log[0].what), fmt, ap);
	fz->log_next++;
	pthread_mutex_unlock(&fz->log_mu);
}

__attribute__((format(printf, 3, 4)))
static void begin(struct fz *fz, int tid, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fz->busy_what[tid], sizeof(fz->busy_what[tid]), fmt, ap);
	va_end(ap);
	va_start(ap, fmt);
	log_event(fz, tid, fmt, ap);
	va_end(ap);
	atomic_store(&fz->busy_since[tid], mw_now_ns());
}

__attribute__((format(printf, 3, 4)))
static void end(struct fz *fz, int tid, const char *fmt, ...)
{
	va_list ap;

	atomic_store(&fz->busy_since[tid], 0);
	va_start(ap, fmt);
	log_event(fz, tid, fmt, ap);
	va_end(ap);
}

static const char *errname(int e, char *buf, size_t n)
{
	static const struct { int e; const char *s; } t[] = {
		{ 0, "ok" }, { EPERM, "EPERM" }, { ENOENT, "ENOENT" },
		{ ESRCH, "ESRCH" }, { EINTR, "EINTR" }, { EAGAIN, "EAGAIN" },
		{ ENOMEM, "ENOMEM" }, { EFAULT, "EFAULT" }, { EBUSY, "EBUSY" },
		{ EEXIST, "EEXIST" }, { EINVAL, "EINVAL" }, { ENFILE, "ENFILE" },
		{ EMFILE, "EMFILE" }, { ENOTTY, "ENOTTY" }, { ENOSPC, "ENOSPC" },
		{ ENOSYS, "ENOSYS" }, { EOPNOTSUPP, "EOPNOTSUPP" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].e == e)
			return t[i].s;
	snprintf(buf, n, "E%d", e);
	return buf;
}

static void check(struct fz *fz, enum chk c, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void check(struct fz *fz, enum chk c, bool ok, const char *fmt, ...)
{
	va_list ap;

	fz->checks[c]++;
	if (ok)
		return;
	if (fz->fails[c]++ < NPRINT) {
		printf("# FAIL (%s) call %" PRIu64 ": ", chk_name[c], fz->calls);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n#   %s\n", fz->desc);
		printf("#   replay: %s --seed %" PRIu64 " --calls %" PRIu64 "%s --trace\n",
		       fz->argv0, fz->seed, fz->calls,
		       fz->no_disrupt ? " --no-disrupt" : "");
	}
}

/* Read or write one byte of the arena; returns the signal it took, or 0. */
static int touch(volatile char *p, bool write, char v)
{
	return mw_touch(p, write, v, NULL);
}

/* x86's access_ok(): [addr, addr + size) within the user address space. */
static bool uaccess_ok(const struct fz *fz, uint64_t addr, uint64_t size)
{
	return size <= fz->tsm && addr <= fz->tsm - size;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

/* The slot whose reservation holds addr, or -1. */
static int addr_slot(const struct fz *fz, uint64_t addr)
{
	for (int k = 0; k < K_NKINDS; k++)
		if (addr >= fz->slot[k].res &&
		    addr < fz->slot[k].res + 2 * fz->slot[k].len)
			return k;
	return -1;
}

static uint64_t slot_base(struct fz *fz, int k)
{
	return atomic_load(&fz->slot[k].base);
}

/* ---- mappings ---------------------------------------------------------- */

/* Map slot s's kind at 'at' (fixed); the anon kind gets three VMAs. */
static int map_kind(struct slot *s, uint64_t at, bool noreplace)
{
	int prot = PROT_READ | PROT_WRITE;
	int fl = noreplace ? MAP_FIXED_NOREPLACE : MAP_FIXED;
	void *want = (void *)(uintptr_t)at, *p;

	switch (s->kind) {
	case K_ANON:
	case K_THP:
		p = mmap(want, s->len, prot, fl | MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
		break;
	case K_SHMEM:
		p = mmap(want, s->len, prot, fl | MAP_SHARED | MAP_ANONYMOUS,
			 -1, 0);
		break;
	case K_HUGE_PRIV:
		p = mmap(want, s->len, prot,
			 fl | MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
		break;
	default:
		p = mmap(want, s->len, prot, fl | MAP_SHARED, s->fd, 0);
		break;
	}
	if (p == MAP_FAILED)
		return -1;
	if (p != want) {
		munmap(p, s->len);
		errno = EEXIST;
		return -1;
	}
	if (s->kind == K_THP)
		madvise(p, s->len, MADV_HUGEPAGE);
	if (s->kind == K_ANON) {
		madvise(p, s->len, MADV_NOHUGEPAGE);
		mprotect((char *)p + (256 << 10), 64 << 10, PROT_READ);
		mprotect((char *)p + (320 << 10), 64 << 10, PROT_NONE);
	}
	return 0;
}

static int uffd_register(int uffd, uint64_t start, uint64_t len,
			 uint64_t mode)
{
	struct uffdio_register r = {
		.range = { start, len },
		.mode = mode,
	};

	return ioctl(uffd, UFFDIO_REGISTER, &r);
}

static int uffd_wp(int uffd, uint64_t start, uint64_t len, bool wp)
{
	struct uffdio_writeprotect w = {
		.range = { start, len },
		.mode = wp ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	return ioctl(uffd, UFFDIO_WRITEPROTECT, &w);
}

static int new_uffd(uint64_t features, uint64_t *got)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	int fd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd < 0 || ioctl(fd, UFFDIO_API, &api))
		return -1;
	if (got)
		*got = api.features;
	return fd;
}

static void setup_ctrl(struct fz *fz)
{
	void *p = mmap((void *)(uintptr_t)CTRL_BASE, P_END * PSZ,
		       PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		       -1, 0);

	if (p != (void *)(uintptr_t)CTRL_BASE)
		mw_bail("mmap ctrl", &fz->seed);
	memset(p, CANARY, P_END * PSZ);
	memset(fz->canary_page, CANARY, PSZ);
	if (munmap((void *)(uintptr_t)CP(P_HOLE), PSZ) ||
	    mprotect((void *)(uintptr_t)CP(P_RO), PSZ, PROT_READ) ||
	    mprotect((void *)(uintptr_t)CP(P_CANRO), PSZ, PROT_READ))
		mw_bail("ctrl layout", &fz->seed);
}

static void setup_slots(struct fz *fz)
{
	uint64_t off = 0;

	for (int k = 0; k < K_NKINDS; k++) {
		struct slot *s = &fz->slot[k];

		s->kind = k;
		s->len = kinds[k].len;
		s->res = ARENA + off;
		s->fd = -1;
		atomic_store(&s->base, s->res);
		pthread_mutex_init(&s->mu, NULL);
		off = align_up(off + 2 * s->len + HPSZ, HPSZ);
		if (k == K_MEMFD)
			s->fd = memfd_create("pmfuzz", MFD_CLOEXEC);
		else if (k == K_HUGE_SHARED)
			s->fd = memfd_create("pmfuzz-huge",
					     MFD_CLOEXEC | MFD_HUGETLB);
		else if (k == K_EXT4) {
			char path[64];

			snprintf(path, sizeof(path), "/mnt/disk/pmfuzz.%d",
				 (int)getpid());
			s->fd = open(path, O_RDWR | O_CREAT | O_TRUNC |
				     O_CLOEXEC, 0600);
			unlink(path);
		}
		if ((k == K_MEMFD || k == K_HUGE_SHARED || k == K_EXT4) &&
		    (s->fd < 0 || ftruncate(s->fd, s->len)))
			mw_bail(kinds[k].name, &fz->seed);
		if (map_kind(s, s->res, true))
			mw_bail(kinds[k].name, &fz->seed);
	}
	fz->arena_end = ARENA + off;
}

/*
 * A known state: pages written, read (zero page or page cache) and never
 * touched; the THP slot's first huge page whole.
 */
static void populate(struct fz *fz)
{
	for (int k = 0; k < K_NKINDS; k++) {
		struct slot *s = &fz->slot[k];
		char *b = (char *)(uintptr_t)s->res;

		if (kinds[k].huge) {
			b[0] = 1;		/* the second huge page stays empty */
			continue;
		}
		for (uint64_t i = 0; i < s->len / PSZ; i++) {
			if (k == K_THP && i < HPSZ / PSZ)
				touch(b + i * PSZ, true, 1);
			else if (i % 3 == 0)
				touch(b + i * PSZ, true, 1);
			else if (i % 3 == 1)
				touch(b + i * PSZ, false, 0);
		}
	}
}

/*
 * Two userfaultfds.  A: async write-protection (the write-tracking one)
 * and SIGBUS, so that a MISSING or MINOR registration that the fuzzer
 * makes on it never blocks a fault.  S: synchronous and SIGBUS: VMAs
 * registered there are not WP-async (PM_SCAN_CHECK_WPASYNC: EPERM), and
 * faults in them raise SIGBUS (EFAULT in the kernel) instead of waiting
 * for a reader.  A third is created and never initialised.
 */
static void setup_uffd(struct fz *fz)
{
	const uint64_t common = UFFD_FEATURE_SIGBUS |
				UFFD_FEATURE_WP_HUGETLBFS_SHMEM |
				UFFD_FEATURE_WP_UNPOPULATED |
				UFFD_FEATURE_MISSING_SHMEM |
				UFFD_FEATURE_MISSING_HUGETLBFS |
				UFFD_FEATURE_MINOR_SHMEM |
				UFFD_FEATURE_MINOR_HUGETLBFS;
	struct slot *s = fz->slot;

	fz->uffd_a = new_uffd(common | UFFD_FEATURE_WP_ASYNC, NULL);
	fz->uffd_s = new_uffd(common, NULL);
	fz->uffd_u = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fz->uffd_a < 0 || fz->uffd_s < 0 || fz->uffd_u < 0)
		mw_bail("userfaultfd with WP_ASYNC", &fz->seed);
	if (uffd_register(fz->uffd_a, s[K_ANON].res, 512 << 10,
			  UFFDIO_REGISTER_MODE_WP) ||
	    uffd_register(fz->uffd_a, s[K_THP].res, s[K_THP].len,
			  UFFDIO_REGISTER_MODE_WP) ||
	    uffd_register(fz->uffd_a, s[K_SHMEM].res, s[K_SHMEM].len,
			  UFFDIO_REGISTER_MODE_WP) ||
	    uffd_register(fz->uffd_a, s[K_EXT4].res, s[K_EXT4].len,
			  UFFDIO_REGISTER_MODE_WP) ||
	    uffd_register(fz->uffd_a, s[K_HUGE_PRIV].res, s[K_HUGE_PRIV].len,
			  UFFDIO_REGISTER_MODE_WP) ||
	    uffd_register(fz->uffd_s, s[K_MEMFD].res, s[K_MEMFD].len,
			  UFFDIO_REGISTER_MODE_MINOR) ||
	    uffd_register(fz->uffd_s, s[K_HUGE_SHARED].res,
			  s[K_HUGE_SHARED].len,
			  UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP))
		mw_bail("UFFDIO_REGISTER", &fz->seed);
	if (uffd_wp(fz->uffd_a, s[K_ANON].res, 512 << 10, true) ||
	    uffd_wp(fz->uffd_a, s[K_THP].res, s[K_THP].len, true) ||
	    uffd_wp(fz->uffd_a, s[K_SHMEM].res, s[K_SHMEM].len, true) ||
	    uffd_wp(fz->uffd_a, s[K_EXT4].res, s[K_EXT4].len, true) ||
	    uffd_wp(fz->uffd_a, s[K_HUGE_PRIV].res, s[K_HUGE_PRIV].len, true))
		mw_bail("UFFDIO_WRITEPROTECT", &fz->seed);
	/* Some pages written after arming. */
	for (int k = 0; k < K_NKINDS; k++)
		for (uint64_t i = 0; i < s[k].len / PSZ; i += 7)
			touch((char *)(uintptr_t)(s[k].res + i * PSZ), true, 2);
}

static int open_pagemap(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* A child that sleeps (its pagemap is scanned) and one that exits. */
static void setup_children(struct fz *fz)
{
	int p[2], d[2];
	char c;
	pid_t dead;

	if (pipe2(p, O_CLOEXEC))
		mw_bail("pipe", &fz->seed);
	fz->child = fork();
	if (fz->child < 0)
		mw_bail("fork", &fz->seed);
	if (!fz->child) {
		close(p[1]);
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(p[0]);
	fz->child_pipe = p[1];
	/* After the first fork: the sleeper must not hold d[1] open. */
	if (pipe2(d, O_CLOEXEC))
		mw_bail("pipe", &fz->seed);
	dead = fork();
	if (dead < 0)
		mw_bail("fork", &fz->seed);
	if (!dead) {
		close(p[1]);
		close(d[1]);
		while (read(d[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(d[0]);
	fz->pm_child = open_pagemap(fz->child);
	fz->pm_dead = open_pagemap(dead);
	close(d[1]);
	if (fz->pm_child < 0 || fz->pm_dead < 0 ||
	    waitpid(dead, NULL, 0) != dead)
		mw_bail("child pagemap", &fz->seed);
}

/* The zero page's pfn, from a read-faulted anonymous page. */
static void probe_zero_pfn(struct fz *fz)
{
	char *p = mmap(NULL, PSZ, PROT_READ,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t e = 0;

	if (p == MAP_FAILED)
		return;
	(void)*(volatile char *)p;
	if (pread(fz->pm_self, &e, 8, (uintptr_t)p / PSZ * 8) == 8 &&
	    (e >> 63) & 1)
		fz->zero_pfn = e & ((1ULL << 55) - 1);
	munmap(p, PSZ);
}

/*
 * 5-level paging on: the "la57" cpu flag, which the kernel clears when it
 * runs with 4 levels (no5lvl, !CONFIG_X86_5LEVEL, or no hardware support).
 */
static bool la57_enabled(const struct fz *fz)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char *line = NULL;
	size_t n = 0;
	bool on = false;

	if (!f)
		mw_bail("open /proc/cpuinfo", &fz->seed);
	while (getline(&line, &n, f) > 0) {
		if (strncmp(line, "flags", 5))
			continue;
		on = strstr(line, " la57 ") || strstr(line, " la57\n");
		break;
	}
	free(line);
	fclose(f);
	return on;
}

/*
 * 5-level paging moves TASK_SIZE_MAX (and so access_ok(), for a compat task
 * too).  A 64-bit fuzzer maps above 47 bits to see it; the 32-bit one cannot
 * and reads the cpu flag.  Both must agree with /proc/cpuinfo.
 */
static void probe_task_size(struct fz *fz)
{
	bool la57 = la57_enabled(fz);

	fz->tsm = (1ULL << 47) - PSZ;
	fz->uffd_ts = fz->tsm;
#if UINTPTR_MAX == 0xffffffffu
	fz->uffd_ts = 0xffffe000ULL;	/* a compat task's TASK_SIZE */
	if (la57)
		fz->tsm = (1ULL << 56) - PSZ;
#else
	void *p = mmap((void *)(uintptr_t)(1ULL << 48), PSZ, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		       -1, 0);

	if (p != MAP_FAILED) {
		munmap(p, PSZ);
		if (p == (void *)(uintptr_t)(1ULL << 48)) {
			fz->tsm = (1ULL << 56) - PSZ;
			fz->uffd_ts = fz->tsm;
		}
	}
	if (la57 != (fz->tsm == (1ULL << 56) - PSZ)) {
		printf("Bail out! 5-level paging: /proc/cpuinfo says %s, a mapping above 47 bits %s\n",
		       la57 ? "on" : "off", la57 ? "failed" : "worked");
		exit(1);
	}
#endif
}

/* ---- arguments --------------------------------------------------------- */

static bool arg_readable(enum argk k)
{
	return k == A_RW || k == A_RO || k == A_CROSS_RO;
}

static enum argk pick_argk(uint64_t *r)
{
	static const enum argk bad[] = { A_RO, A_CROSS_RO, A_CROSS_HOLE,
					 A_HOLE, A_NULL, A_KERNEL };

	return mw_rndn(r, 12) ? A_RW : bad[mw_rndn(r, 6)];
}

/* Write len bytes into the read-only ctrl page at 'at'. */
static void ro_write(struct fz *fz, uint64_t at, const void *src, size_t len)
{
	void *ro = (void *)(uintptr_t)CP(P_RO);

	if (mprotect(ro, PSZ, PROT_READ | PROT_WRITE))
		mw_bail("mprotect", &fz->seed);
	memcpy((void *)(uintptr_t)at, src, len);
	if (mprotect(ro, PSZ, PROT_READ))
		mw_bail("mprotect", &fz->seed);
}

/* Put the len bytes of src where k says; returns the ioctl's argument. */
static void *place_arg(struct fz *fz, enum argk k, const void *src,
		       size_t len, uint64_t *r)
{
	uint64_t at, off;

	switch (k) {
	case A_RW:
		off = 16 + mw_rndn(r, (PSZ - 32 - len) / 8) * 8;
		if (!mw_rndn(r, 16))
			off += 1 + mw_rndn(r, 7);
		at = CP(P_ARG) + off;
		memset((void *)(uintptr_t)(at - 16), CANARY, len + 32);
		memcpy((void *)(uintptr_t)at, src, len);
		return (void *)(uintptr_t)at;
	case A_RO:
		at = CP(P_RO) + 8 + mw_rndn(r, (PSZ - 8 - len) / 8) * 8;
		ro_write(fz, at, src, len);
		return (void *)(uintptr_t)at;
	case A_CROSS_RO:
		/* The first 8 bytes writable, the rest read-only. */
		at = CP(P_RO) - 8;
		memcpy((void *)(uintptr_t)at, src, 8);
		ro_write(fz, CP(P_RO), (const char *)src + 8, len - 8);
		return (void *)(uintptr_t)at;
	case A_CROSS_HOLE:
		return (void *)(uintptr_t)(CP(P_HOLE) - 8);
	case A_HOLE:
		return (void *)(uintptr_t)CP(P_HOLE);
	case A_NULL:
		return NULL;
	default:
		return (void *)(uintptr_t)KPTR;
	}
}

/* An address of interest: edges of the address space, VMAs, huge pages. */
static uint64_t pick_point(struct fz *fz, uint64_t *r)
{
	int k = mw_rndn(r, K_NKINDS);
	const struct slot *s = &fz->slot[k];
	uint64_t base = slot_base(fz, k), a;

	switch (mw_rndn(r, 24)) {
	case 0:
		return 0;
	case 1:
		return PSZ;
	case 2:
		return fz->tsm - PSZ * mw_rndn(r, 3);
	case 3:
		return fz->tsm + PSZ * mw_rndn(r, 3);
	case 4:
		return KADDR64 + PSZ * mw_rndn(r, 2);
	case 5:
		return ~0ULL - mw_rndn(r, 2) * (PSZ - 1);
	case 6:
		return 1ULL << (31 + mw_rndn(r, 33));
	case 7:
		return ARENA;
	case 8:
		return fz->arena_end;
	case 9:
		return CP(mw_rndn(r, P_END + 2));
	case 10:
		return s->res + 2 * s->len;
	case 11:
		return base + s->len;
	case 12:
		a = base + mw_rndn(r, s->len / PSZ) * PSZ;
		return a + 1 + mw_rndn(r, PSZ - 1);
	case 13:
	case 14:
		return base + mw_rndn(r, s->len / HPSZ + 1) * HPSZ;
	default:
		return base + mw_rndn(r, s->len / PSZ + 1) * PSZ;
	}
}

static uint64_t sparse(uint64_t *r)
{
	switch (mw_rndn(r, 5)) {
	case 0:
		return 0;
	case 1:
		return 1ULL << mw_rndn(r, 8);
	case 2:
		return mw_rnd(r) & mw_rnd(r) & PM_CATS;
	case 3:
		return mw_rnd(r) & PM_CATS;
	default:
		return (1ULL << mw_rndn(r, 8)) | (1ULL << mw_rndn(r, 8));
	}
}

/* ---- PAGEMAP_SCAN ------------------------------------------------------ */

struct scan {
	struct pm_scan_arg a;		/* as passed */
	enum target target;
	enum argk ak;
	enum veck vk;
	uint64_t wcap;			/* regions writable at vec; ~0: unknown */
	bool big;			/* range beyond the arena */
};

static void gen_range(struct fz *fz, uint64_t *r, struct scan *sc)
{
	int k = mw_rndn(r, K_NKINDS);
	const struct slot *s = &fz->slot[k];
	uint64_t base = sc->target == T_SELF ? slot_base(fz, k) : s->res;
	__u64 *st = &sc->a.start, *en = &sc->a.end;
	uint64_t n;

	switch (mw_rndn(r, 40)) {
	default:		/* in and around one mapping */
		*st = base + mw_rndn(r, s->len / PSZ) * PSZ;
		if (kinds[k].huge && mw_rndn(r, 2))
			*st = base + mw_rndn(r, s->len / HPSZ) * HPSZ;
		n = mw_rndn(r, 4) ? 1 + mw_rndn(r, 64) :
				 1 + mw_rndn(r, 2 * s->len / PSZ);
		if (kinds[k].huge && mw_rndn(r, 2))
			n = (HPSZ / PSZ) * (1 + mw_rndn(r, 2));
		*en = *st + n * PSZ;
		break;
	case 0: case 1: case 2: case 3:
		*st = base;
		*en = base + s->len;
		break;
	case 4: case 5:		/* several mappings and the holes between */
		*st = fz->slot[mw_rndn(r, K_NKINDS)].res;
		*en = *st + (1 + mw_rndn(r, 16)) * HPSZ;
		break;
	case 6:
		*st = ARENA;
		*en = fz->arena_end;
		break;
	case 7: case 8: case 9: case 10:
		*st = pick_point(fz, r);
		*en = pick_point(fz, r);
		break;
	case 11: case 12:
		*st = *en = pick_point(fz, r);
		break;
	case 13: case 14:
		*st = pick_point(fz, r) & ~(PSZ - 1);
		*en = *st + mw_rndn(r, 3 * PSZ);
		break;
	case 15:
		*st = base + mw_rndn(r, s->len / PSZ) * PSZ;
		*en = *st - PSZ * mw_rndn(r, 3);	/* end <= start */
		break;
	case 16:		/* a large range: the whole user space */
		*st = mw_rndn(r, 2) ? 0 : ARENA;
		*en = fz->tsm;
		break;
	}
	/*
	 * A huge range is walked chunk by chunk: allow only a few per run
	 * to keep the rate up (they're cheap where nothing is mapped).
	 */
	sc->big = *en > *st && *en - *st > (1ULL << 40);
	if (sc->big && mw_rndn(r, 8)) {
		*en = *st + (1 + mw_rndn(r, 64)) * HPSZ;
		sc->big = false;
	}
}

static void gen_vec(struct fz *fz, uint64_t *r, struct scan *sc, void *argp)
{
	struct pm_scan_arg *a = &sc->a;
	uint64_t off;

	switch (mw_rndn(r, 14)) {
	case 1:
		a->vec = 0;
		sc->vk = V_NULL;
		sc->wcap = 0;
		a->vec_len = mw_rndn(r, 8) ? 0 : 1 + mw_rndn(r, 100);
		return;
	default:
		sc->vk = V_CANARY;
		off = mw_rndn(r, 4) ? mw_rndn(r, 64) * 8 : mw_rndn(r, CAN_BYTES / 8) * 8;
		if (!mw_rndn(r, 16))
			off += 1 + mw_rndn(r, 7);	/* unaligned */
		a->vec = CP(P_CAN) + off;
		sc->wcap = (CAN_BYTES - off) / RSZ;
		break;
	case 2:
		sc->vk = V_RO;
		a->vec = CP(P_RO) + mw_rndn(r, 64) * 8;
		sc->wcap = 0;
		break;
	case 3:
		sc->vk = V_HOLE;
		a->vec = CP(P_HOLE) + mw_rndn(r, 64) * 8;
		sc->wcap = 0;
		break;
	case 4:
		sc->vk = V_CROSS;
		sc->wcap = 1 + mw_rndn(r, 3);
		a->vec = CP(P_CANRO) - sc->wcap * RSZ;
		break;
	case 5:
		sc->vk = V_KERNEL;
		a->vec = mw_rndn(r, 2) ? KADDR64 : ~0ULL - RSZ * mw_rndn(r, 4);
		sc->wcap = 0;
		break;
	case 6:			/* unmapped, below the arena */
		sc->vk = V_TOP;
		a->vec = ARENA - RSZ * (1 + mw_rndn(r, 4));
		sc->wcap = 0;
		break;
	case 7: case 8:		/* the scanned memory itself */
		sc->vk = V_ARENA;
		a->vec = mw_rndn(r, 2) && a->start >= ARENA &&
			 a->start < fz->arena_end ? a->start :
			 pick_point(fz, r) & ~7ULL;
		if (a->vec < ARENA || a->vec >= fz->arena_end)
			a->vec = fz->slot[mw_rndn(r, K_NKINDS)].res;
		sc->wcap = ~0ULL;
		break;
	case 9:
		sc->vk = V_ARG;
		a->vec = (uintptr_t)argp;
		sc->wcap = (CP(P_RO) - a->vec) / RSZ;
		break;
	}
	switch (mw_rndn(r, 14)) {
	case 0:
		a->vec_len = 0;
		break;
	case 1: case 2:
		a->vec_len = 1;
		break;
	case 3:
		a->vec_len = 2 + mw_rndn(r, 7);
		break;
	case 4: case 5: case 6: case 7:
		a->vec_len = 1 + mw_rndn(r, 64);
		break;
	case 8:
		a->vec_len = 1 + mw_rndn(r, 600);
		break;
	case 9:
		a->vec_len = 511 + mw_rndn(r, 3);
		break;
	case 10:
		a->vec_len = 1024 + mw_rndn(r, 4096);
		break;
	case 11: {
		static const uint64_t huge[] = {
			1ULL << 40, ~0ULL, UINT64_MAX / 24, UINT64_MAX / 24 + 1,
			1ULL << 63, 0xffffffffULL, (1ULL << 47) / 24,
		};
		a->vec_len = huge[mw_rndn(r, 7)];
		break;
	}
	default:
		a->vec_len = sc->wcap && sc->wcap != ~0ULL ?
			     sc->wcap - mw_rndn(r, 2) : 1 + mw_rndn(r, 32);
		break;
	}
}

static void gen_scan(struct fz *fz, uint64_t *r, struct scan *sc, void *argp)
{
	struct pm_scan_arg *a = &sc->a;
	uint64_t preset = mw_rndn(r, 10);

	a->size = sizeof(*a);
	gen_range(fz, r, sc);
	if (preset < 3) {		/* the write-watch get (and reset) */
		a->flags = mw_rndn(r, 4);
		a->category_mask = a->return_mask = PAGE_IS_WRITTEN;
	} else if (preset == 3) {	/* reset only */
		a->flags = PM_SCAN_WP_MATCHING | mw_rndn(r, 2) * 2;
		a->category_mask = PAGE_IS_WRITTEN;
		a->return_mask = mw_rndn(r, 2) ? PAGE_IS_WRITTEN : 0;
	} else {
		a->flags = mw_rndn(r, 4);
		a->category_inverted = mw_rndn(r, 3) ? 0 : sparse(r);
		a->category_mask = sparse(r);
		a->category_anyof_mask = mw_rndn(r, 3) ? 0 : sparse(r);
		a->return_mask = mw_rndn(r, 3) ? PM_CATS : sparse(r);
	}
	gen_vec(fz, r, sc, argp);
	if (preset == 3 && mw_rndn(r, 4)) {
		a->vec = 0;
		a->vec_len = 0;
		sc->vk = V_NULL;
		sc->wcap = 0;
	}
	/*
	 * --diff: a write-protect only call (vec or vec_len 0) has no
	 * filter.  With one, ours arms the pages that match and 6.12 every
	 * pte (pagemap.rst, "Differences from mainline Linux").
	 */
	if (fz->diff && (!a->vec || !a->vec_len) &&
	    (a->flags & PM_SCAN_WP_MATCHING))
		a->category_inverted = a->category_mask =
			a->category_anyof_mask = 0;
	switch (mw_rndn(r, 3)) {
	case 0:
		a->max_pages = 0;
		break;
	case 1:
		a->max_pages = 1 + mw_rndn(r, mw_rndn(r, 2) ? 8 : 1024);
		break;
	default: {
		static const uint64_t mp[] = { 0, 1, 2, 511, 512, 513, 1024,
					       ~0ULL, 1ULL << 32 };
		a->max_pages = mp[mw_rndn(r, 9)];
		break;
	}
	}
	a->walk_end = mw_rnd(r) | 1;		/* never a kernel answer */
	if (mw_rndn(r, 6))
		return;
	/* Hostile: one more field out of its domain. */
	switch (mw_rndn(r, 10)) {
	case 0: {
		static const uint64_t sz[] = { 0, 8, 88, 95, 97, 104, 4096,
					       ~0ULL };
		a->size = mw_rndn(r, 4) ? sz[mw_rndn(r, 8)] : mw_rnd(r);
		break;
	}
	case 1:
		a->flags |= 1ULL << (2 + mw_rndn(r, 62));
		break;
	case 2:
		a->flags = mw_rnd(r);
		break;
	case 3:
		a->category_inverted |= 1ULL << (8 + mw_rndn(r, 56));
		break;
	case 4:
		a->category_mask |= 1ULL << (8 + mw_rndn(r, 56));
		break;
	case 5:
		a->category_anyof_mask |= 1ULL << (8 + mw_rndn(r, 56));
		break;
	case 6:
		a->return_mask = mw_rnd(r);
		break;
	case 7:
		a->start |= 1 + mw_rndn(r, PSZ - 1);
		break;
	case 8:
		a->vec = 0;
		a->vec_len = 1 + mw_rndn(r, 16);
		sc->vk = V_NULL;
		sc->wcap = 0;
		break;
	default:
		a->end = a->start - 1 - mw_rndn(r, 2 * PSZ);
		break;
	}
}

/* upstream's pagemap_scan_get_args(), in the order it checks. */
static int scan_predict(const struct fz *fz, const struct scan *sc)
{
	const struct pm_scan_arg *a = &sc->a;
	uint64_t cats = a->category_inverted | a->category_mask |
			a->category_anyof_mask | a->return_mask;

	if (sc->target == T_DEAD)
		return ESRCH;
	if (!arg_readable(sc->ak))
		return EFAULT;
	if (a->size != sizeof(*a))
		return EINVAL;
	if (a->flags & ~PM_FLAGS)
		return EINVAL;
	if (cats & ~PM_CATS)
		return EINVAL;
	if (a->start % PSZ)
		return EINVAL;
	if (!uaccess_ok(fz, a->start, a->end - a->start))
		return EFAULT;
	if (!a->vec && a->vec_len)
		return EINVAL;
	if (a->vec && !uaccess_ok(fz, a->vec, sat_mul(a->vec_len, RSZ)))
		return EFAULT;
	return 0;
}

static void describe_scan(struct fz *fz, const struct scan *sc, void *argp)
{
	static const char *const ak[] = { "rw", "ro", "cross-ro", "cross-hole",
					  "hole", "null", "kernel" };
	static const char *const vk[] = { "canary", "null", "ro", "hole",
					  "cross", "kernel", "below-arena", "arena",
					  "arg" };
	static const char *const tg[] = { "self", "child", "dead" };
	const struct pm_scan_arg *a = &sc->a;

	snprintf(fz->desc, sizeof(fz->desc),
		 "PAGEMAP_SCAN on %s pagemap, arg %p (%s), vec %s: "
		 "{ .size = %" PRIu64 ", .flags = %#" PRIx64
		 ", .start = %#" PRIx64 ", .end = %#" PRIx64
		 ", .vec = %#" PRIx64 ", .vec_len = %#" PRIx64
		 ", .max_pages = %#" PRIx64 ", .category_inverted = %#" PRIx64
		 ", .category_mask = %#" PRIx64
		 ", .category_anyof_mask = %#" PRIx64
		 ", .return_mask = %#" PRIx64 " }",
		 tg[sc->target], argp, ak[sc->ak], vk[sc->vk],
		 (uint64_t)a->size, (uint64_t)a->flags, (uint64_t)a->start,
		 (uint64_t)a->end, (uint64_t)a->vec, (uint64_t)a->vec_len,
		 (uint64_t)a->max_pages, (uint64_t)a->category_inverted,
		 (uint64_t)a->category_mask,
		 (uint64_t)a->category_anyof_mask, (uint64_t)a->return_mask);
}

/*
 * May a PM_SCAN_WP_MATCHING walk stop at addr for a hugetlb page it can
 * only partly protect?  At the page's start, or at the range's start
 * when that is inside the page.
 */
static bool hugetlb_stop(const struct fz *fz, uint64_t addr, uint64_t start)
{
	int k = addr_slot(fz, addr);

	return k >= 0 && kinds[k].huge && (addr % HPSZ == 0 || addr == start);
}

/*
 * A region must lie in a mapping: never over the holes of the arena and
 * of ctrl (without disruptors the arena's mappings don't move; the
 * child's are as forked).
 */
static bool region_in_mapping(struct fz *fz, const struct scan *sc,
			      uint64_t s, uint64_t e)
{
	uint64_t ce = CP(P_END);

	if (e <= ARENA || s >= CP(P_END + 64))
		return true;		/* not ours */
	if (s >= CTRL_BASE)
		return e <= ce && (e <= CP(P_HOLE) || s >= CP(P_HOLE + 1));
	if (s >= fz->arena_end || e > fz->arena_end)
		return false;
	for (int k = 0; k < K_NKINDS; k++) {
		const struct slot *sl = &fz->slot[k];
		uint64_t b = sc->target == T_CHILD ? sl->res : slot_base(fz, k);

		if (s >= sl->res && e <= sl->res + 2 * sl->len)
			return !fz->no_disrupt && sc->target == T_SELF ? true :
			       s >= b && e <= b + sl->len;
	}
	return false;
}

/*
 * What /proc/PID/pagemap says of a page, as PAGE_IS_* bits: *known gets
 * the bits it can tell for kind k.
 */
static uint64_t pm_cats(const struct fz *fz, uint64_t e, int k,
			uint64_t *known)
{
	bool present = (e >> 63) & 1, swap = (e >> 62) & 1;
	uint64_t c = 0, kn = PAGE_IS_PRESENT | PAGE_IS_FILE |
			     PAGE_IS_SOFT_DIRTY | PAGE_IS_SWAPPED;

	if (present)
		c |= PAGE_IS_PRESENT;
	if (swap)
		c |= PAGE_IS_SWAPPED;
	if ((e >> 61) & 1)
		c |= PAGE_IS_FILE;
	if ((e >> 55) & 1)
		c |= PAGE_IS_SOFT_DIRTY;
	if (present || swap) {
		kn |= PAGE_IS_WRITTEN;
		if (!((e >> 57) & 1))
			c |= PAGE_IS_WRITTEN;
	}
	if (kinds[k].huge)	/* pagemap: markers not swapped, no sd bit */
		kn &= ~(PAGE_IS_SWAPPED | PAGE_IS_SOFT_DIRTY);
	if (k != K_THP && !kinds[k].huge && fz->zero_pfn) {
		kn |= PAGE_IS_PFNZERO;
		if (present && (e & ((1ULL << 55) - 1)) == fz->zero_pfn)
			c |= PAGE_IS_PFNZERO;
	}
	*known = kn;
	return c;
}

/* The canary window around vec that must be restored after the call. */
static void vec_window(const struct scan *sc, uint64_t *lo, uint64_t *hi)
{
	uint64_t n = sc->a.vec_len < sc->wcap ? sc->a.vec_len : sc->wcap;

	*lo = sc->a.vec >= CP(P_CAN) + 64 ? sc->a.vec - 64 : CP(P_CAN);
	*hi = sc->a.vec + n * RSZ + 64;
	if (*hi > CP(P_CANRO))
		*hi = CP(P_CANRO);
}

/* Bytes [lo, hi) still the canary? Returns the first that isn't, or hi. */
static uint64_t canary_intact(const struct fz *fz, uint64_t lo, uint64_t hi)
{
	for (uint64_t p = lo; p < hi; ) {
		uint64_t n = hi - p < PSZ ? hi - p : PSZ;

		if (memcmp((void *)(uintptr_t)p, fz->canary_page, n)) {
			while (*(uint8_t *)(uintptr_t)p == CANARY)
				p++;
			return p;
		}
		p += n;
	}
	return hi;
}

/* ---- completeness and failed arming (--no-disrupt) ------------------- */

/* What a page is, as far as a walk can't change it: present, swap, file, pfn. */
#define PM_IDENT	((1ULL << 63) | (1ULL << 62) | (1ULL << 61) |	\
			 ((1ULL << 55) - 1))

/* Written, in pagemap's words: present or swapped, and not uffd-wp. */
static bool pm_written(uint64_t e)
{
	return ((e >> 63) & 1 || (e >> 62) & 1) && !((e >> 57) & 1);
}

/*
 * Does a page whose categories are c, as far as the bits kn tell, match
 * the filter of a?  1 yes, 0 no, -1 it depends on a bit not known.
 */
static int filter_match(const struct pm_scan_arg *a, uint64_t c, uint64_t kn)
{
	uint64_t ci = c ^ a->category_inverted, any = a->category_anyof_mask;
	int m = 1;

	if (a->category_mask & kn & ~ci)
		return 0;
	if (a->category_mask & ~kn)
		m = -1;
	if (any && !(any & kn & ci)) {
		if (!(any & ~kn))
			return 0;
		m = -1;
	}
	return m;
}

/*
 * The categories of a page from pagemap entry e (*kn: the bits known),
 * with PAGE_IS_HUGE, known for every kind but THP, and PAGE_IS_WPALLOWED
 * when wpa is 0 or 1 (a probe's answer).
 */
static uint64_t page_cats(const struct fz *fz, uint64_t e, int k, int wpa,
			  uint64_t *kn)
{
	uint64_t c = pm_cats(fz, e, k, kn);

	if (k != K_THP) {
		*kn |= PAGE_IS_HUGE;
		if (kinds[k].huge)
			c |= PAGE_IS_HUGE;
	}
	if (wpa >= 0) {
		*kn |= PAGE_IS_WPALLOWED;
		if (wpa)
			c |= PAGE_IS_WPALLOWED;
	}
	return c;
}

/*
 * Is [start, end) in VMAs that are all WP-async (PAGE_IS_WPALLOWED)?  A
 * probe that changes nothing: PM_SCAN_CHECK_WPASYNC without
 * PM_SCAN_WP_MATCHING and without vec fails with EPERM on the first VMA
 * that is not.  1 yes, 0 no, -1 the probe failed otherwise.
 */
static int wpa_probe(struct fz *fz, int fd, uint64_t start, uint64_t end)
{
	struct pm_scan_arg a = {
		.size = sizeof(a), .flags = PM_SCAN_CHECK_WPASYNC,
		.start = start, .end = end,
	};

	fz->cmpl_probes++;
	if (ioctl(fd, PAGEMAP_SCAN, &a) >= 0)
		return 1;
	return errno == EPERM ? 0 : -1;
}

/*
 * Under PM_SCAN_WP_MATCHING, may page p be in a hugetlb page the call
 * can only partly protect: not wholly in the range, or (conservatively:
 * any max_pages below the range's pages) cut by max_pages?  Ours stops
 * the walk at its start (walk_end), upstream 6.12 drops it from the
 * report and goes on (pagemap.rst, "Differences from mainline Linux").
 */
static bool huge_cut(const struct fz *fz, const struct scan *sc, uint64_t p)
{
	const struct pm_scan_arg *a = &sc->a;
	uint64_t aend = align_up(a->end, PSZ), hp = p & ~(HPSZ - 1);
	int k = addr_slot(fz, p);

	return k >= 0 && kinds[k].huge &&
	       (hp < a->start || hp + HPSZ > aend ||
		(a->max_pages && a->vec && a->vec_len &&
		 a->max_pages < (aend - a->start) / PSZ));
}

/*
 * After a successful call with an output buffer, against pagemap read
 * before (pm_pre) and after it: every page that was written (present or
 * swapped, not uffd-wp), in [start, walk_end) (a walk that stops early,
 * for a full vec, max_pages or a hugetlb page, has reported everything
 * before walk_end), whose categories match the filter, in a WP-async VMA
 * if the call write-protects (the others are skipped), is in vec; and a
 * PM_SCAN_WP_MATCHING call protects only what it reports, so a written
 * page it did not report is written after it, wherever in the range
 * (upstream's write-protect only call, without vec, protects every pte:
 * not checked here).  pagemap and PAGEMAP_SCAN agree on these pages:
 * uffd-wp is bit 57 and the opposite of PAGE_IS_WRITTEN for present
 * ptes, pmds and hugetlb entries, swap entries and uffd-wp markers, in
 * every VMA; the pages where they differ (an empty pte or hugetlb entry,
 * PAGE_IS_WRITTEN in a uffd-wp VMA and no pagemap entry) are not present
 * or swapped, and are left out.
 */
static void check_complete(struct fz *fz, const struct scan *sc,
			   const struct page_region *v, long n, uint64_t wend,
			   uint64_t npre)
{
	const struct pm_scan_arg *a = &sc->a;
	bool wp = a->flags & PM_SCAN_WP_MATCHING;
	int fd = sc->target == T_SELF ? fz->pm_self : fz->pm_child;

	if (!a->vec || !a->vec_len ||
	    pread(fd, fz->pm_post, npre * 8, a->start / PSZ * 8) !=
	    (ssize_t)(npre * 8))
		return;
	memset(fz->pm_rep, 0, npre);
	for (long i = 0; i < n; i++)
		for (uint64_t p = v[i].start; p < v[i].end; p += PSZ)
			if (p >= a->start && (p - a->start) / PSZ < npre)
				fz->pm_rep[(p - a->start) / PSZ] = 1;
	for (uint64_t i = 0; i < npre; i++) {
		uint64_t p = a->start + i * PSZ, pre = fz->pm_pre[i];
		uint64_t post = fz->pm_post[i], c0, c1, kn;
		int k = addr_slot(fz, p), m0, m1, wpa;

		if (!pm_written(pre) || k < 0)
			continue;
		fz->cmpl_pages++;
		if (fz->pm_rep[i]) {
			fz->checks[C_COMPLETE]++;	/* reported: fine */
			continue;
		}
		if ((pre ^ post) & PM_IDENT) {	/* reclaim, khugepaged */
			fz->cmpl_races++;
			continue;
		}
		if (wp)
			check(fz, C_COMPLETE, !((post >> 57) & 1),
			      "page %#" PRIx64 " (%s), written (pagemap %#"
			      PRIx64 "), not reported by PM_SCAN_WP_MATCHING "
			      "but write-protected by it (pagemap %#" PRIx64
			      "): its write is lost", p, kinds[k].name, pre,
			      post);
		if (p >= wend || (wp && huge_cut(fz, sc, p)))
			continue;
		c1 = page_cats(fz, pre, k, 1, &kn);
		m1 = filter_match(a, c1, kn);
		c0 = page_cats(fz, pre, k, 0, &kn);
		m0 = filter_match(a, c0, kn);
		if ((m0 < 0 || m1 < 0) || (!m0 && !m1))
			continue;	/* unknown, or never matches */
		/* Whether the VMA is WP-async matters: ask. */
		wpa = m0 && m1 && !wp ? 2 : wpa_probe(fz, fd, p, p + PSZ);
		if (wpa < 0 || !(wpa ? m1 : m0) || (wp && !wpa))
			continue;
		check(fz, C_COMPLETE, false,
		      "page %#" PRIx64 " (%s) written (pagemap %#" PRIx64
		      ", categories %#" PRIx64 "%s) matches the filter, "
		      "before walk_end %#" PRIx64 ", but is not in the %ld "
		      "regions reported", p, kinds[k].name, pre,
		      wpa == 1 ? c1 : c0, wpa == 1 ? ", WP-async VMA" :
		      !wpa ? ", VMA not WP-async" : "", wend, n);
	}
}

static void check_regions(struct fz *fz, const struct scan *sc,
			  const struct page_region *v, long n, uint64_t wend,
			  bool have_pre, uint64_t npre)
{
	const struct pm_scan_arg *a = &sc->a;
	uint64_t rm = a->return_mask, pages = 0, aend = align_up(a->end, PSZ);
	bool wp = a->flags & PM_SCAN_WP_MATCHING;
	uint64_t prev_end = 0, prev_cat = 0;
	bool wp_check = have_pre && wp && (rm & PAGE_IS_WRITTEN);
	int pmfd = sc->target == T_SELF ? fz->pm_self : fz->pm_child;

	if (wp_check &&
	    pread(pmfd, fz->pm_post, npre * 8, a->start / PSZ * 8) !=
	    (ssize_t)(npre * 8))
		wp_check = false;
	for (long i = 0; i < n; i++) {
		const struct page_region *e = &v[i];
		uint64_t c = e->categories ^ (a->category_inverted & rm);
		uint64_t must = a->category_mask & rm;
		int k;

		check(fz, C_RESULT,
		      e->start < e->end && e->start % PSZ == 0 &&
		      e->end % PSZ == 0 && e->start >= a->start &&
		      e->end <= wend && (!i || e->start >= prev_end),
		      "region %ld [%#" PRIx64 ", %#" PRIx64 ") not sorted, "
		      "aligned, non-empty and inside [start, walk_end %#"
		      PRIx64 ")", i, (uint64_t)e->start, (uint64_t)e->end,
		      wend);
		check(fz, C_RESULT,
		      !i || e->start != prev_end || e->categories != prev_cat,
		      "regions %ld and %ld adjacent with the same categories "
		      "%#" PRIx64 ": not merged", i - 1, i, prev_cat);
		check(fz, C_RESULT, region_in_mapping(fz, sc, e->start, e->end),
		      "region %ld [%#" PRIx64 ", %#" PRIx64 ") over a hole", i,
		      (uint64_t)e->start, (uint64_t)e->end);
		check(fz, C_CATS, !(e->categories & ~rm),
		      "region %ld categories %#" PRIx64 " outside return_mask",
		      i, (uint64_t)e->categories);
		check(fz, C_CATS,
		      (c & must) == must &&
		      (!a->category_anyof_mask ||
		       (a->category_anyof_mask & ~rm) ||
		       (c & a->category_anyof_mask)),
		      "region %ld categories %#" PRIx64 " don't match the filter",
		      i, (uint64_t)e->categories);
		c = e->categories;
		if ((rm & (PAGE_IS_PRESENT | PAGE_IS_SWAPPED)) ==
		    (PAGE_IS_PRESENT | PAGE_IS_SWAPPED))
			check(fz, C_CATS, (c & (PAGE_IS_PRESENT | PAGE_IS_SWAPPED)) !=
			      (PAGE_IS_PRESENT | PAGE_IS_SWAPPED),
			      "region %ld both present and swapped", i);
		if (rm & PAGE_IS_PFNZERO)
			check(fz, C_CATS, !(c & PAGE_IS_PFNZERO) ||
			      (!(c & PAGE_IS_FILE) &&
			       (!(rm & PAGE_IS_PRESENT) || (c & PAGE_IS_PRESENT))),
			      "region %ld: zero page %#" PRIx64
			      " not present or file", i, c);
		if (sc->target == T_CHILD)
			check(fz, C_CATS, !wp && !(c & PAGE_IS_WPALLOWED),
			      "region %ld of the child (not registered) %s", i,
			      wp ? "reported with PM_SCAN_WP_MATCHING" :
				   "is WP-allowed");
		k = addr_slot(fz, e->start);
		if (k >= 0 && e->end <= fz->slot[k].res + 2 * fz->slot[k].len) {
			if ((rm & PAGE_IS_HUGE) && k != K_THP)
				check(fz, C_CATS,
				      !!(c & PAGE_IS_HUGE) == kinds[k].huge,
				      "region %ld in %s: PAGE_IS_HUGE %s", i,
				      kinds[k].name, kinds[k].huge ? "missing" :
				      "set");
			if (rm & PAGE_IS_FILE)
				check(fz, C_CATS, kinds[k].shared ?
				      !(rm & PAGE_IS_PRESENT) ||
				      !(c & PAGE_IS_PRESENT) ||
				      (c & PAGE_IS_FILE) :
				      !(c & PAGE_IS_FILE),
				      "region %ld in %s: PAGE_IS_FILE %s", i,
				      kinds[k].name, kinds[k].shared ?
				      "missing" : "set");
		}
		pages += (e->end - e->start) / PSZ;
		prev_end = e->end;
		prev_cat = e->categories;
		if (!have_pre || k < 0)
			continue;
		/* Page by page against pagemap read before (and after). */
		for (uint64_t p = e->start; p < e->end; p += PSZ) {
			uint64_t i0 = (p - a->start) / PSZ, known, exp;
			uint64_t pre, post, d;

			if (i0 >= npre)
				break;
			pre = fz->pm_pre[i0];
			exp = pm_cats(fz, pre, k, &known);
			d = (c ^ exp) & known & rm;
			fz->oracle_pages++;
			if (d) {
				/* Raced with khugepaged or reclaim? */
				if (pread(pmfd, &post, 8, p / PSZ * 8) != 8 ||
				    ((post ^ pre) & ((1ULL << 63) | (1ULL << 61) |
						     ((1ULL << 55) - 1)))) {
					fz->oracle_races++;
					continue;
				}
			}
			check(fz, C_ORACLE, !d,
			      "page %#" PRIx64 " (%s) reported %#" PRIx64
			      ", pagemap entry %#" PRIx64 " says %#" PRIx64
			      " (bits %#" PRIx64 " differ)", p, kinds[k].name,
			      c, pre, exp, d);
			if (wp_check && (c & PAGE_IS_WRITTEN)) {
				post = fz->pm_post[i0];
				fz->wp_checked++;
				check(fz, C_ORACLE, (post >> 57) & 1,
				      "page %#" PRIx64 " (%s) reported written "
				      "by PM_SCAN_WP_MATCHING but not "
				      "write-protected after it (pagemap %#"
				      PRIx64 " -> %#" PRIx64 ")", p,
				      kinds[k].name, pre, post);
			}
		}
	}
	if (a->max_pages && a->vec && a->vec_len)
		check(fz, C_RESULT, pages <= a->max_pages,
		      "%" PRIu64 " pages reported, max_pages %" PRIu64, pages,
		      (uint64_t)a->max_pages);
	/* Stopped early: only for a full vec, max_pages, a hugetlb page. */
	if (wend != aend)
		check(fz, C_RESULT,
		      (a->vec && a->vec_len && (uint64_t)n == a->vec_len) ||
		      (a->vec && a->vec_len && a->max_pages &&
		       pages == a->max_pages) ||
		      (wp && hugetlb_stop(fz, wend, a->start)),
		      "walk_end %#" PRIx64 " short of end %#" PRIx64 " with "
		      "room left (%ld regions, %" PRIu64 " pages)", wend, aend,
		      n, pages);
	if (have_pre)
		check_complete(fz, sc, v, n, wend, npre);
}

/*
 * A PM_SCAN_WP_MATCHING call with valid arguments that failed part-way,
 * after it had armed pages: EFAULT copying the regions out to vec (a
 * read-only, unmapped or too short vec) or EPERM (PM_SCAN_CHECK_WPASYNC
 * reached a VMA that is not WP-async).  Upstream 6.12 reports a page
 * into its buffer of regions and then arms it, and copies the buffer
 * out when it is full or the walk is over: so the pages the walk
 * reached and matched are armed, and their writes lost to a caller that
 * got EFAULT (after EPERM the buffer is still copied out to vec, but the
 * caller isn't told how many regions).  Where the walk stopped: at
 * walk_end after EFAULT (the walk stops when the buffer is full, and
 * walk_end says where; at the end of the range when it never was), and
 * with PM_SCAN_CHECK_WPASYNC at the first VMA that is not WP-async if
 * that comes first (EPERM, or EFAULT when the regions before it can't
 * be copied out).  Against pagemap read
 * before and after the call, each page written before it:
 *  - before the stop, matching the filter, in a WP-async VMA: armed
 *    (uffd-wp); not matching (with an output buffer, where the filter
 *    decides; without one upstream arms every pte) or in a VMA that is
 *    not WP-async (skipped): still written;
 *  - from the stop on: still written, the walk never got there;
 * and then a plain get of the same range must agree with pagemap:
 * pages present or swapped reported, PAGE_IS_WRITTEN exactly where
 * pagemap has no uffd-wp bit (the armed pages read as not written, the
 * others as written).
 */
static void check_arm_error(struct fz *fz, const struct scan *sc, int fd,
			    int err, uint64_t wend, uint64_t npre,
			    bool flushed)
{
	const struct pm_scan_arg *a = &sc->a;
	const uint64_t end = a->start + npre * PSZ;
	const uint64_t want_rm = PAGE_IS_WRITTEN | PAGE_IS_PRESENT |
				 PAGE_IS_SWAPPED;
	bool buf = a->vec && a->vec_len;
	struct pm_scan_arg g = {
		.size = sizeof(g), .start = a->start, .end = end,
		.vec = (uintptr_t)fz->fup, .vec_len = ORACLE_MAX,
		.category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
		.return_mask = want_rm,
	};
	uint64_t stop = err == EFAULT ? wend : UINT64_MAX, lo, hi, ri = 0;
	long ret;
	char eb[16];

	if (pread(fd, fz->pm_post, npre * 8, a->start / PSZ * 8) !=
	    (ssize_t)(npre * 8))
		return;
	fz->armerr_calls++;
	if (a->flags & PM_SCAN_CHECK_WPASYNC) {
		/*
		 * The walk stops with EPERM at the first VMA that is not
		 * WP-async (then a vec it can't copy the regions to turns
		 * that into EFAULT, and walk_end doesn't say where: the end
		 * of the range, or where it last stopped for a full buffer).
		 * Its first page: bisect.
		 */
		lo = 0;
		hi = npre;
		while (lo < hi) {
			uint64_t mid = lo + (hi - lo) / 2;
			int w = wpa_probe(fz, fd, a->start,
					  a->start + (mid + 1) * PSZ);

			if (w < 0)
				return;
			if (w)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (a->start + lo * PSZ < stop)
			stop = a->start + lo * PSZ;
	}
	/*
	 * Upstream's walk_end after EFAULT can be short of where the walk
	 * stopped: when an earlier buffer was copied out (it keeps that
	 * stop) or after a hugetlb page it dropped (it points there), the
	 * walk went on and armed pages after it.  Then where it stopped is
	 * known only from what it armed: past the last page armed.
	 */
	if (err == EFAULT && stop == wend) {
		bool amb = flushed;
		uint64_t last = 0;

		for (uint64_t i = 0; i < npre; i++) {
			uint64_t pre = fz->pm_pre[i], post = fz->pm_post[i];

			amb |= huge_cut(fz, sc, a->start + i * PSZ);
			if (pm_written(pre) && !((pre ^ post) & PM_IDENT) &&
			    (post >> 57) & 1)
				last = a->start + (i + 1) * PSZ;
		}
		if (amb && last > stop)
			stop = last;
	}
	for (uint64_t i = 0; i < npre; i++) {
		uint64_t p = a->start + i * PSZ, pre = fz->pm_pre[i];
		uint64_t post = fz->pm_post[i], c, kn;
		int k = addr_slot(fz, p), m, wpa;
		bool armed = (post >> 57) & 1;

		if (!pm_written(pre) || k < 0)
			continue;
		if ((pre ^ post) & PM_IDENT) {
			fz->cmpl_races++;
			continue;
		}
		if (p >= stop) {
			fz->armerr_kept++;
			check(fz, C_ARMERR, !armed,
			      "page %#" PRIx64 " (%s) at or after where the "
			      "failed call (%s) stopped, %#" PRIx64 ", armed "
			      "(pagemap %#" PRIx64 " -> %#" PRIx64 ")", p,
			      kinds[k].name, errname(err, eb, 16), stop, pre,
			      post);
			continue;
		}
		if (huge_cut(fz, sc, p))
			continue;	/* 6.12 drops it, ours stops there */
		/* Before the stop: every VMA is WP-async with the check. */
		wpa = a->flags & PM_SCAN_CHECK_WPASYNC ? 1 :
		      wpa_probe(fz, fd, p, p + PSZ);
		if (wpa < 0)
			continue;
		c = page_cats(fz, pre, k, wpa, &kn);
		m = filter_match(a, c, kn);
		if (m < 0 || (!m && !buf))
			continue;
		if (m && wpa)
			fz->armerr_armed++;
		check(fz, C_ARMERR, armed == (m && wpa),
		      "page %#" PRIx64 " (%s) before where the failed call "
		      "(%s) stopped, %#" PRIx64 ", %s the filter%s, %s "
		      "(pagemap %#" PRIx64 " -> %#" PRIx64 ")", p,
		      kinds[k].name, errname(err, eb, 16), stop,
		      m ? "matching" : "not matching",
		      wpa ? "" : " in a VMA not WP-async",
		      armed ? "armed" : "not armed", pre, post);
	}
	/* The get after it. */
	ret = ioctl(fd, PAGEMAP_SCAN, &g);
	check(fz, C_ARMERR, ret >= 0 && g.walk_end == end,
	      "the get after the failed call: %ld %s, walk_end %#" PRIx64
	      " (end %#" PRIx64 ")", ret, ret < 0 ? errname(errno, eb, 16) :
	      "", (uint64_t)g.walk_end, end);
	if (ret < 0)
		return;
	for (uint64_t i = 0; i < npre; i++) {
		uint64_t p = a->start + i * PSZ, post = fz->pm_post[i];
		uint64_t got = 0, exp;
		bool in = false;

		while ((long)ri < ret && fz->fup[ri].end <= p)
			ri++;
		if ((long)ri < ret && fz->fup[ri].start <= p) {
			in = true;
			got = fz->fup[ri].categories;
		}
		if (!((post >> 63) & 1 || (post >> 62) & 1) ||
		    addr_slot(fz, p) < 0)
			continue;
		exp = pm_written(post) ? PAGE_IS_WRITTEN : 0;
		check(fz, C_ARMERR, in && (got & PAGE_IS_WRITTEN) == exp,
		      "the get after the failed call (%s, stopped at %#"
		      PRIx64 "): page %#" PRIx64 " %s (pagemap before %#"
		      PRIx64 ", after %#" PRIx64 ")",
		      errname(err, eb, 16), stop, p,
		      !in ? "not reported" : exp ? "not written" :
		      "written", fz->pm_pre[i], post);
	}
}

/*
 * --diff: does a PM_SCAN_WP_MATCHING walk of sc cut a hugetlb page, at an
 * end of the range or (conservatively: any max_pages below the range's
 * pages) at max_pages?
 */
static bool diff_huge_partial(struct fz *fz, const struct scan *sc)
{
	uint64_t st = sc->a.start, en = align_up(sc->a.end, PSZ);

	if (en <= st)
		return false;
	for (int k = K_HUGE_PRIV; k <= K_HUGE_SHARED; k++) {
		uint64_t b = sc->target == T_SELF ? slot_base(fz, k) :
			     fz->slot[k].res;
		uint64_t lo = st > b ? st : b;
		uint64_t hi = en < b + fz->slot[k].len ? en :
			      b + fz->slot[k].len;

		if (lo < hi && (((lo | hi) & (HPSZ - 1)) ||
				(sc->a.max_pages &&
				 sc->a.max_pages < (en - st) / PSZ)))
			return true;
	}
	return false;
}

static void op_scan(struct fz *fz, enum target t)
{
	enum op op = t == T_SELF ? OP_SCAN : t == T_CHILD ? OP_SCAN_CHILD :
		     OP_SCAN_DEAD;
	int fd = t == T_SELF ? fz->pm_self : t == T_CHILD ? fz->pm_child :
		 fz->pm_dead;
	uint64_t *r = &fz->rng, aend, wend, npre = 0, lo = 0, hi = 0;
	struct scan sc = { .target = t };
	struct pm_scan_arg out;
	struct page_region *v = NULL;
	bool have_pre = false, readable, flushed;
	int want, err;
	void *argp;
	long ret;
	char eb[2][16];

	sc.ak = pick_argk(r);
	/* vec may point at the argument: know where it goes first. */
	argp = (void *)(uintptr_t)(CP(P_ARG) + 16 + mw_rndn(r, 256) * 8);
	gen_scan(fz, r, &sc, argp);
	/*
	 * --diff: under PM_SCAN_WP_MATCHING a hugetlb page only partly in
	 * the range or in max_pages stops our walk at its start; 6.12 drops
	 * it and goes on (pagemap.rst, "Differences from mainline Linux").
	 */
	if (fz->diff && (sc.a.flags & PM_SCAN_WP_MATCHING) &&
	    diff_huge_partial(fz, &sc))
		sc.a.flags &= ~(uint64_t)PM_SCAN_WP_MATCHING;
	if (sc.ak == A_RW) {
		memset((char *)argp - 16, CANARY, sizeof(sc.a) + 32);
		memcpy(argp, &sc.a, sizeof(sc.a));
	} else {
		if (sc.vk == V_ARG) {
			sc.vk = V_CANARY;
			sc.a.vec = CP(P_CAN);
			sc.wcap = CAN_BYTES / RSZ;
		}
		argp = place_arg(fz, sc.ak, &sc.a, sizeof(sc.a), r);
	}
	want = scan_predict(fz, &sc);
	aend = align_up(sc.a.end, PSZ);
	describe_scan(fz, &sc, argp);
	if (fz->no_disrupt && !want && t != T_DEAD && sc.a.start >= ARENA &&
	    sc.a.start < fz->arena_end && aend > sc.a.start) {
		npre = (aend - sc.a.start) / PSZ;
		if (npre > ORACLE_MAX)
			npre = ORACLE_MAX;
		have_pre = pread(fd, fz->pm_pre, npre * 8,
				 sc.a.start / PSZ * 8) == (ssize_t)(npre * 8);
	}

	if (fz->trace)
		printf("# > %s\n", fz->desc);
	ret = ioctl(fd, PAGEMAP_SCAN, argp);
	err = ret < 0 ? errno : 0;
	/* A full buffer of regions (512) copied out, maybe: see below. */
	flushed = sc.vk == V_CANARY && sc.wcap >= 512 &&
		  memcmp((void *)(uintptr_t)sc.a.vec, fz->canary_page, RSZ);
	fz->outcome[op][err < NERR ? err : NERR - 1]++;
	memcpy(&out, argp && arg_readable(sc.ak) ? argp : (void *)&sc.a,
	       sizeof(out));
	if (fz->trace)
		printf("# call %" PRIu64 ": %s -> %ld %s walk_end %#" PRIx64
		       "\n", fz->calls, fz->desc, ret,
		       errname(err, eb[0], 16), (uint64_t)out.walk_end);

	check(fz, C_ERRNO, !err || (op_errs[op] & EB(err < 64 ? err : 0)),
	      "errno %s", errname(err, eb[0], 16));
	if (want) {
		check(fz, C_PREDICT, err == want, "got %s, want %s",
		      errname(err, eb[0], 16), errname(want, eb[1], 16));
	} else {
		bool efault_ok = sc.wcap == ~0ULL || sc.ak != A_RW ||
				 (sc.a.vec_len > sc.wcap && sc.a.vec);

		check(fz, C_PREDICT,
		      !err || err == ENOMEM || err == EINTR ||
		      (err == EPERM &&
		       (sc.a.flags & PM_SCAN_CHECK_WPASYNC)) ||
		      (err == EFAULT && efault_ok),
		      "valid arguments: %s", errname(err, eb[0], 16));
	}
	mix(fz, (uint64_t)op << 56 ^ (uint64_t)(ret < 0 ? -err : ret));

	/* The argument: only walk_end may change, and only after a walk. */
	if (sc.ak == A_RW && sc.vk != V_ARG) {
		struct pm_scan_arg b = out;

		b.walk_end = sc.a.walk_end;
		check(fz, C_MEMORY, !memcmp(&b, &sc.a, sizeof(b)) &&
		      canary_intact(fz, (uintptr_t)argp - 16,
				    (uintptr_t)argp) == (uintptr_t)argp &&
		      canary_intact(fz, (uintptr_t)argp + sizeof(b),
				    (uintptr_t)argp + sizeof(b) + 16) ==
		      (uintptr_t)argp + sizeof(b) + 16,
		      "the kernel changed the argument beyond walk_end");
		if (want)
			check(fz, C_MEMORY, out.walk_end == sc.a.walk_end,
			      "walk_end written (%#" PRIx64 ") on an argument "
			      "error", (uint64_t)out.walk_end);
	}
	wend = out.walk_end;
	if (!want && sc.ak == A_RW && sc.vk != V_ARG && err != EINTR) {
		check(fz, C_RESULT, wend >= sc.a.start && wend <= aend &&
		      wend % PSZ == 0,
		      "walk_end %#" PRIx64 " not page aligned in [start, "
		      "ALIGN(end) %#" PRIx64 "]", wend, aend);
		if (sc.a.start >= aend)
			check(fz, C_RESULT, wend == aend && ret <= 0,
			      "empty range: walk_end %#" PRIx64 ", ret %ld",
			      wend, ret);
	}
	if (ret >= 0 && !want) {
		check(fz, C_RESULT, (uint64_t)ret <= sc.a.vec_len &&
		      (sc.a.vec || !ret) && (uint64_t)ret <= sc.wcap,
		      "ret %ld, vec_len %" PRIu64 ", %" PRIu64
		      " regions fit at vec", ret, (uint64_t)sc.a.vec_len,
		      sc.wcap);
		/* With vec at the argument, walk_end overwrites region 1. */
		readable = sc.vk == V_CANARY || sc.vk == V_CROSS;
		if (readable && sc.ak == A_RW && (uint64_t)ret <= sc.wcap &&
		    (uint64_t)ret <= sc.a.vec_len) {
			v = malloc((ret ? ret : 1) * sizeof(*v));
			if (!v)
				mw_bail("malloc", &fz->seed);
			memcpy(v, (void *)(uintptr_t)sc.a.vec, ret * sizeof(*v));
			for (long i = 0; i < ret; i++) {
				if (v[i].end <= ARENA || v[i].start >= CP(P_END))
					continue;	/* ASLR'd mappings */
				mix(fz, v[i].start ^ v[i].end << 1 ^
				    v[i].categories << 60);
			}
			if (wend >= ARENA && wend <= CP(P_END))
				mix(fz, wend);
			check_regions(fz, &sc, v, ret, wend, have_pre, npre);
			free(v);
		}
	}
	/* vec's surroundings: the canary, restored for the next call. */
	if (sc.vk == V_CANARY || sc.vk == V_CROSS) {
		uint64_t w = (ret > 0 ? (uint64_t)ret : 0) * RSZ, bad;

		vec_window(&sc, &lo, &hi);
		if (err && !want)	/* a failed walk may leave regions */
			w = (sc.a.vec_len < sc.wcap ? sc.a.vec_len : sc.wcap) *
			    RSZ;
		if (err == EFAULT && sc.a.vec_len > sc.wcap)
			/*
			 * vec runs into the read-only page: the copy of a
			 * region may fault part-way, after its first bytes.
			 */
			w = hi - sc.a.vec;
		bad = canary_intact(fz, lo, sc.a.vec);
		if (bad == sc.a.vec && sc.a.vec + w < hi)
			bad = canary_intact(fz, sc.a.vec + w, hi);
		else if (bad == sc.a.vec)
			bad = hi;
		check(fz, C_MEMORY, bad == hi,
		      "byte at vec%+" PRId64 " changed (ret %ld %s, predicted"
		      " %s, vec_len %" PRIu64 ", %" PRIu64 " regions fit)",
		      (int64_t)(bad - sc.a.vec), ret, errname(err, eb[0], 16),
		      want ? errname(want, eb[1], 16) : "success",
		      (uint64_t)sc.a.vec_len, sc.wcap);
		memset((void *)(uintptr_t)lo, CANARY, hi - lo);
	}
	if (have_pre && (sc.a.flags & PM_SCAN_WP_MATCHING) &&
	    (err == EFAULT || err == EPERM) && sc.ak == A_RW &&
	    sc.vk != V_ARENA && sc.vk != V_ARG)
		check_arm_error(fz, &sc, fd, err, wend, npre, flushed);
	if (sc.vk == V_ARG || sc.ak == A_RW)
		memset((void *)(uintptr_t)CP(P_ARG), CANARY, PSZ);
}

static void op_scan_badcmd(struct fz *fz)
{
	uint64_t *r = &fz->rng;
	struct pm_scan_arg a = { .size = sizeof(a), .start = ARENA,
				 .end = ARENA + PSZ };
	unsigned long cmd;
	bool badfd = !mw_rndn(r, 4);
	int err, fd = badfd ? fz->maps_fd : fz->pm_self;
	char eb[16];
	long ret;

	switch (mw_rndn(r, 7)) {
	case 0:
		cmd = _IOC(_IOC_READ | _IOC_WRITE, 'f', 16,
			   mw_rndn(r, 2) ? 88 : 104);
		break;
	case 1:
		cmd = _IOR('f', 16, struct pm_scan_arg);
		break;
	case 2:
		cmd = _IOW('f', 16, struct pm_scan_arg);
		break;
	case 3:
		cmd = _IO('f', 16);
		break;
	case 4:
		cmd = _IOWR('f', 17 + mw_rndn(r, 14), struct pm_scan_arg);
		break;
	case 5:
		cmd = _IOWR('g', 16, struct pm_scan_arg);
		break;
	default:
		cmd = PAGEMAP_SCAN;
		badfd = true;
		fd = fz->maps_fd;
		break;
	}
	if (badfd)
		cmd = PAGEMAP_SCAN;
	snprintf(fz->desc, sizeof(fz->desc), "ioctl(%s, %#lx)",
		 badfd ? "/proc/self/maps" : "pagemap", cmd);
	ret = ioctl(fd, cmd, &a);
	err = ret < 0 ? errno : 0;
	fz->outcome[badfd ? OP_SCAN_BADFD : OP_SCAN_BADCMD]
		   [err < NERR ? err : NERR - 1]++;
	mix(fz, (uint64_t)(badfd ? OP_SCAN_BADFD : OP_SCAN_BADCMD) << 56 ^
	    (uint64_t)err);
	if (fz->trace)
		printf("# call %" PRIu64 ": %s -> %ld %s\n", fz->calls,
		       fz->desc, ret, errname(err, eb, 16));
	check(fz, C_ERRNO, err == ENOTTY, "got %s, want ENOTTY",
	      errname(err, eb, 16));
}

/* ---- userfaultfd ------------------------------------------------------- */

static bool uffd_range_bad(const struct fz *fz, uint64_t start, uint64_t len)
{
	return start % PSZ || len % PSZ || !len || start >= fz->uffd_ts ||
	       len > fz->uffd_ts - start;
}

/*
 * A range for a userfaultfd ioctl.  *arena: it lies in the arena, where
 * the fuzzer may register, fill and protect whatever it likes.
 */
static void gen_urange(struct fz *fz, uint64_t *r, __u64 *start,
		       __u64 *len, bool *arena)
{
	int k = mw_rndn(r, K_NKINDS);
	const struct slot *s = &fz->slot[k];
	uint64_t base = slot_base(fz, k), u = kinds[k].huge && mw_rndn(r, 4) ?
		       HPSZ : PSZ;

	switch (mw_rndn(r, 12)) {
	default:
		*start = base + mw_rndn(r, s->len / u) * u;
		*len = (1 + mw_rndn(r, mw_rndn(r, 2) ? 4 : s->len / u)) * u;
		break;
	case 0:
		*start = base;
		*len = s->len;
		break;
	case 1:
		*start = ARENA;
		*len = fz->arena_end - ARENA;
		break;
	case 2: case 3: {
		static const uint64_t l[] = { 0, 1, PSZ - 1, PSZ, PSZ + 1,
					      HPSZ, ~0ULL, ~0ULL - PSZ + 1,
					      1ULL << 47 };
		*start = pick_point(fz, r);
		*len = mw_rndn(r, 2) ? l[mw_rndn(r, 9)] : mw_rnd(r) & ~(PSZ - 1);
		break;
	}
	}
	*arena = *start >= ARENA && *start < fz->arena_end &&
		 *len <= fz->arena_end - *start;
}

static uint64_t pick_mode(uint64_t *r, uint64_t valid)
{
	switch (mw_rndn(r, 12)) {
	case 0:
		return mw_rnd(r);
	case 1:
		return 1ULL << mw_rndn(r, 64);
	default:
		return mw_rnd(r) & valid;
	}
}

/* Which uffd: A (async), S (sync + SIGBUS) or the uninitialised one. */
static int pick_uffd(struct fz *fz, uint64_t *r, char *name)
{
	uint64_t x = mw_rndn(r, 20);

	*name = x < 12 ? 'A' : x < 19 ? 'S' : 'U';
	return x < 12 ? fz->uffd_a : x < 19 ? fz->uffd_s : fz->uffd_u;
}

/*
 * Run a userfaultfd ioctl with the struct placed by ak; returns errno.
 * out gets the struct as the kernel left it (when readable).
 */
static int uffd_call(struct fz *fz, enum op op, int fd, unsigned long cmd,
		     const void *in, void *out, size_t len, enum argk ak,
		     int want)
{
	uint64_t *r = &fz->rng;
	void *argp = place_arg(fz, ak, in, len, r);
	char eb[2][16];
	long ret;
	int err;

	if (fz->trace)
		printf("# > %s, arg %p\n", fz->desc, argp);
	ret = ioctl(fd, cmd, argp);
	err = ret < 0 ? errno : 0;
	fz->outcome[op][err < NERR ? err : NERR - 1]++;
	memcpy(out, arg_readable(ak) ? argp : in, len);
	mix(fz, (uint64_t)op << 56 ^ (uint64_t)err);
	if (fz->trace)
		printf("# call %" PRIu64 ": %s, arg %p -> %ld %s\n", fz->calls,
		       fz->desc, argp, ret, errname(err, eb[0], 16));
	check(fz, C_ERRNO, !err || (op_errs[op] & EB(err < 64 ? err : 0)),
	      "errno %s", errname(err, eb[0], 16));
	if (want >= 0)
		check(fz, C_PREDICT, err == want, "got %s, want %s",
		      errname(err, eb[0], 16), errname(want, eb[1], 16));
	if (ak == A_RW)
		memset((void *)(uintptr_t)CP(P_ARG), CANARY, PSZ);
	return err;
}

/* userfaultfd(2) and UFFDIO_API with random flags and features. */
static void op_api(struct fz *fz)
{
	uint64_t *r = &fz->rng;
	/* Features of 6.1 + the series; POISON and MOVE came later. */
	const uint64_t known = 0x3fffULL | UFFD_FEATURE_WP_ASYNC;
	const uint64_t newer = 1ULL << 14 | 1ULL << 16;
	struct uffdio_api in = { .api = UFFD_API }, out;
	int flags = O_CLOEXEC | O_NONBLOCK, fd, err, want;
	enum argk ak = pick_argk(r);
	enum op op = OP_API;
	char eb[16];

	if (!mw_rndn(r, 4))
		flags = (mw_rndn(r, 2) ? O_CLOEXEC : 0) |
			(mw_rndn(r, 2) ? O_NONBLOCK : 0) |
			(mw_rndn(r, 2) ? UFFD_USER_MODE_ONLY : 0);
	if (!mw_rndn(r, 16))
		flags |= 1 << (1 + mw_rndn(r, 30));
	fd = syscall(__NR_userfaultfd, flags);
	err = fd < 0 ? errno : 0;
	fz->outcome[OP_UFFD_CREATE][err < NERR ? err : NERR - 1]++;
	mix(fz, (uint64_t)OP_UFFD_CREATE << 56 ^ (uint64_t)err);
	snprintf(fz->desc, sizeof(fz->desc), "userfaultfd(%#x)", flags);
	if (fz->trace)
		printf("# call %" PRIu64 ": %s -> %d %s\n", fz->calls,
		       fz->desc, fd, errname(err, eb, 16));
	check(fz, C_ERRNO, !err || (op_errs[OP_UFFD_CREATE] & EB(err)),
	      "errno %s", errname(err, eb, 16));
	check(fz, C_PREDICT, !err == !(flags & ~(O_CLOEXEC | O_NONBLOCK |
						   UFFD_USER_MODE_ONLY)),
	      "userfaultfd(%#x): %s", flags, errname(err, eb, 16));
	if (fd < 0)
		return;
	for (int round = 0, inited = 0; round < 1 + !mw_rndn(r, 4); round++) {
		switch (mw_rndn(r, 16)) {
		case 0:
			in.api = mw_rnd(r);
			break;
		case 1:
			in.api = UFFD_API ^ (1ULL << mw_rndn(r, 64));
			break;
		default:
			in.api = UFFD_API;
			break;
		}
		switch (mw_rndn(r, 20)) {
		case 0:
			in.features = mw_rnd(r);
			break;
		case 1:
			in.features = 1ULL << (17 + mw_rndn(r, 47));
			break;
		case 2:
			in.features = newer & mw_rnd(r);
			op = OP_API_NEW;
			break;
		default:
			in.features = mw_rnd(r) & known;
			break;
		}
		/* --diff: not the features 6.12 has beyond the series. */
		if (fz->diff)
			in.features &= ~newer;
		in.ioctls = SENTINEL;
		/* The answer is copied out, also on EINVAL (zeroed). */
		want = ak != A_RW ? EFAULT : inited || in.api != UFFD_API ||
		       (in.features & ~(known | newer)) ? EINVAL : -1;
		if (op == OP_API_NEW && want < 0)
			want = -1;	/* 6.1 EINVAL, 6.12 not */
		snprintf(fz->desc, sizeof(fz->desc),
			 "UFFDIO_API round %d: { .api = %#" PRIx64
			 ", .features = %#" PRIx64 " }", round,
			 (uint64_t)in.api, (uint64_t)in.features);
		err = uffd_call(fz, op, fd, UFFDIO_API, &in, &out, sizeof(in),
				ak, want);
		inited |= !err;
		if (ak != A_RW)
			continue;
		if (!err) {
			const uint64_t must = UFFD_FEATURE_WP_ASYNC |
					      UFFD_FEATURE_WP_UNPOPULATED |
					      UFFD_FEATURE_WP_HUGETLBFS_SHMEM;

			check(fz, C_UFFD_OUT, out.api == UFFD_API &&
			      (out.features & in.features) == in.features &&
			      (out.features & must) == must &&
			      out.ioctls == (1ULL << _UFFDIO_REGISTER |
					     1ULL << _UFFDIO_UNREGISTER |
					     1ULL << _UFFDIO_API),
			      "UFFDIO_API answered { %#" PRIx64 ", %#" PRIx64
			      ", %#" PRIx64 " }", (uint64_t)out.api,
			      (uint64_t)out.features, (uint64_t)out.ioctls);
		} else if (err == EINVAL) {
			check(fz, C_UFFD_OUT, !out.api && !out.features &&
			      !out.ioctls, "failed UFFDIO_API not zeroed: { %#"
			      PRIx64 ", %#" PRIx64 ", %#" PRIx64 " }",
			      (uint64_t)out.api, (uint64_t)out.features,
			      (uint64_t)out.ioctls);
		}
	}
	close(fd);
}

/*
 * Keep the fuzzer's memory safe: a valid range outside the arena may
 * only be registered for async write-protection (A, WP): a MISSING or
 * MINOR registration of the C library's memory, or a sync one, would
 * turn its faults into SIGBUS.
 */
static void op_register(struct fz *fz, bool reg)
{
	uint64_t *r = &fz->rng;
	struct uffdio_register in = { 0 }, out;
	enum argk ak = pick_argk(r);
	char name;
	int fd = pick_uffd(fz, r, &name), err, want;
	bool arena;

	gen_urange(fz, r, &in.range.start, &in.range.len, &arena);
	in.mode = mw_rndn(r, 3) ? UFFDIO_REGISTER_MODE_WP :
		  pick_mode(r, 7);
	/*
	 * --diff: never register a range again without WP.  Patch
	 * 0003 ends the protection here, where 6.12 keeps stale uffd-wp
	 * bits (and hangs on them), and the two traces would part there.
	 */
	if (fz->diff && in.mode && !(in.mode & ~7ULL))
		in.mode |= UFFDIO_REGISTER_MODE_WP;
	in.ioctls = SENTINEL;
	if (reg && !arena && !uffd_range_bad(fz, in.range.start,
					      in.range.len)) {
		fd = fz->uffd_a;
		name = 'A';
		in.mode = UFFDIO_REGISTER_MODE_WP;
	}
	if (!reg) {
		struct uffdio_range ur = in.range, uo;

		want = name == 'U' ? EINVAL : !arg_readable(ak) ? EFAULT :
		       uffd_range_bad(fz, ur.start, ur.len) ? EINVAL : -1;
		snprintf(fz->desc, sizeof(fz->desc),
			 "UFFDIO_UNREGISTER on %c: { %#" PRIx64 ", %#" PRIx64
			 " }", name, (uint64_t)ur.start, (uint64_t)ur.len);
		uffd_call(fz, OP_UNREGISTER, fd, UFFDIO_UNREGISTER, &ur, &uo,
			  sizeof(ur), ak, want);
		return;
	}
	want = name == 'U' ? EINVAL : !arg_readable(ak) ? EFAULT :
	       !in.mode || (in.mode & ~7ULL) ||
	       uffd_range_bad(fz, in.range.start, in.range.len) ? EINVAL : -1;
	snprintf(fz->desc, sizeof(fz->desc),
		 "UFFDIO_REGISTER on %c: { { %#" PRIx64 ", %#" PRIx64
		 " }, .mode = %#" PRIx64 " }", name,
		 (uint64_t)in.range.start, (uint64_t)in.range.len,
		 (uint64_t)in.mode);
	err = uffd_call(fz, OP_REGISTER, fd, UFFDIO_REGISTER, &in, &out,
			sizeof(in), ak, want);
	if (ak != A_RW)
		return;
	if (!err) {
		uint64_t io = out.ioctls;

		check(fz, C_UFFD_OUT,
		      (io & (1ULL << _UFFDIO_WAKE)) &&
		      (io & (1ULL << _UFFDIO_COPY)) &&
		      !!(io & (1ULL << _UFFDIO_WRITEPROTECT)) ==
		      !!(in.mode & UFFDIO_REGISTER_MODE_WP) &&
		      !!(io & (1ULL << _UFFDIO_CONTINUE)) ==
		      !!(in.mode & UFFDIO_REGISTER_MODE_MINOR) &&
		      !(io & ~0x1ffULL),
		      "UFFDIO_REGISTER mode %#" PRIx64 " answered ioctls %#"
		      PRIx64, (uint64_t)in.mode, io);
	} else {
		check(fz, C_UFFD_OUT, out.ioctls == SENTINEL,
		      "failed UFFDIO_REGISTER wrote ioctls %#" PRIx64,
		      (uint64_t)out.ioctls);
	}
}

static void op_writeprotect(struct fz *fz)
{
	uint64_t *r = &fz->rng;
	struct uffdio_writeprotect in = { 0 }, out;
	enum argk ak = pick_argk(r);
	char name;
	int fd = pick_uffd(fz, r, &name), want;
	bool arena;

	gen_urange(fz, r, &in.range.start, &in.range.len, &arena);
	in.mode = mw_rndn(r, 4) ? mw_rndn(r, 3) ? UFFDIO_WRITEPROTECT_MODE_WP : 0 :
		  pick_mode(r, 3);
	want = name == 'U' ? EINVAL : !arg_readable(ak) ? EFAULT :
	       uffd_range_bad(fz, in.range.start, in.range.len) ||
	       (in.mode & ~3ULL) || in.mode == 3 ? EINVAL : -1;
	snprintf(fz->desc, sizeof(fz->desc),
		 "UFFDIO_WRITEPROTECT on %c: { { %#" PRIx64 ", %#" PRIx64
		 " }, .mode = %#" PRIx64 " }", name,
		 (uint64_t)in.range.start, (uint64_t)in.range.len,
		 (uint64_t)in.mode);
	uffd_call(fz, OP_WP, fd, UFFDIO_WRITEPROTECT, &in, &out, sizeof(in),
		  ak, want);
}

/*
 * UFFDIO_CONTINUE, ZEROPAGE and COPY fill pages: only in the arena (a
 * valid range outside it is moved in).  Their last field is the result.
 */
static void op_fill(struct fz *fz, enum op op)
{
	uint64_t *r = &fz->rng;
	union {
		struct uffdio_continue c;
		struct uffdio_zeropage z;
		struct uffdio_copy cp;
	} in, out;
	uint64_t start, len, mode, res, okmodes, *resp;
	__u64 us, ul;
	enum argk ak = pick_argk(r);
	char name;
	int fd = pick_uffd(fz, r, &name), err, want;
	unsigned long cmd;
	size_t size;
	bool arena, bad;
	const char *what;

	gen_urange(fz, r, &us, &ul, &arena);
	start = us;
	len = ul;
	if (!arena && !uffd_range_bad(fz, start, len)) {
		start = fz->slot[mw_rndn(r, K_NKINDS)].res;
		len = PSZ * (1 + mw_rndn(r, 4));
	}
	if (op == OP_CONTINUE && mw_rndn(r, 2)) {	/* where MINOR makes sense */
		static const enum kind mk[] = { K_SHMEM, K_MEMFD,
						K_HUGE_SHARED };
		int k = mk[mw_rndn(r, 3)];

		start = slot_base(fz, k) + mw_rndn(r, fz->slot[k].len / PSZ) * PSZ;
		len = PSZ;
		if (kinds[k].huge) {
			start &= ~(HPSZ - 1);
			len = HPSZ;
		}
	}
	memset(&in, 0, sizeof(in));
	bad = uffd_range_bad(fz, start, len);
	/*
	 * --diff: one page (one huge page in hugetlb).  6.1 leaves a range
	 * registered next to a vma already registered on the same uffd as
	 * two vmas, where 6.12 merges them (pristine 6.1 does the same as
	 * ours), so a fill across that seam answers ENOENT here and EEXIST,
	 * EINVAL or success on 6.12.
	 */
	if (fz->diff && !bad) {
		int dk = addr_slot(fz, start);
		uint64_t one = dk >= 0 && kinds[dk].huge ? HPSZ : PSZ;

		if (len > one)
			len = one;
	}
	switch (op) {
	case OP_CONTINUE:
		okmodes = UFFDIO_CONTINUE_MODE_DONTWAKE |
			  UFFDIO_CONTINUE_MODE_WP;
		mode = mw_rndn(r, 3) ? mw_rnd(r) & okmodes : pick_mode(r, okmodes);
		in.c = (struct uffdio_continue){ { start, len }, mode,
						 (int64_t)SENTINEL };
		cmd = UFFDIO_CONTINUE;
		size = sizeof(in.c);
		resp = (uint64_t *)&out.c.mapped;
		what = "UFFDIO_CONTINUE";
		break;
	case OP_ZEROPAGE:
		okmodes = UFFDIO_ZEROPAGE_MODE_DONTWAKE;
		mode = mw_rndn(r, 3) ? mw_rnd(r) & okmodes : pick_mode(r, okmodes);
		in.z = (struct uffdio_zeropage){ { start, len }, mode,
						 (int64_t)SENTINEL };
		cmd = UFFDIO_ZEROPAGE;
		size = sizeof(in.z);
		resp = (uint64_t *)&out.z.zeropage;
		what = "UFFDIO_ZEROPAGE";
		break;
	default: {
		uint64_t src = mw_rndn(r, 4) ? CP(P_CAN) + mw_rndn(r, 4) * PSZ :
			       pick_point(fz, r);

		okmodes = UFFDIO_COPY_MODE_DONTWAKE | UFFDIO_COPY_MODE_WP;
		mode = mw_rndn(r, 3) ? mw_rnd(r) & okmodes : pick_mode(r, okmodes);
		in.cp = (struct uffdio_copy){ start, src, len, mode,
					      (int64_t)SENTINEL };
		cmd = UFFDIO_COPY;
		size = sizeof(in.cp);
		resp = (uint64_t *)&out.cp.copy;
		what = "UFFDIO_COPY";
		/* 6.1 takes src + len wrapping as EINVAL after the range. */
		bad = bad || src + len <= src;
		/* --diff: 6.12 checks src against the address space first. */
		if (fz->diff && !bad && !uaccess_ok(fz, src, len))
			in.cp.src = src = CP(P_CAN);
		break;
	}
	}
	want = name == 'U' ? EINVAL : !arg_readable(ak) ? EFAULT :
	       bad || (mode & ~okmodes) ? EINVAL : -1;
	if (op == OP_COPY && want == -1 && !uaccess_ok(fz, in.cp.src, len))
		want = -2;	/* src outside: 6.1 EFAULT, 6.12 EINVAL */
	snprintf(fz->desc, sizeof(fz->desc),
		 "%s on %c: { { %#" PRIx64 ", %#" PRIx64 " }, .mode = %#"
		 PRIx64 "%s%#" PRIx64 " }", what, name, start, len, mode,
		 op == OP_COPY ? ", .src = " : "",
		 (uint64_t)(op == OP_COPY ? in.cp.src : 0));
	err = uffd_call(fz, op, fd, cmd, &in, &out, size, ak,
			want < -1 ? -1 : want);
	if (ak != A_RW)
		return;
	memcpy(&res, resp, 8);
	if (want >= 0)
		check(fz, C_UFFD_OUT, res == SENTINEL,
		      "%s result written (%#" PRIx64 ") on an argument error",
		      what, res);
	else if (!err)
		check(fz, C_UFFD_OUT, res == len, "%s succeeded with %" PRId64
		      " of %" PRIu64 " bytes", what, (int64_t)res, len);
	else
		check(fz, C_UFFD_OUT, res == SENTINEL ||
		      (int64_t)res == -err ||
		      (err == EAGAIN && (int64_t)res > 0 && res < len),
		      "%s failed with %d but says %" PRId64, what, err,
		      (int64_t)res);
}

static void op_wake(struct fz *fz)
{
	uint64_t *r = &fz->rng;
	struct uffdio_range in, out;
	enum argk ak = pick_argk(r);
	char name;
	int fd = pick_uffd(fz, r, &name), want;
	bool arena;

	gen_urange(fz, r, &in.start, &in.len, &arena);
	want = name == 'U' ? EINVAL : !arg_readable(ak) ? EFAULT :
	       uffd_range_bad(fz, in.start, in.len) ? EINVAL : 0;
	snprintf(fz->desc, sizeof(fz->desc),
		 "UFFDIO_WAKE on %c: { %#" PRIx64 ", %#" PRIx64 " }", name,
		 (uint64_t)in.start, (uint64_t)in.len);
	uffd_call(fz, OP_WAKE, fd, UFFDIO_WAKE, &in, &out, sizeof(in), ak,
		  want);
}

static void op_uffd_badcmd(struct fz *fz)
{
	uint64_t *r = &fz->rng, buf[8] = { 0 }, out[8];
	/* Neither 6.1 nor 6.12 has these (MOVE 0x05 and POISON 0x08 skipped). */
	unsigned int nr = 0x09 + mw_rndn(r, 0x3f - 0x09);
	unsigned long cmd = _IOC(_IOC_READ | _IOC_WRITE, UFFDIO, nr,
				 8 * (1 + mw_rndn(r, 8)));

	snprintf(fz->desc, sizeof(fz->desc), "ioctl(uffd, %#lx)", cmd);
	uffd_call(fz, OP_UFFD_BADCMD, fz->uffd_a, cmd, buf, out, sizeof(buf),
		  A_RW, EINVAL);
}

/* ---- the main thread's own memory work --------------------------------- */

static void op_touch(struct fz *fz)
{
	uint64_t *r = &fz->rng;
	int k = mw_rndn(r, K_NKINDS), n = 1 + mw_rndn(r, 16);
	const struct slot *s = &fz->slot[k];
	uint64_t base = slot_base(fz, k), i = mw_rndn(r, s->len / PSZ);

	for (int j = 0; j < n && i < s->len / PSZ; j++, i++) {
		fz->touches++;
		snprintf(fz->desc, sizeof(fz->desc), "touch %s +%#" PRIx64,
			 kinds[k].name, (uint64_t)(i * PSZ));
		if (fz->trace)
			printf("# > %s\n", fz->desc);
		if (touch((char *)(uintptr_t)(base + i * PSZ + mw_rndn(r, 64)),
			  mw_rndn(r, 4), (char)fz->calls))
			fz->touch_faults++;
	}
}

static void op_clear_refs(struct fz *fz)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (write(fd, "4", 1) == 1)
			fz->clear_refs++;
		close(fd);
	}
}

/* ---- disruptors -------------------------------------------------------- */

static void child_writes(struct fz *fz, uint64_t seed)
{
	uint64_t r = seed;

	for (int n = 0; n < 32; n++) {
		int k = mw_rndn(&r, K_NKINDS);

		if (kinds[k].shared)
			continue;
		*(volatile char *)(uintptr_t)(slot_base(fz, k) +
					       mw_rndn(&r, fz->slot[k].len)) = 3;
	}
	_exit(0);
}

static void *disruptor_main(void *arg)
{
	struct disruptor *d = arg;
	struct fz *fz = d->fz;
	uint64_t *r = &d->rng;

	while (!atomic_load(&fz->stop)) {
		enum dop op = mw_rndn(r, D_N);
		int k = mw_rndn(r, K_NKINDS);
		struct slot *s = &fz->slot[k];
		uint64_t u = kinds[k].huge ? HPSZ : PSZ, n = s->len / u;
		uint64_t a = mw_rndn(r, n), b = a + 1 + mw_rndn(r, n - a), base;
		int ret = 0;
		char *p;

		usleep(200 + mw_rndn(r, 3000));
		pthread_mutex_lock(&s->mu);
		base = atomic_load(&s->base);
		p = (char *)(uintptr_t)(base + a * u);
		begin(fz, d->tid, "%s %s [%p, +%#" PRIx64 ")", dop_name[op],
		      kinds[k].name, (void *)p, (b - a) * u);
		switch (op) {
		case D_DONTNEED:
			ret = madvise(p, (b - a) * u, MADV_DONTNEED);
			break;
		case D_PAGEOUT:
			ret = madvise(p, (b - a) * u, MADV_PAGEOUT);
			break;
		case D_COLLAPSE:
			ret = madvise((void *)(uintptr_t)base, s->len,
				      MADV_COLLAPSE);
			break;
		case D_MPROTECT:
			ret = mprotect(p, (b - a) * u, PROT_READ) ||
			      mprotect(p, (b - a) * u, PROT_READ | PROT_WRITE);
			break;
		case D_MREMAP: {
			uint64_t to = base == s->res ? s->res + s->len : s->res;
			void *q = mremap((void *)(uintptr_t)base, s->len,
					 s->len, MREMAP_MAYMOVE | MREMAP_FIXED,
					 (void *)(uintptr_t)to);

			if (q == MAP_FAILED)
				ret = -1;
			else
				atomic_store(&s->base, to);
			break;
		}
		case D_REMAP:
			ret = map_kind(s, base, false);
			break;
		case D_POPULATE:
			ret = madvise(p, (b - a) * u, MADV_POPULATE_WRITE);
			break;
		default: {
			pid_t pid = fork();
			int st;

			if (!pid)
				child_writes(fz, mw_rnd(r));
			ret = pid < 0 || waitpid(pid, &st, 0) != pid ||
			      !WIFEXITED(st) || WEXITSTATUS(st);
			break;
		}
		}
		end(fz, d->tid, "%s -> %d (%s)", dop_name[op], ret,
		    ret ? strerror(errno) : "ok");
		pthread_mutex_unlock(&s->mu);
		atomic_fetch_add(ret ? &fz->dfail[op] : &fz->dops[op], 1);
	}
	return NULL;
}

/* ---- main -------------------------------------------------------------- */

/*
 * A call or disruptor operation that does not return within hang_s
 * seconds is a hang (a livelock in the kernel, or an unhandled
 * userfault): report it with the event log and exit, rather than let the
 * run time out with no clue.
 */
static void *watchdog_main(void *arg)
{
	struct fz *fz = arg;

	while (!atomic_load(&fz->wd_stop)) {
		uint64_t t = mw_now_ns();

		for (unsigned int i = 0; i <= fz->nthreads; i++) {
			uint64_t since = atomic_load(&fz->busy_since[i]);

			if (!since || since > t ||
			    t - since < fz->hang_s * 1000000000ULL)
				continue;
			printf("not ok 2 - hang: %s %u did not return in %u s:"
			       " %s\n#   %s\n",
			       i ? "disruptor" : "main thread", i, fz->hang_s,
			       fz->busy_what[i], i ? "" : fz->desc);
			printf("# the last events (thread, ms before the "
			       "report):\n");
			pthread_mutex_lock(&fz->log_mu);
			for (uint64_t n = fz->log_next > LOG_N ?
			     fz->log_next - LOG_N : 0; n < fz->log_next; n++)
				printf("#   %d %8.1f %s\n", fz->log[n % LOG_N].tid,
				       (t - fz->log[n % LOG_N].t) / 1e6,
				       fz->log[n % LOG_N].what);
			pthread_mutex_unlock(&fz->log_mu);
			printf("# FAILED: seed %" PRIu64 "; replay: %s --seed %"
			       PRIu64 " --calls %" PRIu64 "\n", fz->seed,
			       fz->argv0, fz->seed, fz->max_calls);
			fflush(stdout);
			_exit(1);
		}
		usleep(500000);
	}
	return NULL;
}

static void one_call_(struct fz *fz, uint64_t x);

/*
 * --trace-state: after every call, a hash of the arena's present, swap and
 * uffd-wp bits (/proc/self/pagemap).  Diffing two kernels' traces finds
 * the first call after which their memory states differ, which the
 * answers alone may show only much later.
 */
static void trace_state(struct fz *fz)
{
	const uint64_t bits = 1ULL << 63 | 1ULL << 62 | 1ULL << 57;
	uint64_t h = 0xcbf29ce484222325ULL, e[512];

	for (uint64_t a = ARENA; a < fz->arena_end; a += 512 * PSZ) {
		uint64_t n = (fz->arena_end - a) / PSZ;

		if (n > 512)
			n = 512;
		if (pread(fz->pm_self, e, n * 8, a / PSZ * 8) != (ssize_t)(n * 8))
			mw_bail("pread pagemap", &fz->seed);
		for (uint64_t i = 0; i < n; i++)
			h = (h ^ (e[i] & bits) ^ (a / PSZ + i)) *
			    0x100000001b3ULL;
	}
	printf("# state %" PRIu64 ": %016" PRIx64 "\n", fz->calls, h);
}

static void one_call(struct fz *fz)
{
	uint64_t x = mw_rndn(&fz->rng, 1000);

	snprintf(fz->desc, sizeof(fz->desc), "(not described)");
	begin(fz, 0, "call %" PRIu64 " (%" PRIu64 ")", fz->calls, x);
	one_call_(fz, x);
	end(fz, 0, "call %" PRIu64 ": %s", fz->calls, fz->desc);
	if (fz->trace_state)
		trace_state(fz);
}

static void one_call_(struct fz *fz, uint64_t x)
{
	if (x < 560)
		op_scan(fz, T_SELF);
	else if (x < 660)
		op_scan(fz, T_CHILD);
	else if (x < 670)
		op_scan(fz, T_DEAD);
	else if (x < 690)
		op_scan_badcmd(fz);
	else if (x < 710)
		op_api(fz);
	else if (x < 760)
		op_register(fz, true);
	else if (x < 790)
		op_register(fz, false);
	else if (x < 870)
		op_writeprotect(fz);
	else if (x < 910)
		op_fill(fz, OP_CONTINUE);
	else if (x < 930)
		op_fill(fz, OP_ZEROPAGE);
	else if (x < 950)
		op_fill(fz, OP_COPY);
	else if (x < 960)
		op_wake(fz);
	else if (x < 965)
		op_uffd_badcmd(fz);
	else if (x < 999)
		op_touch(fz);
	else
		op_clear_refs(fz);
}

static void usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [--seed N] [--calls N] [--seconds S] "
		"[--no-disrupt] [--threads N] [--hang-seconds S] [--trace] "
		"[--trace-state] [--diff] [--quiet]\n", argv0);
	exit(2);
}

static void summary(struct fz *fz, double secs)
{
	char eb[16];

	printf("# %" PRIu64 " calls in %.1f s: %.0f calls/s; %" PRIu64
	       " touches (%" PRIu64 " faulted), %" PRIu64 " clear_refs\n",
	       fz->calls, secs, secs > 0 ? fz->calls / secs : 0.0,
	       fz->touches, fz->touch_faults, fz->clear_refs);
	for (int op = 0; op < OP_N; op++) {
		char line[512];
		int n = 0;

		for (int e = 0; e < NERR; e++)
			if (fz->outcome[op][e])
				n += snprintf(line + n, sizeof(line) - n,
					      " %s=%" PRIu64,
					      errname(e, eb, sizeof(eb)),
					      fz->outcome[op][e]);
		if (n)
			printf("# outcome %-20s%s\n", op_name[op], line);
	}
	printf("# oracle: %" PRIu64 " pages compared with pagemap, %" PRIu64
	       " raced, %" PRIu64 " written pages checked re-protected\n",
	       fz->oracle_pages, fz->oracle_races, fz->wp_checked);
	printf("# completeness: %" PRIu64 " written pages checked, %" PRIu64
	       " raced, %" PRIu64 " WP-async probes; %" PRIu64
	       " failed armings checked: %" PRIu64 " pages armed, %" PRIu64
	       " kept written\n", fz->cmpl_pages, fz->cmpl_races,
	       fz->cmpl_probes, fz->armerr_calls, fz->armerr_armed,
	       fz->armerr_kept);
	if (!fz->no_disrupt)
		for (int d = 0; d < D_N; d++)
			printf("# disruptor %-15s %6lu done %6lu failed\n",
			       dop_name[d],
			       atomic_load(&fz->dops[d]),
			       atomic_load(&fz->dfail[d]));
	printf("# digest %016" PRIx64 "%s\n", fz->digest, fz->no_disrupt ?
	       " (compare between kernels: same seed, same calls)" :
	       " (with disruptors: not repeatable)");
}

int main(int argc, char **argv)
{
	struct fz *fz = calloc(1, sizeof(*fz));
	struct disruptor *d = NULL;
	pthread_t wd;
	struct sigaction sa = { .sa_handler = mw_on_fault };
	bool calls_given = false;
	double t0, tend;
	int failed = 0, t = 0;

	if (!fz)
		return 2;
	fz->seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	fz->nthreads = 2;
	fz->hang_s = 60;
	pthread_mutex_init(&fz->log_mu, NULL);
	fz->max_calls = 100000;
	fz->argv0 = argv[0];
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			fz->seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--calls") && i + 1 < argc) {
			fz->max_calls = strtoull(argv[++i], NULL, 0);
			calls_given = true;
		} else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			fz->seconds = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			fz->nthreads = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--hang-seconds") && i + 1 < argc)
			fz->hang_s = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--no-disrupt"))
			fz->no_disrupt = true;
		else if (!strcmp(argv[i], "--trace"))
			fz->trace = true;
		else if (!strcmp(argv[i], "--trace-state"))
			fz->trace = fz->trace_state = true;
		else if (!strcmp(argv[i], "--diff"))
			fz->diff = true;
		else if (!strcmp(argv[i], "--quiet"))
			fz->quiet = true;
		else
			usage(argv[0]);
	}
	if (fz->seconds && !calls_given)
		fz->max_calls = UINT64_MAX;
	if (fz->nthreads > 16)
		usage(argv[0]);
	if (fz->no_disrupt)
		fz->nthreads = 0;
	tap_guest_only();
	/* The same layout on every run: no address-space randomisation. */
	mw_no_aslr(argv);

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* With disruptors pagemap cannot be an oracle: no checks 7, 9, 10. */
	printf("TAP version 13\n1..%d\n", C_N + 1 - 3 * !fz->no_disrupt);
	printf("# pmfuzz seed %" PRIu64 "; replay: %s --seed %" PRIu64,
	       fz->seed, argv[0], fz->seed);
	if (fz->max_calls != UINT64_MAX)
		printf(" --calls %" PRIu64, fz->max_calls);
	if (fz->seconds)
		printf(" --seconds %u", fz->seconds);
	printf("%s%s", fz->no_disrupt ? " --no-disrupt" : "",
	       fz->diff ? " --diff" : "");
	if (!fz->no_disrupt)
		printf(" --threads %u", fz->nthreads);
	printf("\n");
	fz->rng = fz->seed;

	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	fz->pm_self = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	fz->maps_fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	fz->pm_pre = malloc(ORACLE_MAX * 8);
	fz->pm_post = malloc(ORACLE_MAX * 8);
	fz->pm_rep = malloc(ORACLE_MAX);
	fz->fup = malloc(ORACLE_MAX * sizeof(*fz->fup));
	if (fz->pm_self < 0 || fz->maps_fd < 0 || !fz->pm_pre || !fz->pm_post ||
	    !fz->pm_rep || !fz->fup)
		mw_bail("open pagemap", &fz->seed);
	probe_task_size(fz);
	probe_zero_pfn(fz);
	setup_ctrl(fz);
	setup_slots(fz);
	populate(fz);
	setup_uffd(fz);
	setup_children(fz);
	printf("ok 1 setup: arena [%#" PRIx64 ", %#" PRIx64 "), ctrl %#"
	       PRIx64 ", TASK_SIZE_MAX %#" PRIx64 ", zero pfn %#" PRIx64
	       ", %u disruptor threads\n", (uint64_t)ARENA, fz->arena_end,
	       (uint64_t)CTRL_BASE, fz->tsm, fz->zero_pfn, fz->nthreads);

	if (fz->nthreads) {
		d = calloc(fz->nthreads, sizeof(*d));
		if (!d)
			mw_bail("calloc", &fz->seed);
		for (unsigned int i = 0; i < fz->nthreads; i++) {
			d[i].fz = fz;
			d[i].rng = fz->seed ^ (0xd15c0ULL + i);
			d[i].tid = 1 + i;
			if (pthread_create(&d[i].th, NULL, disruptor_main,
					   &d[i]))
				mw_bail("pthread_create", &fz->seed);
		}
	}
	if (pthread_create(&wd, NULL, watchdog_main, fz))
		mw_bail("pthread_create", &fz->seed);
	t0 = mw_now_s();
	tend = fz->seconds ? t0 + fz->seconds : 0;
	while (fz->calls < fz->max_calls) {
		uint64_t before = fz->touches + fz->clear_refs;

		one_call(fz);
		if (fz->touches + fz->clear_refs == before)
			fz->calls++;
		if (fz->calls % 64 == 0 && tend && mw_now_s() >= tend)
			break;
		if (fz->calls && fz->calls % 10000 == 0 &&
		    fz->touches + fz->clear_refs == before && !fz->quiet)
			printf("# %" PRIu64 " calls, %.0f s, digest %016" PRIx64
			       "\n", fz->calls, mw_now_s() - t0, fz->digest);
	}
	atomic_store(&fz->stop, true);
	for (unsigned int i = 0; i < fz->nthreads; i++)
		pthread_join(d[i].th, NULL);
	atomic_store(&fz->wd_stop, true);
	pthread_join(wd, NULL);
	summary(fz, mw_now_s() - t0);

	/* A check that never ran proves nothing: it fails. */
	for (int c = 0; c < C_N; c++) {
		bool bad = fz->fails[c] || !fz->checks[c];

		if (oracle_chk(c) && !fz->no_disrupt)
			continue;
		printf("%s %d - %s (%" PRIu64 " checks, %" PRIu64 " failed%s)\n",
		       bad ? "not ok" : "ok", t + 2, chk_name[c],
		       fz->checks[c], fz->fails[c],
		       fz->checks[c] ? "" : ", never exercised");
		failed += bad;
		t++;
	}
	if (fz->child > 0) {
		close(fz->child_pipe);
		waitpid(fz->child, NULL, 0);
	}
	printf("# %d passed, %d failed\n", t + 1 - failed, failed);
	if (failed)
		printf("# FAILED: seed %" PRIu64 "; replay: %s --seed %" PRIu64
		       " --calls %" PRIu64 "%s\n", fz->seed, argv[0],
		       fz->seed, fz->calls, fz->no_disrupt ?
		       " --no-disrupt" : "");
	return failed ? 1 : 0;
}
