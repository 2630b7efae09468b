// SPDX-License-Identifier: MIT
/*
 * gwwstress: GetWriteWatch as a Windows program sees it, judged by a log of
 * what was written.  Built with mingw-w64, run under the Wine of
 * tests/wine/build in the guest (tests/wine/guest).
 *
 *   gwwstress.exe stress [SECONDS] [WRITERS]
 *   gwwstress.exe bench  [ROUNDS]
 *   gwwstress.exe bigbench [ROUNDS] [MAX_GIB]
 *   gwwstress.exe cleanbench [ROUNDS]
 *
 * stress: a VirtualAlloc(MEM_WRITE_WATCH) region of 64 MiB (16384 pages).
 * Page p belongs to one writer: WRITERS threads store to their pages from
 * the CPU, one more thread writes its pages through the kernel, by
 * ReadFile from a file and by recv from a loopback TCP connection.  Every
 * write puts the writer's next sequence number for that page into the
 * page's first 8 bytes (a kernel write reads it from the file or the
 * socket), and counts it in done[p] once it returned.  The main thread
 * harvests with GetWriteWatch(WRITE_WATCH_FLAG_RESET), one harvest in four
 * with a short array.  A harvest "covers" the whole range when its array
 * did not fill, else the pages up to the last one it reported (the reset
 * stops there too).  Right after a harvest returns, the main thread reads
 * back the number on each covered page (landed[p]): a store with a higher
 * number landed after the harvest had re-armed the page.  The oracle:
 *   lost      a covered page not reported although a write completed
 *             before the harvest began (done[p] read before the call)
 *             whose number is above the page's read-back at its previous
 *             covering harvest;
 *   spurious  a page reported although no write to it began after the
 *             previous covering harvest began (seq[p] after the call is not
 *             above done[p] read before the previous covering call): every
 *             write done before that call was reset by it.
 * At the end the writers stop and one whole harvest must report exactly
 * the pages with writes still owed.  Prints TAP; exit status 1 on a lost or
 * spurious page.
 *
 * bench: one thread.  Per round: every page written, reset, then K random
 * distinct pages written and GetWriteWatch(RESET) of the 64 MiB timed,
 * for K = 0.1 % and 1 % of the pages; and the first write to each of 2048
 * re-armed pages timed against a second write to them.  Medians of ROUNDS
 * (default 11), in ns of QueryPerformanceCounter (guest time: under QEMU
 * -icount, instructions).
 *
 * bigbench: one thread, a large untouched view (the case of the kernel's
 * pmd-level uffd-wp marker, doc/pmd-marker.md), of 1, 4 and 16 GiB
 * (those up to MAX_GIB, default 16).  Per round, on a fresh view:
 *   alloc       VirtualAlloc(MEM_RESERVE | MEM_COMMIT | MEM_WRITE_WATCH),
 *               where Wine registers and write-protects the whole view
 *   get_empty   GetWriteWatch(RESET) of the untouched view
 *   get_0.1pct  the same after writing every 1000th page (the count
 *               reported must be those pages)
 *   first_2m    the first write into a never-touched 2 MiB (one without a
 *               page written above), up to 256 of them spread over the
 *               view, each timed alone; net of an empty timed interval
 *               (the median of 256), median over the writes of the round
 * then a GetWriteWatch without reset must report exactly those first
 * writes, and VirtualFree(MEM_RELEASE).  The harvests use an array of
 * NADDR addresses and are resumed after the last address reported when it
 * fills, as a program does.  Medians of ROUNDS (default 5), in ns of
 * QueryPerformanceCounter; pte_kb: the growth of the page tables
 * (/proc/meminfo's PageTables, the whole guest's) over the VirtualAlloc.
 *
 * cleanbench: one thread, a 1 GiB view every page of which was written
 * once and harvested since (a collector's old generation, a .NET heap
 * between collections: the case of the kernel's harvest that skips page
 * tables with no new write).  Per round, timed:
 *   get_clean       GetWriteWatch(RESET) of the view, nothing written
 *   get_1pct_tables the same after one page was written in each of 1 %
 *                   of its 2 MiB (every 100th: 6 of 512)
 * each checked to report exactly the pages written.  Medians of ROUNDS
 * (default 7), in ns of QueryPerformanceCounter.
 */
