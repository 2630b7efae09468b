// SPDX-License-Identifier: MIT
/*
 * markerdiff: the differential of the PMD-level uffd-wp marker
 * (doc/pmd-marker.md).  A marker must change no
 * answer: the same operation sequences on armed sparse anonymous ranges,
 * run once with the marker installed and once without, must read the
 * same, byte for byte.
 *
 * For a seed, each sequence runs in a fresh child process: it reserves
 * 64-512 MiB of anonymous memory at a fixed address (2 MiB aligned or
 * deliberately not), registers it uffd-wp with WP_UNPOPULATED (WP_ASYNC
 * or sync mode, sometimes MISSING too, EVENT_FORK, EVENT_REMAP), arms it
 * with UFFDIO_WRITEPROTECT and runs random operations on it: write
 * protection and its removal (whole and partial 2 MiB, aligned and not),
 * PAGEMAP_SCAN (get, get+WP_MATCHING, WP-only, random category masks,
 * small vec_len and max_pages), CPU reads and writes, read(2) into the
 * range and writes through /proc/self/mem, madvise (DONTNEED, FREE, COLD, PAGEOUT, WILLNEED, POPULATE_READ
 * and _WRITE, COLLAPSE, HUGEPAGE, NOHUGEPAGE), mprotect, munmap, mremap
 * (aligned and unaligned moves, grow, shrink, MREMAP_FIXED,
 * MREMAP_DONTUNMAP), fork (the child scans and writes and reports through
 * a pipe), UFFDIO_REGISTER again without WP, UFFDIO_UNREGISTER, close and
 * reopen of the uffd, UFFDIO_COPY and ZEROPAGE, mbind (MPOL_MF_STRICT,
 * MOVE), move_pages statuses, mlock and munlock.  In sync mode a service
 * thread reads every uffd message (the sequence's one faulting thread
 * makes their order fixed) and resolves it.
 *
 * Every answer goes into the sequence's log: return values and errnos,
 * the uffd messages, PAGEMAP_SCAN's regions and walk_end, and after each
 * operation the state of the range: its /proc/self/maps and smaps lines
 * (KernelPageSize, MMUPageSize and Referenced left out), numa_maps (without
 * the LRU and I/O states: active, dirty, swapcache, writeback),
 * /proc/self/pagemap run-length encoded (PFNs of present pages and swap
 * offsets masked; marker frames kept), mincore (masked for swapped pages:
 * whether the page is still in the swap cache depends on when the disk
 * finished the write) and /proc/self/status fields (the process-wide ones as deltas from the
 * start of the sequence).  The log is kept as a running FNV-1a 64 digest,
 * and with --trace as a text file too.  VmPTE is not in the log (it is
 * the point of the marker): it is recorded after each operation, and with
 * the marker on it must be at most what it is with it off.
 *
 *   markerdiff [--seed N] [--sequences N] [--seconds S] [--ops N] [--seq K]
 *          [--compare] [--no-knob] [--self-test] [--trace] [--thp-never]
 *          [--harvest-skip[=verify]] [--hang-seconds S] [--quiet]
 *
 * Without --compare each sequence runs once and its digest is printed
 * (compare two boots, with and without uffd_wp_pmd_marker=off).
 * --compare runs each sequence twice, with debugfs
 * uffd_wp_pmd_marker/enabled = 1 and then 0 (written by the parent before
 * it forks the sequence's child), compares the digests and the VmPTE
 * records, and at the end prints the stats counters' deltas of the "on"
 * runs: a site the sequences are meant to reach that stayed at zero fails
 * (a differential that never met a marker proves nothing), as does a
 * kernel without the debugfs directory.  --harvest-skip compares the same
 * way with uffd_wp_harvest_skip/enabled = 1 and 0 instead (harvests that
 * pass over page tables with no new write; two more harvests of the whole
 * range after each operation, so that every operation meets clean
 * tables), its counters "cleared", "marked" and "skipped_lockless"
 * required; --harvest-skip=verify with 2 and 0
 * (clean tables read, and the kernel warns at an unarmed pte in one: a
 * missed mark, which the harness takes as a splat).  --no-knob (developers, kernels
 * without the marker) runs both passes without touching anything: they
 * must agree, which proves the log deterministic.  --self-test perturbs
 * one answer of each sequence's second pass and one VmPTE record of its
 * first, and passes only if every sequence is reported different, at the
 * perturbed line, and the VmPTE check fires.  --seq K runs sequence K of
 * the seed alone (the replay of a difference; with --trace the first
 * differing line is printed).  --seconds: no new sequence starts after S
 * seconds (or when the next one would end after them).  A pass that has
 * not ended after --hang-seconds (default 60) is killed and fails as a
 * hang (with --trace, the operation it hung in is printed).
 *
 * Each sequence runs with THP enabled = madvise (half of them), always or
 * never, the same in both passes.  For the duration of the run the
 * guest's khugepaged sleeps (a collapse at a time the sequence does not
 * choose would make the answers depend on timing), swap readahead is off
 * (vm.page-cluster 0: which slots are read ahead depends on the swap
 * offsets, which differ between passes) and so is proactive compaction;
 * all is put back at the end.  TAP output; every failure prints the seed,
 * the sequence and the replay command.  Runs only in the memwatch test
 * guest.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mw-test.h"

#define PSZ		4096ULL
#define HPSZ		(2ULL << 20)
#define BASE		0x200000000000ULL	/* window A's 1 GiB slot */
#define BWIN		0x210000000000ULL	/* window B: mremap targets */
#define BLEN		(64ULL << 20)
#define MAXCK		1024		/* VmPTE records per sequence */
#define MAXU		8		/* uffds the service thread watches */
#define MSGCAP		8192		/* uffd messages per operation */
#define PMCHUNK		4096		/* pagemap entries read at once */
#define SMAPSCAP	(1U << 20)
#define TBUFSZ		(64U << 10)
#define KNOB		"/sys/kernel/debug/uffd_wp_pmd_marker"
#define SKIP_KNOB	"/sys/kernel/debug/uffd_wp_harvest_skip"
#define NSTAT		32
#define NSET		3
#define THP_ENABLED	"/sys/kernel/mm/transparent_hugepage/enabled"

#define PM_PRESENT	(1ULL << 63)
#define PM_SWAP		(1ULL << 62)
#define PM_FRAME	((1ULL << 55) - 1)

/* The counters of KNOB/stats a run is meant to move (section 8). */
static const char *const marker_sites[] = {
	"installed", "rearmed", "emptied", "cleared", "copied", "moved",
	"expanded_fault", "expanded_mfill", "expanded_protect",
	"expanded_scan", "expanded_madvise", "expanded_split",
	"expanded_mremap", "scan", NULL
};
/*
 * --harvest-skip: SKIP_KNOB's instead (harvests that skip page tables with
 * no new write, the series' Documentation/mm/uffd-wp-harvest-skip.rst);
 * --harvest-skip=verify reads the clean tables too, and the kernel warns
 * at an unarmed pte in one.
 */
/* (skipped_locked: shmem and the like; the sequences map anonymous memory) */
static const char *const skip_sites[] = {
	"cleared", "marked", "skipped_lockless", NULL
};
static const char *const verify_sites[] = {
	"cleared", "marked", "verified", NULL
};

/* What a sequence's child hands back (a shared page). */
struct seqres {
	uint64_t digest, lines, ops;
	uint32_t done, npte;
	int64_t pte_end;		/* VmPTE delta after the final unmap */
	int64_t vmpte[MAXCK];		/* VmPTE delta (kB) after each dump */
	char fail[256];			/* the child could not run (not an answer) */
};

struct opts {
	uint64_t seed, sequences, first, ops, perturb;
	unsigned int seconds, hang_s;
	bool compare, no_knob, self_test, trace, quiet, one, thp_never;
	const char *knob_on;		/* what the "on" passes write */
	const char *const *sites;	/* the counters the runs must move */
	bool harvests;			/* two harvests after each operation */
	const char *argv0;
};

/* One raw uffd message and what resolving it answered. */
struct msgrec {
	struct uffd_msg m;
	int u;			/* index of the uffd it came from */
	int ret, err;
};

enum op {
	O_WP, O_UNWP, O_SCAN, O_TOUCH, O_READ, O_MADV, O_MPROTECT, O_MUNMAP,
	O_MREMAP, O_FORK, O_REGISTER, O_UNREGISTER, O_CLOSE, O_COPY,
	O_MBIND, O_MOVE_PAGES, O_MLOCK, O_N
};

static const char *const op_name[O_N] = {
	"wp", "unwp", "scan", "touch", "read", "madvise", "mprotect",
	"munmap", "mremap", "fork", "register", "unregister", "close-uffd",
	"copy", "mbind", "move_pages", "mlock",
};

/* How often each operation is in the deck a sequence deals from. */
static const int op_weight[O_N] = {
	[O_WP] = 3, [O_UNWP] = 3, [O_SCAN] = 5, [O_TOUCH] = 4, [O_READ] = 1,
	[O_MADV] = 5, [O_MPROTECT] = 1, [O_MUNMAP] = 1, [O_MREMAP] = 3,
	[O_FORK] = 1, [O_REGISTER] = 1, [O_UNREGISTER] = 1, [O_CLOSE] = 1,
	[O_COPY] = 2, [O_MBIND] = 1, [O_MOVE_PAGES] = 1, [O_MLOCK] = 1,
};

/* A sequence: everything its child process knows. */
struct sq {
	const struct opts *o;
	struct seqres *res;
	uint64_t rng, seqno, seqseed, perturb_at;
	uint64_t a, alen;		/* window A: the reservation */
	uint64_t emptied;		/* an aligned 2 MiB last un-protected whole */
	uint64_t features, regmode;
	bool async;
	int uffd, pm, tfd, pipe[2];
	uint64_t digest, lines, opno;
	/* the service thread (while a uffd is open) */
	pthread_t svc;
	bool svc_on;
	atomic_bool svc_stop;
	pthread_mutex_t mu;
	int ufds[MAXU], nufd;
	struct msgrec *msgs;
	unsigned int nmsg, msg_lost;
	/* buffers */
	uint64_t *pmbuf;
	unsigned char *mcbuf;
	char *big;			/* smaps, numa_maps, maps */
	struct page_region *vec;
	char *src;			/* UFFDIO_COPY's source */
	char *scratch;
	char tbuf[TBUFSZ];
	size_t tlen;
	long base_st[8], base_pte;	/* status at the start */
};

