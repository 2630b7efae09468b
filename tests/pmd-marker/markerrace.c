// SPDX-License-Identifier: MIT
/*
 * markerrace: UFFDIO_COPY into untouched memory while another thread arms the
 * same 2 MiB with UFFDIO_WRITEPROTECT.  Both hold mmap_lock for reading,
 * so they run at once; arming may put a PMD-level uffd-wp marker into the
 * empty pmd the copy has just read.  With pte markers the copy always
 * succeeds (a uffd-wp pte marker counts as an empty pte for UFFDIO_COPY);
 * it must with the pmd marker too: a copy that decided on the pmd it read
 * before its own pte allocation would fail with -EEXIST.
 *
 * Each round maps a fresh 2 MiB-aligned, never-touched region, registers
 * it MISSING|WP on a userfaultfd with WP_UNPOPULATED and WP_ASYNC, starts
 * the arming thread and copies one page into the region at once.  Points:
 *
 *   1. every copy succeeded (the oracle: pte markers, where the copy
 *      never fails), and the copied page reads back as the source;
 *   2. the rounds raced with a marker: the marker's debugfs counters show
 *      markers installed and expanded by UFFDIO_COPY in this run, so the
 *      test did not pass on a kernel that never took the marker path.
 *
 *   markerrace [--rounds N]     (default 3000)
 *
 * Runs only in the memwatch guest (it reads debugfs).
 */
#include "mw-test.h"
#include "mw-marker.h"

#include <pthread.h>
#include <stdatomic.h>

#define PMD_SZ (2UL << 20)

struct race {
	int uffd;
	char *area;
	atomic_int go;
	int err;	/* the arming's -errno */
};

static void *arm_fn(void *arg)
{
	struct race *r = arg;

	while (!atomic_load_explicit(&r->go, memory_order_acquire))
		;
	r->err = mw_uffd_wp(r->uffd, r->area, PMD_SZ, true);
	return NULL;
}

/* One round: 0, or -errno of the copy (-EEXIST: the bug), or 1 on a set-up failure. */
static int round_once(struct race *r, const char *src, long pg, long i,
		      bool *content_ok)
{
	size_t len = 2 * PMD_SZ;
	char *raw = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	struct uffdio_register reg = {
		.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
	};
	struct uffdio_copy cp = { .len = (uint64_t)pg };
	pthread_t t;
	int ret = 0;

	if (raw == MAP_FAILED)
		return 1;
	r->area = (char *)(((uintptr_t)raw + PMD_SZ - 1) & ~(PMD_SZ - 1));
	/* No THP: the copy must meet a pte table or a marker */
	if (madvise(r->area, PMD_SZ, MADV_NOHUGEPAGE))
		goto setup_fail;
	reg.range.start = (uintptr_t)r->area;
	reg.range.len = PMD_SZ;
	if (ioctl(r->uffd, UFFDIO_REGISTER, &reg))
		goto setup_fail;
	atomic_store(&r->go, 0);
	r->err = 0;
	if (pthread_create(&t, NULL, arm_fn, r))
		goto setup_fail;
	cp.dst = (uintptr_t)r->area + (uint64_t)(i % 512) * cp.len;
	cp.src = (uintptr_t)src;
	atomic_store_explicit(&r->go, 1, memory_order_release);
	if (ioctl(r->uffd, UFFDIO_COPY, &cp))
		ret = -errno;
	pthread_join(t, NULL);
	if (!ret && memcmp((void *)(uintptr_t)cp.dst, src, cp.len))
		*content_ok = false;
	if (r->err)
		ret = 1;
	munmap(raw, len);
	return ret;

setup_fail:
	munmap(raw, len);
	return 1;
}

int main(int argc, char **argv)
{
	long rounds = 3000, eexist = 0, other = 0, setup = 0, i;
	long pg = sysconf(_SC_PAGESIZE);
	struct mw_marker_stats before, after;
	struct race r = { 0 };
	bool content_ok = true;
	char *src;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atol(argv[++i]);
		else {
			fprintf(stderr, "usage: markerrace [--rounds N]\n");
			return 2;
		}
	}
	if (rounds < 1) {
		fprintf(stderr, "markerrace: --rounds must be at least 1\n");
		return 2;
	}
	tap_guest_only();
	tap_plan(2);

	src = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (src == MAP_FAILED)
		mw_bail("mmap", NULL);
	memset(src, 0x5a, (size_t)pg);
	r.uffd = mw_uffd_open(O_CLOEXEC | O_NONBLOCK,
			      UFFD_FEATURE_WP_UNPOPULATED | UFFD_FEATURE_WP_ASYNC);
	if (r.uffd < 0) {
		errno = -r.uffd;
		mw_bail("userfaultfd with WP_UNPOPULATED and WP_ASYNC", NULL);
	}
	if ((errno = -mw_marker_read(&before)))
		mw_bail("the pmd marker's debugfs counters", NULL);

	for (i = 0; i < rounds; i++) {
		int ret = round_once(&r, src, pg, i, &content_ok);

		if (ret == -EEXIST)
			eexist++;
		else if (ret == 1)
			setup++;
		else if (ret)
			other++;
	}
	if ((errno = -mw_marker_read(&after)))
		mw_bail("the pmd marker's debugfs counters", NULL);
	mw_marker_print(&before, &after);

	tap_ok(!eexist && !other && !setup && content_ok,
	       "%ld UFFDIO_COPY racing arming: %ld -EEXIST, %ld other errors, %ld set-up failures, copied pages %s",
	       rounds, eexist, other, setup,
	       content_ok ? "read back" : "DIFFER from the source");
	tap_ok(after.v[MWM_installed] > before.v[MWM_installed] &&
	       after.v[MWM_expanded_mfill] > before.v[MWM_expanded_mfill],
	       "markers met: %llu installed, %llu expanded by UFFDIO_COPY",
	       (unsigned long long)(after.v[MWM_installed] - before.v[MWM_installed]),
	       (unsigned long long)(after.v[MWM_expanded_mfill] -
				    before.v[MWM_expanded_mfill]));
	return tap_done();
}
