// SPDX-License-Identifier: MIT
/*
 * Page scans of this or another process: PAGEMAP_SCAN when the kernel has
 * it, else a pagemap read computing the same categories.  The iterator owns
 * its buffer, resumes at walk_end and merges regions that a buffer boundary
 * split, so callers see what one unbounded PAGEMAP_SCAN call would return.
 *
 * Another process is addressed by pid or pidfd.  Either way the library
 * holds a pidfd, opens /proc/PID/{pagemap,maps} (the pagemap fd stays bound
 * to that mm, the maps fd to that task) and only then checks that the pidfd
 * still names a live process: if the pid had been reused in between, the
 * original process was reaped and the check fails with ESRCH.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

#define MW_SCAN_BUF 512
#define MW_HUGE_BLOCK (2UL << 20)	/* what one page table maps (x86_64) */
#define MW_USER_TOP 0x800000000000ULL	/* x86_64 4-level user space */

struct memwatch_scan {
	pid_t pid;			/* 0: the calling process */
	pid_t owner;			/* getpid() when self fds were opened */
	int pidfd;
	int pagemap_fd;
	int maps_fd;
	int smaps_fd;			/* pagemap-read fallback */
	bool use_ioctl;
	uint64_t categories;		/* what this scan can answer */
	uint64_t zero_pfn;		/* 0: unknown */
	uintptr_t page_size;

	/* iteration */
	struct memwatch_scan_query q;
	uint64_t cursor;
	uint64_t pages_left;		/* UINT64_MAX: no limit */
	bool done;
	struct memwatch_region buf[MW_SCAN_BUF];
	size_t buf_n, buf_i;
	struct memwatch_region pending;
	bool have_pending;
	struct memwatch_vma *vmas;	/* pagemap-read fallback */
	unsigned int *vflags;		/* MW_VMA_* of each of vmas */
	size_t nvmas, vma_i;
};

static int sys_pidfd_open(pid_t pid)
{
	long fd = syscall(SYS_pidfd_open, pid, 0);

	return fd < 0 ? -errno : (int)fd;
}

static int pidfd_alive(int pidfd)
{
	if (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0)
		return -errno;
	return 0;
}

static int open_fds(struct memwatch_scan *s)
{
	int fd;

	fd = mw_open_proc(s->pid, "pagemap", O_RDONLY);
	if (fd < 0)
		return fd == -ENOENT ? -ESRCH : fd;
	s->pagemap_fd = fd;
	fd = mw_open_proc(s->pid, "maps", O_RDONLY);
	if (fd < 0)
		return fd == -ENOENT ? -ESRCH : fd;
	s->maps_fd = fd;
	fd = mw_open_proc(s->pid, "smaps", O_RDONLY);
	if (fd < 0)
		return fd == -ENOENT ? -ESRCH : fd;
	s->smaps_fd = fd;
	s->owner = getpid();
	return 0;
}

static void close_fds(struct memwatch_scan *s)
{
	if (s->pagemap_fd >= 0)
		close(s->pagemap_fd);
	if (s->maps_fd >= 0)
		close(s->maps_fd);
	if (s->smaps_fd >= 0)
		close(s->smaps_fd);
	s->pagemap_fd = s->maps_fd = s->smaps_fd = -1;
}

/* The PFN of the shared zero page, read from our own pagemap. */
static uint64_t find_zero_pfn(uintptr_t page_size)
{
	volatile char *p;
	uint64_t ent = 0;
	int fd;

	fd = mw_open_proc(0, "pagemap", O_RDONLY);
	if (fd < 0)
		return 0;
	p = mmap(NULL, page_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p != MAP_FAILED) {
		(void)p[0];
		if (mw_pread_full(fd, &ent, sizeof(ent),
				  (off_t)((uintptr_t)p / page_size * 8)) ||
		    !(ent & MW_PM_PRESENT))
			ent = 0;
		munmap((void *)p, page_size);
	}
	close(fd);
	return ent & MW_PM_PFN_MASK;
}

