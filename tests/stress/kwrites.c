// SPDX-License-Identifier: MIT
/*
 * kwrites: writes by the kernel into write-tracked memory.  A buffer
 * registered for UFFD_FEATURE_WP_ASYNC write-protection and armed is
 * written not by the program's own stores but by the kernel on its behalf:
 *
 *   read-file   read(2) (pread) from a file on /mnt/disk, page-cache copy
 *   read-pipe   read(2) from a pipe another process fills
 *   pvwritev    process_vm_writev(2) from another process
 *   proc-mem    pwrite(2) to /proc/PID/mem from another process (FOLL_FORCE)
 *   odirect     pread(2) of an O_DIRECT file on /mnt/disk: the block layer
 *               writes pages pinned with FOLL_WRITE
 *   io-uring    IORING_OP_READ, buffered and O_DIRECT, through io_uring
 *
 * on anonymous 4K pages, a PMD-mapped THP and shmem (with --sparse instead:
 * two large reservations armed untouched, see below).  For each pair:
 *
 *  exact   arm, let the kernel write some runs of pages (sub-page offsets
 *          where the kind allows), then a get+reset (PAGEMAP_SCAN,
 *          PM_SCAN_WP_MATCHING, mask = return = WRITTEN) must report
 *          exactly the pages written, and the data must be there;
 *  reset   a harvester thread loops get+reset over the buffer while the
 *          kernel writes: every page of every write must be reported by a
 *          get that ended after the write began (none lost, the final get
 *          after the last write included), and every report must have a
 *          write that began before the get ended and ended after the get
 *          that reported the page before began (no false positive).
 *
 * Events are stamped by one shared counter, as in wostress.  --self-test
 * changes the answers the checks see, for each pair: a written page
 * dropped from one get (as if the kernel had not reported it) and an
 * unwritten page added to another (in the reset test, to the first
 * harvest, made before any write), and passes only if the checks find
 * both, for every pair.  --pvw no: the kernel has no
 * CONFIG_CROSS_MEMORY_ATTACH, process_vm_writev must fail with ENOSYS
 * (asserted, not skipped).
 *
 *   kwrites [--seed N] [--rounds N] [--writes N] [--pvw yes|no]
 *           [--only KIND] [--self-test] [--sparse [--sparse-mib M]]
 *
 * --only runs one kind of write (a name above), on the three memories.
 *
 * --sparse runs the pairs on two reservations of M MiB (default 1024)
 * instead, anonymous MAP_NORESERVE, one MADV_NOHUGEPAGE (as Wine maps its
 * views) and one with THP allowed, registered and armed untouched
 * (WP_UNPOPULATED: where the kernel has it, a PMD-level marker per 2 MiB):
 * each kernel write lands in a 2 MiB nobody touched before, mostly.
 * Before each exact round one disruption of a 2 MiB chunk (MADV_DONTNEED
 * of a range with edges inside chunks, mremap of an aligned chunk out and
 * back, munmap + mmap + arm of a chunk, un-protect + re-protect, a re-arm
 * of part of a chunk, fork) and a get+reset that absorbs it; the round's
 * get must still be exact.  Then VmPTE must be back at its value before
 * the reservations after their munmap (no page-table leak), and where the
 * kernel has the marker's debugfs counters, their changes are printed and
 * `installed` and `expanded_fault` must have moved.
 *
 * TAP output.  Runs only in the memwatch test guest (memwatch.guest=1).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <linux/fs.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
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
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mw-test.h"
#include "mw-uring.h"
#include "mw-marker.h"

#define PSZ		4096UL
#define HPSZ		(2UL << 20)
#define FILE_SZ		(8UL << 20)
#define MAXRUN		16		/* pages per kernel write */
#define MAXREP		4096		/* regions per get */

enum mkind { M_ANON, M_THP, M_SHMEM, M_SPARSE, M_SPARSE_THP, M_N };
static const char *const mname[M_N] = {
	"anon", "thp", "shmem", "sparse", "sparse-thp",
};
/* The sparse ones: g.sparse_len. */
static const size_t msize[M_N] = { 256 << 10, 2 * HPSZ, 256 << 10 };

enum wkind { W_FILE, W_PIPE, W_PVW, W_PROCMEM, W_ODIRECT, W_URING, W_N };
static const char *const wname[W_N] = {
	"read-file", "read-pipe", "pvwritev", "proc-mem", "odirect", "io-uring",
};

/* A command to the helper process, which writes into our memory. */
struct hcmd {
	int op;			/* W_PIPE, W_PVW, W_PROCMEM; -1: exit */
	uint64_t addr, len, seq;
};

struct mem {
	char *base;
	size_t len, npages;
};

/* A kernel write: its pages [p0, p1) and its span on the shared clock. */
struct kw {
	uint32_t p0, p1;
	uint64_t tb, te;
};

/* A harvest: its span and the pages it reported. */
struct harvest {
	uint64_t c0, c1;
	uint32_t n;		/* pages in rep */
	uint32_t *rep;
};