/* ---- the log ------------------------------------------------------------ */

static void tflush(struct sq *s)
{
	size_t off = 0;

	while (off < s->tlen) {
		ssize_t n = write(s->tfd, s->tbuf + off, s->tlen - off);

		if (n <= 0)
			break;
		off += n;
	}
	s->tlen = 0;
}

/* One answer: a line into the digest and, with --trace, the trace. */
__attribute__((format(printf, 2, 3)))
static void out(struct sq *s, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 16, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if (n > (int)sizeof(buf) - 17)
		n = sizeof(buf) - 17;
	if (++s->lines == s->perturb_at)	/* --self-test: one wrong answer */
		n += snprintf(buf + n, 16, " PERTURBED");
	buf[n++] = '\n';
	for (int i = 0; i < n; i++)
		s->digest = (s->digest ^ (unsigned char)buf[i]) *
			    0x100000001b3ULL;
	if (s->tfd < 0)
		return;
	if (s->tlen + n > sizeof(s->tbuf))
		tflush(s);
	memcpy(s->tbuf + s->tlen, buf, n);
	s->tlen += n;
}

/* A failure of the test itself in the child: not an answer. */
__attribute__((noreturn, format(printf, 2, 3)))
static void die(struct sq *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(s->res->fail, sizeof(s->res->fail), fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(s->res->fail))
		snprintf(s->res->fail + n, sizeof(s->res->fail) - n, ": %s",
			 strerror(errno));
	if (s->tfd >= 0)
		tflush(s);
	_exit(3);
}

static uint64_t rnd(struct sq *s, uint64_t n)
{
	return mw_rndn(&s->rng, n);
}

/* An errno as the log spells it: the number (stable across libcs). */
#define RET(r)	(r), (r) < 0 ? errno : 0

/* ---- the uffd service thread -------------------------------------------- */

static int resolve(struct sq *s, int fd, const struct uffd_msg *m, int *err)
{
	uint64_t addr = m->arg.pagefault.address & ~(PSZ - 1);
	int r;

	*err = 0;
	if (m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) {
		struct uffdio_writeprotect wp = {
			.range = { addr, PSZ }, .mode = 0,
		};

		r = ioctl(fd, UFFDIO_WRITEPROTECT, &wp);
	} else {
		/*
		 * A page, also for a read: a read fault on a uffd-wp pte
		 * marker in a MISSING|WP registration is a MISSING fault
		 * that UFFDIO_ZEROPAGE refuses (EEXIST: the pte is not
		 * none), which would retry the fault for ever.
		 */
		struct uffdio_copy c = {
			.dst = addr, .src = (uintptr_t)s->src, .len = PSZ,
		};

		r = ioctl(fd, UFFDIO_COPY, &c);
	}
	if (r < 0) {	/* EEXIST, EAGAIN...: the fault is retried */
		struct uffdio_range w = { addr, PSZ };

		*err = errno;
		ioctl(fd, UFFDIO_WAKE, &w);
	}
	if (getenv("MARKERDIFF_DEBUG"))
		fprintf(stderr, "svc: fault %#llx flags %#llx -> %d e%d\n",
			(unsigned long long)m->arg.pagefault.address,
			(unsigned long long)m->arg.pagefault.flags, r, *err);
	return r;
}

/*
 * Reads every message of the uffds in ufds[] (the sequence's, and those
 * EVENT_FORK gave for forked children) and resolves the faults.  The
 * message is recorded under mu before it is resolved and read() runs
 * under mu too: when the operation that caused it returns (a fault
 * resolved, fork or mremap woken by the read), its messages are in
 * msgs[], so the main thread logs them in order after the operation.
 */
static void *svc_main(void *arg)
{
	struct sq *s = arg;

	while (!atomic_load(&s->svc_stop)) {
		struct pollfd p[MAXU];
		int n = s->nufd;

		for (int i = 0; i < n; i++)
			p[i] = (struct pollfd){ .fd = s->ufds[i],
						.events = POLLIN };
		if (poll(p, n, 20) <= 0)
			continue;
		for (int i = 0; i < n; i++) {
			struct msgrec r = { .u = i };

			if (!(p[i].revents & POLLIN))
				continue;
			pthread_mutex_lock(&s->mu);
			if (read(s->ufds[i], &r.m, sizeof(r.m)) !=
			    sizeof(r.m)) {
				pthread_mutex_unlock(&s->mu);
				continue;
			}
			if (r.m.event == UFFD_EVENT_PAGEFAULT)
				r.ret = resolve(s, s->ufds[i], &r.m, &r.err);
			else if (r.m.event == UFFD_EVENT_FORK &&
				 s->nufd < MAXU)
				s->ufds[s->nufd++] = r.m.arg.fork.ufd;
			if (s->nmsg < MSGCAP)
				s->msgs[s->nmsg++] = r;
			else
				s->msg_lost++;
			pthread_mutex_unlock(&s->mu);
		}
	}
	return NULL;
}

static void svc_start(struct sq *s)
{
	if (s->svc_on || s->uffd < 0)
		return;
	s->ufds[0] = s->uffd;
	s->nufd = 1;
	atomic_store(&s->svc_stop, false);
	if (pthread_create(&s->svc, NULL, svc_main, s))
		die(s, "pthread_create");
	s->svc_on = true;
}

/* Stop the thread and close the uffds forked children gave it. */
static void svc_stop(struct sq *s)
{
	if (!s->svc_on)
		return;
	atomic_store(&s->svc_stop, true);
	pthread_join(s->svc, NULL);
	s->svc_on = false;
	for (int i = 1; i < s->nufd; i++)
		close(s->ufds[i]);
	s->nufd = 0;
}

/* The messages of the operation that just returned, in their order. */
static void log_msgs(struct sq *s)
{
	pthread_mutex_lock(&s->mu);
	for (unsigned int i = 0; i < s->nmsg; i++) {
		const struct msgrec *r = &s->msgs[i];
		const struct uffd_msg *m = &r->m;

		switch (m->event) {
		case UFFD_EVENT_PAGEFAULT:
			out(s, "msg u%d fault %#llx flags %#llx -> %d e%d",
			    r->u, (unsigned long long)m->arg.pagefault.address,
			    (unsigned long long)m->arg.pagefault.flags,
			    r->ret, r->err);
			break;
		case UFFD_EVENT_FORK:
			out(s, "msg u%d fork", r->u);
			break;
		case UFFD_EVENT_REMAP:
			out(s, "msg u%d remap %#llx -> %#llx len %#llx", r->u,
			    (unsigned long long)m->arg.remap.from,
			    (unsigned long long)m->arg.remap.to,
			    (unsigned long long)m->arg.remap.len);
			break;
		default:
			out(s, "msg u%d event %#x", r->u, m->event);
		}
	}
	if (s->msg_lost)
		out(s, "msg lost %u", s->msg_lost);
	s->nmsg = s->msg_lost = 0;
	pthread_mutex_unlock(&s->mu);
}

/* ---- the state of the range --------------------------------------------- */

static size_t slurp(struct sq *s, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	ssize_t n;

	if (fd < 0)
		return 0;
	while (len < SMAPSCAP - 1 &&
	       (n = read(fd, s->big + len, SMAPSCAP - 1 - len)) > 0)
		len += n;
	close(fd);
	s->big[len] = '\0';
	return len;
}

static bool in_windows(const struct sq *s, uint64_t lo, uint64_t hi)
{
	return (lo < s->a + s->alen && hi > s->a) ||
	       (lo < BWIN + BLEN && hi > BWIN);
}

/* pagemap as the log keeps it: no PFN, no real swap offset. */
static uint64_t pm_mask(uint64_t e)
{
	if (e & PM_PRESENT)
		return e & ~PM_FRAME;
	/* swap type: bits 0-4; real devices are the low types, markers
	 * and migration entries the top ones, whose frame is kept */
	if ((e & PM_SWAP) && (e & 0x1f) < 16)
		return (e & ~PM_FRAME) | (e & 0x1f);
	return e;
}

/* pagemap and mincore of [lo, hi), one VMA's part of a window, as runs. */
static void dump_pages(struct sq *s, uint64_t lo, uint64_t hi)
{
	uint64_t run_pm = 0, run_mc = 0, pm_from = lo, mc_from = lo;
	bool first = true;

	for (uint64_t a = lo; a < hi; a += PMCHUNK * PSZ) {
		uint64_t n = (hi - a) / PSZ;
		int mr;

		if (n > PMCHUNK)
			n = PMCHUNK;
		if (pread(s->pm, s->pmbuf, n * 8, a / PSZ * 8) !=
		    (ssize_t)(n * 8))
			die(s, "pread pagemap %#" PRIx64, a);
		mr = mincore((void *)(uintptr_t)a, n * PSZ, s->mcbuf);
		for (uint64_t i = 0; i < n; i++) {
			uint64_t e = s->pmbuf[i], v = pm_mask(e), c;
			uint64_t pa = a + i * PSZ;

			if (mr)
				c = 100 + errno;
			else if ((e & PM_SWAP) && (e & 0x1f) < 16)
				c = 2;	/* swapped: swap cache or not */
			else
				c = s->mcbuf[i] & 1;
			if (first) {
				run_pm = v, run_mc = c, first = false;
				continue;
			}
			if (v != run_pm) {
				out(s, "pm %#" PRIx64 "-%#" PRIx64 " %#" PRIx64,
				    pm_from, pa, run_pm);
				run_pm = v, pm_from = pa;
			}
			if (c != run_mc) {
				out(s, "mc %#" PRIx64 "-%#" PRIx64 " %" PRIu64,
				    mc_from, pa, run_mc);
				run_mc = c, mc_from = pa;
			}
		}
	}
	if (!first) {
		out(s, "pm %#" PRIx64 "-%#" PRIx64 " %#" PRIx64, pm_from, hi,
		    run_pm);
		out(s, "mc %#" PRIx64 "-%#" PRIx64 " %" PRIu64, mc_from, hi,
		    run_mc);
	}
}

