// SPDX-License-Identifier: MIT
/*
 * gc-kwrites: the Boehm GC's incremental mode against pointers the KERNEL
 * writes into its heap.  bdwgc learns which heap pages changed since a
 * collection from a virtual dirty bit layer (VDB); MPROTECT_VDB
 * write-protects the heap and catches SIGSEGV, which a system call writing
 * into a protected page never raises: the call fails with EFAULT, or, with
 * FOLL_FORCE (/proc/PID/mem), succeeds unseen.  SOFT_VDB and the UFFD_VDB
 * of memwatch's bdwgc patch (userfaultfd WP_ASYNC + PAGEMAP_SCAN) see
 * every write, the kernel's included.
 *
 * The test keeps H holders: page-sized objects (GC_memalign, 4096-aligned:
 * O_DIRECT's buffers), allocated first and collected over until they are
 * old, their pages clean.  Each round allocates a fresh object B (GC_MALLOC,
 * words derived from its id, a finalizer that records the id as freed),
 * hands B's address, hidden (GC_HIDE_POINTER), to a courier process, keeps
 * no reference in user space, and has the kernel write the address into
 * holder[k]->slot -- over the holder's previous object, which thereby
 * becomes garbage:
 *
 *   pipe      read(2) from a pipe the courier filled
 *   file      pread(2) of a file on /tmp (tmpfs) the courier wrote
 *   odirect   pread(2) of an O_DIRECT file on /mnt/disk (the guest's
 *             scratch disk, ext4): the whole 4 KiB holder from the disk
 *   pvw       process_vm_writev(2) by the courier into our holder
 *   procmem   pwrite(2) by the courier to /proc/PID/mem (FOLL_FORCE)
 *   uring     IORING_OP_READ (raw io_uring system calls) of the /tmp file,
 *             or of the O_DIRECT file every other round when there is one
 *
 * with collections around the write in one of three ways, picked at
 * random: between cycles (then a whole partial cycle), in the middle of an
 * incremental cycle (started and abandoned after a few marking steps by a
 * stop function, advanced by GC_collect_a_little(), the write, then the
 * cycle finished by GC_collect_a_little()), or in the middle of a cycle
 * that GC_gcollect() then finishes.  In the generational cycles the
 * holders keep their mark bits and are scanned again only if their pages
 * are reported dirty: a write the VDB misses leaves B unmarked.
 *
 * The oracle, after each round's collections (finalizers run on demand,
 * GC_invoke_finalizers()): every holder's current object must not be
 * finalized and must still hold its words; the holder must hold the
 * address sent and its own magic.  A finalized or changed object is LOST.
 * A kernel call that fails (EFAULT: a protected page) or writes short is
 * counted; its B was never referenced, its collection is no loss.  Each
 * round also allocates a control object, sent nowhere: the controls must
 * be collected, or the test is vacuous (some of them: the collector is
 * conservative, and a stale copy of an address on the stack keeps its
 * object -- the stack below the loop is scrubbed after each allocation,
 * kernel write and check -- which weakens the test but cannot make it
 * pass wrongly).  The objects the holders dropped are counted as well.
 *
 *   gc-kwrites [--rounds N] [--holders H] [--seed S]
 *              [--path pipe|file|odirect|pvw|procmem|uring|all]
 *              [--self-test] [--expect-exact]
 *
 * Always judged: incremental mode was on throughout, each path's rounds
 * ran collections, the collector freed controls, the kernel wrote the
 * bytes sent.  --expect-exact also judges: no object lost, no kernel
 * write failed or short.  Without it, losses and failures are diagnostics
 * and the program reports without judging (the mprotect and soft-dirty
 * VDBs); either way it ends with one line per path:
 *
 *   GC-KWRITES path=P rounds=N lost=L efault=E short=S vdb=V
 *
 * (--self-test adds injected=I found=F).  --self-test sends a garbled
 * address (the hidden value) on one round in four: the holder then refers
 * to nothing, B must be collected while the oracle believes it held, and
 * the run passes only if the oracle reports such losses, for each path.
 * odirect (no /mnt/disk or no O_DIRECT), pvw (a kernel without
 * CONFIG_CROSS_MEMORY_ATTACH: ENOSYS) and uring (no io_uring) may be
 * absent: with --path all that is a diagnostic, named explicitly a
 * failure.
 *
 * The VDB the collector picked: GC_get_actual_vdb(), and an open
 * userfaultfd descriptor in /proc/self/fd (the courier is forked before
 * the collector starts, so any such descriptor is the collector's).
 *
 * TAP output.  Runs only in the memwatch test guest (memwatch.guest=1).
 */
#include "mw-test.h"
#include "mw-uring.h"

#include <dirent.h>
#include <getopt.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

#include <gc.h>