static int scan_init(struct memwatch_scan **out, pid_t pid, int pidfd,
		     unsigned int flags)
{
	struct memwatch_probe probe;
	struct memwatch_scan *s;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s) {
		if (pidfd >= 0)
			close(pidfd);
		return -ENOMEM;
	}
	s->pid = pid;
	s->pidfd = pidfd;
	s->pagemap_fd = s->maps_fd = s->smaps_fd = -1;
	ret = open_fds(s);
	if (ret == 0 && pidfd >= 0)
		ret = pidfd_alive(pidfd);
	if (ret) {
		memwatch_scan_close(s);
		return ret;
	}

	memwatch_probe(&probe);
	s->page_size = probe.page_size;
	if (!(flags & MEMWATCH_SCAN_PREAD) &&
	    (probe.features & MEMWATCH_FEAT_PAGEMAP_SCAN)) {
		s->use_ioctl = true;
		s->categories = probe.scan_categories;
	} else {
		s->categories = MW_PAGE_IS_PRESENT | MW_PAGE_IS_SWAPPED |
				MW_PAGE_IS_FILE | MW_PAGE_IS_WRITTEN |
				MW_PAGE_IS_SOFT_DIRTY;
		/* Without WP_ASYNC no VMA can be WP-allowed: always 0. */
		if (!(probe.features & MEMWATCH_FEAT_UFFD_WP_ASYNC))
			s->categories |= MW_PAGE_IS_WPALLOWED;
		if (probe.features & MEMWATCH_FEAT_PAGEMAP_PFN) {
			s->zero_pfn = find_zero_pfn(s->page_size);
			if (s->zero_pfn)
				s->categories |= MW_PAGE_IS_PFNZERO;
		}
	}
	/* PAGEMAP_SCAN takes the bit without CONFIG_MEM_SOFT_DIRTY: always 0 */
	if (!(probe.features & MEMWATCH_FEAT_SOFT_DIRTY))
		s->categories &= ~MW_PAGE_IS_SOFT_DIRTY;
	*out = s;
	return 0;
}

int memwatch_scan_open(struct memwatch_scan **out, pid_t pid,
		       unsigned int flags)
{
	int pidfd = -1;

	if (!out)
		return -EFAULT;
	*out = NULL;
	if (flags & ~MEMWATCH_SCAN_PREAD)
		return -EINVAL;
	if (pid < 0)
		return -EINVAL;
	if (pid == getpid())
		pid = 0;
	if (pid) {
		pidfd = sys_pidfd_open(pid);
		if (pidfd < 0 && pidfd != -ENOSYS)
			return pidfd;
	}
	return scan_init(out, pid, pidfd < 0 ? -1 : pidfd, flags);
}

/* The pid a pidfd refers to, from its fdinfo; -ESRCH once it has exited. */
static int pidfd_pid(int pidfd, pid_t *pid)
{
	char path[64], buf[1024];
	ssize_t n;
	char *p;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -EBADF : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	p = strstr(buf, "\nPid:\t");
	if (!p)
		return -EBADF;	/* not a pidfd */
	*pid = (pid_t)strtol(p + 6, NULL, 10);
	return *pid > 0 ? 0 : -ESRCH;
}

int memwatch_scan_open_pidfd(struct memwatch_scan **out, int pidfd,
			     unsigned int flags)
{
	pid_t pid;
	int ret, fd;

	if (!out)
		return -EFAULT;
	*out = NULL;
	if (flags & ~MEMWATCH_SCAN_PREAD)
		return -EINVAL;
	if (pidfd < 0)
		return -EBADF;
	ret = pidfd_pid(pidfd, &pid);
	if (ret)
		return ret;
	fd = fcntl(pidfd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	return scan_init(out, pid, fd, flags);
}

void memwatch_scan_close(struct memwatch_scan *s)
{
	if (!s)
		return;
	close_fds(s);
	if (s->pidfd >= 0)
		close(s->pidfd);
	free(s->vmas);
	free(s->vflags);
	free(s);
}

uint64_t memwatch_scan_categories(const struct memwatch_scan *s)
{
	return s ? s->categories : 0;
}

int memwatch_scan_uses_ioctl(const struct memwatch_scan *s)
{
	return s && s->use_ioctl;
}

/* A forked child scanning "self" must look at its own mm. */
static int refresh_self(struct memwatch_scan *s)
{
	if (s->pid || getpid() == s->owner)
		return 0;
	close_fds(s);
	return open_fds(s);
}


static int parse_maps(const char *text, struct memwatch_vma **out, size_t *count)
{
	struct memwatch_vma *v = NULL, *nv;
	size_t n = 0, cap = 0;
	const char *line = text;

	while (*line) {
		const char *eol = strchr(line, '\n');
		unsigned long long start, end, off;
		char perms[8];
		int consumed = 0;

		if (!eol)
			eol = line + strlen(line);
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s%n", &start, &end,
			   perms, &off, &consumed) >= 4 && start < MW_USER_TOP) {
			const char *p = line + consumed;
			size_t l;

			nv = mw_grow(v, &cap, n, sizeof(*v));
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
			memset(&v[n], 0, sizeof(v[n]));
			while (p < eol && *p == ' ')
				p++;
			l = (size_t)(eol - p);
			if (l >= sizeof(v[n].name)) {
				l = sizeof(v[n].name) - 1;
				v[n].flags = MEMWATCH_VMA_NAME_TRUNCATED;
			}
			memcpy(v[n].name, p, l);
			v[n].start = start;
			v[n].end = end;
			v[n].offset = off;
			v[n].prot = (perms[0] == 'r' ? PROT_READ : 0) |
				    (perms[1] == 'w' ? PROT_WRITE : 0) |
				    (perms[2] == 'x' ? PROT_EXEC : 0);
			v[n].shared = perms[3] == 's';
			n++;
		}
		line = *eol ? eol + 1 : eol;
	}
	*out = v;
	*count = n;
	return 0;
}