static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/*
 * numa_maps' line without the counts of pages by LRU and I/O state: active
 * (or unevictable), dirty, in the swap cache, under writeback.  They change
 * when a per-CPU LRU batch is drained, when swap I/O completes (a page
 * faulted in while its write is still in flight keeps its swap slot) and
 * when reclaim ages pages: at times no sequence chooses.  Neither the
 * marker nor the harvest skip touches them; pagemap, smaps and mincore
 * keep what they show of the pages.
 */
static void out_numa(struct sq *s, char *line)
{
	static const char *const drop[] = {
		"active=", "dirty=", "swapcache=", "writeback=",
	};
	char buf[512], *tok, *save = NULL;
	size_t n = 0;

	buf[0] = '\0';
	for (tok = strtok_r(line, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save)) {
		bool keep = true;

		for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
			if (!strncmp(tok, drop[i], strlen(drop[i])))
				keep = false;
		if (keep && n < sizeof(buf))
			n += snprintf(buf + n, sizeof(buf) - n, "%s%s",
				      n ? " " : "", tok);
	}
	out(s, "numa %s", buf);
}

/*
 * smaps of the VMAs in the windows (each line but the page sizes and
 * Referenced, the accessed bits reclaim's aging clears), then their pages;
 * numa_maps' lines of the windows (out_numa()).
 */
static void dump_vmas(struct sq *s)
{
	uint64_t vmas[512][2];
	int nv = 0;
	bool in = false;
	char *line, *save = NULL;

	slurp(s, "/proc/self/smaps");
	for (line = strtok_r(s->big, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long lo, hi;

		if (sscanf(line, "%llx-%llx ", &lo, &hi) == 2 &&
		    strchr(line, ' ') > strchr(line, '-')) {
			in = in_windows(s, lo, hi);
			if (in && nv < 512) {
				vmas[nv][0] = lo;
				vmas[nv++][1] = hi;
			}
		}
		if (!in || !strncmp(line, "KernelPageSize:", 15) ||
		    !strncmp(line, "MMUPageSize:", 12) ||
		    !strncmp(line, "Referenced:", 11))
			continue;
		out(s, "smaps %s", line);
	}
	for (int i = 0; i < nv; i++) {
		uint64_t lo = vmas[i][0], hi = vmas[i][1];

		if (lo < s->a + s->alen && hi > s->a)
			dump_pages(s, max64(lo, s->a),
				   min64(hi, s->a + s->alen));
		if (lo < BWIN + BLEN && hi > BWIN)
			dump_pages(s, max64(lo, BWIN), min64(hi, BWIN + BLEN));
	}
	if (!slurp(s, "/proc/self/numa_maps"))
		return;
	save = NULL;
	for (line = strtok_r(s->big, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long lo;

		if (sscanf(line, "%llx ", &lo) == 1 && in_windows(s, lo, lo + 1))
			out_numa(s, line);
	}
}

/* /proc/self/status: the fields the log keeps, and VmPTE (kB). */
/*
 * Not RssAnon: it counts the process's own pages too (a stack page more
 * or less, seen once in 100 sequence pairs); the range's are in smaps.
 */
static const char *const st_name[] = {
	"VmSize:", "VmData:", "VmLck:", "VmPin:", "VmSwap:",
};
#define ST_DELTA	2	/* the first 2 are process-wide: deltas */
#define NST		(int)(sizeof(st_name) / sizeof(st_name[0]))

static long read_status(struct sq *s, long *v)
{
	long pte = -1;
	char *line, *save = NULL;

	slurp(s, "/proc/self/status");
	for (line = strtok_r(s->big, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "VmPTE:", 6))
			pte = atol(line + 6);
		for (int i = 0; i < NST; i++)
			if (!strncmp(line, st_name[i], strlen(st_name[i])))
				v[i] = atol(line + strlen(st_name[i]));
	}
	if (pte < 0)
		die(s, "no VmPTE in /proc/self/status");
	return pte;
}

static void dump(struct sq *s)
{
	long v[NST] = { 0 }, pte = read_status(s, v);
	char line[256];
	int n = 0;

	for (int i = 0; i < NST; i++)
		n += snprintf(line + n, sizeof(line) - n, " %s%ld", st_name[i],
			      v[i] - (i < ST_DELTA ? s->base_st[i] : 0));
	out(s, "status%s", line);
	dump_vmas(s);
	if (s->res->npte < MAXCK)
		s->res->vmpte[s->res->npte++] = pte - s->base_pte;
}

/* ---- operations ---------------------------------------------------------- */

/*
 * A span to work on: in window A (one in five in window B, where mremap
 * moves things), on the 2 MiB grid or a few pages off it, from one page
 * to a few 2 MiB, at most maxlen.
 */
static void pick(struct sq *s, uint64_t maxlen, uint64_t *addr, uint64_t *len)
{
	uint64_t lo = s->a, hi = s->a + s->alen, g0, ng, a, l;

	if (rnd(s, 5) == 0)
		lo = BWIN, hi = BWIN + BLEN;
	g0 = (lo + HPSZ - 1) & ~(HPSZ - 1);
	ng = (hi - g0) / HPSZ;
	a = g0 + rnd(s, ng ? ng : 1) * HPSZ;
	switch (rnd(s, 4)) {
	case 1:
		a += rnd(s, 512) * PSZ;
		break;
	case 2:
		a -= (1 + rnd(s, 8)) * PSZ;
		break;
	case 3:
		a = lo + rnd(s, (hi - lo) / PSZ) * PSZ;
		break;
	}
	switch (rnd(s, 6)) {
	case 0:
		l = PSZ;
		break;
	case 1:
		l = (1 + rnd(s, 16)) * PSZ;
		break;
	case 2:
		l = HPSZ;
		break;
	case 3:
		l = HPSZ + (1 + rnd(s, 16)) * PSZ - 8 * PSZ - PSZ;
		break;
	case 4:
		l = (1 + rnd(s, 4)) * HPSZ;
		break;
	default:
		l = (1 + rnd(s, 512)) * PSZ;
	}
	if (a < lo)
		a = lo;
	if (a >= hi)
		a = hi - PSZ;
	if (l > maxlen)
		l = maxlen;
	if (l > hi - a)
		l = hi - a;
	*addr = a;
	*len = l;
}

static void op_wp(struct sq *s, bool protect)
{
	struct uffdio_writeprotect wp = {
		.mode = protect ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};
	uint64_t a = s->a, l = s->alen;
	int r;

	if (rnd(s, 6))
		pick(s, 16 * HPSZ, &a, &l);
	wp.range.start = a;
	wp.range.len = l;
	r = ioctl(s->uffd, UFFDIO_WRITEPROTECT, &wp);
	/* a whole 2 MiB un-protected: an empty pmd marker where it was armed */
	if (!protect && r == 0 && ((a + HPSZ - 1) & ~(HPSZ - 1)) + HPSZ <= a + l)
		s->emptied = (a + HPSZ - 1) & ~(HPSZ - 1);
	out(s, "%s %#llx+%#llx -> %d e%d", protect ? "wp" : "unwp",
	    wp.range.start, wp.range.len, RET(r));
}

/* PAGEMAP_SCAN on pagemap fd pm: Wine's get+reset, get, WP-only, get+WP. */
static void op_scan(struct sq *s, int pm)
{
	struct pm_scan_arg arg = { .size = sizeof(arg) };
	uint64_t a = s->a, l = s->alen;
	int v = rnd(s, 4), r;

	if (rnd(s, 3))
		pick(s, 64 * HPSZ, &a, &l);
	/*
	 * Half the scans with WP_MATCHING over part of the 2 MiB last
	 * un-protected whole: with the marker on, re-arming part of an empty
	 * marker takes its ptes back first (the expanded_scan site).
	 */
	if (s->emptied && v != 1 && rnd(s, 2)) {
		a = s->emptied + (1 + rnd(s, 511)) * PSZ;
		l = s->emptied + HPSZ - a;
	}
	arg.start = a;
	arg.end = a + l;
	if (v == 0) {
		arg.flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC;
		arg.category_mask = arg.return_mask = PAGE_IS_WRITTEN;
	} else {
		arg.category_mask = rnd(s, 256) & rnd(s, 256);
		arg.category_inverted = arg.category_mask & rnd(s, 256);
		arg.category_anyof_mask = rnd(s, 3) ? 0 : rnd(s, 256);
		arg.return_mask = 1 + rnd(s, 255);
		if (v >= 2)
			arg.flags = PM_SCAN_WP_MATCHING |
				    (rnd(s, 2) ? PM_SCAN_CHECK_WPASYNC : 0);
	}
	if (v != 2) {
		arg.vec = (uintptr_t)s->vec;
		arg.vec_len = 1 + rnd(s, rnd(s, 2) ? 4 : 64);
	}
	arg.max_pages = rnd(s, 2) ? 0 : 1 + rnd(s, 1024);
	arg.walk_end = 0x5a5a5a5a5a5a5000ULL;
	r = ioctl(pm, PAGEMAP_SCAN, &arg);
	out(s, "scan f %llx [%#llx,%#llx) m %llx i %llx a %llx r %llx "
	    "vl %llu mp %llu -> %d e%d walk_end %#llx", arg.flags, arg.start,
	    arg.end, arg.category_mask, arg.category_inverted,
	    arg.category_anyof_mask, arg.return_mask, arg.vec_len,
	    arg.max_pages, RET(r), arg.walk_end);
	for (int i = 0; i < r && i < 64; i++)
		out(s, "  region %#llx-%#llx %llx", s->vec[i].start,
		    s->vec[i].end, s->vec[i].categories);
}

/*
 * --harvest-skip: Wine's get+reset of the whole range, resumed to its end;
 * done twice after every operation, so that each operation meets page
 * tables a harvest has just made clean, and the next harvest must see
 * whatever it changed in them.
 */
static void op_harvest(struct sq *s)
{
	struct pm_scan_arg arg = {
		.size = sizeof(arg),
		.flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
		.vec = (uintptr_t)s->vec, .vec_len = 64,
		.category_mask = PAGE_IS_WRITTEN,
		.return_mask = PAGE_IS_WRITTEN,
	};
	uint64_t at = s->a;

	for (int k = 0; k < 64 && at < s->a + s->alen; k++) {
		int r;

		arg.start = at;
		arg.end = s->a + s->alen;
		r = ioctl(s->pm, PAGEMAP_SCAN, &arg);
		out(s, "harvest [%#llx,%#llx) -> %d e%d walk_end %#llx",
		    arg.start, arg.end, RET(r), arg.walk_end);
		for (int i = 0; i < r && i < 64; i++)
			out(s, "  region %#llx-%#llx", s->vec[i].start,
			    s->vec[i].end);
		if (r < 0 || arg.walk_end <= at)
			break;
		at = arg.walk_end;
	}
}

static void op_touch(struct sq *s)
{
	uint64_t a, l, n = 1 + rnd(s, 8);

	pick(s, 64 * PSZ, &a, &l);
	for (uint64_t i = 0; i < n; i++) {
		char *p = (char *)(uintptr_t)(a + rnd(s, l / PSZ) * PSZ +
					      rnd(s, PSZ));
		bool w = rnd(s, 10) < 7;
		char v = (char)(s->opno * 7 + i + 1), got = 0;
		int sig;

		if (getenv("MARKERDIFF_DEBUG"))
			fprintf(stderr, "touch %p %d\n", (void *)p, w);
		sig = mw_touch(p, w, v, &got);

		out(s, "touch %p %c -> sig %d val %d", (void *)p,
		    w ? 'w' : 'r', sig, w ? v : got);
	}
}

/* read(2) from a pipe into the range: the kernel's write. */
static void op_read(struct sq *s)
{
	uint64_t a, l, k = 1 + rnd(s, 16384);
	ssize_t w, r;

	pick(s, 8 * PSZ, &a, &l);
	a += rnd(s, PSZ);
	for (uint64_t i = 0; i < k; i++)
		s->scratch[i] = (char)(i * 13 + s->opno);
	if (rnd(s, 3) == 0) {	/* through /proc/self/mem: GUP, FOLL_FORCE */
		int fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);

		r = fd < 0 ? -1 : pwrite(fd, s->scratch, k, (off_t)a);
		out(s, "memwrite %#" PRIx64 " %" PRIu64 " -> %zd e%d", a, k, r,
		    r < 0 ? errno : 0);
		if (fd >= 0)
			close(fd);
		return;
	}
	w = write(s->pipe[1], s->scratch, k);
	r = read(s->pipe[0], (void *)(uintptr_t)a, k);
	out(s, "read %#" PRIx64 " %" PRIu64 " -> %zd %zd e%d", a, k, w, r,
	    r < 0 ? errno : 0);
	while (read(s->pipe[0], s->scratch, 65536) > 0)
		;
}

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