#define HOLDER_SZ	4096UL		/* a holder: one O_DIRECT block */
#define NONE		UINT32_MAX	/* a holder without an object */
#define MAXSHOW		5		/* losses described one by one */

enum path { P_PIPE, P_FILE, P_ODIRECT, P_PVW, P_PROCMEM, P_URING, P_N };
static const char *const pname[P_N] = {
	"pipe", "file", "odirect", "pvw", "procmem", "uring",
};

/* How a round's collections surround its kernel write. */
enum mode { M_BETWEEN, M_MID, M_MIDFULL, M_N };

/*
 * A holder, page-aligned: slot is the only reference to its object; magic
 * is hmagic(k) and must stay so (an O_DIRECT read rewrites the whole
 * holder from the disk block the courier wrote).
 */
struct holder {
	void *slot;
	uint64_t magic;
	char pad[HOLDER_SZ - 16];
};

enum ostate {
	O_HELD,		/* in its holder (the kernel write succeeded) */
	O_FAILED,	/* its kernel write failed: never referenced */
	O_RELEASED,	/* replaced in its holder by a later object */
	O_LOST,		/* collected (or changed) while held */
	O_CONTROL,	/* never sent anywhere: must be collectable */
	O_DONE,		/* counted in an earlier path's figures */
};

/*
 * One object B, by id.  Its address is kept only hidden; its finalizer
 * gets the record as client data (no global needed).
 */
struct objrec {
	GC_hidden_pointer hid;
	uint32_t words;		/* its size, 8-byte words */
	int holder;
	enum ostate state;
	bool finalized;		/* set by its finalizer */
	bool injected;		/* --self-test: its address garbled */
};

struct pstat {
	unsigned int rounds, midcycle;	/* midcycle: writes in a cycle */
	unsigned int delivered, efault, shortw, errs, wrong;
	unsigned int lost, corrupt, injected, inj_found;
	unsigned int dropped, dropped_fin, controls, controls_fin;
	int first_err;		/* the first errno other than EFAULT */
	GC_word gc0, gc1;
};

/* A command to the courier; its reply: the call's result and errno. */
enum cop { C_PIPE, C_FILE, C_BLOCK, C_PVW, C_PROCMEM, C_EXIT };
struct ccmd {
	int op, holder;
	int garble;		/* send hid itself, not the address */
	GC_hidden_pointer hid;
	uint64_t addr;		/* C_PVW, C_PROCMEM: where in our memory */
};
struct crep {
	long res;
	int err;
};

struct ctx {
	uint64_t seed, rng;
	unsigned int rounds, nholders;
	unsigned int paths;		/* bit per enum path */
	bool all, self_test, exact;
	struct holder **holders;	/* GC_MALLOC'd: the root array */
	uint32_t *cur;			/* per holder: its object's id */
	struct objrec *obj;		/* calloc'd, never moved */
	uint32_t nobj, capobj;
	char vdb[64];
	/* the courier and what it writes through */
	pid_t courier;
	int cmd_w, rep_r, data_r;
	int ffd;			/* /tmp file, buffered */
	int dfd;			/* /mnt/disk file, O_DIRECT; -1: none */
	char why_nodirect[128];
	bool have_pvw, have_procmem;
	int pvw_errno, procmem_errno;
	struct mw_ring ring;		/* fd -1: no io_uring (mw-uring.h) */
	int uring_errno;
	char *drain;			/* malloc'd: a failed pipe read's bytes */
};

/* ---- the collector's stop function --------------------------------------- */

/*
 * GC_set_stop_func() takes a callback without an argument, so the
 * countdown it reads is file-scope: the one global of this program.  Set
 * to n > 0, the collector's n-th call abandons the stop-the-world marking
 * in progress, which then goes on incrementally (GC_collect_a_little());
 * 0: never stop (GC_time_limit is GC_TIME_UNLIMITED, so that TCG's
 * slowness does not change what a run does).
 */
static int stop_countdown;

static int GC_CALLBACK stop_after_countdown(void)
{
	return stop_countdown > 0 && --stop_countdown == 0;
}

/* The finalizer of every B: client data is its record. */
static void GC_CALLBACK on_finalize(void *obj, void *cd)
{
	struct objrec *o = cd;

	(void)obj;
	o->finalized = true;
}

/* ---- small helpers ------------------------------------------------------- */

static uint64_t hmagic(int k)
{
	return 0x686f6c6465720000ULL ^ (uint64_t)k * 0x9e3779b97f4a7c15ULL;
}

/* Word i of object id: never 0, never a plausible heap address. */
static uint64_t oword(uint32_t id, uint32_t i)
{
	uint64_t z = ((uint64_t)id << 24 ^ i) + 0x6f626a6563740000ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (z ^ (z >> 31)) | 0x8000000000000001ULL;
}