int memwatch_scan_vmas(struct memwatch_scan *s, struct memwatch_vma **vmas,
		       size_t *count)
{
	char *text = NULL;
	int ret;

	if (!s || !vmas || !count)
		return -EFAULT;
	ret = refresh_self(s);
	if (ret)
		return ret;
	ret = mw_read_file(s->maps_fd, &text);
	if (ret)
		return ret;
	ret = parse_maps(text, vmas, count);
	free(text);
	if (ret == 0 && *count == 0 && s->pid)
		ret = -ESRCH;	/* a zombie or a kernel thread: no mm */
	return ret;
}

/*
 * The pagemap-read fallback needs more than /proc/PID/maps says: which
 * VMAs PAGEMAP_SCAN skips (VM_PFNMAP), which are hugetlb, registered for
 * uffd-wp or private anonymous memory.  smaps has the maps lines too.
 */
static int read_smaps(struct memwatch_scan *s)
{
	struct mw_vma_info *info = NULL;
	size_t ninfo = 0, i, j = 0;
	char *text;
	int ret;

	ret = mw_read_file(s->smaps_fd, &text);
	if (ret)
		return ret;
	ret = parse_maps(text, &s->vmas, &s->nvmas);
	if (!ret)
		ret = mw_parse_smaps(text, &info, &ninfo);
	free(text);
	if (!ret && s->nvmas) {
		s->vflags = calloc(s->nvmas, sizeof(*s->vflags));
		if (!s->vflags)
			ret = -ENOMEM;
	}
	for (i = 0; !ret && i < s->nvmas; i++) {
		while (j < ninfo && info[j].start < s->vmas[i].start)
			j++;
		if (j < ninfo && info[j].start == s->vmas[i].start)
			s->vflags[i] = info[j].flags;
	}
	free(info);
	if (ret == 0 && s->nvmas == 0 && s->pid)
		ret = -ESRCH;	/* a zombie or a kernel thread: no mm */
	return ret;
}

int memwatch_scan_begin(struct memwatch_scan *s,
			const struct memwatch_scan_query *q)
{
	uint64_t masks;
	int ret;

	if (!s || !q)
		return -EFAULT;
	masks = q->category_inverted | q->category_mask |
		q->category_anyof_mask | q->return_mask;
	if (masks & ~s->categories)
		return -EOPNOTSUPP;
	if ((q->start & (s->page_size - 1)) || (q->end && q->end < q->start))
		return -EINVAL;
	ret = refresh_self(s);
	if (ret)
		return ret;
	if (s->pidfd >= 0) {
		ret = pidfd_alive(s->pidfd);
		if (ret)
			return ret;
	}

	s->q = *q;
	free(s->vmas);
	free(s->vflags);
	s->vmas = NULL;
	s->vflags = NULL;
	s->nvmas = s->vma_i = 0;
	if (!s->use_ioctl)
		ret = read_smaps(s);
	else if (!q->end)
		ret = memwatch_scan_vmas(s, &s->vmas, &s->nvmas);
	if (ret)
		return ret;
	if (!s->q.end)
		s->q.end = s->nvmas ? s->vmas[s->nvmas - 1].end : 0;
	s->q.end = (s->q.end + s->page_size - 1) & ~(uint64_t)(s->page_size - 1);
	s->cursor = s->q.start;
	s->pages_left = q->max_pages ? q->max_pages : UINT64_MAX;
	s->done = s->cursor >= s->q.end;
	s->buf_n = s->buf_i = 0;
	s->have_pending = false;
	return 0;
}

static uint64_t region_pages(const struct memwatch_scan *s,
			     const struct memwatch_region *r)
{
	return (r->end - r->start) / s->page_size;
}

