// SPDX-License-Identifier: MIT
/*
 * memwatch: what this kernel offers for write tracking, and page scans of
 * running processes, on top of libmemwatch.
 *
 *   memwatch probe [--json]
 *   memwatch scan PID [START-END] [--category LIST] [--json] [--pread]
 *   memwatch top PID [--interval S] [--count N] [--lines N]
 *
 * Exit status: 0 success, 1 failure at run time, 2 usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "memwatch.h"

#define EXIT_USAGE 2

static const char usage_text[] =
"Usage: memwatch [--help] COMMAND [ARGS]\n"
"\n"
"Commands:\n"
"  probe [--json]\n"
"      Say what the running kernel supports for exact write tracking\n"
"      (userfaultfd WP_ASYNC, PAGEMAP_SCAN, soft-dirty) and which backend\n"
"      libmemwatch uses.\n"
"  scan PID [START-END] [--category LIST] [--json] [--pread]\n"
"      Per-mapping page counts of process PID (or 'self') by category.\n"
"      START-END (hex) limits the scan to that address range.  LIST is a\n"
"      comma-separated subset of: present,swapped,file,zero,huge,\n"
"      soft-dirty,written,wp-allowed (default: all).  --pread forces the\n"
"      /proc/PID/pagemap read fallback instead of the PAGEMAP_SCAN ioctl.\n"
"      'swapped' counts swap entries and also userfaultfd write-protect\n"
"      markers on pages never populated or dropped (the kernel files both\n"
"      as swap entries), so under a uffd-wp user such as a libmemwatch\n"
"      watch it is not what is in swap.  A column is '-' where this\n"
"      kernel cannot answer the category (soft-dirty without\n"
"      CONFIG_MEM_SOFT_DIRTY, zero with --pread as non-root, huge with\n"
"      --pread).\n"
"  top PID [--interval S] [--count N] [--lines N]\n"
"      Every S seconds (default 1), list the mappings of PID that were\n"
"      written in that interval, most written first (N lines, default 10);\n"
"      stop after --count intervals (default: run until interrupted).\n"
"      Soft-dirty based: it clears PID's soft-dirty bits each interval,\n"
"      which other users of them lose: do not run it on a process that\n"
"      CRIU (pre-dump) or another soft-dirty tracker is working on.\n"
"\n"
"Reading another process's pages needs ptrace read access to it (same\n"
"user and kernel.yama.ptrace_scope permitting, or CAP_SYS_PTRACE); 'top'\n"
"must also be allowed to write /proc/PID/clear_refs (same user or root).\n"
"\n"
"Exit status: 0 success, 1 failure (no such process, permission denied,\n"
"feature missing from this kernel), 2 usage error.\n";

/*
 * The length of the well-formed UTF-8 sequence at s (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF), or 0.
 */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)	/* the NUL terminator fails here too */
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/*
 * Print s as a JSON string (RFC 8259): '"' and '\\' escaped, control
 * characters and DEL as \b \f \n \r \t or \u00XX, well-formed UTF-8 as it
 * is, and each byte that is not part of well-formed UTF-8 as \u00XX (the
 * code point of the same number).  Returns whether there was such a byte:
 * then the string alone does not give the bytes back (see json_name()).
 */
static bool json_string(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	bool lossy = false;

	putchar('"');
	while (*s) {
		size_t l = utf8_len(s);

		if (l > 1) {
			fwrite(s, 1, l, stdout);
			s += l;
			continue;
		}
		switch (*s) {
		case '"': fputs("\\\"", stdout); break;
		case '\\': fputs("\\\\", stdout); break;
		case '\b': fputs("\\b", stdout); break;
		case '\f': fputs("\\f", stdout); break;
		case '\n': fputs("\\n", stdout); break;
		case '\r': fputs("\\r", stdout); break;
		case '\t': fputs("\\t", stdout); break;
		default:
			if (*s < 0x20 || *s >= 0x7f)
				printf("\\u%04x", *s);
			else
				putchar(*s);
			if (!l)
				lossy = true;
		}
		s++;
	}
	putchar('"');
	return lossy;
}