/* The test cannot go on, for a reason errno does not tell. */
__attribute__((noreturn))
static void bail_msg(const struct ctx *c, const char *what)
{
	printf("Bail out! %s (seed %" PRIu64 ")\n", what, c->seed);
	exit(1);
}

/*
 * Overwrite the stack below the caller, where dead frames may still hold
 * an object's address that the conservative collector would take for a
 * reference.
 */
static __attribute__((noinline)) void scrub_stack(void)
{
	volatile char pad[16384];

	memset((char *)pad, 0, sizeof(pad));
	__asm__ volatile("" : : "r"(pad) : "memory");
}

/* ---- the courier --------------------------------------------------------- */

/*
 * The second process, forked before the collector starts (it never calls
 * it): turns a hidden address into the bytes the kernel then writes into
 * our holder, or writes them there itself.
 */
static __attribute__((noreturn))
void courier_main(struct ctx *c, pid_t parent, int cmd_r, int rep_w,
		  int data_w)
{
	char path[64];
	uint64_t *blk;
	struct ccmd m;
	int memfd;

	if (posix_memalign((void **)&blk, HOLDER_SZ, HOLDER_SZ))
		_exit(3);
	{
		/* What this kernel lets us do: the first reply. */
		struct crep hello[2];

		hello[0].res = syscall(__NR_process_vm_writev, parent, NULL, 0,
				       NULL, 0, 0);
		hello[0].err = hello[0].res < 0 ? errno : 0;
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)parent);
		memfd = open(path, O_RDWR | O_CLOEXEC);
		hello[1].res = memfd;
		hello[1].err = memfd < 0 ? errno : 0;
		if (mw_xio(rep_w, hello, sizeof(hello), true))
			_exit(3);
	}
	while (!mw_xio(cmd_r, &m, sizeof(m), false) && m.op != C_EXIT) {
		uint64_t val = m.garble ? (uint64_t)m.hid :
			       (uint64_t)(uintptr_t)GC_REVEAL_POINTER(m.hid);
		struct iovec l = { &val, sizeof(val) };
		struct iovec r = { (void *)(uintptr_t)m.addr, sizeof(val) };
		off_t off = (off_t)m.holder * HOLDER_SZ;
		struct crep rep = { 0, 0 };

		errno = 0;
		switch (m.op) {
		case C_PIPE:
			rep.res = mw_xio(data_w, &val, sizeof(val), true) ? -1 :
				  (long)sizeof(val);
			break;
		case C_FILE:
			rep.res = pwrite(c->ffd, &val, sizeof(val), off);
			break;
		case C_BLOCK:
			memset(blk, 0, HOLDER_SZ);
			blk[0] = val;
			blk[1] = hmagic(m.holder);
			rep.res = pwrite(c->dfd, blk, HOLDER_SZ, off);
			break;
		case C_PVW:
			rep.res = syscall(__NR_process_vm_writev, parent, &l, 1,
					  &r, 1, 0);
			break;
		case C_PROCMEM:
			rep.res = pwrite(memfd, &val, sizeof(val),
					 (off_t)m.addr);
			break;
		default:
			rep.res = -1;
			errno = EINVAL;
		}
		rep.err = rep.res < 0 ? errno : 0;
		val = 0;
		if (mw_xio(rep_w, &rep, sizeof(rep), true))
			break;
	}
	_exit(0);
}

static void start_courier(struct ctx *c)
{
	int cm[2], rp[2], dp[2];
	pid_t parent = getpid();
	struct crep hello[2];

	if (pipe2(cm, O_CLOEXEC) || pipe2(rp, O_CLOEXEC) ||
	    pipe2(dp, O_CLOEXEC))
		mw_bail("pipe", &c->seed);
	c->courier = fork();
	if (c->courier < 0)
		mw_bail("fork", &c->seed);
	if (!c->courier) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(cm[1]);
		close(rp[0]);
		close(dp[0]);
		courier_main(c, parent, cm[0], rp[1], dp[1]);
	}
	/* Yama's ptrace_scope 1: let the courier at our memory (best effort). */
	prctl(PR_SET_PTRACER, c->courier, 0, 0, 0);
	close(cm[0]);
	close(rp[1]);
	close(dp[1]);
	c->cmd_w = cm[1];
	c->rep_r = rp[0];
	c->data_r = dp[0];
	if (mw_xio(c->rep_r, hello, sizeof(hello), false))
		mw_bail("the courier's first reply", &c->seed);
	c->have_pvw = hello[0].res == 0;
	c->pvw_errno = hello[0].err;
	c->have_procmem = hello[1].res >= 0;
	c->procmem_errno = hello[1].err;
}