static void op_madv(struct sq *s)
{
	static const struct { int adv; const char *name; uint64_t max; } t[] = {
		{ MADV_DONTNEED, "dontneed", 16 * HPSZ },
		{ MADV_FREE, "free", 16 * HPSZ },
		{ MADV_COLD, "cold", 16 * HPSZ },
		{ MADV_PAGEOUT, "pageout", 4 * HPSZ },
		{ MADV_WILLNEED, "willneed", 4 * HPSZ },
		{ MADV_POPULATE_READ, "populate_read", 2 * HPSZ },
		{ MADV_POPULATE_WRITE, "populate_write", HPSZ + 64 * PSZ },
		{ MADV_COLLAPSE, "collapse", 2 * HPSZ },
		{ MADV_HUGEPAGE, "hugepage", 64 * HPSZ },
		{ MADV_NOHUGEPAGE, "nohugepage", 64 * HPSZ },
	};
	int i = rnd(s, sizeof(t) / sizeof(t[0])), r;
	uint64_t a, l;

	pick(s, t[i].max, &a, &l);
	if (t[i].adv == MADV_COLLAPSE && rnd(s, 2))
		a &= ~(HPSZ - 1);
	r = madvise((void *)(uintptr_t)a, l, t[i].adv);
	out(s, "madvise %s %#" PRIx64 "+%#" PRIx64 " -> %d e%d", t[i].name,
	    a, l, RET(r));
}

static void op_mprotect(struct sq *s)
{
	static const int prot[] = { PROT_READ, PROT_READ | PROT_WRITE,
				    PROT_NONE, PROT_READ | PROT_WRITE };
	uint64_t a, l;
	int p = prot[rnd(s, 4)], r;

	pick(s, 16 * HPSZ, &a, &l);
	r = mprotect((void *)(uintptr_t)a, l, p);
	out(s, "mprotect %#" PRIx64 "+%#" PRIx64 " %d -> %d e%d", a, l, p,
	    RET(r));
}

static int do_register(struct sq *s, uint64_t a, uint64_t l, uint64_t mode)
{
	struct uffdio_register reg = { .range = { a, l }, .mode = mode };
	int r = ioctl(s->uffd, UFFDIO_REGISTER, &reg);

	out(s, "register %#" PRIx64 "+%#" PRIx64 " mode %" PRIu64
	    " -> %d e%d ioctls %#llx", a, l, mode, RET(r),
	    r ? 0ULL : (unsigned long long)reg.ioctls);
	return r;
}

static void arm(struct sq *s, uint64_t a, uint64_t l)
{
	struct uffdio_writeprotect wp = {
		.range = { a, l }, .mode = UFFDIO_WRITEPROTECT_MODE_WP,
	};
	int r = ioctl(s->uffd, UFFDIO_WRITEPROTECT, &wp);

	out(s, "arm %#" PRIx64 "+%#" PRIx64 " -> %d e%d", a, l, RET(r));
}

/*
 * The first aligned 2 MiB from @from on that nothing touched before the
 * arming (with the marker on, an armed marker), or 0.  touched[]: the
 * pages written before the arming.
 */
static uint64_t untouched_2m(struct sq *s, uint64_t from,
			     const uint64_t *touched, int ntouched)
{
	uint64_t g;
	int i;

	for (g = (from + HPSZ - 1) & ~(HPSZ - 1); g + HPSZ <= s->a + s->alen;
	     g += HPSZ) {
		for (i = 0; i < ntouched; i++)
			if ((touched[i] & ~(HPSZ - 1)) == g)
				break;
		if (i == ntouched)
			return g;
	}
	return 0;
}

/*
 * The transitions random operations reach least, done first in every
 * sequence, each on an untouched 2 MiB: MADV_DONTNEED of one page inside
 * it (the zap needs the ptes: expanded_madvise), and un-protecting one
 * whole, then re-arming its second half with PAGEMAP_SCAN (the empty
 * marker's ptes come back first: expanded_scan; sync-mode sequences log
 * the scan's refusal).
 */
static void empty_rearm(struct sq *s, const uint64_t *touched, int ntouched)
{
	struct uffdio_writeprotect wp = { .mode = 0 };
	struct pm_scan_arg arg = { .size = sizeof(arg) };
	uint64_t g;
	int r, i;

	g = untouched_2m(s, s->a, touched, ntouched);
	if (!g)
		return;
	r = madvise((void *)(uintptr_t)(g + PSZ), PSZ, MADV_DONTNEED);
	out(s, "dontneed %#llx+%#llx -> %d e%d", (unsigned long long)(g + PSZ),
	    (unsigned long long)PSZ, RET(r));
	g = untouched_2m(s, g + HPSZ, touched, ntouched);
	if (!g)
		return;
	wp.range.start = g;
	wp.range.len = HPSZ;
	r = ioctl(s->uffd, UFFDIO_WRITEPROTECT, &wp);
	out(s, "unwp %#llx+%#llx -> %d e%d", wp.range.start, wp.range.len,
	    RET(r));
	arg.start = g + HPSZ / 2;
	arg.end = g + HPSZ;
	arg.flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC;
	arg.category_mask = arg.return_mask = PAGE_IS_WRITTEN;
	arg.vec = (uintptr_t)s->vec;
	arg.vec_len = 4;
	r = ioctl(s->pm, PAGEMAP_SCAN, &arg);
	out(s, "scan wp [%#llx,%#llx) -> %d e%d walk_end %#llx", arg.start,
	    arg.end, RET(r), arg.walk_end);
	for (i = 0; i < r && i < 4; i++)
		out(s, "  region %#llx-%#llx %llx", s->vec[i].start,
		    s->vec[i].end, s->vec[i].categories);
}

/* munmap a part; half the time map it anew, and maybe arm that. */
static void op_munmap(struct sq *s)
{
	uint64_t a, l;
	int r;

	pick(s, 8 * HPSZ, &a, &l);
	r = munmap((void *)(uintptr_t)a, l);
	out(s, "munmap %#" PRIx64 "+%#" PRIx64 " -> %d e%d", a, l, RET(r));
	if (rnd(s, 2)) {
		void *p = mmap((void *)(uintptr_t)a, l, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS |
			       MAP_FIXED_NOREPLACE, -1, 0);

		out(s, "mmap %#" PRIx64 "+%#" PRIx64 " -> %d e%d", a, l,
		    p == MAP_FAILED ? -1 : p == (void *)(uintptr_t)a ? 0 : 1,
		    p == MAP_FAILED ? errno : 0);
		if (p != MAP_FAILED && rnd(s, 2) &&
		    !do_register(s, a, l, s->regmode))
			arm(s, a, l);
	}
}