/*
 * "name":"..." and, when the name is not well-formed UTF-8, "name_hex" with
 * its exact bytes as lowercase hex (file names are bytes, not text).
 */
static void json_name(const char *name)
{
	printf("\"name\":");
	if (json_string(name)) {
		printf(",\"name_hex\":\"");
		for (const unsigned char *s = (const unsigned char *)name; *s; s++)
			printf("%02x", *s);
		putchar('"');
	}
}

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "memwatch: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'memwatch --help'.\n");
	return EXIT_USAGE;
}

struct cat {
	const char *name;	/* for --category and JSON */
	const char *head;	/* table header */
	uint64_t bit;
};

static const struct cat cats[] = {
	{ "present", "PRESENT", MEMWATCH_PAGE_PRESENT },
	{ "swapped", "SWAPPED", MEMWATCH_PAGE_SWAPPED },
	{ "file", "FILE", MEMWATCH_PAGE_FILE },
	{ "zero", "ZERO", MEMWATCH_PAGE_PFNZERO },
	{ "huge", "HUGE", MEMWATCH_PAGE_HUGE },
	{ "soft-dirty", "SOFTDIRTY", MEMWATCH_PAGE_SOFT_DIRTY },
	{ "written", "WRITTEN", MEMWATCH_PAGE_WRITTEN },
	{ "wp-allowed", "WPALLOWED", MEMWATCH_PAGE_WPALLOWED },
};
#define NCATS (sizeof(cats) / sizeof(cats[0]))

static void yesno(const char *what, bool yes, const char *why_not)
{
	printf("  %-22s %s%s%s\n", what, yes ? "yes" : "no",
	       !yes && why_not ? "  " : "", !yes && why_not ? why_not : "");
}

static int cmd_probe(int argc, char **argv)
{
	struct memwatch_probe p;
	struct utsname u;
	bool json = false, exact;
	const char *scan_why;
	unsigned int i;

	for (i = 1; i < (unsigned int)argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else
			return usage_error("probe: unknown argument '%s'", argv[i]);
	}
	memwatch_probe(&p);
	uname(&u);
	exact = p.backend == MEMWATCH_BACKEND_UFFD;
	if (json) {
		printf("{\"kernel\":");
		json_string(u.release);
		printf(",\"features\":%" PRIu64
		       ",\"uffd\":%s,\"uffd_wp\":%s,\"wp_unpopulated\":%s,"
		       "\"wp_async\":%s,\"pagemap_scan\":%s,\"scan_categories\":%" PRIu64
		       ",\"soft_dirty\":%s,\"pagemap_pfn\":%s,\"backend\":\"%s\"}\n",
		       p.features,
		       p.features & MEMWATCH_FEAT_UFFD ? "true" : "false",
		       p.features & MEMWATCH_FEAT_UFFD_WP ? "true" : "false",
		       p.features & MEMWATCH_FEAT_UFFD_WP_UNPOPULATED ? "true" : "false",
		       p.features & MEMWATCH_FEAT_UFFD_WP_ASYNC ? "true" : "false",
		       p.features & MEMWATCH_FEAT_PAGEMAP_SCAN ? "true" : "false",
		       p.scan_categories,
		       p.features & MEMWATCH_FEAT_SOFT_DIRTY ? "true" : "false",
		       p.features & MEMWATCH_FEAT_PAGEMAP_PFN ? "true" : "false",
		       memwatch_backend_name(p.backend));
		return 0;
	}
	printf("kernel %s\n", u.release);
	if (p.features & MEMWATCH_FEAT_UFFD)
		printf("  %-22s yes (features 0x%" PRIx64 ")\n", "userfaultfd:",
		       p.uffd_features);
	else
		printf("  %-22s no  (%s)\n", "userfaultfd:", strerror(p.uffd_errno));
	yesno("  write-protect:", p.features & MEMWATCH_FEAT_UFFD_WP, NULL);
	yesno("  WP_UNPOPULATED:", p.features & MEMWATCH_FEAT_UFFD_WP_UNPOPULATED,
	      "(Linux 6.4, or 6.1 with the memwatch series)");
	yesno("  WP_ASYNC:", p.features & MEMWATCH_FEAT_UFFD_WP_ASYNC,
	      "(Linux 6.7, or 6.1 with the memwatch series)");
	scan_why = p.scan_errno == ENOTTY ? "(this kernel's pagemap has no ioctl)" :
		   p.scan_errno ? strerror(p.scan_errno) : NULL;
	yesno("PAGEMAP_SCAN ioctl:", p.features & MEMWATCH_FEAT_PAGEMAP_SCAN, scan_why);
	if (p.features & MEMWATCH_FEAT_PAGEMAP_SCAN) {
		printf("  %-22s", "  categories:");
		for (i = 0; i < NCATS; i++)
			if (p.scan_categories & cats[i].bit)
				printf(" %s", cats[i].name);
		printf("\n");
	}
	yesno("soft-dirty:", p.features & MEMWATCH_FEAT_SOFT_DIRTY,
	      "(kernel built without CONFIG_MEM_SOFT_DIRTY)");
	yesno("PFNs in pagemap:", p.features & MEMWATCH_FEAT_PAGEMAP_PFN,
	      p.features & MEMWATCH_FEAT_PAGEMAP_SCAN ?
	      "(needs CAP_SYS_ADMIN; not needed: PAGEMAP_SCAN finds zero pages)" :
	      "(needs CAP_SYS_ADMIN; the pagemap read finds only huge zero pages)");
	printf("write watches use: %s", memwatch_backend_name(p.backend));
	if (exact)
		printf(" (exact)\n");
	else if (p.backend == MEMWATCH_BACKEND_SOFT_DIRTY)
		printf(" (approximate: VMA merges report false writes; exact tracking needs WP_ASYNC + PAGEMAP_SCAN)\n");
	else
		printf(" (slow: a signal per first write of a page)\n");
	printf("page scans use: %s\n", p.features & MEMWATCH_FEAT_PAGEMAP_SCAN ?
	       "PAGEMAP_SCAN" : "pagemap read (slower; PAGEMAP_SCAN is faster)");
	return 0;
}