static struct crep courier(struct ctx *c, int op, int k, GC_hidden_pointer hid,
			   bool garble, void *addr)
{
	struct ccmd m = {
		.op = op, .holder = k, .garble = garble, .hid = hid,
		.addr = (uint64_t)(uintptr_t)addr,
	};
	struct crep rep;

	if (mw_xio(c->cmd_w, &m, sizeof(m), true) ||
	    mw_xio(c->rep_r, &rep, sizeof(rep), false))
		mw_bail("talk to the courier", &c->seed);
	return rep;
}

static void stop_courier(struct ctx *c)
{
	struct ccmd m = { .op = C_EXIT };
	int st;

	if (mw_xio(c->cmd_w, &m, sizeof(m), true) ||
	    waitpid(c->courier, &st, 0) != c->courier)
		mw_bail("stop the courier", &c->seed);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		tap_diag("the courier ended with status 0x%x", st);
}

/* ---- files and io_uring -------------------------------------------------- */

/*
 * The /tmp file (buffered) and, on the guest's scratch disk when it is
 * mounted, the O_DIRECT file; both unlinked at once (the courier shares
 * the descriptors).
 */
static void setup_files(struct ctx *c)
{
	struct stat mnt, disk;
	char path[64];
	off_t len = (off_t)c->nholders * HOLDER_SZ;

	snprintf(path, sizeof(path), "/tmp/gc-kwrites.%d", (int)getpid());
	c->ffd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (c->ffd < 0 || unlink(path) || ftruncate(c->ffd, len))
		mw_bail("create a file on /tmp", &c->seed);
	c->dfd = -1;
	if (stat("/mnt", &mnt) || stat("/mnt/disk", &disk) ||
	    mnt.st_dev == disk.st_dev) {
		snprintf(c->why_nodirect, sizeof(c->why_nodirect),
			 "no filesystem mounted on /mnt/disk");
		return;
	}
	snprintf(path, sizeof(path), "/mnt/disk/gc-kwrites.%d", (int)getpid());
	c->dfd = open(path, O_RDWR | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC,
		      0600);
	if (c->dfd < 0) {
		snprintf(c->why_nodirect, sizeof(c->why_nodirect),
			 "open(%s, O_DIRECT): %s", path, strerror(errno));
		return;
	}
	if (unlink(path) || ftruncate(c->dfd, len))
		mw_bail("set up the O_DIRECT file", &c->seed);
}

