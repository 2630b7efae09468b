// SPDX-License-Identifier: MIT
/*
 * gcbench: an allocation-heavy benchmark of the Boehm GC's incremental
 * mode, for the figures of its virtual dirty bit layers (VDB: mprotect,
 * soft-dirty, memwatch's uffd).  In the spirit of Ellis and Kovac's GCBench
 * (as Boehm distributes it), written anew: a large long-lived heap and
 * many short-lived trees.
 *
 *   long-lived  one binary tree of --live-mib / 2 MiB (nodes of two
 *               pointers and two ints, 32 bytes each as the collector
 *               allocates them) and one array of doubles of --live-mib / 2
 *               MiB (pointer-free: GC_MALLOC_ATOMIC_IGNORE_OFF_PAGE);
 *   per iteration
 *               1. --young-write-percent P: of the long-lived data's 4 KiB
 *                  spans (128 tree nodes in preorder, which is their
 *                  allocation order, or 512 doubles), P % picked at random
 *                  get one field rewritten: about P % of the tree's pages
 *                  dirty per iteration (the array's pages are pointer-free:
 *                  no VDB tracks them, the writes cost the same);
 *               2. for depth d = --min-depth, +2, ... --max-depth:
 *                  2 * size(max) / size(d) trees of depth d built top-down
 *                  (the nodes first, then their children filled in) and as
 *                  many bottom-up (children first), each dropped at once;
 *   at the start the heap is expanded to M + 64 MiB (GC_expand_hp(): at
 *   least 256 MiB with the default M, and no collections while the
 *   long-lived data are built), a "stretch" tree of depth max + 1 is built
 *   and dropped; at the end the long-lived data are checked (node count,
 *   fields, array values).
 *
 *   gcbench [--live-mib M] [--iterations N] [--young-write-percent P]
 *           [--min-depth D] [--max-depth D] [--seed S] [--no-incremental]
 *
 * Defaults: M 200, N 10, P 1, depths 4 to 16, seed 1: deterministic (the
 * same allocations and writes for a seed; the collector's own pacing
 * follows time).  Incremental mode (GC_enable_incremental()) unless
 * --no-incremental.  Prints, per iteration and in total, the time, the
 * collections (GC_get_gc_no()) and the heap (GC_get_heap_size()), then
 * one machine-readable line:
 *
 *   GCBENCH secs=S gcs=N heap_mib=H incremental=on|off vdb=NAME unmapped_mib=U
 *
 * (heap_mib: GC_get_heap_size(), the heap mapped at the end, without the
 * U MiB the collector returned to the kernel (GC_get_unmapped_bytes());
 * incremental: at the end of the run; vdb: GC_get_actual_vdb() by name at
 * the start).  The collector may leave incremental mode on its own:
 * MPROTECT_VDB does once the heap has 32768 pages (128 MiB), lest its
 * mprotect() calls split the heap into more mappings than
 * vm.max_map_count allows ("GC incremental mode is turned off to prevent
 * hitting VM maps limit"); with the default M, GC_USE_GETWRITEWATCH=0
 * therefore measures a non-incremental collector.
 * Incremental mode reads dirty bits (soft-dirty, mprotect, userfaultfd),
 * so the program runs only in the memwatch test guest (memwatch.guest=1)
 * unless --no-incremental is given and GC_ENABLE_INCREMENTAL is not set
 * (the collector then tracks no page: a native baseline of the
 * allocation and marking work).  Exit status 0, or 1 if the long-lived
 * data did not survive intact, 2 for a usage error.
 */
#include "mw-test.h"

#include <getopt.h>
#include <time.h>

#include <gc.h>

#define SPAN		4096UL		/* bytes: the unit of rewriting */
#define NODE_ALLOC	32UL		/* a node as the collector allocates it */
#define NODES_PER_SPAN	(SPAN / NODE_ALLOC)
#define DOUBLES_PER_SPAN (SPAN / sizeof(double))

struct node {
	struct node *left, *right;
	int i, j;
};