static struct {
	uint64_t seed, rng;
	unsigned int rounds, writes;
	bool self_test, pvw_expected, sparse;
	size_t sparse_len;
	int act[M_N], nact;		/* the memories the pairs run on */
	uint64_t disrupted[8];		/* --sparse: per disruption */
	int uffd, pm, ffd, dfd, hcmd_w, hrep_r, pipe_r;
	pid_t helper;
	struct mem mem[M_N];
	char *bounce;			/* O_DIRECT source pattern check */
	struct mw_ring ring;		/* io_uring (mw-uring.h) */
	bool have_uring;
	_Atomic uint64_t clk;
	/* the concurrent phase */
	atomic_bool stop;
	struct harvest *hv;
	size_t nhv, caphv;
	enum mkind hm;
	int herr;
	/*
	 * --self-test: the page dropped from the next answer that has it,
	 * the page added to the next answer (0: none), and how many were.
	 */
	_Atomic uint64_t drop_next, add_next;
	_Atomic uint64_t dropped, added;
	_Atomic unsigned int nharv;	/* harvests recorded */
} g;

static uint64_t tick(void)
{
	return atomic_fetch_add(&g.clk, 1);
}

/* The file's content: 8-byte words holding their own offset, salted. */
static uint64_t fword(uint64_t off)
{
	return off * 0x9e3779b97f4a7c15ULL ^ 0x6b77726974657321ULL;
}

/* What the helper writes for write number seq: words of seq and index. */
static uint64_t hword(uint64_t seq, uint64_t i)
{
	return seq << 32 ^ i ^ 0x68656c7065720000ULL;
}

/* ---- the helper process ------------------------------------------------ */

static int xwrite(int fd, const void *p, size_t n)
{
	return mw_xio(fd, (void *)p, n, true);
}

static int xread(int fd, void *p, size_t n)
{
	return mw_xio(fd, p, n, false);
}

static void helper_main(pid_t parent, int cmd_r, int rep_w, int pipe_w)
{
	static uint64_t buf[MAXRUN * PSZ / 8];
	char path[64];
	struct hcmd c;
	int memfd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)parent);
	memfd = open(path, O_RDWR | O_CLOEXEC);
	while (!xread(cmd_r, &c, sizeof(c)) && c.op >= 0) {
		struct iovec l = { buf, c.len };
		struct iovec r = { (void *)(uintptr_t)c.addr, c.len };
		int err = 0;

		for (uint64_t i = 0; i < c.len / 8 && i < sizeof(buf) / 8; i++)
			buf[i] = hword(c.seq, i);
		switch (c.op) {
		case W_PIPE:
			if (xwrite(pipe_w, buf, c.len))
				err = errno;
			break;
		case W_PVW:
			if (syscall(__NR_process_vm_writev, parent, &l, 1, &r,
				    1, 0) != (long)c.len)
				err = errno ? errno : EIO;
			break;
		default:
			if (memfd < 0)
				err = EBADF;
			else if (pwrite(memfd, buf, c.len, (off_t)c.addr) !=
				 (ssize_t)c.len)
				err = errno ? errno : EIO;
			break;
		}
		if (xwrite(rep_w, &err, sizeof(err)))
			break;
	}
	_exit(0);
}

static void start_helper(void)
{
	int c[2], r[2], p[2];
	pid_t parent = getpid();

	if (pipe2(c, O_CLOEXEC) || pipe2(r, O_CLOEXEC) || pipe2(p, O_CLOEXEC))
		mw_bail("pipe", &g.seed);
	g.helper = fork();
	if (g.helper < 0)
		mw_bail("fork", &g.seed);
	if (!g.helper) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(c[1]);
		close(r[0]);
		close(p[0]);
		helper_main(parent, c[0], r[1], p[1]);
	}
	close(c[0]);
	close(r[1]);
	close(p[1]);
	g.hcmd_w = c[1];
	g.hrep_r = r[0];
	g.pipe_r = p[0];
}

/* The helper writes [addr, addr + len); returns its errno. */
static int helper_write(int op, uint64_t addr, uint64_t len, uint64_t seq)
{
	struct hcmd c = { op, addr, len, seq };
	int err;

	if (xwrite(g.hcmd_w, &c, sizeof(c)))
		mw_bail("helper command", &g.seed);
	if (op == W_PIPE &&
	    xread(g.pipe_r, (void *)(uintptr_t)addr, len))
		mw_bail("read from the pipe", &g.seed);
	if (xread(g.hrep_r, &err, sizeof(err)))
		mw_bail("helper reply", &g.seed);
	return err;
}

/* ---- memory and tracking ----------------------------------------------- */

/*
 * Map memory m (at 'at' when given), populate it (a THP: PMD-mapped huge
 * pages), register it for async write-protection and arm it.
 */
static bool is_sparse(enum mkind m)
{
	return m == M_SPARSE || m == M_SPARSE_THP;
}

static void arm_range(void *p, size_t len, bool reg)
{
	if ((reg && mw_uffd_register_wp(g.uffd, p, len)) ||
	    mw_uffd_wp(g.uffd, p, len, true))
		mw_bail("register and arm", &g.seed);
}

