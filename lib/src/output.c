// SPDX-License-Identifier: MIT
/*
 * The outputs of a get: page addresses (memwatch_get), runs of written
 * pages (memwatch_get_regions) and a bitmap of the queried range
 * (memwatch_get_bitmap).  The backends find written pages in ascending
 * order and hand them here; what does not fit is refused, and the backend
 * re-arms only what was taken.  The limit counts entries: addresses, runs,
 * or bits set.
 */
#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/* Set bits [i, i + n) of bm, a word at a time in the middle. */
static void set_bits(uint64_t *bm, size_t i, size_t n)
{
	while (n && (i & 63)) {
		bm[i / 64] |= 1ULL << (i & 63);
		i++;
		n--;
	}
	while (n >= 64) {
		bm[i / 64] = ~0ULL;
		i += 64;
		n -= 64;
	}
	while (n) {
		bm[i / 64] |= 1ULL << (i & 63);
		i++;
		n--;
	}
}

bool mw_sink_fits(const struct mw_sink *k, uintptr_t addr)
{
	if (k->n < k->cap)
		return true;
	/* A run that carries on is not a new entry. */
	return k->kind == MW_SINK_RUNS && k->n && k->runs[k->n - 1].end == addr;
}

size_t mw_sink_room(const struct mw_sink *k)
{
	return k->kind == MW_SINK_RUNS ? SIZE_MAX : k->cap - k->n;
}

uintptr_t mw_sink_put(struct mw_sink *k, uintptr_t s, uintptr_t e)
{
	size_t take, i;

	switch (k->kind) {
	case MW_SINK_PAGES:
		for (; s < e && k->n < k->cap; s += k->page_size)
			k->pages[k->n++] = (void *)s;
		return s;
	case MW_SINK_RUNS:
		if (k->n && k->runs[k->n - 1].end == s) {
			k->runs[k->n - 1].end = e;
			return e;
		}
		if (k->n == k->cap)
			return s;
		k->runs[k->n].start = s;
		k->runs[k->n].end = e;
		k->runs[k->n].categories = MEMWATCH_PAGE_WRITTEN;
		k->n++;
		return e;
	case MW_SINK_BITMAP:
		i = (s - k->base) >> k->page_shift;
		take = (e - s) >> k->page_shift;
		if (take > k->cap - k->n)
			take = k->cap - k->n;
		if (take == 1)		/* the common case: a lone page */
			k->bitmap[i / 64] |= 1ULL << (i & 63);
		else
			set_bits(k->bitmap, i, take);
		k->n += take;
		return s + (take << k->page_shift);
	}
	return s;
}