/* One io_uring read (mw_uring_read): bytes read, or -1 with errno set. */
static long uring_read(struct ctx *c, int fd, void *buf, size_t len,
		       off_t off)
{
	long r = mw_uring_read(&c->ring, fd, buf, len, off);

	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* Is the path usable here?  why: the reason when not. */
static bool path_available(const struct ctx *c, enum path p, char *why,
			   size_t n)
{
	switch (p) {
	case P_ODIRECT:
		snprintf(why, n, "%s", c->why_nodirect);
		return c->dfd >= 0;
	case P_PVW:
		snprintf(why, n, "process_vm_writev: %s",
			 strerror(c->pvw_errno));
		return c->have_pvw;
	case P_PROCMEM:
		snprintf(why, n, "open /proc/PID/mem: %s",
			 strerror(c->procmem_errno));
		return c->have_procmem;
	case P_URING:
		snprintf(why, n, "io_uring_setup: %s",
			 strerror(c->uring_errno));
		return c->ring.fd >= 0;
	default:
		return true;
	}
}

/* ---- the collector ------------------------------------------------------- */

/* The VDB the collector uses, by name. */
static void vdb_name(struct ctx *c)
{
	unsigned int v = GC_get_actual_vdb();
	bool uffd = false;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	const char *name;

	while (d && (e = readdir(d))) {
		char l[64];
		ssize_t n = readlinkat(dirfd(d), e->d_name, l, sizeof(l) - 1);

		if (n > 0) {
			l[n] = '\0';
			uffd |= strstr(l, "userfaultfd") != NULL;
		}
	}
	if (d)
		closedir(d);
	switch (v) {
	case GC_VDB_MPROTECT: name = "mprotect"; break;
	case GC_VDB_MANUAL: name = "manual"; break;
	case GC_VDB_DEFAULT: name = "default"; break;
	case GC_VDB_GWW: name = "gww"; break;
	case GC_VDB_PROC: name = "proc"; break;
	case GC_VDB_SOFT: name = "soft-dirty"; break;
	case GC_VDB_NONE: name = "none"; break;
	default: name = NULL;
	}
#ifdef GC_VDB_UFFD
	if (v == GC_VDB_UFFD)
		name = "uffd";
#endif
	/* The uffd layer may report itself as SOFT (the same pagemap file). */
	if (uffd && (!name || v == GC_VDB_SOFT))
		name = "uffd";
	if (name)
		snprintf(c->vdb, sizeof(c->vdb), "%s", name);
	else
		snprintf(c->vdb, sizeof(c->vdb), "0x%x", v);
	tap_diag("collector: bdwgc %u.%u.%u, GC_get_actual_vdb() 0x%x, "
		 "userfaultfd descriptor %s: VDB %s",
		 (unsigned int)GC_VERSION_MAJOR, (unsigned int)GC_VERSION_MINOR,
		 (unsigned int)GC_VERSION_MICRO, v, uffd ? "open" : "none",
		 c->vdb);
}

/* Run the incremental cycle in progress, if any, to its end. */
static void finish_cycle(struct ctx *c)
{
	for (unsigned long n = 0; GC_collect_a_little(); n++)
		if (n > 100000000UL)
			bail_msg(c, "GC_collect_a_little() never finishes");
}

/*
 * Start a cycle whose stop-the-world marking is abandoned after 1..16
 * steps, then advance it by 1..4 incremental steps (it may finish on its
 * own when there is little to mark); returns whether it is in progress.
 */
static bool start_cycle_midway(struct ctx *c)
{
	unsigned int steps = 1 + mw_rndn(&c->rng, 4);
	bool busy = true;

	stop_countdown = 1 + (int)mw_rndn(&c->rng, 16);
	GC_start_incremental_collection();
	stop_countdown = 0;
	while (steps-- && busy)
		busy = GC_collect_a_little();
	return busy;
}

/* Garbage: a few objects nobody keeps, so that freed memory is reused. */
static void churn(struct ctx *c)
{
	unsigned int n = mw_rndn(&c->rng, 48);

	while (n--) {
		size_t sz = 16 + mw_rndn(&c->rng, 1009);
		char *p = GC_MALLOC(sz);

		if (!p)
			bail_msg(c, "GC_MALLOC: out of memory");
		memset(p, 0xa5, sz);
	}
}

/*
 * Object id (for holder k, or a control: k -1): allocated, filled,
 * finalizer registered; only its hidden address is kept.  Not inlined:
 * its frame, scrubbed after, is where the address lived.
 */
static __attribute__((noinline)) void new_object(struct ctx *c, uint32_t id,
						 int k)
{
	struct objrec *o = &c->obj[id];
	uint32_t words = 2 + mw_rndn(&c->rng, 127);
	uint64_t *p = GC_MALLOC(words * sizeof(uint64_t));

	if (!p)
		bail_msg(c, "GC_MALLOC: out of memory");
	for (uint32_t i = 0; i < words; i++)
		p[i] = oword(id, i);
	GC_register_finalizer_no_order(p, on_finalize, o, NULL, NULL);
	*o = (struct objrec){
		.hid = GC_HIDE_POINTER(p), .words = words, .holder = k,
		.state = k < 0 ? O_CONTROL : O_HELD,
	};
	p = NULL;
}

/* ---- one round ----------------------------------------------------------- */

/*
 * The kernel writes object id's address (garbled: its hidden value) into
 * holder k by path p; returns bytes written or -1 (errno), *want: the
 * bytes meant.
 */
static long deliver(struct ctx *c, enum path p, unsigned int round, int k,
		    uint32_t id, bool garble, long *want)
{
	struct holder *h = c->holders[k];
	GC_hidden_pointer hid = c->obj[id].hid;
	off_t off = (off_t)k * HOLDER_SZ;
	struct crep rep;
	long r;

	*want = sizeof(void *);
	switch (p) {
	case P_PIPE:
		rep = courier(c, C_PIPE, k, hid, garble, NULL);
		if (rep.res < 0)
			break;
		r = read(c->data_r, &h->slot, sizeof(void *));
		if (r != (long)sizeof(void *)) {
			int e = errno;

			/* A failed read leaves the bytes in the pipe. */
			if (mw_xio(c->data_r, c->drain, sizeof(void *) -
				(r > 0 ? r : 0), false))
				mw_bail("drain the pipe", &c->seed);
			memset(c->drain, 0, sizeof(void *));
			errno = e;
		}
		return r;
	case P_FILE:
		rep = courier(c, C_FILE, k, hid, garble, NULL);
		if (rep.res < 0)
			break;
		return pread(c->ffd, &h->slot, sizeof(void *), off);
	case P_ODIRECT:
		*want = HOLDER_SZ;
		rep = courier(c, C_BLOCK, k, hid, garble, NULL);
		if (rep.res < 0)
			break;
		return pread(c->dfd, h, HOLDER_SZ, off);
	case P_PVW:
		rep = courier(c, C_PVW, k, hid, garble, &h->slot);
		break;
	case P_PROCMEM:
		rep = courier(c, C_PROCMEM, k, hid, garble, &h->slot);
		break;
	case P_URING:
		if (c->dfd >= 0 && round % 2) {
			*want = HOLDER_SZ;
			rep = courier(c, C_BLOCK, k, hid, garble, NULL);
			if (rep.res < 0)
				break;
			return uring_read(c, c->dfd, h, HOLDER_SZ, off);
		}
		rep = courier(c, C_FILE, k, hid, garble, NULL);
		if (rep.res < 0)
			break;
		return uring_read(c, c->ffd, &h->slot, sizeof(void *), off);
	default:
		errno = EINVAL;
		return -1;
	}
	if (rep.res < 0) {
		if (p != P_PVW && p != P_PROCMEM) {
			errno = rep.err;
			mw_bail("the courier's write", &c->seed);
		}
		errno = rep.err;
	}
	return rep.res;
}

/* Is holder k's slot the (hidden) address hid? */
static __attribute__((noinline)) bool slot_is(const struct ctx *c, int k,
					      GC_hidden_pointer hid)
{
	return GC_HIDE_POINTER(c->holders[k]->slot) == hid;
}

/* Does object o still hold its words?  (It is not finalized: not freed.) */
static __attribute__((noinline)) bool words_intact(const struct objrec *o,
						   uint32_t id)
{
	const uint64_t *p = GC_REVEAL_POINTER(o->hid);

	for (uint32_t i = 0; i < o->words; i++)
		if (p[i] != oword(id, i))
			return false;
	return true;
}

/* The oracle, after the round's collections. */
static void check_holders(struct ctx *c, enum path p, struct pstat *st,
			  unsigned int round)
{
	GC_invoke_finalizers();
	for (unsigned int k = 0; k < c->nholders; k++) {
		uint32_t id = c->cur[k];
		struct objrec *o;

		if (c->holders[k]->magic != hmagic(k)) {
			st->wrong++;
			tap_diag("%s round %u: holder %u's magic changed",
				 pname[p], round, k);
			c->holders[k]->magic = hmagic(k);
		}
		if (id == NONE)
			continue;
		o = &c->obj[id];
		if (o->finalized || !words_intact(o, id)) {
			bool fin = o->finalized;

			o->state = O_LOST;
			c->cur[k] = NONE;
			if (o->injected) {
				st->inj_found++;
				continue;
			}
			fin ? st->lost++ : st->corrupt++;
			if (st->lost + st->corrupt <= MAXSHOW)
				tap_diag("%s round %u: LOST object %u in holder "
					 "%u: %s while the holder refers to it",
					 pname[p], round, id, k,
					 fin ? "finalized" : "changed");
			continue;
		}
		if (!o->injected && !slot_is(c, k, o->hid)) {
			st->wrong++;
			tap_diag("%s round %u: holder %u does not hold object "
				 "%u's address", pname[p], round, k, id);
			o->state = O_RELEASED;
			c->cur[k] = NONE;
		}
	}
}

/* A holder for the next object: in --self-test not one holding a drop. */
static int pick_holder(struct ctx *c)
{
	int k = mw_rndn(&c->rng, c->nholders);

	for (unsigned int i = 0; i < c->nholders; i++) {
		unsigned int j = (k + i) % c->nholders;

		if (c->cur[j] == NONE || !c->obj[c->cur[j]].injected)
			return j;
	}
	return k;
}

static void run_round(struct ctx *c, enum path p, unsigned int round,
		      struct pstat *st)
{
	enum mode mode = mw_rndn(&c->rng, M_N);
	bool garble = c->self_test && mw_rndn(&c->rng, 4) == 0;
	int k = pick_holder(c);
	uint32_t id = c->nobj, old = c->cur[k];
	long want, r;
	int e;

	c->nobj += 2;		/* id and its control, id + 1 */
	if (c->nobj > c->capobj)
		bail_msg(c, "more objects than planned");
	churn(c);
	if (mode == M_BETWEEN)
		finish_cycle(c);
	else
		st->midcycle += start_cycle_midway(c);
	new_object(c, id, k);
	new_object(c, id + 1, -1);
	scrub_stack();
	r = deliver(c, p, round, k, id, garble, &want);
	e = errno;
	if (r == want) {
		st->delivered++;
		c->obj[id].injected = garble;
		st->injected += garble;
		c->cur[k] = id;
		if (old != NONE)
			c->obj[old].state = O_RELEASED;
	} else {
		c->obj[id].state = O_FAILED;
		if (r >= 0)
			st->shortw++;
		else if (e == EFAULT)
			st->efault++;
		else if (!st->errs++)
			st->first_err = e;
		/* What a partial write left in the holder is no reference. */
		if (old != NONE && !slot_is(c, k, c->obj[old].hid)) {
			c->obj[old].state = O_RELEASED;
			c->cur[k] = NONE;
		}
		if (st->efault + st->shortw + st->errs <= MAXSHOW)
			tap_diag("%s round %u: the kernel's write into holder "
				 "%d: %ld of %ld bytes%s%s", pname[p], round, k,
				 r, want, r < 0 ? ": " : "",
				 r < 0 ? strerror(e) : "");
	}
	switch (mode) {
	case M_BETWEEN:
		GC_start_incremental_collection();
		finish_cycle(c);
		break;
	case M_MID:
		finish_cycle(c);
		break;
	default:
		GC_gcollect();
		break;
	}
	scrub_stack();
	check_holders(c, p, st, round);
	scrub_stack();
}

static void run_path(struct ctx *c, enum path p, struct pstat *st)
{
	st->gc0 = GC_get_gc_no();
	for (unsigned int r = 0; r < c->rounds; r++) {
		run_round(c, p, r, st);
		st->rounds++;
	}
	/* Collect what is left to collect, then the last look. */
	for (int i = 0; i < 3; i++) {
		GC_gcollect();
		scrub_stack();
		check_holders(c, p, st, c->rounds);
	}
	st->gc1 = GC_get_gc_no();
	for (uint32_t id = 0; id < c->nobj; id++) {
		struct objrec *o = &c->obj[id];

		if (o->state == O_RELEASED || o->state == O_FAILED) {
			st->dropped++;
			st->dropped_fin += o->finalized;
		} else if (o->state == O_CONTROL) {
			st->controls++;
			st->controls_fin += o->finalized;
		} else {
			continue;
		}
		o->state = O_DONE;	/* the next path leaves it alone */
	}
}

/* ---- main ---------------------------------------------------------------- */

static void usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [--rounds N] [--holders H] [--seed S] "
		"[--path pipe|file|odirect|pvw|procmem|uring|all] "
		"[--self-test] [--expect-exact]\n", argv0);
	exit(2);
}