static void op_mremap(struct sq *s)
{
	static const char *const vname[] = {
		"aligned", "unaligned", "grow", "shrink", "fixed-a",
		"dontunmap",
	};
	uint64_t g0 = (s->a + HPSZ - 1) & ~(HPSZ - 1);
	uint64_t ng = (s->a + s->alen - g0) / HPSZ;
	uint64_t src, old, nlen, dst = 0, k;
	int v = rnd(s, 6), flags = MREMAP_MAYMOVE | MREMAP_FIXED;
	void *p;

	switch (v) {
	case 0:		/* whole 2 MiB units, A to B */
		k = 1 + rnd(s, 4);
		src = g0 + rnd(s, ng > k ? ng - k + 1 : 1) * HPSZ;
		old = nlen = k * HPSZ;
		dst = BWIN + rnd(s, BLEN / HPSZ - k + 1) * HPSZ;
		break;
	case 1:		/* anything to anywhere in B */
		pick(s, 4 * HPSZ, &src, &old);
		nlen = old;
		dst = BWIN + rnd(s, (BLEN - old) / PSZ + 1) * PSZ;
		break;
	case 2:		/* in place */
		pick(s, 4 * HPSZ, &src, &old);
		nlen = old + (1 + rnd(s, 1024)) * PSZ;
		flags = 0;
		break;
	case 3:
		pick(s, 4 * HPSZ, &src, &old);
		nlen = old > PSZ ? (1 + rnd(s, old / PSZ - 1)) * PSZ : old;
		flags = 0;
		break;
	case 4:		/* onto A, over whatever is there */
		pick(s, 4 * HPSZ, &src, &old);
		nlen = old;
		dst = g0 + rnd(s, ng ? ng : 1) * HPSZ +
		      (rnd(s, 2) ? rnd(s, 512) * PSZ : 0);
		break;
	default:
		pick(s, 4 * HPSZ, &src, &old);
		nlen = old;
		dst = BWIN + rnd(s, (BLEN - old) / HPSZ + 1) * HPSZ +
		      (rnd(s, 3) ? 0 : rnd(s, 512) * PSZ);
		if (dst + nlen > BWIN + BLEN)
			dst = BWIN;
		flags |= MREMAP_DONTUNMAP;
	}
	p = mremap((void *)(uintptr_t)src, old, nlen, flags,
		   (void *)(uintptr_t)dst);
	out(s, "mremap %s %#" PRIx64 "+%#" PRIx64 " -> %#" PRIx64 "+%#" PRIx64
	    " -> %#" PRIx64 " e%d", vname[v], src, old, dst, nlen,
	    p == MAP_FAILED ? 0 : (uint64_t)(uintptr_t)p,
	    p == MAP_FAILED ? errno : 0);
}

static void dump(struct sq *s);

/*
 * fork: the child scans, writes and scans again, logs the state of the
 * windows as it sees them, and sends those lines through a pipe; the
 * parent puts them into its log, then the child's exit status.
 */
static void op_fork(struct sq *s)
{
	int p[2], st = 0;
	char buf[4096];
	size_t have = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		die(s, "pipe2");
	pid = fork();
	if (pid < 0)
		die(s, "fork");
	if (pid == 0) {
		close(p[0]);
		s->tfd = p[1];
		s->tlen = 0;
		s->perturb_at = 0;
		s->pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
		if (s->pm < 0)
			_exit(4);
		op_scan(s, s->pm);
		op_touch(s);
		op_scan(s, s->pm);
		dump_vmas(s);
		tflush(s);
		_exit(0);
	}
	close(p[1]);
	while ((n = read(p[0], buf + have, sizeof(buf) - 1 - have)) > 0 ||
	       (n < 0 && errno == EINTR)) {
		char *line = buf, *nl;

		if (n < 0)
			continue;
		have += n;
		buf[have] = '\0';
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			out(s, "child %s", line);
			line = nl + 1;
		}
		have -= line - buf;
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1)
			have = 0;
	}
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	out(s, "fork -> status %#x", st);
	pthread_mutex_lock(&s->mu);
	n = s->nufd;
	pthread_mutex_unlock(&s->mu);
	if (n > 1) {		/* close the uffds EVENT_FORK gave */
		svc_stop(s);
		svc_start(s);
	}
}

static void op_register(struct sq *s)
{
	static const uint64_t modes[] = {
		UFFDIO_REGISTER_MODE_MISSING, UFFDIO_REGISTER_MODE_WP,
		UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
	};
	uint64_t a, l;

	if (rnd(s, 4) == 0)
		a = s->a, l = s->alen;
	else
		pick(s, 32 * HPSZ, &a, &l);
	do_register(s, a, l, modes[rnd(s, 3)]);
}

static void op_unregister(struct sq *s)
{
	uint64_t a = s->a, l = s->alen;
	struct uffdio_range r;
	int ret;

	if (rnd(s, 4))
		pick(s, 32 * HPSZ, &a, &l);
	r.start = a;
	r.len = l;
	ret = ioctl(s->uffd, UFFDIO_UNREGISTER, &r);
	out(s, "unregister %#llx+%#llx -> %d e%d", r.start, r.len, RET(ret));
}

/* A new uffd with the sequence's features; -1 if that failed. */
static int open_uffd(struct sq *s)
{
	struct uffdio_api api = { .api = UFFD_API, .features = s->features };
	int r;

	s->uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (s->uffd < 0)
		die(s, "userfaultfd");
	r = ioctl(s->uffd, UFFDIO_API, &api);
	out(s, "uffdio_api %#" PRIx64 " -> %d e%d features %#llx",
	    s->features, RET(r), (unsigned long long)api.features);
	return r;
}

/*
 * close the uffd, and two times in three open, register and arm anew
 * right away (else at the next close-uffd: meanwhile the range is
 * unregistered).
 */
static void op_close(struct sq *s)
{
	if (s->uffd >= 0) {
		svc_stop(s);
		out(s, "close -> %d", close(s->uffd));
		s->uffd = -1;
		if (!rnd(s, 3))
			return;
	}
	if (!open_uffd(s) && !do_register(s, s->a, s->alen, s->regmode))
		arm(s, s->a, s->alen);
	svc_start(s);
}

static void op_copy(struct sq *s)
{
	uint64_t a, l, n = 1 + rnd(s, 4);
	int r;

	pick(s, n * PSZ, &a, &l);
	if (rnd(s, 2)) {
		struct uffdio_copy c = {
			.dst = a, .src = (uintptr_t)s->src, .len = l,
			.mode = rnd(s, 2) ? UFFDIO_COPY_MODE_WP : 0,
		};

		r = ioctl(s->uffd, UFFDIO_COPY, &c);
		out(s, "copy %#" PRIx64 "+%#" PRIx64 " mode %llu -> %d e%d "
		    "copy %lld", a, l, c.mode, RET(r), (long long)c.copy);
	} else {
		struct uffdio_zeropage z = { .range = { a, l } };

		r = ioctl(s->uffd, UFFDIO_ZEROPAGE, &z);
		out(s, "zeropage %#" PRIx64 "+%#" PRIx64 " -> %d e%d "
		    "zeropage %lld", a, l, RET(r), (long long)z.zeropage);
	}
}

static void op_mbind(struct sq *s)
{
	static const int mode[] = { 0 /* DEFAULT */, 1 /* PREFERRED */,
				    2 /* BIND */ };
	static const int flags[] = { 0, 1 /* STRICT */, 2 /* MOVE */, 3 };
	unsigned long mask = 1;
	uint64_t a, l;
	int m = mode[rnd(s, 3)], f = flags[rnd(s, 4)];
	long r;

	pick(s, 8 * HPSZ, &a, &l);
	r = syscall(SYS_mbind, a, l, m, m ? &mask : NULL, m ? 64 : 0, f);
	out(s, "mbind %#" PRIx64 "+%#" PRIx64 " mode %d flags %d -> %ld e%d",
	    a, l, m, f, RET(r));
}

static void op_move_pages(struct sq *s)
{
	void *pages[16];
	int status[16];
	uint64_t a, l, n = 1 + rnd(s, 16);
	long r;

	pick(s, 4 * HPSZ, &a, &l);
	for (uint64_t i = 0; i < n; i++) {
		pages[i] = (void *)(uintptr_t)(a + rnd(s, l / PSZ) * PSZ);
		status[i] = 12345;
	}
	r = syscall(SYS_move_pages, 0, n, pages, NULL, status, 0);
	out(s, "move_pages %" PRIx64 "+%" PRIu64 " -> %ld e%d", a, n, RET(r));
	for (uint64_t i = 0; i < n; i++)
		out(s, "  status %p %d", pages[i], status[i]);
}

static void op_mlock(struct sq *s)
{
	uint64_t a, l;
	bool lock = rnd(s, 2);
	int r;

	pick(s, 2 * HPSZ, &a, &l);
	r = lock ? mlock((void *)(uintptr_t)a, l) :
		   munlock((void *)(uintptr_t)a, l);
	out(s, "%s %#" PRIx64 "+%#" PRIx64 " -> %d e%d",
	    lock ? "mlock" : "munlock", a, l, RET(r));
}

static void run_op(struct sq *s, enum op op)
{
	switch (op) {
	case O_WP: op_wp(s, true); break;
	case O_UNWP: op_wp(s, false); break;
	case O_SCAN: op_scan(s, s->pm); break;
	case O_TOUCH: op_touch(s); break;
	case O_READ: op_read(s); break;
	case O_MADV: op_madv(s); break;
	case O_MPROTECT: op_mprotect(s); break;
	case O_MUNMAP: op_munmap(s); break;
	case O_MREMAP: op_mremap(s); break;
	case O_FORK: op_fork(s); break;
	case O_REGISTER: op_register(s); break;
	case O_UNREGISTER: op_unregister(s); break;
	case O_CLOSE: op_close(s); break;
	case O_COPY: op_copy(s); break;
	case O_MBIND: op_mbind(s); break;
	case O_MOVE_PAGES: op_move_pages(s); break;
	case O_MLOCK: op_mlock(s); break;
	case O_N: break;
	}
}

/* ---- one sequence, in its own process ----------------------------------- */

static const char *thp_mode(uint64_t seqseed, bool never);

/* Fault the stack in before the baseline is taken. */
static void __attribute__((noinline)) warm_stack(void)
{
	volatile char b[256 << 10];

	for (size_t i = 0; i < sizeof(b); i += PSZ)
		b[i] = 0;
}

/* The service thread's stack too (glibc keeps it for the next thread). */
static void *warm_thread(void *arg)
{
	warm_stack();
	return arg;
}

