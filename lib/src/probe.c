// SPDX-License-Identifier: MIT
/*
 * Probe what the running kernel offers for write tracking and page scans.
 * Every check is a side-effect-free query: a fresh userfaultfd asked for
 * its feature list, zero-length PAGEMAP_SCAN calls, and one pagemap read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

static void probe_uffd(struct memwatch_probe *p)
{
	struct uffdio_api api = { .api = UFFD_API, .features = 0 };
	int fd = mw_uffd_create();

	if (fd < 0) {
		p->uffd_errno = -fd;
		return;
	}
	/* features = 0: the kernel answers with everything it supports. */
	if (ioctl(fd, UFFDIO_API, &api) < 0) {
		p->uffd_errno = errno;
		close(fd);
		return;
	}
	close(fd);
	p->features |= MEMWATCH_FEAT_UFFD;
	p->uffd_features = api.features;
	if (api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP)
		p->features |= MEMWATCH_FEAT_UFFD_WP;
	if (api.features & MW_UFFD_FEATURE_WP_UNPOPULATED)
		p->features |= MEMWATCH_FEAT_UFFD_WP_UNPOPULATED;
	if (api.features & MW_UFFD_FEATURE_WP_ASYNC)
		p->features |= MEMWATCH_FEAT_UFFD_WP_ASYNC;
}

static void probe_scan(struct memwatch_probe *p, int pagemap)
{
	struct mw_pm_scan_arg arg;
	long ret;
	int bit;

	/* CRIU's probe: start = end = 0, no output vector. */
	memset(&arg, 0, sizeof(arg));
	ret = mw_pagemap_scan(pagemap, &arg);
	if (ret < 0) {
		p->scan_errno = (int)-ret;
		return;
	}
	p->features |= MEMWATCH_FEAT_PAGEMAP_SCAN;
	for (bit = 0; bit < 64; bit++) {
		memset(&arg, 0, sizeof(arg));
		arg.category_mask = 1ULL << bit;
		if (mw_pagemap_scan(pagemap, &arg) == 0)
			p->scan_categories |= 1ULL << bit;
	}
}

/*
 * A new mapping carries VM_SOFTDIRTY, so its pages read back soft-dirty
 * exactly when the kernel has CONFIG_MEM_SOFT_DIRTY.  The same read tells
 * whether PFNs are visible to us (CAP_SYS_ADMIN).
 */
static void probe_pagemap_bits(struct memwatch_probe *p, int pagemap)
{
	volatile char *page;
	uint64_t ent;

	page = mmap(NULL, p->page_size, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return;
	page[0] = 1;
	if (mw_pread_full(pagemap, &ent, sizeof(ent),
			  (off_t)((uintptr_t)page / p->page_size * 8)) == 0) {
		if (ent & MW_PM_SOFT_DIRTY)
			p->features |= MEMWATCH_FEAT_SOFT_DIRTY;
		if ((ent & MW_PM_PRESENT) && (ent & MW_PM_PFN_MASK))
			p->features |= MEMWATCH_FEAT_PAGEMAP_PFN;
	}
	munmap((void *)page, p->page_size);
}

int memwatch_probe(struct memwatch_probe *p)
{
	int pagemap;

	if (!p)
		return -EFAULT;
	memset(p, 0, sizeof(*p));
	p->page_size = (unsigned int)sysconf(_SC_PAGESIZE);

	probe_uffd(p);
	pagemap = mw_open_proc(0, "pagemap", O_RDONLY);
	if (pagemap >= 0) {
		p->features |= MEMWATCH_FEAT_PAGEMAP;
		probe_scan(p, pagemap);
		probe_pagemap_bits(p, pagemap);
		close(pagemap);
	} else {
		p->scan_errno = -pagemap;
	}

	/* Wine infers PAGEMAP_SCAN from WP_ASYNC; we check both. */
	if ((p->features & MEMWATCH_FEAT_UFFD_WP_ASYNC) &&
	    (p->features & MEMWATCH_FEAT_UFFD_WP_UNPOPULATED) &&
	    (p->features & MEMWATCH_FEAT_PAGEMAP_SCAN) &&
	    (p->scan_categories & MW_PAGE_IS_WRITTEN))
		p->backend = MEMWATCH_BACKEND_UFFD;
	else if (p->features & MEMWATCH_FEAT_SOFT_DIRTY)
		p->backend = MEMWATCH_BACKEND_SOFT_DIRTY;
	else
		p->backend = MEMWATCH_BACKEND_MPROTECT;
	return 0;
}

static const char *const backend_names[] = {
	[MEMWATCH_BACKEND_AUTO] = "auto",
	[MEMWATCH_BACKEND_UFFD] = "uffd",
	[MEMWATCH_BACKEND_SOFT_DIRTY] = "soft-dirty",
	[MEMWATCH_BACKEND_MPROTECT] = "mprotect",
};

const char *memwatch_backend_name(enum memwatch_backend b)
{
	if ((unsigned int)b >= sizeof(backend_names) / sizeof(backend_names[0]))
		return NULL;
	return backend_names[b];
}

int memwatch_backend_from_name(const char *name, enum memwatch_backend *b)
{
	unsigned int i;

	if (!name || !b)
		return -EFAULT;
	for (i = 0; i < sizeof(backend_names) / sizeof(backend_names[0]); i++) {
		if (strcmp(name, backend_names[i]) == 0) {
			*b = (enum memwatch_backend)i;
			return 0;
		}
	}
	return -EINVAL;
}
