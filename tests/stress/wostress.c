// SPDX-License-Identifier: MIT
/*
 * wostress: the write oracle.  Writer threads write tracked memory of every
 * kind while a harvester runs Wine's get+reset (PAGEMAP_SCAN with
 * PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC, mask = return = WRITTEN)
 * with random vec_len and max_pages, and a disruptor does what processes
 * do to memory (DONTNEED, PAGEOUT, COLLAPSE, mprotect splits, mremap,
 * munmap + mmap, uffd unregister + register, fork with a writing child,
 * compaction).  Writes, PAGEMAP_SCAN calls and disruptions are stamped
 * with one shared clock.  At the end each write must have been reported
 * (or consumed by a reset-only call) by a call that ended after the write
 * began, started before the end of the first whole-range harvest that
 * started after the write completed, and saw the write land: each writer
 * stores its own increasing sequence number into its slot of the unit, and
 * right after each call returns the harvester reads back the slots of the
 * units it reported.  A write whose number is above the read-back landed
 * after the call had armed the unit (the call overlapping it cannot have
 * seen it), so a later call must report it: without the read-back, a
 * write that a CPU with a stale writable TLB entry made after the arm was
 * credited to the overlapping call and its loss went unseen.  The
 * read-back cannot tell when a disruption zeroed the unit (private memory
 * dropped or replaced, a new shmem object) between the write and the
 * read-back: such a call credits the write as before.  The read-back is
 * exact for every kind: a slot is 8 aligned bytes at the start of the unit
 * (a 4K page or a 2M hugetlb page) and the data check shows that nothing
 * else changes it.  Data must read back intact and shared files must hold
 * what was written.  False positives are counted by cause (the disruption
 * that explains them) and reported, not failed.
 *
 *   wostress [--seed N] [--seconds S] [--writers N] [--quiet] [--self-test]
 *            [--hot-thp | --sparse [--sparse-mib M]]
 *
 * --sparse: two reservations of M MiB (default 1024) armed untouched, a
 * few scattered pages written, a disruptor on 2 MiB chunks, page tables
 * and the PMD-level marker's counters checked (see sparse_main()).  Its
 * --self-test drops reports as below and adds a report of a page nobody
 * wrote, and must find both.
 *
 * --hot-thp: two writers pinned to different CPUs hammer 4 pages of a
 * PMD-mapped THP while the harvester does get+reset on the whole huge page
 * (see hot_main()); the same oracle.
 *
 * --self-test proves the oracle can fail: it drops a region the kernel
 * reported in each of 8 harvests (on 4K memory, once writes were seen) and
 * passes only if the oracle then finds writes lost.  With --hot-thp it
 * injects 8 writes that land after a call armed the page and that the
 * kernel never sees (through an unregistered view of a memfd page), which
 * the old rule credited to that call, and passes only if the read-back
 * rule finds all 8 lost and the old rule none.
 *
 * TAP output; a failure prints the seed and the replay command.  Runs only
 * in the memwatch test guest (it compacts memory and needs the hugetlb
 * pool and /mnt/disk).
 */
#include "wostress.h"

int main(int argc, char **argv)
{
	struct ctx *c = calloc(1, sizeof(*c));

	c->seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	c->seconds = 20;
	c->nwriters = 2;
	c->sparse_mib = 1024;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			c->seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			c->seconds = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--writers") && i + 1 < argc)
			c->nwriters = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--quiet"))
			c->quiet = true;
		else if (!strcmp(argv[i], "--self-test"))
			c->self_test = true;
		else if (!strcmp(argv[i], "--hot-thp"))
			c->hot = true;
		else if (!strcmp(argv[i], "--sparse"))
			c->sparse = true;
		else if (!strcmp(argv[i], "--sparse-mib") && i + 1 < argc)
			c->sparse_mib = strtoul(argv[++i], NULL, 0);
		else {
			fprintf(stderr, "usage: %s [--seed N] [--seconds S] [--writers N (1..%d)] [--quiet] [--self-test] [--hot-thp | --sparse [--sparse-mib M]]\n",
				argv[0], MAXW);
			return 2;
		}
	}
	if (c->sparse && (c->sparse_mib < 64 || c->sparse_mib > 65536 ||
			  c->sparse_mib % 2)) {
		fprintf(stderr, "wostress: --sparse-mib: an even number of MiB, 64 to 65536\n");
		return 2;
	}
	if (c->nwriters < 1 || c->nwriters > MAXW) {
		fprintf(stderr, "wostress: --writers must be 1..%d\n", MAXW);
		return 2;
	}
	/* It compacts memory. */
	tap_guest_only();
	crash_setup(c);
	c->uffd = mw_uffd_open(O_CLOEXEC | O_NONBLOCK, UFFD_FEATURE_WP_ASYNC |
			       UFFD_FEATURE_WP_UNPOPULATED);
	if (c->uffd < 0)
		mw_bail("userfaultfd with WP_ASYNC", &c->seed);
	c->pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (c->pagemap < 0)
		mw_bail("pagemap", &c->seed);
	if (c->hot)
		return hot_main(c, argv[0]);
	if (c->sparse)
		return sparse_main(c, argv[0]);
	return dense_main(c, argv[0]);
}
