// SPDX-License-Identifier: GPL-2.0
/*
 * criu-stats FILE: print CRIU's dump statistics image (stats-dump) as
 * "name value" lines, for tests/criu/guest (the guest has no crit).
 *
 * The file: two little-endian u32 magics (service image, stats), a u32
 * payload length, then a protobuf "stats_entry" whose field 1 is the
 * "dump_stats_entry" message: varint fields 1..14 (images/stats.proto in
 * CRIU's source).  Only what is needed here is decoded: unknown fields are
 * skipped by wire type.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SERVICE_MAGIC 0x55105940u
#define STATS_MAGIC 0x57093306u

static const char *const names[] = {
	[1] = "freezing_time", [2] = "frozen_time", [3] = "memdump_time",
	[4] = "memwrite_time", [5] = "pages_scanned", [6] = "pages_skipped_parent",
	[7] = "pages_written", [8] = "irmap_resolve", [9] = "pages_lazy",
	[10] = "page_pipes", [11] = "page_pipe_bufs", [12] = "shpages_scanned",
	[13] = "shpages_skipped_parent", [14] = "shpages_written",
};

static int varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	int shift = 0;

	*v = 0;
	while (*p < end && shift < 64) {
		unsigned char b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
		shift += 7;
	}
	return -1;
}

/* Skip one field of wire type WT; -1 on malformed input. */
static int skip(const unsigned char **p, const unsigned char *end, unsigned wt)
{
	uint64_t v;

	switch (wt) {
	case 0:
		return varint(p, end, &v);
	case 1:
		if (end - *p < 8)
			return -1;
		*p += 8;
		return 0;
	case 2:
		if (varint(p, end, &v) || (uint64_t)(end - *p) < v)
			return -1;
		*p += v;
		return 0;
	case 5:
		if (end - *p < 4)
			return -1;
		*p += 4;
		return 0;
	}
	return -1;
}

static uint32_t le32(const unsigned char *b)
{
	return b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24;
}

int main(int argc, char **argv)
{
	unsigned char buf[4096];
	const unsigned char *p, *end;
	uint64_t key, v;
	size_t len;
	int found = 0;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: criu-stats stats-dump\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if (len < 12 || le32(buf) != SERVICE_MAGIC || le32(buf + 4) != STATS_MAGIC ||
	    le32(buf + 8) > len - 12) {
		fprintf(stderr, "%s: not a CRIU stats image\n", argv[1]);
		return 1;
	}
	p = buf + 12;
	end = p + le32(buf + 8);
	while (p < end) {
		if (varint(&p, end, &key))
			goto bad;
		if (key == (1 << 3 | 2)) {	/* dump: the message we want */
			const unsigned char *q, *qend;

			if (varint(&p, end, &v) || (uint64_t)(end - p) < v)
				goto bad;
			q = p;
			qend = p + v;
			p = qend;
			while (q < qend) {
				if (varint(&q, qend, &key))
					goto bad;
				if ((key & 7) == 0 && (key >> 3) < sizeof(names) / sizeof(names[0]) &&
				    names[key >> 3]) {
					if (varint(&q, qend, &v))
						goto bad;
					printf("%s %llu\n", names[key >> 3], (unsigned long long)v);
				} else if (skip(&q, qend, key & 7)) {
					goto bad;
				}
			}
			found = 1;
		} else if (skip(&p, end, key & 7)) {
			goto bad;
		}
	}
	if (!found) {
		fprintf(stderr, "%s: no dump statistics\n", argv[1]);
		return 1;
	}
	return 0;
bad:
	fprintf(stderr, "%s: malformed stats image\n", argv[1]);
	return 1;
}
