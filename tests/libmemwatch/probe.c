// SPDX-License-Identifier: MIT
/*
 * memwatch_probe() against the kernel's own answers: every feature bit it
 * reports is re-derived here with raw system calls, and the backend choice
 * follows from them.  Also the backend-name and $MEMWATCH_BACKEND rules.
 *   ./probe pristine|wp-async|scan
 * The argument is what the suite list says this kernel is, and is asserted:
 *   pristine  Debian's 6.1: no WP_UNPOPULATED/WP_ASYNC, no PAGEMAP_SCAN;
 *   wp-async  WP_UNPOPULATED + WP_ASYNC but no PAGEMAP_SCAN;
 *   scan      WP_UNPOPULATED + WP_ASYNC + PAGEMAP_SCAN: the uffd backend.
 */
#include "mw-test.h"

#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#include "memwatch.h"

/* The uapi, written out again independently of the library's copy. */
#define T_PAGEMAP_SCAN 0xc0606610UL	/* _IOWR('f', 16, 96-byte arg) */
struct t_scan_arg { unsigned long long f[12]; };

static long raw_scan(int fd, unsigned long long mask, int *err)
{
	struct t_scan_arg a;
	long r;

	memset(&a, 0, sizeof(a));
	a.f[0] = sizeof(a);
	a.f[9] = mask;		/* category_mask */
	r = ioctl(fd, T_PAGEMAP_SCAN, &a);
	*err = r < 0 ? errno : 0;
	return r;
}