static int parse_pid(const char *s, pid_t *pid)
{
	char *end;
	long v;

	if (!strcmp(s, "self")) {
		*pid = 0;
		return 0;
	}
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v <= 0 || v > 0x3fffffff)
		return -1;
	*pid = (pid_t)v;
	return 0;
}

static int open_error(const char *what, pid_t pid, int err)
{
	if (err == -ESRCH || err == -ENOENT)
		fprintf(stderr, "memwatch: no process with pid %d\n", (int)pid);
	else if (err == -EACCES || err == -EPERM)
		fprintf(stderr, "memwatch: cannot %s pid %d: %s (needs ptrace read "
			"access: run as the same user with kernel.yama.ptrace_scope "
			"permitting it, or with CAP_SYS_PTRACE)\n", what, (int)pid,
			strerror(-err));
	else
		fprintf(stderr, "memwatch: cannot %s pid %d: %s\n", what, (int)pid,
			strerror(-err));
	return 1;
}

static void perm_string(const struct memwatch_vma *v, char out[5])
{
	out[0] = v->prot & PROT_READ ? 'r' : '-';
	out[1] = v->prot & PROT_WRITE ? 'w' : '-';
	out[2] = v->prot & PROT_EXEC ? 'x' : '-';
	out[3] = v->shared ? 's' : 'p';
	out[4] = '\0';
}

/* Pages per category bit of [start, end). */
static int count_range(struct memwatch_scan *s, uint64_t start, uint64_t end,
		       uint64_t mask, uint64_t counts[NCATS])
{
	struct memwatch_scan_query q = { .start = start, .end = end,
					 .return_mask = mask };
	struct memwatch_region r;
	long ps = sysconf(_SC_PAGESIZE);
	unsigned int i;
	int ret;

	memset(counts, 0, NCATS * sizeof(counts[0]));
	ret = memwatch_scan_begin(s, &q);
	if (ret)
		return ret;
	while ((ret = memwatch_scan_next(s, &r)) == 1)
		for (i = 0; i < NCATS; i++)
			if (r.categories & cats[i].bit)
				counts[i] += (r.end - r.start) / (uint64_t)ps;
	return ret;
}