static void *map_buf(struct sq *s, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED)
		die(s, "mmap %zu", len);
	return p;
}

/* The child of one pass: never returns. */
static void run_sequence(struct sq *s)
{
	enum op deck[128];
	int ndeck = 0, ntouched = 0;
	uint64_t touched[8];
	cpu_set_t cpu;
	pthread_t th;
	long st[NST];

	setpgid(0, 0);
	/* one CPU: the LRU batches MADV_COLD/PAGEOUT drain are all here */
	CPU_ZERO(&cpu);
	CPU_SET(0, &cpu);
	sched_setaffinity(0, sizeof(cpu), &cpu);
	s->pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (s->pm < 0)
		die(s, "open pagemap");
	if (pipe2(s->pipe, O_CLOEXEC | O_NONBLOCK))
		die(s, "pipe2");
	s->pmbuf = map_buf(s, PMCHUNK * 8);
	s->mcbuf = map_buf(s, PMCHUNK);
	s->big = map_buf(s, SMAPSCAP);
	s->vec = map_buf(s, 64 * sizeof(*s->vec));
	s->src = map_buf(s, 4 * PSZ);
	s->scratch = map_buf(s, 65536);
	s->msgs = map_buf(s, MSGCAP * sizeof(*s->msgs));
	for (uint64_t i = 0; i < 4 * PSZ; i++)
		s->src[i] = (char)(i * 7 + 3);
	pthread_mutex_init(&s->mu, NULL);
	/* the service thread's stack, cached for later (VmPTE baseline) */
	if (pthread_create(&th, NULL, warm_thread, NULL))
		die(s, "pthread_create");
	pthread_join(th, NULL);
	warm_stack();
	memset(s->res, 0, sizeof(*s->res));	/* faulted in before, too */
	s->base_pte = read_status(s, st);
	memcpy(s->base_st, st, sizeof(st));


	/* the range, its registration and the first arming */
	s->a = BASE + (rnd(s, 3) == 0 ? (1 + rnd(s, 511)) * PSZ : 0);
	s->alen = (32 + rnd(s, 225)) * HPSZ;
	if (s->a & (HPSZ - 1) && rnd(s, 2))
		s->alen += (1 + rnd(s, 511)) * PSZ;
	s->async = rnd(s, 5) < 3;
	s->features = UFFD_FEATURE_WP_UNPOPULATED |
		      (s->async ? UFFD_FEATURE_WP_ASYNC : 0) |
		      (rnd(s, 4) == 0 ? UFFD_FEATURE_EVENT_FORK : 0) |
		      (rnd(s, 4) == 0 ? UFFD_FEATURE_EVENT_REMAP : 0);
	s->regmode = UFFDIO_REGISTER_MODE_WP |
		     (rnd(s, 4) == 0 ? UFFDIO_REGISTER_MODE_MISSING : 0);
	out(s, "sequence %" PRIu64 " seed %#" PRIx64 " range %#" PRIx64 "+%#"
	    PRIx64 " thp %s", s->seqno, s->seqseed, s->a, s->alen,
	    thp_mode(s->seqseed, s->o->thp_never));
	if (mmap((void *)(uintptr_t)s->a, s->alen, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) !=
	    (void *)(uintptr_t)s->a)
		die(s, "mmap the range at %#" PRIx64, s->a);
	switch (rnd(s, 3)) {
	case 1:
		out(s, "hugepage -> %d", madvise((void *)(uintptr_t)s->a,
						 s->alen, MADV_HUGEPAGE));
		break;
	case 2:
		out(s, "nohugepage -> %d", madvise((void *)(uintptr_t)s->a,
						   s->alen, MADV_NOHUGEPAGE));
	}
	for (uint64_t i = rnd(s, 8); i > 0; i--) {
		char *p = (char *)(uintptr_t)(s->a + rnd(s, s->alen / PSZ) *
					      PSZ);

		touched[ntouched++] = (uintptr_t)p;
		*p = 1;
	}
	/* --harvest-skip: page tables full of present pages to make clean */
	if (s->o->harvests)
		for (uint64_t i = 0; i < 4 * HPSZ && i < s->alen; i += PSZ)
			*(volatile char *)(uintptr_t)(s->a + i) = 1;
	open_uffd(s);
	do_register(s, s->a, s->alen, s->regmode);
	arm(s, s->a, s->alen);
	dump(s);
	svc_start(s);
	empty_rearm(s, touched, ntouched);
	dump(s);

	/* the operations, dealt from a shuffled deck */
	for (int o = 0; o < O_N; o++)
		for (int w = 0; w < op_weight[o]; w++)
			deck[ndeck++] = o;
	for (s->opno = 0; s->opno < s->o->ops; s->opno++) {
		int i = s->opno % ndeck;
		enum op op;

		if (i == 0)
			for (int j = ndeck - 1; j > 0; j--) {
				int k = rnd(s, j + 1);
				enum op t = deck[j];

				deck[j] = deck[k];
				deck[k] = t;
			}
		op = deck[i];
		out(s, "op %" PRIu64 " %s", s->opno, op_name[op]);
		if (s->tfd >= 0)
			tflush(s);	/* a hang shows its operation */
		run_op(s, op);
		log_msgs(s);
		if (s->o->harvests && s->async) {
			op_harvest(s);
			op_harvest(s);
		}
		dump(s);
	}

	/* everything unmapped: the page tables must all be gone */
	svc_stop(s);
	out(s, "munmap all -> %d %d",
	    munmap((void *)(uintptr_t)BASE, 1ULL << 30),
	    munmap((void *)(uintptr_t)BWIN, 1ULL << 30));
	s->res->pte_end = read_status(s, st) - s->base_pte;

	s->res->digest = s->digest;
	s->res->lines = s->lines;
	s->res->ops = s->opno;
	s->res->done = 1;
	if (s->tfd >= 0)
		tflush(s);
	_exit(0);
}

/* ---- the driver ---------------------------------------------------------- */

/* A guest setting the run changes and puts back. */
struct setting {
	const char *path, *value;
	char old[64];
	bool changed;
};

struct drv {
	struct opts o;
	struct seqres *res[2];
	struct setting set[NSET];
	char thp_old[16];		/* THP enabled: the bracketed word */
	bool knob;			/* the debugfs directory exists */
	char knob_enabled[128], knob_stats[128];
	char knob_old[8];
	int nstat;
	char stat_name[NSTAT][32];
	long long stat_delta[2][NSTAT];	/* per pass */
	uint64_t ran, agreed, differ, broken, pte_bad, leaks, pert_lines;
	uint64_t lines, ops, all;	/* all: the digests' digest */
	int64_t pte_max[2];
	double t0;
};

static int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

static int write_file(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? write(fd, v, strlen(v)) : -1;

	if (fd >= 0)
		close(fd);
	return n == (ssize_t)strlen(v) ? 0 : -1;
}

static void settings_apply(struct drv *d)
{
	for (int i = 0; i < NSET; i++) {
		struct setting *t = &d->set[i];

		if (read_file(t->path, t->old, sizeof(t->old)))
			continue;	/* not in this kernel's config */
		if (write_file(t->path, t->value)) {
			printf("# cannot write %s: %s\n", t->path,
			       strerror(errno));
			continue;
		}
		t->changed = true;
	}
}

static void settings_restore(struct drv *d)
{
	for (int i = 0; i < NSET; i++)
		if (d->set[i].changed && write_file(d->set[i].path,
						    d->set[i].old))
			printf("# cannot restore %s\n", d->set[i].path);
	if (d->knob && d->knob_old[0])
		write_file(d->knob_enabled, d->knob_old);
	if (d->thp_old[0] && write_file(THP_ENABLED, d->thp_old))
		printf("# cannot restore " THP_ENABLED "\n");
}

/*
 * THP for a sequence, the same in both passes: madvise (the guest's
 * mode) half the time, always or never a quarter each.
 */
/*
 * --thp-never: whether a THP fault gets its huge page depends on how
 * fragmented the guest's memory is when it runs, which differs between
 * the two passes (a child that nothing copied a table into faulted a THP
 * in one pass and 4 KiB pages in the other, at 2 runs in 8 of one
 * sequence): make check's run keeps THP out of the answers.
 */
static const char *thp_mode(uint64_t seqseed, bool never)
{
	static const char *const m[] = { "madvise", "madvise", "always",
					 "never" };

	return never ? "never" : m[(seqseed >> 60) & 3];
}

static void thp_save(struct drv *d)
{
	char buf[128], *a, *b;

	if (read_file(THP_ENABLED, buf, sizeof(buf)))
		return;
	a = strchr(buf, '[');
	b = a ? strchr(a, ']') : NULL;
	if (a && b && b - a < (int)sizeof(d->thp_old))
		snprintf(d->thp_old, b - a, "%s", a + 1);
}

/* The stats file: name value lines; add sign * each to pass's deltas. */
static void stats_add(struct drv *d, int pass, int sign)
{
	char buf[4096], *line, *save = NULL;

	if (read_file(d->knob_stats, buf, sizeof(buf)))
		return;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char name[32];
		long long v;
		int i;

		if (sscanf(line, "%31s %lld", name, &v) != 2)
			continue;
		for (i = 0; i < d->nstat; i++)
			if (!strcmp(d->stat_name[i], name))
				break;
		if (i == d->nstat) {
			if (d->nstat == NSTAT)
				continue;
			snprintf(d->stat_name[d->nstat++], 32, "%s", name);
		}
		d->stat_delta[pass][i] += sign * v;
	}
}

static uint64_t seq_seed(uint64_t seed, uint64_t k)
{
	uint64_t st = seed ^ (k * 0xa0761d6478bd642fULL);

	return mw_rnd(&st);
}

static void trace_path(char *buf, size_t len, uint64_t k, int pass)
{
	snprintf(buf, len, "/tmp/markerdiff-%" PRIu64 "-%d.trace", k, pass);
}

/* The last lines of a trace: where a hung sequence was. */
static void trace_tail(uint64_t k, int pass)
{
	char path[64], line[600], last[8][600];
	FILE *f;
	int n = 0;

	trace_path(path, sizeof(path), k, pass);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		memcpy(last[n++ % 8], line, sizeof(line));
	fclose(f);
	printf("#   the trace ends:\n");
	for (int i = n > 8 ? n - 8 : 0; i < n; i++)
		printf("#     %s", last[i % 8]);
}