int main(int argc, char **argv)
{
	struct memwatch_probe p;
	struct uffdio_api api = { .api = UFFD_API };
	enum memwatch_backend b, want;
	struct memwatch *mw;
	struct utsname u;
	int fd, err, ret, bit;
	unsigned long long acc = 0;
	long uffd;

	bool k_async, k_scan;

	tap_guest_only();
	if (argc != 2 || (strcmp(argv[1], "pristine") && strcmp(argv[1], "wp-async") &&
			  strcmp(argv[1], "scan"))) {
		fprintf(stderr, "usage: %s pristine|wp-async|scan  (what this kernel is)\n",
			argv[0]);
		return 2;
	}
	k_async = strcmp(argv[1], "pristine") != 0;
	k_scan = !strcmp(argv[1], "scan");
	tap_plan(24);
	uname(&u);
	tap_diag("kernel %s, expected: %s", u.release, argv[1]);

	CHECK_EQ(memwatch_probe(&p), 0, "memwatch_probe succeeds");
	CHECK_EQ(!!(p.features & MEMWATCH_FEAT_UFFD_WP_ASYNC) +
		 !!(p.features & MEMWATCH_FEAT_UFFD_WP_UNPOPULATED), k_async ? 2 : 0,
		 "WP_ASYNC and WP_UNPOPULATED: %s, as the suite list says",
		 k_async ? "both" : "neither");
	CHECK_EQ(!!(p.features & MEMWATCH_FEAT_PAGEMAP_SCAN), k_scan,
		 "PAGEMAP_SCAN: %s, as the suite list says", k_scan ? "yes" : "no");
	CHECK_EQ(p.backend, k_scan ? MEMWATCH_BACKEND_UFFD : MEMWATCH_BACKEND_SOFT_DIRTY,
		 "best backend: %s", k_scan ? "uffd" : "soft-dirty");
	CHECK_EQ(memwatch_probe(NULL), -EFAULT, "memwatch_probe(NULL) is -EFAULT");
	tap_diag("features 0x%llx uffd 0x%llx categories 0x%llx backend %s",
		 (unsigned long long)p.features,
		 (unsigned long long)p.uffd_features,
		 (unsigned long long)p.scan_categories,
		 memwatch_backend_name(p.backend));
	CHECK_EQ(p.page_size, sysconf(_SC_PAGESIZE), "page size");

	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | 1);
	tap_ok(uffd >= 0 && ioctl((int)uffd, UFFDIO_API, &api) == 0 &&
	       (p.features & MEMWATCH_FEAT_UFFD) && p.uffd_features == api.features,
	       "userfaultfd: probe reports the kernel's UFFDIO_API features");
	if (uffd >= 0)
		close((int)uffd);
	CHECK_EQ(!!(p.features & MEMWATCH_FEAT_UFFD_WP_ASYNC),
		 !!(api.features & (1ULL << 15)), "WP_ASYNC bit is feature bit 15");
	CHECK_EQ(!!(p.features & MEMWATCH_FEAT_UFFD_WP_UNPOPULATED),
		 !!(api.features & (1ULL << 13)), "WP_UNPOPULATED bit is feature bit 13");
	CHECK_EQ(!!(p.features & MEMWATCH_FEAT_UFFD_WP),
		 !!(api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP), "uffd-wp bit");

	fd = open("/proc/self/pagemap", O_RDONLY);
	raw_scan(fd, 0, &err);
	CHECK_EQ(p.scan_errno, err, "zero-length PAGEMAP_SCAN: same errno as raw ioctl");
	CHECK_EQ(!!(p.features & MEMWATCH_FEAT_PAGEMAP_SCAN), err == 0,
		 "PAGEMAP_SCAN feature bit iff the ioctl succeeds");
	if (err) {
		/* An unpatched 6.1: pagemap has no ioctl at all. */
		CHECK_EQ(err, ENOTTY, "without PAGEMAP_SCAN the ioctl fails with ENOTTY");
		CHECK_EQ(p.scan_categories, 0, "no categories without PAGEMAP_SCAN");
		tap_ok(1, "category bit 8 (PAGE_IS_GUARD) check not applicable: no ioctl");
	} else {
		for (bit = 0; bit < 64; bit++)
			if (raw_scan(fd, 1ULL << bit, &err) == 0)
				acc |= 1ULL << bit;
		CHECK_EQ(acc, p.scan_categories, "accepted categories match raw ioctl");
		CHECK_EQ(p.scan_categories, 0xff, "categories 0..7 (incl. SOFT_DIRTY), nothing else");
		raw_scan(fd, 1ULL << 8, &err);
		CHECK_EQ(err, EINVAL, "bit 8 (PAGE_IS_GUARD upstream) is EINVAL");
	}
	close(fd);
	tap_ok(p.features & MEMWATCH_FEAT_SOFT_DIRTY,
	       "soft-dirty available (guest kernel has CONFIG_MEM_SOFT_DIRTY)");
	tap_ok(p.features & MEMWATCH_FEAT_PAGEMAP_PFN, "PFNs visible (we are root)");

	want = (p.features & MEMWATCH_FEAT_UFFD_WP_ASYNC) &&
	       (p.features & MEMWATCH_FEAT_UFFD_WP_UNPOPULATED) &&
	       (p.features & MEMWATCH_FEAT_PAGEMAP_SCAN) ?
	       MEMWATCH_BACKEND_UFFD : MEMWATCH_BACKEND_SOFT_DIRTY;
	CHECK_EQ(p.backend, want, "best backend: uffd iff WP_ASYNC+WP_UNPOPULATED+PAGEMAP_SCAN, else soft-dirty");

	ret = memwatch_backend_from_name("soft-dirty", &b);
	tap_ok(ret == 0 && b == MEMWATCH_BACKEND_SOFT_DIRTY &&
	       !strcmp(memwatch_backend_name(MEMWATCH_BACKEND_MPROTECT), "mprotect") &&
	       memwatch_backend_name((enum memwatch_backend)42) == NULL,
	       "backend names round-trip");
	CHECK_EQ(memwatch_backend_from_name("bogus", &b), -EINVAL, "unknown backend name is -EINVAL");

	setenv("MEMWATCH_BACKEND", "mprotect", 1);
	ret = memwatch_open(&mw, MEMWATCH_BACKEND_AUTO, 0);
	tap_ok(ret == 0 && memwatch_get_backend(mw) == MEMWATCH_BACKEND_MPROTECT,
	       "MEMWATCH_BACKEND=mprotect overrides AUTO");
	memwatch_close(mw);
	ret = memwatch_open(&mw, MEMWATCH_BACKEND_AUTO, MEMWATCH_OPEN_NO_ENV);
	tap_ok(ret == 0 && memwatch_get_backend(mw) == p.backend,
	       "MEMWATCH_OPEN_NO_ENV ignores it");
	memwatch_close(mw);
	setenv("MEMWATCH_BACKEND", "bogus", 1);
	CHECK_EQ(memwatch_open(&mw, MEMWATCH_BACKEND_AUTO, 0), -EINVAL,
		 "MEMWATCH_BACKEND=bogus is -EINVAL");
	unsetenv("MEMWATCH_BACKEND");
	ret = memwatch_open(&mw, MEMWATCH_BACKEND_UFFD, 0);
	if (p.backend == MEMWATCH_BACKEND_UFFD) {
		tap_ok(ret == 0, "uffd backend opens when the probe reports it");
		memwatch_close(mw);
	} else {
		CHECK_EQ(ret, -EOPNOTSUPP, "uffd backend is -EOPNOTSUPP when the probe says unavailable");
	}
	return tap_done();
}