struct bench {
	uint64_t seed, rng;
	unsigned int live_mib, iterations, young_pct, min_depth, max_depth;
	bool incremental;
	struct node *tree;		/* long-lived */
	size_t tree_nodes;
	double *array;			/* long-lived, pointer-free */
	size_t array_len;
	unsigned long *writes;		/* per tree span: rewrites so far */
};

static struct node *new_node(struct node *l, struct node *r)
{
	struct node *n = GC_MALLOC(sizeof(*n));

	if (!n) {
		errno = ENOMEM;
		mw_bail("GC_MALLOC a node", NULL);
	}
	n->left = l;
	n->right = r;
	return n;
}

/* Nodes in a perfect tree of depth d (a single node: depth 0). */
static size_t tree_size(unsigned int d)
{
	return ((size_t)1 << (d + 1)) - 1;
}

/* Top-down: the node first, then its children filled in. */
static void populate(unsigned int d, struct node *n)
{
	if (!d)
		return;
	n->left = new_node(NULL, NULL);
	n->right = new_node(NULL, NULL);
	populate(d - 1, n->left);
	populate(d - 1, n->right);
}

/* Bottom-up: the children first. */
static struct node *make_tree(unsigned int d)
{
	if (!d)
		return new_node(NULL, NULL);
	return new_node(make_tree(d - 1), make_tree(d - 1));
}

/*
 * The long-lived tree: n nodes, complete (left subtree (n - 1) / 2 nodes),
 * allocated in preorder; node x of the preorder has i = x.
 */
static struct node *make_long_lived(size_t n, size_t *next)
{
	struct node *t;
	size_t l;

	if (!n)
		return NULL;
	l = (n - 1) / 2;
	t = new_node(NULL, NULL);
	t->i = (int)(*next)++;
	t->left = make_long_lived(l, next);
	t->right = make_long_lived(n - 1 - l, next);
	return t;
}

/* Node x (preorder) of the long-lived tree of n nodes. */
static struct node *nth_node(struct node *t, size_t n, size_t x)
{
	while (x) {
		size_t l = (n - 1) / 2;

		if (x <= l) {
			t = t->left;
			n = l;
			x -= 1;
		} else {
			t = t->right;
			x -= 1 + l;
			n -= 1 + l;
		}
	}
	return t;
}

/*
 * Check the long-lived tree: every node once, in preorder, i = its index,
 * j = the rewrites of its span if it is the span's first node, else 0.
 */
static size_t check_tree(const struct bench *b, const struct node *t,
			 size_t n, size_t x, size_t *bad)
{
	size_t l;

	if (!n)
		return 0;
	l = (n - 1) / 2;
	if (!t || (size_t)t->i != x ||
	    (unsigned long)t->j != (x % NODES_PER_SPAN ? 0 :
				    b->writes[x / NODES_PER_SPAN]))
		(*bad)++;
	if (!t)
		return 1;
	return 1 + check_tree(b, t->left, l, x + 1, bad) +
	       check_tree(b, t->right, n - 1 - l, x + 1 + l, bad);
}

static double array_value(size_t k)
{
	return (double)k * 0.5 + 1.0;
}

static void build_long_lived(struct bench *b)
{
	size_t half = (size_t)b->live_mib << 19, next = 0;

	b->tree_nodes = half / NODE_ALLOC;
	b->tree = make_long_lived(b->tree_nodes, &next);
	b->array_len = half / sizeof(double);
	b->array = GC_MALLOC_ATOMIC_IGNORE_OFF_PAGE(half);
	b->writes = calloc(b->tree_nodes / NODES_PER_SPAN + 1,
			   sizeof(*b->writes));
	if (!b->array || !b->writes) {
		errno = ENOMEM;
		mw_bail("allocate the long-lived data", &b->seed);
	}
	for (size_t k = 0; k < b->array_len; k++)
		b->array[k] = array_value(k);
}

