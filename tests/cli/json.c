// SPDX-License-Identifier: MIT
/*
 * `memwatch scan --json` must print valid JSON whatever the mapping names
 * are, and say which pid it scanned: the guest half.  Runs in the guest
 * from /srv/test/:
 *   ./cli-json ioctl|pread
 * (the scan method the suite list says this kernel gives).
 *
 * The test maps files whose names hold a tab, a newline (the kernel shows
 * it as \012 in /proc/PID/maps), control characters, a quote and a
 * backslash, bytes that are not UTF-8 (lone continuation and lead bytes,
 * a truncated sequence, an overlong encoding, a surrogate, a code point
 * above U+10FFFF), valid multi-byte UTF-8, and a path longer than 300
 * bytes with a 3-byte character across byte 251.  It runs ./memwatch scan
 * on itself (--json, --json --pread) and on `self` (--json, and the table).
 *
 * The JSON is judged on the host, by tests/cli/json-check with Python's
 * json module and UTF-8 codec: a parser and a decoder written
 * independently of the CLI's, so that they cannot share its mistakes.  Here
 * only what needs no parsing is a TAP point (4: the long path, the exit
 * status of the two scans of this process, the pid the table names); the
 * rest goes to the host on the console as "# cli-json: " lines:
 *   begin method=M pid=P      the method the suite list gives, our pid
 *   name ADDR HEX WHAT        a hostile mapping: its address, its path's
 *                             bytes in hex, what it holds
 *   doc LABEL rc=N child=P    one output of ./memwatch (LABEL scan-pid,
 *                             scan-pid-pread, scan-self), its exit status
 *                             and the pid of that memwatch process, then
 *   data HEX                  its bytes, in lines of 64 bytes
 *   end
 * and json-check gives the 17 points of the rest.
 */
#include "mw-test.h"

#include <sys/stat.h>
#include <sys/wait.h>

struct hostile {
	const char *what;
	char file[64];		/* the file name ("" for the long path) */
	char path[512];		/* the full path */
	char *addr;
};

static struct hostile names[] = {
	{ "tab", "tab\there", "", NULL },
	{ "newline (\\012 in maps)", "new\nline", "", NULL },
	{ "control characters \\x01 \\x1f \\x7f", "ctl\x01-\x1f-\x7f", "", NULL },
	{ "quote and backslash", "q\"b\\s", "", NULL },
	{ "lone bytes \\xff \\xfe \\x80", "bad\xff\xfe-\x80", "", NULL },
	{ "truncated, overlong, surrogate, > U+10FFFF",
	  "bad\xe2\x82-\xc0\xaf-\xed\xa0\x80-\xf4\x90\x80\x80", "", NULL },
	{ "valid UTF-8 (2, 3, 4 bytes)", "ok-\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e",
	  "", NULL },
	{ "path over 300 bytes, a 3-byte character across byte 251", "", "",
	  NULL },
};
#define NNAMES (sizeof(names) / sizeof(names[0]))

static void make_long_path(struct hostile *h, const char *dir)
{
	char sub[160];
	size_t len;

	memset(sub, 'd', 150);
	sub[150] = '\0';
	snprintf(h->path, sizeof(h->path), "%s/%s", dir, sub);
	if (mkdir(h->path, 0755) && errno != EEXIST)
		mw_bail("mkdir", NULL);
	len = strlen(h->path) + 1;	/* with the '/' */
	/*
	 * 'f's up to byte 249, then U+20AC at bytes 250-252, then more: the
	 * 251 bytes memwatch_vma.name holds end inside the character.
	 */
	strcat(h->path, "/");
	while (len < 250) {
		strcat(h->path, "f");
		len++;
	}
	strcat(h->path, "\xe2\x82\xac");
	strcat(h->path, "-tail-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.dat");
}