/* The width of category i's table column: its heading's, 7 at least. */
static int cat_width(unsigned int i)
{
	size_t len = strlen(cats[i].head);

	return (int)(len > 7 ? len : 7);
}

/*
 * The count columns of a table row: each selected category's count, "-"
 * for one the scan could not ask for.
 */
static void print_counts(const bool sel[NCATS], uint64_t mask,
			 const uint64_t counts[NCATS])
{
	unsigned int i;

	for (i = 0; i < NCATS; i++) {
		if (!sel[i])
			continue;
		if (mask & cats[i].bit)
			printf(" %*" PRIu64, cat_width(i), counts[i]);
		else
			printf(" %*s", cat_width(i), "-");
	}
}

static int parse_categories(const char *list, bool sel[NCATS])
{
	char *copy = strdup(list), *tok, *save = NULL;
	unsigned int i;
	int ret = 0;

	memset(sel, 0, NCATS * sizeof(sel[0]));
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < NCATS; i++)
			if (!strcmp(tok, cats[i].name))
				break;
		if (i == NCATS) {
			ret = usage_error("unknown category '%s' (see --help)", tok);
			break;
		}
		sel[i] = true;
	}
	free(copy);
	return ret;
}

static int cmd_scan(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "category", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "pread", no_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 },
	};
	bool sel[NCATS], json = false;
	uint64_t lo = 0, hi = UINT64_MAX, mask = 0, avail, total[NCATS] = { 0 };
	uint64_t counts[NCATS], pages_total = 0;
	struct memwatch_scan *s;
	struct memwatch_vma *v;
	unsigned int flags = 0, i;
	size_t n, k, shown = 0;
	long ps = sysconf(_SC_PAGESIZE);
	pid_t pid, shown_pid;
	int c, ret;

	for (i = 0; i < NCATS; i++)
		sel[i] = true;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			ret = parse_categories(optarg, sel);
			if (ret)
				return ret;
			break;
		case 'j':
			json = true;
			break;
		case 'p':
			flags |= MEMWATCH_SCAN_PREAD;
			break;
		default:
			return usage_error("scan: bad option%s", "");
		}
	}
	if (optind >= argc)
		return usage_error("scan: which process? (PID or 'self')%s", "");
	if (parse_pid(argv[optind], &pid))
		return usage_error("scan: '%s' is not a process id", argv[optind]);
	if (optind + 1 < argc) {
		char *end;

		lo = strtoull(argv[optind + 1], &end, 16);
		if (*end != '-' || (hi = strtoull(end + 1, &end, 16), *end) || hi <= lo)
			return usage_error("scan: '%s' is not a START-END hex range",
					   argv[optind + 1]);
		lo &= ~(uint64_t)(ps - 1);
	}
	if (optind + 2 < argc)
		return usage_error("scan: unexpected argument '%s'", argv[optind + 2]);

	ret = memwatch_scan_open(&s, pid, flags);
	if (ret)
		return open_error("read the pages of", pid, ret);
	shown_pid = pid ? pid : getpid();	/* 'self': this process */
	avail = memwatch_scan_categories(s);
	for (i = 0; i < NCATS; i++)
		if (sel[i] && (avail & cats[i].bit))
			mask |= cats[i].bit;
	ret = memwatch_scan_vmas(s, &v, &n);
	if (ret) {
		memwatch_scan_close(s);
		return open_error("read the mappings of", pid, ret);
	}

	if (json)
		printf("{\"pid\":%d,\"method\":\"%s\",\"mappings\":[", (int)shown_pid,
		       memwatch_scan_uses_ioctl(s) ? "PAGEMAP_SCAN" : "pagemap-read");
	else {
		printf("memwatch scan: pid %d via %s\n", (int)shown_pid,
		       memwatch_scan_uses_ioctl(s) ? "PAGEMAP_SCAN" : "pagemap read");
		printf("%-12s %-12s %-4s %7s", "START", "END", "PERM", "PAGES");
		for (i = 0; i < NCATS; i++)
			if (sel[i])
				printf(" %*s", cat_width(i), cats[i].head);
		printf("  NAME\n");
	}
	for (k = 0; k < n; k++) {
		uint64_t a = v[k].start > lo ? v[k].start : lo;
		uint64_t b = v[k].end < hi ? v[k].end : hi;
		char perm[5];

		if (a >= b)
			continue;
		ret = count_range(s, a, b, mask, counts);
		if (ret == -ESRCH)
			break;
		if (ret)
			continue;	/* a mapping that vanished meanwhile */
		perm_string(&v[k], perm);
		pages_total += (b - a) / (uint64_t)ps;
		if (json) {
			printf("%s{\"start\":\"0x%" PRIx64 "\",\"end\":\"0x%" PRIx64
			       "\",\"perm\":\"%s\",", shown ? "," : "", a, b, perm);
			json_name(v[k].name);
			if (v[k].flags & MEMWATCH_VMA_NAME_TRUNCATED)
				printf(",\"name_truncated\":true");
			printf(",\"pages\":%" PRIu64, (b - a) / (uint64_t)ps);
			for (i = 0; i < NCATS; i++)
				if (sel[i] && (mask & cats[i].bit))
					printf(",\"%s\":%" PRIu64, cats[i].name, counts[i]);
			printf("}");
		} else {
			printf("%012" PRIx64 " %012" PRIx64 " %-4s %7" PRIu64, a, b,
			       perm, (b - a) / (uint64_t)ps);
			print_counts(sel, mask, counts);
			printf("%s%s%s\n", v[k].name[0] ? "  " : "", v[k].name,
			       v[k].flags & MEMWATCH_VMA_NAME_TRUNCATED ? "..." : "");
		}
		for (i = 0; i < NCATS; i++)
			total[i] += counts[i];
		shown++;
	}
	if (json) {
		printf("],\"pages\":%" PRIu64 "}\n", pages_total);
	} else {
		printf("%-12s %-12s %-4s %7" PRIu64, "TOTAL", "", "", pages_total);
		print_counts(sel, mask, total);
		printf("  (%zu mappings)\n", shown);
	}
	free(v);
	memwatch_scan_close(s);
	if (ret == -ESRCH) {
		fprintf(stderr, "memwatch: pid %d exited during the scan\n", (int)pid);
		return 1;
	}
	return 0;
}