static void parse_args(struct ctx *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rounds", required_argument, NULL, 'r' },
		{ "holders", required_argument, NULL, 'H' },
		{ "seed", required_argument, NULL, 's' },
		{ "path", required_argument, NULL, 'p' },
		{ "self-test", no_argument, NULL, 't' },
		{ "expect-exact", no_argument, NULL, 'x' },
		{ NULL, 0, NULL, 0 },
	};
	int o;

	c->rounds = 100;
	c->nholders = 64;
	c->seed = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
	c->paths = 1U << P_N;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'r':
			c->rounds = strtoul(optarg, NULL, 0);
			break;
		case 'H':
			c->nholders = strtoul(optarg, NULL, 0);
			break;
		case 's':
			c->seed = strtoull(optarg, NULL, 0);
			break;
		case 'p':
			c->paths = 0;
			for (int p = 0; p < P_N; p++)
				if (!strcmp(optarg, pname[p]))
					c->paths = 1U << p;
			if (!strcmp(optarg, "all"))
				c->paths = 1U << P_N;
			if (!c->paths)
				usage(argv[0]);
			break;
		case 't':
			c->self_test = true;
			break;
		case 'x':
			c->exact = true;
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind != argc || c->rounds < 1 || c->rounds > 1000000 ||
	    c->nholders < 1 || c->nholders > 4096)
		usage(argv[0]);
	c->all = c->paths == 1U << P_N;
	if (c->all)
		c->paths = (1U << P_N) - 1;
}