/* Rewrite one field in young_pct % of the long-lived spans. */
static unsigned long rewrite_old(struct bench *b)
{
	size_t tspans = (b->tree_nodes + NODES_PER_SPAN - 1) / NODES_PER_SPAN;
	size_t aspans = (b->array_len + DOUBLES_PER_SPAN - 1) /
			DOUBLES_PER_SPAN;
	unsigned long n = 0;

	for (size_t s = 0; s < tspans; s++) {
		if (mw_rndn(&b->rng, 10000) >= b->young_pct * 100UL)
			continue;
		nth_node(b->tree, b->tree_nodes, s * NODES_PER_SPAN)->j =
			(int)++b->writes[s];
		n++;
	}
	for (size_t s = 0; s < aspans; s++) {
		if (mw_rndn(&b->rng, 10000) >= b->young_pct * 100UL)
			continue;
		/* The same value again: the page is written all the same. */
		*(volatile double *)&b->array[s * DOUBLES_PER_SPAN] =
			array_value(s * DOUBLES_PER_SPAN);
		n++;
	}
	return n;
}

/* The short-lived trees of one iteration. */
static void young_trees(const struct bench *b)
{
	for (unsigned int d = b->min_depth; d <= b->max_depth; d += 2) {
		size_t iters = 2 * tree_size(b->max_depth) / tree_size(d);

		for (size_t k = 0; k < iters; k++) {
			struct node *t = new_node(NULL, NULL);

			populate(d, t);
			t = make_tree(d);
			(void)t;
		}
	}
}

/* The VDB the collector uses, by name, into buf. */
static void vdb_name(char *buf, size_t n)
{
	unsigned int v = GC_get_actual_vdb();
	const char *name = NULL;

	switch (v) {
	case GC_VDB_NONE: name = "none"; break;
	case GC_VDB_MPROTECT: name = "mprotect"; break;
	case GC_VDB_MANUAL: name = "manual"; break;
	case GC_VDB_SOFT: name = "soft-dirty"; break;
	default: break;
	}
#ifdef GC_VDB_UFFD
	if (v == GC_VDB_UFFD)
		name = "uffd";
#endif
	if (name)
		snprintf(buf, n, "%s", name);
	else
		snprintf(buf, n, "0x%x", v);
}

static void usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [--live-mib M] [--iterations N] "
		"[--young-write-percent P] [--min-depth D] [--max-depth D] "
		"[--seed S] [--no-incremental]\n", argv0);
	exit(2);
}

static void parse_args(struct bench *b, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "live-mib", required_argument, NULL, 'l' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "young-write-percent", required_argument, NULL, 'y' },
		{ "min-depth", required_argument, NULL, 'a' },
		{ "max-depth", required_argument, NULL, 'b' },
		{ "seed", required_argument, NULL, 's' },
		{ "no-incremental", no_argument, NULL, 'I' },
		{ NULL, 0, NULL, 0 },
	};
	int o;

	*b = (struct bench){
		.seed = 1, .live_mib = 200, .iterations = 10, .young_pct = 1,
		.min_depth = 4, .max_depth = 16, .incremental = true,
	};
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'l': b->live_mib = strtoul(optarg, NULL, 0); break;
		case 'n': b->iterations = strtoul(optarg, NULL, 0); break;
		case 'y': b->young_pct = strtoul(optarg, NULL, 0); break;
		case 'a': b->min_depth = strtoul(optarg, NULL, 0); break;
		case 'b': b->max_depth = strtoul(optarg, NULL, 0); break;
		case 's': b->seed = strtoull(optarg, NULL, 0); break;
		case 'I': b->incremental = false; break;
		default: usage(argv[0]);
		}
	}
	if (optind != argc || b->live_mib < 1 || b->live_mib > 65536 ||
	    b->iterations < 1 || b->young_pct > 100 || b->min_depth < 1 ||
	    b->max_depth < b->min_depth || b->max_depth > 24)
		usage(argv[0]);
}