#include <winsock2.h>
#include <windows.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096u
#define NPAGES 16384u
#define REGION ((SIZE_T)NPAGES * PAGE)

struct ctx {
	char *base;
	unsigned writers;		/* CPU writer threads; thread id writers: kernel */
	volatile LONG stop;
	volatile LONG64 seq[NPAGES];	/* last number a writer began to write */
	volatile LONG64 done[NPAGES];	/* last number whose write returned */
	LONG64 owed_after[NPAGES];	/* landed[p] at the last covering harvest */
	LONG64 done_at_prev[NPAGES];	/* done[p] before the last covering harvest */
	HANDLE file;
	SOCKET tx, rx;
	LONG64 cpu_writes, kernel_writes;
};

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static int tap_no;
static int tap_failed;

static void tap(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", ok ? "ok" : "not ok", ++tap_no);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		tap_failed = 1;
}

struct wargs {
	struct ctx *c;
	unsigned id;
	uint64_t rng;
};

static DWORD WINAPI cpu_writer(void *arg)
{
	struct wargs *w = arg;
	struct ctx *c = w->c;
	unsigned n = c->writers + 1;

	while (!c->stop) {
		unsigned p = (unsigned)(rng_next(&w->rng) % (NPAGES / n)) * n + w->id;
		LONG64 s;

		if (p >= NPAGES)
			continue;
		s = c->seq[p] + 1;
		InterlockedExchange64(&c->seq[p], s);
		*(volatile LONG64 *)(c->base + (SIZE_T)p * PAGE) = s;
		InterlockedExchange64(&c->done[p], s);
		InterlockedIncrement64(&c->cpu_writes);
	}
	return 0;
}

/* The kernel writer: ReadFile and recv put a new number on its pages. */
static DWORD WINAPI kernel_writer(void *arg)
{
	struct wargs *w = arg;
	struct ctx *c = w->c;
	unsigned n = c->writers + 1;
	static char buf[PAGE];
	unsigned long k = 0;

	while (!c->stop) {
		unsigned p = (unsigned)(rng_next(&w->rng) % (NPAGES / n)) * n + w->id;
		char *dst = c->base + (SIZE_T)p * PAGE;
		LONG64 s;
		DWORD got;
		int r, len = (int)(rng_next(&w->rng) % (PAGE - 7)) + 8;

		if (p >= NPAGES)
			continue;
		s = c->seq[p] + 1;
		memset(buf, 0x5a, sizeof(buf));
		memcpy(buf, &s, sizeof(s));
		InterlockedExchange64(&c->seq[p], s);
		if (k++ & 1) {
			OVERLAPPED ov = { 0 };

			if (!WriteFile(c->file, buf, PAGE, &got, &ov) || got != PAGE)
				return 1;
			if (!ReadFile(c->file, dst, (DWORD)len, &got, &ov) || got != (DWORD)len)
				return 2;
		} else {
			if (send(c->tx, buf, len, 0) != len)
				return 3;
			for (r = 0; r < len;) {
				int m = recv(c->rx, dst + r, len - r, 0);

				if (m <= 0)
					return 4;
				r += m;
			}
		}
		if (memcmp(dst, &s, sizeof(s)))
			return 5;
		InterlockedExchange64(&c->done[p], s);
		InterlockedIncrement64(&c->kernel_writes);
	}
	return 0;
}