/*
 * One pass of sequence k in a child: pass 0 with the marker (enabled = 1),
 * pass 1 without.  Returns false (and says why) if the child did not
 * finish: a failure of its own, a signal, or a hang.
 */
static bool run_pass(struct drv *d, uint64_t k, int pass, uint64_t perturb_at)
{
	struct seqres *res = d->res[pass];
	char path[64];
	int tfd = -1, st;
	double t0 = mw_now_s();
	pid_t pid;

	memset(res, 0, sizeof(*res));
	if (d->thp_old[0] &&
	    write_file(THP_ENABLED, thp_mode(seq_seed(d->o.seed, k),
					     d->o.thp_never))) {
		printf("# cannot write " THP_ENABLED ": %s\n", strerror(errno));
		return false;
	}
	if (d->o.compare && d->knob) {
		if (write_file(d->knob_enabled, pass ? "0" : d->o.knob_on)) {
			printf("# cannot write %s: %s\n", d->knob_enabled,
			       strerror(errno));
			return false;
		}
		stats_add(d, pass, -1);
	}
	if (d->o.trace) {
		trace_path(path, sizeof(path), k, pass);
		tfd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		/* not from the heap: what the parent touched there varies */
		struct sq *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (s == MAP_FAILED)
			_exit(2);
		s->o = &d->o;
		s->res = res;
		s->seqno = k;
		s->seqseed = s->rng = seq_seed(d->o.seed, k);
		s->perturb_at = perturb_at;
		s->tfd = tfd;
		s->uffd = -1;
		s->digest = 0xcbf29ce484222325ULL;
		run_sequence(s);
	}
	if (tfd >= 0)
		close(tfd);
	if (pid < 0) {
		printf("# fork: %s\n", strerror(errno));
		return false;
	}
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			break;
		if (mw_now_s() - t0 > d->o.hang_s) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			printf("# HANG: seed %" PRIu64 " sequence %" PRIu64
			       " pass %d did not end in %u s\n", d->o.seed, k,
			       pass, d->o.hang_s);
			if (d->o.trace)
				trace_tail(k, pass);
			return false;
		}
		usleep(2000);
	}
	if (d->o.compare && d->knob)
		stats_add(d, pass, 1);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && res->done)
		return true;
	printf("# seed %" PRIu64 " sequence %" PRIu64 " pass %d: child %s %d"
	       "%s%s\n", d->o.seed, k, pass, WIFSIGNALED(st) ? "killed by signal"
	       : "exit status", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
	       res->fail[0] ? ": " : "", res->fail);
	return false;
}

static void replay(const struct drv *d, uint64_t k)
{
	printf("#   replay: %s --seed %" PRIu64 " --seq %" PRIu64 " --ops %"
	       PRIu64 "%s%s%s --trace\n", d->o.argv0, d->o.seed, k, d->o.ops,
	       d->o.compare ? " --compare" : "",
	       d->o.no_knob ? " --no-knob" : "",
	       d->o.thp_never ? " --thp-never" : "");
}

/*
 * The first line where the two traces differ (0: none); with print, it
 * and the next 5 differing lines, both sides.
 */
static uint64_t first_difference(uint64_t k, bool print)
{
	char p0[64], p1[64], l0[600], l1[600];
	FILE *f0, *f1;
	uint64_t n = 0, at = 0;
	int shown = 0;

	trace_path(p0, sizeof(p0), k, 0);
	trace_path(p1, sizeof(p1), k, 1);
	f0 = fopen(p0, "r");
	f1 = fopen(p1, "r");
	if (!f0 || !f1) {
		printf("#   no traces to compare\n");
		goto out;
	}
	for (;;) {
		char *a = fgets(l0, sizeof(l0), f0), *b = fgets(l1, sizeof(l1), f1);

		n++;
		if (!a && !b)
			break;
		if (!a || !b || strcmp(l0, l1)) {
			if (!at)
				at = n;
			if (print)
				printf("#   %s difference at line %" PRIu64
				       ":\n#     on:  %s#     off: %s",
				       at == n ? "first" : "next", n,
				       a ? l0 : "(end)\n", b ? l1 : "(end)\n");
			if (!a || !b || ++shown == 6)
				break;
		}
	}
out:
	if (f0)
		fclose(f0);
	if (f1)
		fclose(f1);
	return at;
}

static int64_t pte_max(const struct seqres *r)
{
	int64_t m = 0;

	for (uint32_t j = 0; j < r->npte; j++)
		if (r->vmpte[j] > m)
			m = r->vmpte[j];
	return m;
}

/* A finished pass: its VmPTE maximum, its page tables after the unmap. */
static void tally_pass(struct drv *d, uint64_t k, int pass)
{
	const struct seqres *r = d->res[pass];

	if (pte_max(r) > d->pte_max[pass])
		d->pte_max[pass] = pte_max(r);
	if (r->pte_end) {
		d->leaks++;
		printf("# LEAK: seed %" PRIu64 " sequence %" PRIu64 " pass %d: "
		       "VmPTE %+" PRId64 " kB after the final unmap\n",
		       d->o.seed, k, pass, r->pte_end);
	}
}

/* Sequence k: one pass, or both compared. */
static void run_one(struct drv *d, uint64_t k)
{
	struct seqres *on = d->res[0], *off = d->res[1];
	double t0 = mw_now_s();
	uint64_t perturb = 0;
	bool ok;

	d->ran++;
	if (!run_pass(d, k, 0, 0)) {
		d->broken++;
		replay(d, k);
		return;
	}
	d->lines += on->lines;
	d->ops += on->ops;
	tally_pass(d, k, 0);
	if (!d->o.compare) {
		if (!d->o.quiet)
			printf("# sequence %" PRIu64 ": digest %016" PRIx64
			       ", %" PRIu64 " ops, %" PRIu64 " lines, %.1f s\n",
			       k, on->digest, on->ops, on->lines, mw_now_s() - t0);
		d->all = (d->all ^ on->digest) * 0x100000001b3ULL;
		d->agreed++;
		return;
	}
	if (d->o.self_test) {
		perturb = 1 + seq_seed(k, 7) % on->lines;
		if (on->npte)
			on->vmpte[on->npte / 2] += 1 << 20;
	}
	if (!run_pass(d, k, 1, perturb)) {
		d->broken++;
		replay(d, k);
		return;
	}
	tally_pass(d, k, 1);
	ok = on->digest == off->digest && on->lines == off->lines;
	if (ok)
		d->agreed++;
	else {
		d->differ++;
		if (!d->o.self_test || !d->o.quiet) {
			printf("# %s: seed %" PRIu64 " sequence %" PRIu64
			       ": on %016" PRIx64 " (%" PRIu64 " lines), off %016"
			       PRIx64 " (%" PRIu64 " lines)\n", d->o.self_test ?
			       "different (perturbed)" : "DIFFERENT", d->o.seed,
			       k, on->digest, on->lines, off->digest, off->lines);
			if (!d->o.self_test)
				replay(d, k);
		}
		if (d->o.trace) {
			uint64_t at = first_difference(k, !d->o.self_test ||
						       !d->o.quiet);

			if (d->o.self_test && at == perturb)
				d->pert_lines++;
			else if (d->o.self_test)
				printf("# self-test: sequence %" PRIu64 " differs"
				       " first at line %" PRIu64 ", perturbed %"
				       PRIu64 "\n", k, at, perturb);
		}
	}
	for (uint32_t j = 0; j < on->npte && j < off->npte; j++)
		if (on->vmpte[j] > off->vmpte[j]) {
			d->pte_bad++;
			if (!d->o.self_test)
				printf("# VmPTE: seed %" PRIu64 " sequence %"
				       PRIu64 " after dump %u: %" PRId64
				       " kB with the marker, %" PRId64
				       " kB without\n", d->o.seed, k, j,
				       on->vmpte[j], off->vmpte[j]);
			break;
		}
	if (d->o.trace && ok) {
		char p[64];

		trace_path(p, sizeof(p), k, 0);
		unlink(p);
		trace_path(p, sizeof(p), k, 1);
		unlink(p);
	}
	if (!d->o.quiet)
		printf("# sequence %" PRIu64 ": %s %016" PRIx64 ", %" PRIu64
		       " ops, %" PRIu64 " lines, VmPTE max %" PRId64 "/%" PRId64
		       " kB on/off, %.1f s\n", k, ok ? "agree" : "DIFFER",
		       on->digest, on->ops, on->lines, pte_max(on),
		       pte_max(off), mw_now_s() - t0);
}

static void usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [--seed N] [--sequences N] [--seconds S] "
		"[--ops N] [--seq K] [--compare] [--no-knob] [--thp-never] [--self-test] "
		"[--harvest-skip[=verify]] [--trace] [--hang-seconds S] [--quiet]\n", argv0);
	exit(2);
}

static bool wanted(const struct drv *d, const char *name)
{
	for (size_t i = 0; d->o.sites[i]; i++)
		if (!strcmp(d->o.sites[i], name))
			return true;
	return false;
}

/* The stats deltas of the "on" runs; false if a wanted site stayed 0. */
static bool report_stats(struct drv *d)
{
	char line[1024];
	int n = 0, zero = 0;

	for (int i = 0; i < d->nstat; i++) {
		n += snprintf(line + n, sizeof(line) - n, " %s=%lld",
			      d->stat_name[i], d->stat_delta[0][i]);
		if (n >= (int)sizeof(line))
			n = sizeof(line) - 1;
	}
	printf("# stats of the \"on\" runs:%s\n", line);
	for (size_t w = 0; d->o.sites[w]; w++) {
		int i;

		for (i = 0; i < d->nstat; i++)
			if (!strcmp(d->stat_name[i], d->o.sites[w]))
				break;
		if (i == d->nstat || d->stat_delta[0][i] <= 0) {
			printf("# site %s %s\n", d->o.sites[w], i == d->nstat ?
			       "missing from the stats file" : "never reached");
			zero++;
		}
	}
	for (int i = 0; i < d->nstat; i++)
		if (!wanted(d, d->stat_name[i]) && d->stat_delta[0][i])
			printf("# note: %s=%lld (not required)\n",
			       d->stat_name[i], d->stat_delta[0][i]);
	/* enabled = 0 stops installation: the "off" runs install none */
	for (int i = 0; i < d->nstat; i++)
		if (!strcmp(d->stat_name[i], "installed") &&
		    d->stat_delta[1][i]) {
			printf("# the runs with enabled = 0 installed %lld "
			       "markers\n", d->stat_delta[1][i]);
			zero++;
		}
	return !zero;
}