int main(int argc, char **argv)
{
	struct bench b;
	char vdb[32];
	double t0, t1, tl;
	size_t count, bad = 0;
	GC_word gc0;

	parse_args(&b, argc, argv);
	if (!mw_in_guest() &&
	    (b.incremental || getenv("GC_ENABLE_INCREMENTAL"))) {
		fprintf(stderr, "gcbench: not in the memwatch guest (no "
			"memwatch.guest=1 on the kernel command line): "
			"incremental mode reads dirty bits, refusing (outside "
			"the guest only --no-incremental, without "
			"GC_ENABLE_INCREMENTAL)\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	b.rng = b.seed;
	GC_INIT();
	if (b.incremental)
		GC_enable_incremental();
	vdb_name(vdb, sizeof(vdb));
	printf("# gcbench: live %u MiB, iterations %u, young-write %u %%, "
	       "depths %u..%u, seed %" PRIu64 "; incremental %s, VDB %s\n",
	       b.live_mib, b.iterations, b.young_pct, b.min_depth, b.max_depth,
	       b.seed, GC_is_incremental_mode() ? "on" : "off", vdb);
	if (b.incremental && !GC_is_incremental_mode()) {
		fprintf(stderr, "gcbench: GC_enable_incremental() left the "
			"collector non-incremental\n");
		return 1;
	}

	t0 = mw_now_s();
	gc0 = GC_get_gc_no();
	/* Room for the long-lived data and then some: a heap of 256+ MiB. */
	if (!GC_expand_hp(((size_t)b.live_mib + 64) << 20)) {
		errno = ENOMEM;
		mw_bail("GC_expand_hp", &b.seed);
	}
	(void)make_tree(b.max_depth + 1);	/* the stretch tree */
	build_long_lived(&b);
	tl = mw_now_s();
	printf("# long-lived: %zu tree nodes, %zu doubles, built in %.3f s, "
	       "%lu collections, heap %zu MiB\n", b.tree_nodes, b.array_len,
	       tl - t0, (unsigned long)(GC_get_gc_no() - gc0),
	       GC_get_heap_size() >> 20);
	for (unsigned int it = 0; it < b.iterations; it++) {
		double ti = mw_now_s();
		GC_word g = GC_get_gc_no();
		unsigned long w = rewrite_old(&b);

		young_trees(&b);
		printf("# iteration %u: %.3f s, %lu spans rewritten, %lu "
		       "collections, heap %zu MiB\n", it + 1, mw_now_s() - ti, w,
		       (unsigned long)(GC_get_gc_no() - g),
		       GC_get_heap_size() >> 20);
	}
	t1 = mw_now_s();

	count = check_tree(&b, b.tree, b.tree_nodes, 0, &bad);
	for (size_t k = 0; k < b.array_len; k++)
		bad += b.array[k] != array_value(k);
	if (count != b.tree_nodes || bad) {
		printf("gcbench: long-lived data damaged: %zu of %zu nodes "
		       "reached, %zu wrong fields or values\n", count,
		       b.tree_nodes, bad);
		return 1;
	}
	/*
	 * The collector may leave incremental mode on its own: MPROTECT_VDB
	 * does once the heap has 32768 pages (128 MiB), lest its mprotect()
	 * calls split the heap into more VMAs than vm.max_map_count allows.
	 */
	if (b.incremental && !GC_is_incremental_mode())
		printf("# the collector left incremental mode during the run "
		       "(VDB %s): the figures are a non-incremental "
		       "collector's\n", vdb);
	printf("gcbench: %.3f s (long-lived data %.3f s), %lu collections, "
	       "heap %zu MiB (+ %zu MiB unmapped), long-lived data intact\n",
	       t1 - t0, tl - t0, (unsigned long)(GC_get_gc_no() - gc0),
	       GC_get_heap_size() >> 20, GC_get_unmapped_bytes() >> 20);
	printf("GCBENCH secs=%.3f gcs=%lu heap_mib=%zu incremental=%s vdb=%s "
	       "unmapped_mib=%zu\n", t1 - t0,
	       (unsigned long)(GC_get_gc_no() - gc0), GC_get_heap_size() >> 20,
	       GC_is_incremental_mode() ? "on" : "off", vdb,
	       GC_get_unmapped_bytes() >> 20);
	return 0;
}