static int setup_kernel_sources(struct ctx *c)
{
	char path[MAX_PATH], dir[MAX_PATH];
	struct sockaddr_in a = { 0 };
	int alen = sizeof(a);
	SOCKET l;
	WSADATA wsa;

	if (!GetTempPathA(sizeof(dir), dir) || !GetTempFileNameA(dir, "ww", 0, path))
		return -1;
	c->file = CreateFileA(path, GENERIC_READ | GENERIC_WRITE, 0, NULL, CREATE_ALWAYS,
			      FILE_ATTRIBUTE_TEMPORARY | FILE_FLAG_DELETE_ON_CLOSE, NULL);
	if (c->file == INVALID_HANDLE_VALUE)
		return -2;
	if (WSAStartup(MAKEWORD(2, 2), &wsa))
		return -3;
	l = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
	if (l == INVALID_SOCKET)
		return -4;
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &alen))
		return -5;
	c->tx = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
	if (c->tx == INVALID_SOCKET || connect(c->tx, (struct sockaddr *)&a, sizeof(a)))
		return -6;
	c->rx = accept(l, NULL, NULL);
	closesocket(l);
	return c->rx == INVALID_SOCKET ? -7 : 0;
}

struct verdict {
	unsigned long lost, spurious, reported, harvests, short_harvests;
};

/* One harvest; cap 0 means the whole array.  Returns the number reported. */
static ULONG_PTR harvest(struct ctx *c, void **addrs, ULONG_PTR cap, struct verdict *v,
			 LONG64 *done_before, unsigned char *rep)
{
	ULONG_PTR count = cap ? cap : NPAGES, i;
	ULONG gran;
	unsigned p, covered;

	for (p = 0; p < NPAGES; p++)
		done_before[p] = c->done[p];
	if (GetWriteWatch(WRITE_WATCH_FLAG_RESET, c->base, REGION, addrs, &count, &gran)) {
		tap(0, "GetWriteWatch failed: error %lu", GetLastError());
		exit(1);
	}
	if (gran != PAGE) {
		tap(0, "GetWriteWatch granularity %lu, want %u", gran, PAGE);
		exit(1);
	}
	memset(rep, 0, NPAGES);
	for (i = 0; i < count; i++) {
		SIZE_T off = (char *)addrs[i] - c->base;

		if (off >= REGION || off % PAGE || (i && addrs[i] <= addrs[i - 1])) {
			tap(0, "harvest %lu: address %p outside the region or out of order",
			    v->harvests, addrs[i]);
			exit(1);
		}
		rep[off / PAGE] = 1;
	}
	covered = NPAGES;
	if (cap && count == cap) {
		covered = count ? (unsigned)(((char *)addrs[count - 1] - c->base) / PAGE) + 1 : 0;
		v->short_harvests++;
	}
	for (p = 0; p < covered; p++) {
		LONG64 landed = *(volatile LONG64 *)(c->base + (SIZE_T)p * PAGE);

		if (!rep[p] && done_before[p] > c->owed_after[p]) {
			if (v->lost++ < 10)
				printf("# lost: page %u, write %lld done before harvest %lu, not reported\n",
				       p, (long long)done_before[p], v->harvests);
		}
		if (rep[p] && c->seq[p] <= c->done_at_prev[p]) {
			if (v->spurious++ < 10)
				printf("# spurious: page %u reported by harvest %lu, no write since %lld\n",
				       p, v->harvests, (long long)c->done_at_prev[p]);
		}
		c->owed_after[p] = landed;
		c->done_at_prev[p] = done_before[p];
	}
	v->reported += count;
	v->harvests++;
	return count;
}