struct hot {
	uint64_t pages;
	size_t vma;
};

static int hot_cmp(const void *a, const void *b)
{
	const struct hot *x = a, *y = b;

	if (x->pages != y->pages)
		return x->pages < y->pages ? 1 : -1;
	return x->vma < y->vma ? -1 : x->vma > y->vma;
}

static int cmd_top(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ "lines", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	struct memwatch_probe p;
	struct memwatch_scan *s;
	double interval = 1.0;
	long count = -1, lines = 10, iter;
	long ps = sysconf(_SC_PAGESIZE);
	char path[64], *end;
	pid_t pid;
	int c, fd, ret = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			interval = strtod(optarg, &end);
			if (*end || !(interval > 0) || interval > 86400)
				return usage_error("top: bad --interval '%s' (seconds > 0)", optarg);
			break;
		case 'n':
			count = strtol(optarg, &end, 10);
			if (*end || count <= 0)
				return usage_error("top: bad --count '%s'", optarg);
			break;
		case 'l':
			lines = strtol(optarg, &end, 10);
			if (*end || lines <= 0)
				return usage_error("top: bad --lines '%s'", optarg);
			break;
		default:
			return usage_error("top: bad option%s", "");
		}
	}
	if (optind >= argc)
		return usage_error("top: which process? (PID)%s", "");
	if (parse_pid(argv[optind], &pid))
		return usage_error("top: '%s' is not a process id", argv[optind]);
	if (optind + 1 < argc)
		return usage_error("top: unexpected argument '%s'", argv[optind + 1]);

	memwatch_probe(&p);
	if (!(p.features & MEMWATCH_FEAT_SOFT_DIRTY)) {
		fprintf(stderr, "memwatch: top needs soft-dirty tracking, which this "
			"kernel lacks (CONFIG_MEM_SOFT_DIRTY)\n");
		return 1;
	}
	ret = memwatch_scan_open(&s, pid, 0);
	if (ret)
		return open_error("read the pages of", pid, ret);
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/clear_refs", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/clear_refs");
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		memwatch_scan_close(s);
		if (ret == -EACCES || ret == -EPERM) {
			fprintf(stderr, "memwatch: cannot write %s: %s (top must run as "
				"the owner of pid %d or as root)\n", path,
				strerror(-ret), (int)pid);
			return 1;
		}
		return open_error("reset the soft-dirty bits of", pid, ret);
	}
	printf("memwatch top: pid %d, every %.3gs; soft-dirty based: clears the "
	       "soft-dirty bits of pid %d each interval (a CRIU pre-dump or other "
	       "soft-dirty user of it loses them), and a mapping created or "
	       "merged during one counts as fully written\n",
	       (int)(pid ? pid : getpid()), interval, (int)(pid ? pid : getpid()));
	for (iter = 1; count < 0 || iter <= count; iter++) {
		struct timespec ts = { (time_t)interval,
				       (long)((interval - (double)(time_t)interval) * 1e9) };
		struct memwatch_vma *v;
		struct hot *h;
		uint64_t sum = 0;
		size_t n, k, nh = 0;

		if (write(fd, "4", 1) != 1) {
			ret = errno == ESRCH ? -ESRCH : -errno;
			break;
		}
		nanosleep(&ts, NULL);
		ret = memwatch_scan_vmas(s, &v, &n);
		if (ret)
			break;
		h = calloc(n ? n : 1, sizeof(*h));
		for (k = 0; k < n && h; k++) {
			struct memwatch_scan_query q = { .start = v[k].start,
				.end = v[k].end, .category_mask = MEMWATCH_PAGE_SOFT_DIRTY };
			struct memwatch_region r;
			uint64_t pages = 0;

			if (memwatch_scan_begin(s, &q))
				continue;
			while (memwatch_scan_next(s, &r) == 1)
				pages += (r.end - r.start) / (uint64_t)ps;
			if (pages) {
				h[nh].pages = pages;
				h[nh++].vma = k;
				sum += pages;
			}
		}
		if (h)
			qsort(h, nh, sizeof(*h), hot_cmp);
		printf("--- interval %ld: %" PRIu64 " pages written in %zu mappings\n",
		       iter, sum, nh);
		for (k = 0; h && k < nh && k < (size_t)lines; k++) {
			const struct memwatch_vma *m = &v[h[k].vma];
			char perm[5];

			perm_string(m, perm);
			printf("%8" PRIu64 "  %012" PRIx64 "-%012" PRIx64 " %s%s%s\n",
			       h[k].pages, m->start, m->end, perm,
			       m->name[0] ? " " : "", m->name);
		}
		fflush(stdout);
		free(h);
		free(v);
	}
	close(fd);
	memwatch_scan_close(s);
	if (ret == -ESRCH) {
		fprintf(stderr, "memwatch: pid %d exited\n", (int)pid);
		return 1;
	}
	if (ret) {
		fprintf(stderr, "memwatch: top: %s\n", strerror(-ret));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage_error("no command given (probe, scan or top)%s", "");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("memwatch %d.%d\n", MEMWATCH_VERSION_MAJOR, MEMWATCH_VERSION_MINOR);
		return 0;
	}
	if (!strcmp(argv[1], "probe"))
		return cmd_probe(argc - 1, argv + 1);
	if (!strcmp(argv[1], "scan"))
		return cmd_scan(argc - 1, argv + 1);
	if (!strcmp(argv[1], "top"))
		return cmd_top(argc - 1, argv + 1);
	return usage_error("unknown command '%s' (probe, scan or top)", argv[1]);
}