int main(int argc, char **argv)
{
	struct drv *d = calloc(1, sizeof(*d));
	struct sigaction sa = { .sa_handler = mw_on_fault };
	bool seq_given = false, seqs_given = false;
	const char *knob = KNOB;
	double last = 0, shown;
	int t = 0, failed = 0;
	void *thp;

	if (!d)
		return 2;
	d->o.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	d->o.sequences = 16;
	d->o.knob_on = "1";
	d->o.sites = marker_sites;
	d->o.ops = 40;
	d->o.hang_s = 60;
	d->o.argv0 = argv[0];
	d->all = 0xcbf29ce484222325ULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			d->o.seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--sequences") && i + 1 < argc) {
			d->o.sequences = strtoull(argv[++i], NULL, 0);
			seqs_given = true;
		} else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			d->o.seconds = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--ops") && i + 1 < argc)
			d->o.ops = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seq") && i + 1 < argc) {
			d->o.first = strtoull(argv[++i], NULL, 0);
			seq_given = true;
		} else if (!strcmp(argv[i], "--hang-seconds") && i + 1 < argc)
			d->o.hang_s = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--compare"))
			d->o.compare = true;
		else if (!strcmp(argv[i], "--no-knob"))
			d->o.compare = d->o.no_knob = true;
		else if (!strcmp(argv[i], "--thp-never"))
			d->o.thp_never = true;
		else if (!strcmp(argv[i], "--harvest-skip")) {
			knob = SKIP_KNOB;
			d->o.sites = skip_sites;
			d->o.harvests = true;
		} else if (!strcmp(argv[i], "--harvest-skip=verify")) {
			knob = SKIP_KNOB;
			d->o.sites = verify_sites;
			d->o.harvests = true;
			d->o.knob_on = "2";
		} else if (!strcmp(argv[i], "--self-test"))
			d->o.compare = d->o.self_test = d->o.trace = true;
		else if (!strcmp(argv[i], "--trace"))
			d->o.trace = true;
		else if (!strcmp(argv[i], "--quiet"))
			d->o.quiet = true;
		else
			usage(argv[0]);
	}
	if (seq_given)
		d->o.sequences = 1;
	else if (d->o.seconds && !seqs_given)
		d->o.sequences = UINT64_MAX;
	tap_guest_only();
	/*
	 * No address-space randomisation (a re-exec): the stack's offset in
	 * its page decides how many pages the same code touches, which
	 * RssAnon shows; two boots then log alike.
	 */
	mw_no_aslr(argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* MARKERDIFF_KNOB: another directory (a developer's test of the driver) */
	if (getenv("MARKERDIFF_KNOB"))
		knob = getenv("MARKERDIFF_KNOB");
	snprintf(d->knob_enabled, sizeof(d->knob_enabled), "%s/enabled", knob);
	snprintf(d->knob_stats, sizeof(d->knob_stats), "%s/stats", knob);
	d->knob = !d->o.no_knob && !access(d->knob_enabled, W_OK);
	printf("TAP version 13\n");
	printf("# markerdiff seed %" PRIu64 "; replay: %s --seed %" PRIu64 " --ops %"
	       PRIu64, d->o.seed, argv[0], d->o.seed, d->o.ops);
	if (seq_given)
		printf(" --seq %" PRIu64, d->o.first);
	else if (d->o.sequences != UINT64_MAX)
		printf(" --sequences %" PRIu64, d->o.sequences);
	if (d->o.seconds)
		printf(" --seconds %u", d->o.seconds);
	printf("%s%s%s\n", d->o.self_test ? " --self-test" : d->o.no_knob ?
	       " --no-knob" : d->o.compare ? " --compare" : "",
	       d->o.thp_never ? " --thp-never" : "",
	       d->o.trace && !d->o.self_test ? " --trace" : "");
	if (d->o.compare && !d->o.no_knob && !d->knob && !d->o.self_test) {
		printf("1..1\nnot ok 1 - the kernel lacks the PMD marker: no %s "
		       "(debugfs at /sys/kernel/debug?); --no-knob runs the "
		       "determinism check instead\n", d->knob_enabled);
		return 1;
	}
	printf("1..%d\n", d->o.self_test ? 3 :
	       !d->o.compare ? 2 : d->o.no_knob ? 4 : 5);
	if (d->knob) {
		if (read_file(d->knob_enabled, d->knob_old,
			      sizeof(d->knob_old)))
			d->knob_old[0] = '\0';
		printf("# marker: %s was %s", d->knob_enabled, d->knob_old);
	} else if (d->o.compare)
		printf("# no knob: both passes run on the kernel as it is "
		       "(they must agree: the log is deterministic)\n");

	d->res[0] = mmap(NULL, 2 * sizeof(struct seqres), PROT_READ |
			 PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (d->res[0] == MAP_FAILED)
		mw_bail("mmap", &d->o.seed);
	d->res[1] = d->res[0] + 1;
	/*
	 * khugepaged: keep it with work (this process's mm, MADV_HUGEPAGE)
	 * and make it sleep a day, so that a sequence's MADV_HUGEPAGE does
	 * not wake it; no swap readahead; no proactive compaction.
	 */
	thp = mmap(NULL, 2 * HPSZ, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (thp == MAP_FAILED || madvise(thp, 2 * HPSZ, MADV_HUGEPAGE))
		mw_bail("MADV_HUGEPAGE", &d->o.seed);
	d->set[0].path = "/sys/kernel/mm/transparent_hugepage/khugepaged/"
			 "scan_sleep_millisecs";
	d->set[0].value = "86400000";
	d->set[1].path = "/proc/sys/vm/page-cluster";
	d->set[1].value = "0";
	d->set[2].path = "/proc/sys/vm/compaction_proactiveness";
	d->set[2].value = "0";
	settings_apply(d);
	thp_save(d);
	usleep(200000);		/* the scan its wake-up started */

	d->t0 = shown = mw_now_s();
	for (uint64_t k = d->o.first; k - d->o.first < d->o.sequences; k++) {
		double t1 = mw_now_s();

		if (d->o.seconds && k > d->o.first &&
		    t1 - d->t0 + last > d->o.seconds)
			break;
		run_one(d, k);
		last = mw_now_s() - t1;
		if (d->o.quiet && mw_now_s() - shown >= 60) {
			shown = mw_now_s();
			printf("# %" PRIu64 " sequences in %.0f s: %" PRIu64
			       " agree, %" PRIu64 " differ, %" PRIu64
			       " did not finish\n", d->ran, shown - d->t0,
			       d->agreed, d->differ, d->broken);
		}
	}
	settings_restore(d);

	printf("# %" PRIu64 " sequences, %" PRIu64 " ops, %" PRIu64
	       " answer lines in %.1f s; VmPTE max %" PRId64 " kB", d->ran,
	       d->ops, d->lines, mw_now_s() - d->t0, d->pte_max[0]);
	if (d->o.compare)
		printf(" %s, %" PRId64 " kB %s", d->knob ? "with the marker" :
		       "in the first passes", d->pte_max[1], d->knob ?
		       "without" : "in the second");
	printf("\n");

	if (d->o.self_test) {
		failed += !tap_ok(d->ran && !d->broken && d->differ == d->ran,
				  "self-test: every perturbed sequence reported "
				  "different (%" PRIu64 " of %" PRIu64 ")",
				  d->differ, d->ran);
		failed += !tap_ok(d->ran && d->pert_lines == d->ran,
				  "self-test: each first difference at the "
				  "perturbed line (%" PRIu64 " of %" PRIu64 ")",
				  d->pert_lines, d->ran);
		failed += !tap_ok(d->ran && d->pte_bad == d->ran,
				  "self-test: the VmPTE check caught each "
				  "raised record (%" PRIu64 " of %" PRIu64 ")",
				  d->pte_bad, d->ran);
		t = 3;
		goto done;
	}
	failed += !tap_ok(d->ran && !d->broken, "%" PRIu64 " sequences ran to "
			  "the end (%" PRIu64 " did not)", d->ran, d->broken);
	t++;
	if (d->o.compare) {
		failed += !tap_ok(d->ran && !d->differ && !d->broken,
				  "every answer the same %s (%" PRIu64 " of %"
				  PRIu64 " sequences agree)", d->knob ?
				  "with and without the marker" :
				  "in both passes", d->agreed, d->ran);
		failed += !tap_ok(!d->pte_bad, "VmPTE %s (%" PRIu64
				  " sequences not)", d->knob ? "with the marker"
				  " at most without it" : "of the first passes "
				  "at most that of the second", d->pte_bad);
		t += 2;
	} else
		printf("# digest of all sequences %016" PRIx64 ": compare it "
		       "with a run of the same seed on the kernel booted "
		       "with%s uffd_wp_pmd_marker=off\n", d->all,
		       d->knob && d->knob_old[0] == '0' ? "out" : "");
	failed += !tap_ok(!d->leaks, "no page table left after the final "
			  "unmap (%" PRIu64 " passes left some)", d->leaks);
	t++;
	if (d->o.compare && !d->o.no_knob) {
		failed += !tap_ok(report_stats(d), "the \"on\" runs reached "
				  "every site they are meant to, the others "
				  "installed none");
		t++;
	}
done:
	printf("# %d passed, %d failed\n", t - failed, failed);
	if (failed && !d->o.self_test)
		printf("# FAILED: seed %" PRIu64 "\n", d->o.seed);
	return failed ? 1 : 0;
}