static int refill_ioctl(struct memwatch_scan *s)
{
	struct mw_pm_scan_arg arg;
	long ret, i;

	memset(&arg, 0, sizeof(arg));
	arg.start = s->cursor;
	arg.end = s->q.end;
	arg.vec = (uintptr_t)s->buf;
	arg.vec_len = MW_SCAN_BUF;
	arg.max_pages = s->pages_left == UINT64_MAX ? 0 : s->pages_left;
	arg.category_inverted = s->q.category_inverted;
	arg.category_mask = s->q.category_mask;
	arg.category_anyof_mask = s->q.category_anyof_mask;
	arg.return_mask = s->q.return_mask;
	ret = mw_pagemap_scan(s->pagemap_fd, &arg);
	if (ret < 0)
		return (int)ret;
	s->buf_n = (size_t)ret;
	s->buf_i = 0;
	for (i = 0; i < ret && s->pages_left != UINT64_MAX; i++)
		s->pages_left -= region_pages(s, &s->buf[i]);
	if (ret < MW_SCAN_BUF || arg.walk_end >= s->q.end ||
	    arg.walk_end <= s->cursor || s->pages_left == 0)
		s->done = true;
	s->cursor = arg.walk_end;
	return 0;
}

/*
 * The categories PAGEMAP_SCAN (upstream 6.12's rules, which the memwatch
 * series follows) would give the page behind pagemap entry e, in a VMA
 * with MW_VMA_* flags vf and protection prot.  table: the page's 2 MiB
 * block has a page table (see refill_pread()).
 */
static uint64_t entry_categories(const struct memwatch_scan *s, uint64_t e,
				 unsigned int vf, unsigned int prot, bool table)
{
	uint64_t c = 0;

	if (e & MW_PM_PRESENT) {
		c |= MW_PAGE_IS_PRESENT;
		if (s->zero_pfn && (e & MW_PM_PFN_MASK) == s->zero_pfn)
			c |= MW_PAGE_IS_PFNZERO;
		if (!(e & MW_PM_UFFD_WP))
			c |= MW_PAGE_IS_WRITTEN;
		if (e & MW_PM_FILE)
			c |= MW_PAGE_IS_FILE;
		/*
		 * Private anonymous memory holds anonymous pages and zero
		 * pages: a "file" page there is the huge zero page, which
		 * pagemap calls a file page and PAGEMAP_SCAN a zero page.
		 */
		if ((vf & MW_VMA_ANON) && (c & MW_PAGE_IS_FILE))
			c ^= MW_PAGE_IS_FILE | MW_PAGE_IS_PFNZERO;
		/*
		 * pagemap shows a hugetlb page's soft-dirty bit only through
		 * its VMA's; the page's own bit is set whenever it is mapped
		 * dirty, which in a writable VMA it is once written (a
		 * private page only read is the difference left).
		 */
		if ((vf & MW_VMA_HUGETLB) && (prot & PROT_WRITE))
			c |= MW_PAGE_IS_SOFT_DIRTY;
	} else if ((e & MW_PM_SWAP) ||
		   ((vf & MW_VMA_HUGETLB) && (e & MW_PM_UFFD_WP))) {
		/* a swap entry, or a uffd-wp marker (hugetlb: no bit 62) */
		c |= MW_PAGE_IS_SWAPPED;
		if (!(e & MW_PM_UFFD_WP))
			c |= MW_PAGE_IS_WRITTEN;
		if (e & MW_PM_FILE)
			c |= MW_PAGE_IS_FILE;
	} else if (!(vf & MW_VMA_HUGETLB) &&
		   (table || (vf & MW_VMA_UFFD_WP))) {
		/*
		 * An empty pte is "written" (it has no uffd-wp marker), and
		 * so is a range without a page table in a VMA registered for
		 * uffd-wp (it was zapped); elsewhere a range without a page
		 * table is not, nor is an empty hugetlb entry.
		 */
		c |= MW_PAGE_IS_WRITTEN;
	}
	if (e & MW_PM_SOFT_DIRTY)
		c |= MW_PAGE_IS_SOFT_DIRTY;
	return c;
}

static bool interesting(const struct memwatch_scan_query *q, uint64_t c)
{
	c ^= q->category_inverted;
	if ((c & q->category_mask) != q->category_mask)
		return false;
	return !q->category_anyof_mask || (c & q->category_anyof_mask);
}