/* Run ./memwatch ARGS; its stdout in *out, its pid in *child. */
static int run_cli(char *const args[], char **out, size_t *len, pid_t *child)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	int pfd[2], status;
	ssize_t r;
	pid_t pid;

	if (!buf || pipe(pfd))
		mw_bail("pipe", NULL);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		execv("./memwatch", args);
		_exit(127);
	}
	close(pfd[1]);
	for (;;) {
		if (n + 1 == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			if (!buf)
				mw_bail("realloc", NULL);
		}
		r = read(pfd[0], buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	close(pfd[0]);
	waitpid(pid, &status, 0);
	*out = buf;
	*len = n;
	*child = pid;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void print_hex(const char *prefix, const void *p, size_t n)
{
	const unsigned char *b = p;

	printf("%s", prefix);
	while (n--)
		printf("%02x", *b++);
}

/* One output of ./memwatch, byte for byte, for the host. */
static void ship(const char *label, int rc, pid_t child, const char *out, size_t len)
{
	size_t i;

	printf("# cli-json: doc %s rc=%d child=%d\n", label, rc, (int)child);
	for (i = 0; i < len; i += 64) {
		print_hex("# cli-json: data ", out + i, len - i < 64 ? len - i : 64);
		printf("\n");
	}
}

int main(int argc, char **argv)
{
	char dir[64], pidstr[16], *out;
	const char *method;
	size_t i, len;
	pid_t child;
	long ps;
	int rc;

	tap_guest_only();
	if (argc != 2 || (strcmp(argv[1], "ioctl") && strcmp(argv[1], "pread"))) {
		fprintf(stderr, "usage: %s ioctl|pread\n", argv[0]);
		return 2;
	}
	method = !strcmp(argv[1], "ioctl") ? "PAGEMAP_SCAN" : "pagemap-read";
	tap_plan(4);

	ps = sysconf(_SC_PAGESIZE);
	snprintf(dir, sizeof(dir), "/tmp/cli-json.%d", (int)getpid());
	if (mkdir(dir, 0755))
		mw_bail("mkdir", NULL);
	printf("# cli-json: begin method=%s pid=%d\n", method, (int)getpid());
	for (i = 0; i < NNAMES; i++) {
		struct hostile *h = &names[i];
		int fd;

		if (h->file[0])
			snprintf(h->path, sizeof(h->path), "%s/%s", dir, h->file);
		else
			make_long_path(h, dir);
		fd = open(h->path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || ftruncate(fd, ps))
			mw_bail(h->what, NULL);
		h->addr = mmap(NULL, (size_t)ps, PROT_READ, MAP_PRIVATE, fd, 0);
		close(fd);
		if (h->addr == MAP_FAILED)
			mw_bail("mmap", NULL);
		printf("# cli-json: name 0x%lx", (unsigned long)(uintptr_t)h->addr);
		print_hex(" ", h->path, strlen(h->path));
		printf(" %s\n", h->what);
	}
	tap_ok(strlen(names[NNAMES - 1].path) > 300, "the long path has %zu bytes",
	       strlen(names[NNAMES - 1].path));

	/* memwatch scan OURPID --json */
	snprintf(pidstr, sizeof(pidstr), "%d", (int)getpid());
	rc = run_cli((char *[]){ "memwatch", "scan", pidstr, "--json", NULL },
		     &out, &len, &child);
	ship("scan-pid", rc, child, out, len);
	CHECK_EQ(rc, 0, "scan PID --json exits 0");
	free(out);

	/* The same through the pagemap read. */
	rc = run_cli((char *[]){ "memwatch", "scan", pidstr, "--json", "--pread", NULL },
		     &out, &len, &child);
	ship("scan-pid-pread", rc, child, out, len);
	CHECK_EQ(rc, 0, "scan PID --json --pread exits 0");
	free(out);

	/* memwatch scan self --json: the pid of the memwatch process. */
	rc = run_cli((char *[]){ "memwatch", "scan", "self", "--json", NULL },
		     &out, &len, &child);
	ship("scan-self", rc, child, out, len);
	free(out);
	printf("# cli-json: end\n");

	rc = run_cli((char *[]){ "memwatch", "scan", "self", NULL }, &out, &len, &child);
	snprintf(dir, sizeof(dir), "memwatch scan: pid %d via ", (int)child);
	tap_ok(rc == 0 && !strncmp(out, dir, strlen(dir)),
	       "scan self: the table names memwatch's own pid (%d)", (int)child);
	free(out);
	return tap_done();
}