static int stress(unsigned seconds, unsigned writers)
{
	struct ctx *c = calloc(1, sizeof(*c));
	void **addrs = malloc(NPAGES * sizeof(void *));
	LONG64 *done_before = malloc(NPAGES * sizeof(LONG64));
	unsigned char *rep = malloc(NPAGES);
	struct wargs *wa;
	HANDLE *th;
	struct verdict v = { 0 };
	uint64_t rng = 0x9e3779b97f4a7c15ull ^ GetTickCount64();
	ULONGLONG end;
	unsigned i;
	int r;
	DWORD code;

	if (!c || !addrs || !done_before || !rep)
		return 2;
	c->writers = writers;
	c->base = VirtualAlloc(NULL, REGION, MEM_RESERVE | MEM_COMMIT | MEM_WRITE_WATCH,
			       PAGE_READWRITE);
	tap(c->base != NULL, "VirtualAlloc(MEM_WRITE_WATCH) of 64 MiB");
	if (!c->base)
		return 1;
	r = setup_kernel_sources(c);
	tap(r == 0, "a temporary file and a loopback TCP connection for kernel writes (%d)", r);
	if (r)
		return 1;
	/* Nothing written yet: the first harvest must be empty. */
	tap(harvest(c, addrs, 0, &v, done_before, rep) == 0 && !v.spurious,
	    "a fresh region reports no page");
	wa = calloc(writers + 1, sizeof(*wa));
	th = calloc(writers + 1, sizeof(*th));
	for (i = 0; i <= writers; i++) {
		wa[i].c = c;
		wa[i].id = i;
		wa[i].rng = rng_next(&rng) | 1;
		th[i] = CreateThread(NULL, 0, i < writers ? cpu_writer : kernel_writer, &wa[i], 0,
				     NULL);
		if (!th[i])
			return 2;
	}
	end = GetTickCount64() + seconds * 1000ull;
	while (GetTickCount64() < end) {
		ULONG_PTR cap = (v.harvests % 4 == 3) ? 1 + rng_next(&rng) % 64 : 0;

		harvest(c, addrs, cap, &v, done_before, rep);
		Sleep((DWORD)(rng_next(&rng) % 3));
	}
	InterlockedExchange(&c->stop, 1);
	WaitForMultipleObjects(writers + 1, th, TRUE, INFINITE);
	for (i = 0; i <= writers; i++) {
		GetExitCodeThread(th[i], &code);
		tap(code == 0, "writer %u (%s) ran without error (exit %lu)", i,
		    i < writers ? "CPU stores" : "ReadFile and recv", code);
	}
	/* Quiet now: the last harvest must report exactly what is owed. */
	harvest(c, addrs, 0, &v, done_before, rep);
	tap(harvest(c, addrs, 0, &v, done_before, rep) == 0,
	    "a second harvest with no writes reports nothing");
	printf("# %lu harvests (%lu short), %lu pages reported, %lld CPU writes, %lld kernel writes\n",
	       v.harvests, v.short_harvests, v.reported, (long long)c->cpu_writes,
	       (long long)c->kernel_writes);
	tap(c->cpu_writes > 0 && c->kernel_writes > 0 && v.harvests > 8,
	    "the run did work: %lld CPU writes, %lld kernel writes, %lu harvests",
	    (long long)c->cpu_writes, (long long)c->kernel_writes, v.harvests);
	tap(v.lost == 0, "lost writes: %lu", v.lost);
	tap(v.spurious == 0, "pages reported that were never written since the last reset: %lu",
	    v.spurious);
	printf("GWWSTRESS harvests=%lu short=%lu reported=%lu cpu_writes=%lld kernel_writes=%lld lost=%lu spurious=%lu\n",
	       v.harvests, v.short_harvests, v.reported, (long long)c->cpu_writes,
	       (long long)c->kernel_writes, v.lost, v.spurious);
	return tap_failed;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

static long long median(long long *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_ll);
	return v[n / 2];
}

static long long ns_since(LARGE_INTEGER t0, LARGE_INTEGER f)
{
	LARGE_INTEGER t1;

	QueryPerformanceCounter(&t1);
	return (t1.QuadPart - t0.QuadPart) * 1000000000ll / f.QuadPart;
}

