/* SPDX-License-Identifier: MIT */
/*
 * The suite list says what the booted kernel must offer; the tests assert
 * it instead of adapting to whatever they find:
 *   ./TEST BACKEND [available|unavailable]      (default: available)
 * "available": the probe must offer BACKEND (else one failing check).
 * "unavailable": the probe must not offer it and memwatch_open() must
 * refuse it with -EOPNOTSUPP, precisely; then the test ends.
 */
#ifndef MW_TEST_EXPECT_H
#define MW_TEST_EXPECT_H

#include <sys/mman.h>

#include "mw-test.h"
#include "memwatch.h"

static inline bool mw_backend_offered(const struct memwatch_probe *p,
				      enum memwatch_backend be)
{
	switch (be) {
	case MEMWATCH_BACKEND_UFFD:
		return p->backend == MEMWATCH_BACKEND_UFFD;
	case MEMWATCH_BACKEND_SOFT_DIRTY:
		return p->features & MEMWATCH_FEAT_SOFT_DIRTY;
	default:
		return true;
	}
}

/* Parse the arguments; returns only when the backend's tests should run. */
static inline enum memwatch_backend mw_test_backend(int argc, char **argv)
{
	struct memwatch_probe p;
	enum memwatch_backend be;
	struct memwatch *mw;
	bool want;
	int ret;

	if (argc < 2 || argc > 3 || memwatch_backend_from_name(argv[1], &be) ||
	    be == MEMWATCH_BACKEND_AUTO ||
	    (argc == 3 && strcmp(argv[2], "available") &&
	     strcmp(argv[2], "unavailable"))) {
		fprintf(stderr, "usage: %s uffd|soft-dirty|mprotect [available|unavailable]\n",
			argv[0]);
		exit(2);
	}
	want = argc == 2 || !strcmp(argv[2], "available");
	memwatch_probe(&p);
	tap_diag("probe: backend %s, features 0x%llx, uffd features 0x%llx, scan errno %d",
		 memwatch_backend_name(p.backend), (unsigned long long)p.features,
		 (unsigned long long)p.uffd_features, p.scan_errno);
	if (want) {
		if (mw_backend_offered(&p, be))
			return be;
		tap_plan(1);
		tap_ok(0, "the %s backend is available on this kernel, as the suite list says",
		       argv[1]);
		exit(1);
	}
	tap_plan(3);
	tap_ok(!mw_backend_offered(&p, be),
	       "the probe says the %s backend is unavailable, as the suite list says",
	       argv[1]);
	if (be == MEMWATCH_BACKEND_UFFD)
		tap_ok(!(p.features & MEMWATCH_FEAT_UFFD_WP_ASYNC) ||
		       !(p.features & MEMWATCH_FEAT_UFFD_WP_UNPOPULATED) ||
		       !(p.features & MEMWATCH_FEAT_PAGEMAP_SCAN),
		       "because WP_ASYNC, WP_UNPOPULATED or PAGEMAP_SCAN is missing");
	else
		tap_ok(be == MEMWATCH_BACKEND_SOFT_DIRTY &&
		       !(p.features & MEMWATCH_FEAT_SOFT_DIRTY),
		       "because soft-dirty is missing");
	ret = memwatch_open(&mw, be, MEMWATCH_OPEN_NO_ENV);
	CHECK_EQ(ret, -EOPNOTSUPP, "memwatch_open(%s) is -EOPNOTSUPP, precisely", argv[1]);
	if (ret == 0)
		memwatch_close(mw);
	exit(tap_done());
}

/*
 * npages read-write pages between two PROT_NONE guards, so that nothing
 * mapped later merges with them (under soft-dirty a merge marks every page
 * written: the VM_SOFTDIRTY deviation).
 */
static inline char *mw_test_region(size_t npages)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, (npages + 2) * ps, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	mprotect(p + ps, npages * ps, PROT_READ | PROT_WRITE);
	return p + ps;
}

#endif /* MW_TEST_EXPECT_H */