/*
 * One 2 MiB block of pagemap entries from the cursor, within one VMA, as
 * regions in buf.  pagemap cannot tell an empty pte from a range without a
 * page table, which PAGEMAP_SCAN answers differently: the block has a page
 * table (one per 2 MiB, whatever VMAs share it) if any of its entries maps
 * or swaps something, or if it holds a VM_PFNMAP mapping ([vvar]): pagemap
 * skips those, but fork() copies their page table whenever the parent has
 * one, and the parent has one as soon as it ran the vDSO, so a forked
 * child's [vdso] pages, not faulted in yet, are empty ptes in a table.  A
 * table whose every pte was emptied (MADV_DONTNEED of the whole block, or
 * the VMA that used it unmapped) looks like none.
 */
static bool block_has_pfnmap(const struct memwatch_scan *s, uint64_t block)
{
	size_t i;

	for (i = s->vma_i; i > 0 && s->vmas[i - 1].end > block; i--)
		;
	for (; i < s->nvmas && s->vmas[i].start < block + MW_HUGE_BLOCK; i++)
		if ((s->vflags[i] & MW_VMA_PFNMAP) && s->vmas[i].end > block)
			return true;
	return false;
}

static int refill_pread(struct memwatch_scan *s)
{
	const size_t per_block = MW_HUGE_BLOCK / 4096;
	uint64_t ent[MW_SCAN_BUF];
	const struct memwatch_vma *v;
	uint64_t block, from, to, i;
	unsigned int vf;
	bool table = false;
	int ret;

	s->buf_n = s->buf_i = 0;
	/* PAGEMAP_SCAN skips VM_PFNMAP mappings: [vvar], [vvar_vclock], ... */
	while (s->vma_i < s->nvmas && (s->vmas[s->vma_i].end <= s->cursor ||
				       (s->vflags[s->vma_i] & MW_VMA_PFNMAP)))
		s->vma_i++;
	if (s->vma_i >= s->nvmas || s->vmas[s->vma_i].start >= s->q.end) {
		s->done = true;
		return 0;
	}
	v = &s->vmas[s->vma_i];
	vf = s->vflags[s->vma_i];
	from = s->cursor > v->start ? s->cursor : v->start;
	block = from & ~(uint64_t)(MW_HUGE_BLOCK - 1);
	to = block + MW_HUGE_BLOCK;
	if (to > v->end)
		to = v->end;
	if (to > s->q.end)
		to = s->q.end;
	if (s->page_size != 4096 || per_block > MW_SCAN_BUF)
		return -EOPNOTSUPP;
	ret = mw_pread_full(s->pagemap_fd, ent, per_block * sizeof(ent[0]),
			    (off_t)(block / s->page_size * 8));
	if (ret)
		return ret;
	table = block_has_pfnmap(s, block);
	for (i = 0; i < per_block && !table; i++)
		table = ent[i] & (MW_PM_PRESENT | MW_PM_SWAP);
	for (i = (from - block) / s->page_size;
	     block + i * s->page_size < to && s->pages_left; i++) {
		uint64_t c = entry_categories(s, ent[i], vf, v->prot, table);
		uint64_t addr = block + i * s->page_size;
		struct memwatch_region *last = s->buf_n ? &s->buf[s->buf_n - 1] : NULL;

		if (!interesting(&s->q, c))
			continue;
		c &= s->q.return_mask;
		if (last && last->end == addr && last->categories == c)
			last->end += s->page_size;
		else
			s->buf[s->buf_n++] = (struct memwatch_region){
				addr, addr + s->page_size, c };
		if (s->pages_left != UINT64_MAX)
			s->pages_left--;
	}
	s->cursor = to;
	if (!s->pages_left || s->cursor >= s->q.end)
		s->done = true;
	return 0;
}

int memwatch_scan_next(struct memwatch_scan *s, struct memwatch_region *out)
{
	int ret;

	if (!s || !out)
		return -EFAULT;
	for (;;) {
		if (s->buf_i < s->buf_n) {
			const struct memwatch_region *r = &s->buf[s->buf_i++];

			if (s->have_pending && s->pending.end == r->start &&
			    s->pending.categories == r->categories) {
				s->pending.end = r->end;
				continue;
			}
			if (s->have_pending) {
				*out = s->pending;
				s->pending = *r;
				return 1;
			}
			s->pending = *r;
			s->have_pending = true;
			continue;
		}
		if (s->done) {
			if (!s->have_pending)
				return 0;
			*out = s->pending;
			s->have_pending = false;
			return 1;
		}
		ret = s->use_ioctl ? refill_ioctl(s) : refill_pread(s);
		if (ret)
			return ret;
	}
}