static int bench(unsigned rounds)
{
	static const unsigned permille[] = { 1, 10 };
	char *base = VirtualAlloc(NULL, REGION, MEM_RESERVE | MEM_COMMIT | MEM_WRITE_WATCH,
				  PAGE_READWRITE);
	void **addrs = malloc(NPAGES * sizeof(void *));
	long long *get = malloc(rounds * sizeof(long long));
	long long *first = malloc(rounds * sizeof(long long));
	long long *again = malloc(rounds * sizeof(long long));
	uint64_t rng = 12345;
	LARGE_INTEGER f, t0;
	unsigned r, i, k;
	const unsigned nfirst = 2048;

	tap(base && addrs && get && first && again, "VirtualAlloc(MEM_WRITE_WATCH) of 64 MiB");
	if (!base || !addrs || !get || !first || !again)
		return 1;
	QueryPerformanceFrequency(&f);
	for (k = 0; k < 2; k++) {
		unsigned want = NPAGES * permille[k] / 1000;
		ULONG_PTR count = 0;
		ULONG gran;

		for (r = 0; r < rounds; r++) {
			for (i = 0; i < NPAGES; i++)
				base[(SIZE_T)i * PAGE] = 1;
			count = NPAGES;
			GetWriteWatch(WRITE_WATCH_FLAG_RESET, base, REGION, addrs, &count, &gran);
			for (i = 0; i < want; i++)
				base[(SIZE_T)(rng_next(&rng) % NPAGES) * PAGE] = 2;
			count = NPAGES;
			QueryPerformanceCounter(&t0);
			GetWriteWatch(WRITE_WATCH_FLAG_RESET, base, REGION, addrs, &count, &gran);
			get[r] = ns_since(t0, f);
			if (count == 0 || count > want) {
				tap(0, "bench: %lu pages reported after %u writes", (unsigned long)count, want);
				return 1;
			}
		}
		printf("WWBENCH get_reset_%s_ns=%lld\n", k ? "1pct" : "0.1pct", median(get, rounds));
	}
	for (r = 0; r < rounds; r++) {
		ULONG_PTR count = NPAGES;
		ULONG gran;

		for (i = 0; i < nfirst; i++)
			base[(SIZE_T)i * 8 * PAGE] = 1;
		GetWriteWatch(WRITE_WATCH_FLAG_RESET, base, REGION, addrs, &count, &gran);
		QueryPerformanceCounter(&t0);
		for (i = 0; i < nfirst; i++)
			base[(SIZE_T)i * 8 * PAGE] = 3;
		first[r] = ns_since(t0, f) / nfirst;
		QueryPerformanceCounter(&t0);
		for (i = 0; i < nfirst; i++)
			base[(SIZE_T)i * 8 * PAGE] = 4;
		again[r] = ns_since(t0, f) / nfirst;
		count = NPAGES;
		GetWriteWatch(0, base, REGION, addrs, &count, &gran);
		if (count != nfirst) {
			tap(0, "bench: %lu pages reported after %u first writes", (unsigned long)count, nfirst);
			return 1;
		}
	}
	printf("WWBENCH first_write_ns=%lld\n", median(first, rounds));
	printf("WWBENCH second_write_ns=%lld\n", median(again, rounds));
	tap(1, "bench: %u rounds", rounds);
	return 0;
}

#define NADDR 65536u
#define CHUNK (2u << 20)
#define NFIRST 256u

/* GetWriteWatch of [base, base + size) as a program calls it: when the
 * array fills, again from the page after the last address it got.
 * Returns the pages reported, (ULONG_PTR)-1 on an error. */
static ULONG_PTR get_all(DWORD flags, char *base, SIZE_T size, void **addrs, unsigned *calls)
{
	char *p = base, *end = base + size;
	ULONG_PTR total = 0;

	*calls = 0;
	while (p < end) {
		ULONG_PTR count = NADDR;
		ULONG gran;

		if (GetWriteWatch(flags, p, (SIZE_T)(end - p), addrs, &count, &gran))
			return (ULONG_PTR)-1;
		++*calls;
		total += count;
		if (count < NADDR)
			break;
		p = (char *)addrs[count - 1] + PAGE;
	}
	return total;
}

/* The system's page tables in kB (PageTables of /proc/meminfo, through
 * Wine's Z:), -1 if unreadable.  Not the process's VmPTE: the wineserver
 * opens the files, /proc/self would be its own. */