/* Anonymous MAP_NORESERVE at 'at' (MAP_FIXED), THP as sparse memory m. */
static void *map_sparse_at(enum mkind m, char *at, size_t len)
{
	void *p = mmap(at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE |
		       MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);

	if (p == MAP_FAILED)
		mw_bail("mmap", &g.seed);
	madvise(p, len, m == M_SPARSE_THP ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	return p;
}

/* The whole reservation of a sparse memory: its length and the park. */
static size_t sparse_span(void)
{
	return g.sparse_len + HPSZ;
}

/*
 * Sparse memory m: g.sparse_len bytes alone in their 512 GiB (no other
 * mapping shares their page tables: munmap frees them all) and a spare
 * 2 MiB behind them (the park mremap moves a chunk to), registered and
 * armed untouched.
 */
static void map_sparse(enum mkind m)
{
	struct mem *mm = &g.mem[m];
	size_t len = g.sparse_len;
	char *p = mw_reserve_alone(sparse_span());

	if (!p)
		mw_bail("mmap a reservation", &g.seed);
	mm->base = map_sparse_at(m, p, len);
	mm->len = len;
	mm->npages = len / PSZ;
	arm_range(mm->base, len, true);
}

static void map_mem(enum mkind m, char *at)
{
	struct mem *mm = &g.mem[m];
	size_t len = msize[m];
	char *p = at ? mmap(at, len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) :
		  mmap(NULL, len + (m == M_THP ? HPSZ : 0),
		       PROT_READ | PROT_WRITE,
		       (m == M_SHMEM ? MAP_SHARED : MAP_PRIVATE) |
		       MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		mw_bail("mmap", &g.seed);
	if (m == M_THP) {
		p = (char *)(((uintptr_t)p + HPSZ - 1) & ~(HPSZ - 1));
		madvise(p, len, MADV_HUGEPAGE);
	} else if (m == M_ANON) {
		madvise(p, len, MADV_NOHUGEPAGE);
	}
	memset(p, 0x11, len);		/* populated */
	mm->base = p;
	mm->len = len;
	mm->npages = len / PSZ;
	arm_range(p, len, true);
}

/*
 * --sparse: one disruption of sparse memory m before an exact round (its
 * get+reset follows, which absorbs what it leaves written).
 */
static void disrupt(enum mkind m)
{
	struct mem *mm = &g.mem[m];
	size_t nch = mm->len / HPSZ, ch = mw_rndn(&g.rng, nch);
	char *c = mm->base + ch * HPSZ, *park = mm->base + mm->len;
	size_t off = mw_rndn(&g.rng, 512) * PSZ;
	size_t len = (1 + mw_rndn(&g.rng, 768)) * PSZ;
	int op = mw_rndn(&g.rng, 6);

	if (off + len > mm->len - ch * HPSZ)
		len = mm->len - ch * HPSZ - off;
	switch (op) {
	case 0:		/* DONTNEED, edges inside chunks */
		if (madvise(c + off, len, MADV_DONTNEED))
			mw_bail("MADV_DONTNEED", &g.seed);
		break;
	case 1:		/* mremap out and back; without EVENT_REMAP: again */
		if (mremap(c, HPSZ, HPSZ, MREMAP_MAYMOVE | MREMAP_FIXED,
			   park) == MAP_FAILED ||
		    mremap(park, HPSZ, HPSZ, MREMAP_MAYMOVE | MREMAP_FIXED,
			   c) == MAP_FAILED ||
		    mmap(park, HPSZ, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
			 MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED)
			mw_bail("mremap out and back", &g.seed);
		arm_range(c, HPSZ, true);
		break;
	case 2:		/* munmap + mmap: an empty chunk, armed */
		map_sparse_at(m, c, HPSZ);
		arm_range(c, HPSZ, true);
		break;
	case 3:		/* un-protect and re-protect */
		if (mw_uffd_wp(g.uffd, c + off, len, false))
			mw_bail("un-protect", &g.seed);
		arm_range(c + off, len, false);
		break;
	case 4:		/* re-arm a part */
		arm_range(c + off, len, false);
		break;
	default: {	/* fork, the child writes into its copy and exits */
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			c[off] = 1;
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid ||
		    !WIFEXITED(st) || WEXITSTATUS(st))
			mw_bail("fork", &g.seed);
		break;
	}
	}
	g.disrupted[op]++;
}

/*
 * The THP memory anew: a PMD-mapped THP armed as a whole, which the first
 * write into it splits (a write fault on a huge PMD).
 */
static void fresh_thp(void)
{
	munmap(g.mem[M_THP].base, g.mem[M_THP].len);
	map_mem(M_THP, g.mem[M_THP].base);
}

/* Is the THP still PMD-mapped? (KPF_THP of the first page.) */
static bool thp_mapped(void)
{
	uint64_t e = 0, f = 0;
	int kpf = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	bool r = false;

	if (kpf < 0)
		return false;
	if (pread(g.pm, &e, 8, (uintptr_t)g.mem[M_THP].base / PSZ * 8) == 8 &&
	    (e >> 63) && pread(kpf, &f, 8, (e & ((1ULL << 55) - 1)) * 8) == 8)
		r = (f >> 22) & 1;
	close(kpf);
	return r;
}

/*
 * get+reset over the whole of memory m: the pages reported, in out[]
 * (page indexes); returns their number, or -errno.
 */
static __thread struct page_region get_vec[MAXREP];

static long get_reset(enum mkind m, uint32_t *out, size_t cap)
{
	struct page_region *v = get_vec;
	struct mem *mm = &g.mem[m];
	struct pm_scan_arg a = mw_ww_arg((uintptr_t)mm->base,
					 (uintptr_t)mm->base + mm->len, true,
					 v, MAXREP);
	long n = ioctl(g.pm, PAGEMAP_SCAN, &a), np = 0;

	if (n < 0)
		return -errno;
	if (a.walk_end != a.end)
		return -ENOSPC;	/* MAXREP regions can't run out */
	for (long i = 0; i < n; i++)
		for (uint64_t p = v[i].start; p < v[i].end; p += PSZ) {
			uint64_t pg = (p - a.start) / PSZ;

			/* --self-test: as if the kernel had not said it */
			if (p == atomic_load(&g.drop_next)) {
				atomic_store(&g.drop_next, 0);
				atomic_fetch_add(&g.dropped, 1);
				continue;
			}
			if ((size_t)np < cap)
				out[np++] = pg;
		}
	/* --self-test: as if the kernel had said it, unwritten */
	if (atomic_load(&g.add_next) >= a.start &&
	    atomic_load(&g.add_next) < a.end && (size_t)np < cap) {
		uint64_t pg = (atomic_exchange(&g.add_next, 0) - a.start) / PSZ;
		bool there = false;

		for (long i = 0; i < np; i++)
			there |= out[i] == pg;
		if (!there) {
			out[np++] = pg;
			atomic_fetch_add(&g.added, 1);
		}
	}
	return np;
}

/* The first page of a write, to drop from the answer (--self-test). */
static void plant(enum mkind m, uint32_t page)
{
	if (g.self_test)
		atomic_store(&g.drop_next, (uintptr_t)g.mem[m].base +
			     (uint64_t)page * PSZ);
}

/*
 * The kernel writes pages [p0, p1) of m (kind w), from byte 'skip' of the
 * first page to 'cut' bytes before the end of the last, where the kind
 * can.  Returns 0, or an errno; *bad: the data did not arrive.
 */
static int kwrite(enum mkind m, enum wkind w, uint32_t p0, uint32_t p1,
		  uint64_t seq, bool *bad)
{
	struct mem *mm = &g.mem[m];
	bool whole = w == W_ODIRECT || w == W_URING;
	uint64_t skip = whole ? 0 : mw_rndn(&g.rng, PSZ / 8) * 8;
	uint64_t cut = whole || p1 - p0 < 2 ? 0 : mw_rndn(&g.rng, PSZ / 8) * 8;
	char *dst = mm->base + (uint64_t)p0 * PSZ + skip;
	uint64_t len = (uint64_t)(p1 - p0) * PSZ - skip - cut;
	uint64_t foff = mw_rndn(&g.rng, (FILE_SZ - MAXRUN * PSZ) / PSZ) * PSZ + skip;
	int err = 0, fd = w == W_URING && mw_rndn(&g.rng, 2) ? g.dfd :
			  w == W_URING ? g.ffd : -1;
	long r;

	*bad = false;
	switch (w) {
	case W_FILE:
		r = pread(g.ffd, dst, len, foff);
		err = r == (long)len ? 0 : r < 0 ? errno : EIO;
		break;
	case W_ODIRECT:
		r = pread(g.dfd, dst, len, foff);
		err = r == (long)len ? 0 : r < 0 ? errno : EIO;
		break;
	case W_URING:
		r = mw_uring_read(&g.ring, fd, dst, len, foff);
		err = r == (long)len ? 0 : r < 0 ? -r : EIO;
		break;
	default:
		err = helper_write(w, (uintptr_t)dst, len, seq);
		break;
	}
	if (err)
		return err;
	for (uint64_t i = 0; i < len / 8; i++) {
		uint64_t want = w == W_FILE || w == W_ODIRECT || w == W_URING ?
				fword(foff + i * 8) : hword(seq, i);

		if (((uint64_t *)dst)[i] != want) {
			*bad = true;
			break;
		}
	}
	return 0;
}

/* Random disjoint runs of pages in m: up to 6, each 1..MAXRUN pages. */
static int pick_runs(enum mkind m, uint32_t (*runs)[2])
{
	size_t np = g.mem[m].npages;
	int n = 0;

	for (int t = 0, want = 1 + mw_rndn(&g.rng, 6); t < 40 && n < want; t++) {
		uint32_t a = mw_rndn(&g.rng, np), b = a + 1 + mw_rndn(&g.rng, MAXRUN);
		bool clash = false;

		if (b > np)
			b = np;
		for (int i = 0; i < n; i++)
			clash |= a < runs[i][1] + 1 && runs[i][0] < b + 1;
		if (clash)
			continue;
		runs[n][0] = a;
		runs[n][1] = b;
		n++;
	}
	return n;
}

/*
 * exact: rounds of arm, kernel writes, get: the get reports exactly the
 * pages written.  Returns the number of wrong rounds (printed).
 */
static int test_exact(enum mkind m, enum wkind w, uint64_t *seq)
{
	uint32_t *rep = malloc(g.mem[m].npages * sizeof(*rep));
	uint8_t *want = malloc(g.mem[m].npages);
	int bad_rounds = 0, thp_rounds = 0;
	long n;

	if (!rep || !want)
		mw_bail("malloc", &g.seed);
	if (get_reset(m, rep, g.mem[m].npages) < 0)	/* armed */
		mw_bail("get+reset", &g.seed);
	for (unsigned int round = 0; round < g.rounds; round++) {
		uint32_t runs[6][2];
		int nr = pick_runs(m, runs), extra = 0, missing = 0;
		bool data_bad = false, bad;
		char why[160] = "";

		if (m == M_THP)
			fresh_thp();
		thp_rounds += m == M_THP && thp_mapped();
		if (is_sparse(m)) {
			disrupt(m);
			if (get_reset(m, rep, g.mem[m].npages) < 0)
				mw_bail("get+reset", &g.seed);
		}
		memset(want, 0, g.mem[m].npages);
		for (int i = 0; i < nr; i++) {
			int err = kwrite(m, w, runs[i][0], runs[i][1], ++*seq,
					 &bad);

			if (err) {
				snprintf(why, sizeof(why), "write [%u, %u): %s",
					 runs[i][0], runs[i][1],
					 strerror(err));
				break;
			}
			data_bad |= bad;
			memset(want + runs[i][0], 1, runs[i][1] - runs[i][0]);
		}
		if (round == g.rounds / 2 && nr)
			plant(m, runs[0][0]);
		for (size_t i = 0; g.self_test && !round &&
		     i < g.mem[m].npages; i++)
			if (!want[i]) {
				atomic_store(&g.add_next,
					     (uintptr_t)g.mem[m].base + i * PSZ);
				break;
			}
		n = get_reset(m, rep, g.mem[m].npages);
		atomic_store(&g.drop_next, 0);
		atomic_store(&g.add_next, 0);
		if (n < 0) {
			snprintf(why, sizeof(why), "get: %s", strerror(-n));
		} else {
			for (long i = 0; i < n; i++) {
				if (!want[rep[i]])
					extra++;
				want[rep[i]] = 2 + want[rep[i]];
			}
			for (size_t i = 0; i < g.mem[m].npages; i++)
				missing += want[i] == 1;
		}
		if (why[0] || extra || missing || data_bad) {
			if (bad_rounds++ < 4)
				printf("# %s %s round %u: %s%d pages written "
				       "not reported, %d reported not written%s"
				       "\n", mname[m], wname[w], round, why,
				       missing, extra,
				       data_bad ? ", data did not arrive" : "");
		}
	}
	if (m == M_THP)
		printf("# %s %s: the THP was PMD-mapped at %d of %u rounds\n",
		       mname[m], wname[w], thp_rounds, g.rounds);
	free(rep);
	free(want);
	return bad_rounds;
}

/* Harvest h kept in g.hv, with a copy of its h->n reports from rep. */
static void keep_harvest(struct harvest *h, const uint32_t *rep)
{
	h->rep = malloc((h->n ? h->n : 1) * sizeof(*h->rep));
	if (!h->rep)
		mw_bail("malloc", &g.seed);
	memcpy(h->rep, rep, h->n * sizeof(*h->rep));
	if (g.nhv == g.caphv) {
		g.caphv = g.caphv ? 2 * g.caphv : 256;
		g.hv = realloc(g.hv, g.caphv * sizeof(*g.hv));
		if (!g.hv)
			mw_bail("realloc", &g.seed);
	}
	g.hv[g.nhv++] = *h;
}

static void *harvester(void *arg)
{
	enum mkind m = g.hm;
	uint32_t *tmp = malloc(g.mem[m].npages * sizeof(*tmp));

	(void)arg;
	if (!tmp)
		mw_bail("malloc", &g.seed);
	/* all of it, now: --sparse's VmPTE moves with its tables only */
	memset(get_vec, 0, sizeof(get_vec));
	while (!atomic_load(&g.stop)) {
		struct harvest h;
		long n;

		h.c0 = tick();
		n = get_reset(m, tmp, g.mem[m].npages);
		h.c1 = tick();
		if (n < 0) {
			g.herr = -n;
			break;
		}
		h.n = n;
		keep_harvest(&h, tmp);
		atomic_fetch_add(&g.nharv, 1);
		usleep((h.c1 & 3) * 200);
	}
	free(tmp);
	return NULL;
}

/*
 * reset: the kernel writes while a harvester gets and resets.  Returns the
 * number of lost writes, false reports and writes whose data did not
 * arrive (the first few printed); *nlost and *nfalse: the first two.
 */
static int test_reset(enum mkind m, enum wkind w, uint64_t *seq, int *nlost,
		      int *nfalse)
{
	size_t np = g.mem[m].npages, nw = g.writes;
	struct kw *kws = calloc(nw, sizeof(*kws));
	pthread_t th;
	int lost = 0, falsep = 0, err = 0, data_bad = 0;
	uint64_t *last_rep, *prev_c0;
	uint32_t *tmp = malloc(np * sizeof(*tmp));
	long n;

	if (!kws || !tmp)
		mw_bail("malloc", &g.seed);
	if (m == M_THP)
		fresh_thp();
	else if (get_reset(m, tmp, np) < 0)
		mw_bail("get+reset", &g.seed);
	g.hm = m;
	g.nhv = 0;
	g.herr = 0;
	atomic_store(&g.nharv, 0);
	atomic_store(&g.stop, false);
	/* --self-test: a page in the first harvest, before any write */
	if (g.self_test)
		atomic_store(&g.add_next, (uintptr_t)g.mem[m].base);
	if (pthread_create(&th, NULL, harvester, NULL))
		mw_bail("pthread_create", &g.seed);
	while (!atomic_load(&g.nharv) && !g.herr)
		usleep(100);
	/*
	 * The last write after the harvester stopped: only the final get can
	 * report it (--self-test drops that report).
	 */
	for (size_t i = 0; i < nw; i++) {
		uint32_t a = mw_rndn(&g.rng, np), b = a + 1 + mw_rndn(&g.rng, MAXRUN);
		bool bad;

		if (b > np)
			b = np;
		kws[i].p0 = a;
		kws[i].p1 = b;
		if (i == nw - 1) {
			atomic_store(&g.stop, true);
			pthread_join(th, NULL);
		} else {
			usleep(mw_rndn(&g.rng, 4) * 100);	/* harvests fall between */
		}
		kws[i].tb = tick();
		err = kwrite(m, w, a, b, ++*seq, &bad);
		kws[i].te = tick();
		data_bad += bad;
		if (i == nw - 1)
			plant(m, a);
		if (err) {
			nw = i;
			break;
		}
	}
	if (!atomic_load(&g.stop)) {
		atomic_store(&g.stop, true);
		pthread_join(th, NULL);
	}
	/* The final get, after every write. */
	{
		struct harvest h;

		h.c0 = tick();
		n = get_reset(m, tmp, np);
		h.c1 = tick();
		h.n = n > 0 ? n : 0;
		keep_harvest(&h, tmp);
	}
	atomic_store(&g.drop_next, 0);
	atomic_store(&g.add_next, 0);
	if (err || g.herr || n < 0) {
		printf("# %s %s: %s\n", mname[m], wname[w],
		       err ? strerror(err) : strerror(g.herr ? g.herr : -n));
		lost++;
	}
	/*
	 * Lost: a write none of whose pages' later reports ended after it
	 * began.  Per page, the reports in harvest order: for each write and
	 * page, one ending at or after tb.
	 */
	/* per page: c1 of its last report, c0 + 1 of its report before */
	last_rep = calloc(np, sizeof(*last_rep));
	prev_c0 = calloc(np, sizeof(*prev_c0));
	if (!last_rep || !prev_c0)
		mw_bail("calloc", &g.seed);
	for (size_t h = 0; h < g.nhv; h++)
		for (uint32_t j = 0; j < g.hv[h].n; j++)
			last_rep[g.hv[h].rep[j]] = g.hv[h].c1;
	for (size_t i = 0; i < nw; i++)
		for (uint32_t p = kws[i].p0; p < kws[i].p1; p++)
			if (last_rep[p] < kws[i].tb) {
				if (lost++ < 4)
					printf("# %s %s: write %zu (pages [%u, "
					       "%u), clock [%" PRIu64 ", %"
					       PRIu64 "]) lost: page %u last reported "
					       "at %" PRIu64 "\n", mname[m],
					       wname[w], i, kws[i].p0,
					       kws[i].p1, kws[i].tb, kws[i].te,
					       p, last_rep[p]);
			}
	/*
	 * False: a report of page p by harvest h with no write of p that
	 * began before h ended and ended after the harvest that reported p
	 * before h began.
	 */
	for (size_t h = 0; h < g.nhv; h++) {
		for (uint32_t j = 0; j < g.hv[h].n; j++) {
			uint32_t p = g.hv[h].rep[j];
			bool ok = false;

			for (size_t i = 0; i < nw && !ok; i++)
				ok = p >= kws[i].p0 && p < kws[i].p1 &&
				     kws[i].tb <= g.hv[h].c1 &&
				     kws[i].te >= prev_c0[p];
			if (!ok && falsep++ < 4)
				printf("# %s %s: page %u reported by harvest "
				       "%zu [%" PRIu64 ", %" PRIu64 "] with no "
				       "write since the report before\n",
				       mname[m], wname[w], p, h, g.hv[h].c0,
				       g.hv[h].c1);
			prev_c0[p] = g.hv[h].c0 + 1;
		}
	}
	if (data_bad)
		printf("# %s %s: data of %d writes did not arrive\n",
		       mname[m], wname[w], data_bad);
	printf("# %s %s: %zu kernel writes, %zu harvests\n", mname[m],
	       wname[w], nw, g.nhv);
	for (size_t h = 0; h < g.nhv; h++)
		free(g.hv[h].rep);
	free(last_rep);
	free(prev_c0);
	free(kws);
	free(tmp);
	*nlost = lost;
	*nfalse = falsep;
	return lost + falsep + data_bad;
}

static void setup_mem(void)
{
	for (int m = 0; m < M_SPARSE; m++)
		map_mem(m, NULL);
}

static void setup_files(void)
{
	char path[64];
	uint64_t *blk = malloc(1 << 20);

	if (!blk)
		mw_bail("malloc", &g.seed);
	snprintf(path, sizeof(path), "/mnt/disk/kwrites.%d", (int)getpid());
	g.ffd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (g.ffd < 0)
		mw_bail("open a file on /mnt/disk", &g.seed);
	for (uint64_t off = 0; off < FILE_SZ; off += 1 << 20) {
		for (uint64_t i = 0; i < (1 << 20) / 8; i++)
			blk[i] = fword(off + i * 8);
		if (pwrite(g.ffd, blk, 1 << 20, off) != 1 << 20)
			mw_bail("write the file", &g.seed);
	}
	if (fsync(g.ffd))
		mw_bail("fsync", &g.seed);
	g.dfd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (g.dfd < 0)
		mw_bail("open O_DIRECT", &g.seed);
	unlink(path);
	free(blk);
}

int main(int argc, char **argv)
{
	uint64_t seq = 0;
	int rc, only = -1;
	bool usage = false, marker = false, enabled = false;
	struct mw_marker_stats m0, m1;
	long pte0 = 0, pte_armed = 0, pte_end = 0;

	g.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	g.rounds = 12;
	g.writes = 100;
	g.sparse_len = 1UL << 30;
	g.pvw_expected = true;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			g.seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			g.rounds = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--writes") && i + 1 < argc)
			g.writes = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--pvw") && i + 1 < argc)
			g.pvw_expected = !strcmp(argv[++i], "yes");
		else if (!strcmp(argv[i], "--self-test"))
			g.self_test = true;
		else if (!strcmp(argv[i], "--sparse"))
			g.sparse = true;
		else if (!strcmp(argv[i], "--sparse-mib") && i + 1 < argc)
			g.sparse_len = strtoul(argv[++i], NULL, 0) << 20;
		else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			for (only = W_N - 1; only >= 0; only--)
				if (!strcmp(argv[i + 1], wname[only]))
					break;
			if (only < 0)
				usage = true;
			i++;
		} else {
			usage = true;
		}
	}
	if (usage) {
		fprintf(stderr, "usage: %s [--seed N] [--rounds N] [--writes N] "
			"[--pvw yes|no] [--only KIND] [--self-test] "
			"[--sparse [--sparse-mib M]]\n", argv[0]);
		return 2;
	}
	if (g.sparse && (g.sparse_len < (64UL << 20) ||
			 g.sparse_len > (64UL << 30) || g.sparse_len % HPSZ)) {
		fprintf(stderr, "kwrites: --sparse-mib: an even number, 64 to 65536\n");
		return 2;
	}
	if (g.rounds < 2 || g.writes < 2) {
		fprintf(stderr, "kwrites: --rounds and --writes: 2 or more\n");
		return 2;
	}
	tap_guest_only();
	g.rng = g.seed;
	for (int m = g.sparse ? M_SPARSE : 0; m < (g.sparse ? M_N : M_SPARSE);
	     m++)
		g.act[g.nact++] = m;
	if (g.sparse) {
		/*
		 * VmPTE must move only with the reservations' tables: one
		 * malloc arena, never trimmed, whose heap is touched now.
		 */
		void *pad[16];

		mallopt(M_ARENA_MAX, 1);
		mallopt(M_MMAP_THRESHOLD, 32 << 20);
		mallopt(M_TRIM_THRESHOLD, INT32_MAX);
		for (int i = 0; i < 16; i++) {
			pad[i] = malloc(4 << 20);
			if (!pad[i])
				mw_bail("malloc", &g.seed);
			/* volatile: a memset before free() is optimised out */
			for (size_t o = 0; o < 4 << 20; o += PSZ)
				((volatile char *)pad[i])[o] = 0;
		}
		for (int i = 15; i >= 0; i--)
			free(pad[i]);
		marker = mw_marker_read(&m0) == 0;
		enabled = marker && mw_marker_enabled() == 1;
	}
	tap_plan(2 + 2 * g.nact * (only < 0 ? W_N : 1) +
		 (g.sparse ? 1 + enabled : 0));
	printf("# kwrites seed %" PRIu64 "; replay: %s --seed %" PRIu64
	       " --rounds %u --writes %u --pvw %s%s%s%s", g.seed, argv[0],
	       g.seed, g.rounds, g.writes, g.pvw_expected ? "yes" : "no",
	       only >= 0 ? " --only " : "", only >= 0 ? wname[only] : "",
	       g.self_test ? " --self-test" : "");
	if (g.sparse)
		printf(" --sparse --sparse-mib %zu", g.sparse_len >> 20);
	printf("\n");
	if (g.sparse && marker)
		printf("# marker present: %s/stats, %s\n", MW_MARKER_DIR,
		       enabled ? "enabled: it must be used" :
		       "disabled (enabled is not 1): its counters are printed, their use not required");
	else if (g.sparse)
		printf("# marker absent (no %s/stats): this run covers 512 pte markers per armed 2 MiB, not the PMD-level marker\n",
		       MW_MARKER_DIR);

	start_helper();		/* before the tracked memory */
	g.uffd = mw_uffd_open(O_CLOEXEC | O_NONBLOCK, UFFD_FEATURE_WP_ASYNC |
			      UFFD_FEATURE_WP_UNPOPULATED |
			      UFFD_FEATURE_WP_HUGETLBFS_SHMEM);
	if (g.uffd < 0)
		mw_bail("userfaultfd with WP_ASYNC", &g.seed);
	g.pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (g.pm < 0)
		mw_bail("open pagemap", &g.seed);
	setup_files();
	g.have_uring = mw_uring_setup(&g.ring, &g.seed) == 0;
	setup_mem();
	if (g.sparse) {
		/*
		 * The harvester thread's stack and TLS (its get's regions)
		 * get their tables now: its later runs reuse the stack.
		 */
		pthread_t th;

		g.hm = M_ANON;
		atomic_store(&g.stop, false);
		atomic_store(&g.nharv, 0);
		if (pthread_create(&th, NULL, harvester, NULL))
			mw_bail("pthread", &g.seed);
		while (!atomic_load(&g.nharv) && !g.herr)
			usleep(100);
		atomic_store(&g.stop, true);
		if (pthread_join(th, NULL))
			mw_bail("pthread", &g.seed);
		for (size_t h = 0; h < g.nhv; h++)
			free(g.hv[h].rep);
		g.nhv = 0;
		memset(get_vec, 0, sizeof(get_vec));	/* and this thread's */
		get_reset(M_ANON, (uint32_t[64]){ 0 }, 64);
		pte0 = mw_vmpte_kb();
		map_sparse(M_SPARSE);
		map_sparse(M_SPARSE_THP);
		pte_armed = mw_vmpte_kb();
		printf("# sparse memories of %zu MiB armed untouched: VmPTE %ld kB before, %ld kB after\n",
		       g.sparse_len >> 20, pte0, pte_armed);
	}
	tap_ok(g.have_uring, "setup: helper %d, io_uring %s, memory anon %zu KiB, "
	    "thp %zu KiB, shmem %zu KiB", (int)g.helper,
	    g.have_uring ? "yes" : strerror(errno), msize[M_ANON] >> 10,
	    msize[M_THP] >> 10, msize[M_SHMEM] >> 10);

	/* process_vm_writev: there, or ENOSYS as the suite says. */
	{
		bool bad;
		int err = kwrite(M_ANON, W_PVW, 0, 1, ++seq, &bad);

		get_reset(M_ANON, (uint32_t[64]){ 0 }, 64);
		if (g.pvw_expected)
			tap_ok(!err && !bad, "process_vm_writev works: %s",
			    err ? strerror(err) : bad ? "wrong data" : "yes");
		else
			tap_ok(err == ENOSYS, "process_vm_writev fails with "
			    "ENOSYS (no CONFIG_CROSS_MEMORY_ATTACH): %s",
			    err ? strerror(err) : "it worked");
	}

	for (int w = 0; w < W_N; w++) {
		if (only >= 0 && w != only)
			continue;
		for (int mi = 0; mi < g.nact; mi++) {
			int m = g.act[mi], bad, nlost, nfalse;

			if (w == W_URING && !g.have_uring) {
				tap_ok(false, "%s %s exact: no io_uring",
				    mname[m], wname[w]);
				tap_ok(false, "%s %s across resets: no io_uring",
				    mname[m], wname[w]);
				continue;
			}
			if (w == W_PVW && !g.pvw_expected) {
				tap_ok(true, "%s %s exact: not built in",
				    mname[m], wname[w]);
				tap_ok(true, "%s %s across resets: not built in",
				    mname[m], wname[w]);
				continue;
			}
			g.dropped = g.added = 0;
			bad = test_exact(m, w, &seq);
			if (g.self_test)
				tap_ok(g.dropped && g.added && bad >= 2,
				    "self-test: %s %s exact: %" PRIu64
				    " report dropped, %" PRIu64 " added, %d "
				    "rounds found wrong", mname[m], wname[w],
				    (uint64_t)g.dropped, (uint64_t)g.added, bad);
			else
				tap_ok(!bad, "%s %s exact: %u rounds, get reports "
				    "exactly the pages written (%d wrong)",
				    mname[m], wname[w], g.rounds, bad);
			g.dropped = g.added = 0;
			bad = test_reset(m, w, &seq, &nlost, &nfalse);
			if (g.self_test)
				tap_ok(g.dropped && g.added && nlost && nfalse,
				    "self-test: %s %s across resets: %" PRIu64
				    " report dropped, %" PRIu64 " added: %d "
				    "writes found lost, %d reports false",
				    mname[m], wname[w], (uint64_t)g.dropped,
				    (uint64_t)g.added, nlost, nfalse);
			else
				tap_ok(!bad, "%s %s across resets: no write lost,"
				    " none reported that wasn't (%d wrong)",
				    mname[m], wname[w], bad);
		}
	}
	{
		struct hcmd c = { .op = -1 };

		if (xwrite(g.hcmd_w, &c, sizeof(c)) == 0)
			waitpid(g.helper, &rc, 0);
	}
	if (g.sparse) {
		static const char *const dn[6] = {
			"DONTNEED", "mremap out and back", "munmap+mmap",
			"un-protect", "re-arm", "fork",
		};

		for (int i = 0; i < 6; i++)
			printf("# disruption %-20s %" PRIu64 "\n", dn[i],
			       g.disrupted[i]);
		for (int m = M_SPARSE; m < M_N; m++)
			if (munmap(g.mem[m].base, sparse_span()))
				mw_bail("munmap", &g.seed);
		pte_end = mw_vmpte_kb();
		tap_ok(pte0 > 0 && pte_end == pte0, "no page-table leak: VmPTE "
		    "%ld kB before the sparse memories, %ld kB after their "
		    "munmap", pte0, pte_end);
		if (marker) {
			mw_marker_read(&m1);
			mw_marker_print(&m0, &m1);
		}
		if (enabled) {
			uint64_t ins = mw_marker_delta(&m0, &m1, MWM_installed);
			uint64_t exp = mw_marker_delta(&m0, &m1,
						       MWM_expanded_fault);

			tap_ok(ins && exp, "the PMD-level marker was used "
			    "(installed +%" PRIu64 ", expanded_fault +%" PRIu64
			    ")", ins, exp);
		}
	}
	printf("# %d passed, %d failed\n", mw_tap.n - mw_tap.failed, mw_tap.failed);
	if (mw_tap.failed)
		printf("# FAILED: seed %" PRIu64 "; replay: see the first "
		       "lines\n", g.seed);
	return mw_tap.failed ? 1 : 0;
}