/*
 * The collector, incremental, deterministic pacing; the holders, made old
 * (their pages clean) by a few collections.
 */
static void start_collector(struct ctx *c)
{
	GC_INIT();
	GC_set_finalize_on_demand(1);
	GC_set_time_limit(GC_TIME_UNLIMITED);
	GC_set_stop_func(stop_after_countdown);
	GC_enable_incremental();
	vdb_name(c);
	c->holders = GC_MALLOC(c->nholders * sizeof(*c->holders));
	if (!c->holders)
		bail_msg(c, "GC_MALLOC the holder array: out of memory");
	for (unsigned int k = 0; k < c->nholders; k++) {
		struct holder *h = GC_memalign(HOLDER_SZ, sizeof(*h));

		if (!h || (uintptr_t)h % HOLDER_SZ)
			bail_msg(c, "GC_memalign a 4096-aligned holder failed");
		h->magic = hmagic(k);
		c->holders[k] = h;
	}
	for (int i = 0; i < 3; i++)
		GC_gcollect();
}

int main(int argc, char **argv)
{
	struct ctx c = { .cmd_w = -1 };
	struct pstat st[P_N] = { { 0 } };
	char why[P_N][160];
	int npoints = 1, incremental;

	parse_args(&c, argc, argv);
	tap_guest_only();
	c.rng = c.seed;
	c.capobj = 2 * c.rounds * P_N;
	c.obj = calloc(c.capobj, sizeof(*c.obj));
	c.cur = malloc(c.nholders * sizeof(*c.cur));
	c.drain = malloc(sizeof(void *));
	if (!c.obj || !c.cur || !c.drain)
		mw_bail("malloc", &c.seed);
	for (unsigned int k = 0; k < c.nholders; k++)
		c.cur[k] = NONE;
	setup_files(&c);
	start_courier(&c);
	c.uring_errno = -mw_uring_setup(&c.ring, &c.seed);
	for (int p = 0; p < P_N; p++) {
		if (!(c.paths & 1U << p))
			continue;
		if (path_available(&c, p, why[p], sizeof(why[p])))
			npoints += 3 + (c.self_test ? 1 : 0) +
				   (c.exact ? 2 : 0);
		else if (c.all)
			c.paths &= ~(1U << p);
		else
			npoints++;
	}
	tap_plan(npoints);
	tap_diag("gc-kwrites seed %" PRIu64 "; replay: %s --seed %" PRIu64
		 " --rounds %u --holders %u%s%s", c.seed, argv[0], c.seed,
		 c.rounds, c.nholders, c.self_test ? " --self-test" : "",
		 c.exact ? " --expect-exact" : "");
	for (int p = 0; p < P_N; p++)
		if (c.all && !path_available(&c, p, why[p], sizeof(why[p])))
			tap_diag("%s: not available here (%s): not run",
				 pname[p], why[p]);

	start_collector(&c);
	incremental = GC_is_incremental_mode();

	for (int p = 0; p < P_N; p++) {
		struct pstat *s = &st[p];

		if (!(c.paths & 1U << p))
			continue;
		if (!path_available(&c, p, why[p], sizeof(why[p]))) {
			tap_ok(false, "%s: available (%s)", pname[p], why[p]);
			continue;
		}
		run_path(&c, p, s);
		tap_diag("%s: %u rounds (%u with the write in the middle of "
			 "a cycle), %u writes delivered (%u garbled), "
			 "efault %u, short %u, other errors %u%s%s; lost %u, "
			 "changed %u; finalized: dropped objects %u of %u, "
			 "controls %u of %u", pname[p], s->rounds,
			 s->midcycle, s->delivered, s->injected, s->efault, s->shortw,
			 s->errs, s->errs ? " first: " : "",
			 s->errs ? strerror(s->first_err) : "", s->lost,
			 s->corrupt, s->dropped_fin, s->dropped,
			 s->controls_fin, s->controls);
		tap_ok(s->gc1 > s->gc0, "%s: collections ran (%lu)", pname[p],
		       (unsigned long)(s->gc1 - s->gc0));
		tap_ok(!s->wrong, "%s: the kernel wrote the bytes sent (%u "
		       "holders wrong)", pname[p], s->wrong);
		tap_ok(s->controls_fin > 0, "%s: the collector freed objects "
		       "nothing refers to (%u of %u controls)", pname[p],
		       s->controls_fin, s->controls);
		if (c.self_test && !tap_ok(s->inj_found > 0, "%s: self-test: "
					   "garbled addresses found lost "
					   "(%u of %u)", pname[p],
					   s->inj_found, s->injected))
			tap_diag("  the oracle missed every drop it was "
				 "given%s", s->injected ? "" :
				 " (none landed: every write failed)");
		if (c.exact) {
			tap_ok(!s->lost && !s->corrupt, "%s: no object lost "
			       "(lost %u, changed %u)", pname[p], s->lost,
			       s->corrupt);
			tap_ok(!s->efault && !s->shortw && !s->errs,
			       "%s: every kernel write complete (efault %u, "
			       "short %u, other %u)", pname[p], s->efault,
			       s->shortw, s->errs);
		}
	}
	stop_courier(&c);
	/* (The collector may leave the mode: MPROTECT_VDB at 128 MiB.) */
	if (!tap_ok(incremental && GC_is_incremental_mode(), "the collector "
		    "was in incremental mode throughout (VDB %s)", c.vdb))
		tap_diag("  without incremental mode no dirty bits are read: "
			 "the test proved nothing");
	for (int p = 0; p < P_N; p++) {
		const struct pstat *s = &st[p];

		if (!(c.paths & 1U << p) || !s->rounds)
			continue;
		printf("GC-KWRITES path=%s rounds=%u lost=%u efault=%u "
		       "short=%u vdb=%s", pname[p], s->rounds,
		       s->lost + s->corrupt, s->efault, s->shortw, c.vdb);
		if (c.self_test)
			printf(" injected=%u found=%u", s->injected,
			       s->inj_found);
		printf("\n");
	}
	return tap_done();
}