static long pagetables_kb(void)
{
	FILE *f = fopen("Z:\\proc\\meminfo", "r");
	char line[256];
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "PageTables: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* 2 MiB number c holds one of the pages written every 1000th. */
static int chunk_has_permille(SIZE_T c)
{
	SIZE_T first = c * (CHUNK / PAGE), last = first + CHUNK / PAGE - 1;

	return (first + 999) / 1000 * 1000 <= last;
}

static int bigbench(unsigned rounds, unsigned max_gib)
{
	static const unsigned gibs[] = { 1, 4, 16 };
	void **addrs = malloc(NADDR * sizeof(void *));
	long long *alloc = malloc(rounds * sizeof(long long));
	long long *empty = malloc(rounds * sizeof(long long));
	long long *some = malloc(rounds * sizeof(long long));
	long long *first = malloc(rounds * sizeof(long long));
	long long *pte = malloc(rounds * sizeof(long long));
	long long lap[NFIRST], qpc;
	LARGE_INTEGER f, t0, t1;
	unsigned g, r, i, calls, nfirst = 0;

	if (!rounds || !addrs || !alloc || !empty || !some || !first || !pte)
		return 2;
	QueryPerformanceFrequency(&f);
	for (i = 0; i < NFIRST; i++) {
		QueryPerformanceCounter(&t0);
		QueryPerformanceCounter(&t1);
		lap[i] = (t1.QuadPart - t0.QuadPart) * 1000000000ll / f.QuadPart;
	}
	qpc = median(lap, NFIRST);
	printf("WWBIG qpc_hz=%lld qpc_ns=%lld\n", (long long)f.QuadPart, qpc);
	for (g = 0; g < sizeof(gibs) / sizeof(gibs[0]) && gibs[g] <= max_gib; g++) {
		SIZE_T size = (SIZE_T)gibs[g] << 30, npages = size / PAGE, nchunks = size / CHUNK;
		ULONG_PTR want = (npages + 999) / 1000, n;
		unsigned get_calls = 0;

		for (r = 0; r < rounds; r++) {
			long kb = pagetables_kb();
			char *base;
			SIZE_T p, c;

			QueryPerformanceCounter(&t0);
			base = VirtualAlloc(NULL, size, MEM_RESERVE | MEM_COMMIT | MEM_WRITE_WATCH,
					    PAGE_READWRITE);
			alloc[r] = ns_since(t0, f);
			if (!base) {
				tap(0, "bigbench: VirtualAlloc(MEM_WRITE_WATCH) of %u GiB: error %lu",
				    gibs[g], GetLastError());
				return 1;
			}
			pte[r] = kb < 0 ? -1 : pagetables_kb() - kb;
			QueryPerformanceCounter(&t0);
			n = get_all(WRITE_WATCH_FLAG_RESET, base, size, addrs, &calls);
			empty[r] = ns_since(t0, f);
			if (n) {
				tap(0, "bigbench: %u GiB untouched: %ld pages reported", gibs[g], (long)n);
				return 1;
			}
			for (p = 0; p < npages; p += 1000)
				base[p * PAGE] = 1;
			QueryPerformanceCounter(&t0);
			n = get_all(WRITE_WATCH_FLAG_RESET, base, size, addrs, &calls);
			some[r] = ns_since(t0, f);
			get_calls = calls;
			if (n != want) {
				tap(0, "bigbench: %u GiB: %ld pages reported after %lu writes", gibs[g],
				    (long)n, (unsigned long)want);
				return 1;
			}
			/* The never-touched 2 MiB, spread over the view. */
			for (nfirst = 0, i = 0; i < NFIRST; i++) {
				for (c = nchunks * i / NFIRST; c < nchunks * (i + 1) / NFIRST; c++)
					if (!chunk_has_permille(c))
						break;
				if (c == nchunks * (i + 1) / NFIRST)
					continue;
				QueryPerformanceCounter(&t0);
				base[c * CHUNK] = 3;
				QueryPerformanceCounter(&t1);
				lap[nfirst++] = (t1.QuadPart - t0.QuadPart) * 1000000000ll / f.QuadPart;
			}
			first[r] = median(lap, nfirst) - qpc;
			n = get_all(0, base, size, addrs, &calls);
			if (n != nfirst) {
				tap(0, "bigbench: %u GiB: %ld pages reported after %u first writes",
				    gibs[g], (long)n, nfirst);
				return 1;
			}
			if (!VirtualFree(base, 0, MEM_RELEASE)) {
				tap(0, "bigbench: VirtualFree of %u GiB: error %lu", gibs[g],
				    GetLastError());
				return 1;
			}
		}
		printf("WWBIG size_gib=%u alloc_ns=%lld get_empty_ns=%lld get_0.1pct_ns=%lld first_2m_ns=%lld pte_kb=%lld first_writes=%u get_calls=%u\n",
		       gibs[g], median(alloc, rounds), median(empty, rounds), median(some, rounds),
		       median(first, rounds), median(pte, rounds), nfirst, get_calls);
	}
	tap(1, "bigbench: %u rounds", rounds);
	return 0;
}

static int cleanbench(unsigned rounds)
{
	const SIZE_T size = (SIZE_T)1 << 30, npages = size / PAGE, nchunks = size / CHUNK;
	void **addrs = malloc(NADDR * sizeof(void *));
	long long *clean = malloc(rounds * sizeof(long long));
	long long *some = malloc(rounds * sizeof(long long));
	ULONG_PTR n, want = 0;
	LARGE_INTEGER f, t0;
	unsigned r, calls;
	char *base;
	SIZE_T p, c;

	if (!rounds || !addrs || !clean || !some)
		return 2;
	QueryPerformanceFrequency(&f);
	base = VirtualAlloc(NULL, size, MEM_RESERVE | MEM_COMMIT | MEM_WRITE_WATCH, PAGE_READWRITE);
	if (!base) {
		tap(0, "cleanbench: VirtualAlloc(MEM_WRITE_WATCH) of 1 GiB: error %lu", GetLastError());
		return 1;
	}
	for (p = 0; p < npages; p++)
		base[p * PAGE] = 1;
	n = get_all(WRITE_WATCH_FLAG_RESET, base, size, addrs, &calls);
	if (n != npages) {
		tap(0, "cleanbench: %ld pages reported after all %lu were written", (long)n,
		    (unsigned long)npages);
		return 1;
	}
	for (c = 0; c < nchunks; c += 100)
		want++;
	for (r = 0; r < rounds; r++) {
		QueryPerformanceCounter(&t0);
		n = get_all(WRITE_WATCH_FLAG_RESET, base, size, addrs, &calls);
		clean[r] = ns_since(t0, f);
		if (n) {
			tap(0, "cleanbench: %ld pages reported, none written", (long)n);
			return 1;
		}
		for (c = 0; c < nchunks; c += 100)
			base[c * CHUNK + (SIZE_T)(r % 512) * PAGE] = 2;
		QueryPerformanceCounter(&t0);
		n = get_all(WRITE_WATCH_FLAG_RESET, base, size, addrs, &calls);
		some[r] = ns_since(t0, f);
		if (n != want) {
			tap(0, "cleanbench: %ld pages reported after %lu were written", (long)n,
			    (unsigned long)want);
			return 1;
		}
	}
	printf("WWCLEAN get_clean_ns=%lld get_1pct_tables_ns=%lld pages_1pct=%lu\n",
	       median(clean, rounds), median(some, rounds), (unsigned long)want);
	VirtualFree(base, 0, MEM_RELEASE);
	tap(1, "cleanbench: %u rounds", rounds);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc >= 2 && !strcmp(argv[1], "stress"))
		return stress(argc > 2 ? (unsigned)atoi(argv[2]) : 20,
			      argc > 3 ? (unsigned)atoi(argv[3]) : 2);
	if (argc >= 2 && !strcmp(argv[1], "bench"))
		return bench(argc > 2 ? (unsigned)atoi(argv[2]) : 11);
	if (argc >= 2 && !strcmp(argv[1], "bigbench"))
		return bigbench(argc > 2 ? (unsigned)atoi(argv[2]) : 5,
				argc > 3 ? (unsigned)atoi(argv[3]) : 16);
	if (argc >= 2 && !strcmp(argv[1], "cleanbench"))
		return cleanbench(argc > 2 ? (unsigned)atoi(argv[2]) : 7);
	fprintf(stderr, "usage: gwwstress.exe stress [SECONDS] [WRITERS] | bench [ROUNDS] | bigbench [ROUNDS] [MAX_GIB] | cleanbench [ROUNDS]\n");
	return 2;
}
