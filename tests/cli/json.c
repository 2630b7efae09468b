// SPDX-License-Identifier: MIT
/*
 * `memwatch scan --json` must print valid JSON whatever the mapping names
 * are, and say which pid it scanned.  Runs in the guest from /srv/test/:
 *   ./cli-json ioctl|pread
 * (the scan method the suite list says this kernel gives, asserted).
 *
 * The test maps files whose names hold a tab, a newline (the kernel shows
 * it as \012 in /proc/PID/maps), control characters, a quote and a
 * backslash, bytes that are not UTF-8 (lone continuation and lead bytes,
 * a truncated sequence, an overlong encoding, a surrogate, a code point
 * above U+10FFFF), valid multi-byte UTF-8, and a path longer than 300
 * bytes with a 3-byte character across byte 255.  It runs ./memwatch on
 * itself and on `self` and checks every output with the strict RFC 8259
 * parser below: UTF-8 text (RFC 8259 section 8.1: overlongs, surrogates
 * and code points above U+10FFFF rejected), no control character in a
 * string, only the escapes of section 7, \u escapes whose surrogates pair
 * up, the number grammar of section 6, nothing after the value; stricter
 * than the RFC's SHOULDs, it also rejects duplicate member names.  Then it
 * decodes each hostile name and checks it against the bytes the kernel
 * shows (the escaping scheme of memwatch(1): bytes that are not UTF-8 are
 * \u00XX in "name", and "name_hex" then holds the exact bytes).
 */
#include "mw-test.h"

#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* ------------------------------------------------------------------ */
/* A strict JSON parser                                               */
/* ------------------------------------------------------------------ */

enum jtype { J_NULL, J_FALSE, J_TRUE, J_NUM, J_STR, J_ARR, J_OBJ };

struct jval {
	enum jtype type;
	char *str;		/* J_STR: the decoded bytes (UTF-8), NUL added */
	size_t len;
	double num;
	size_t n;		/* J_ARR, J_OBJ */
	struct jval **items;
	struct jval **keys;	/* J_OBJ: J_STR names */
};

struct jparser {
	const unsigned char *start, *p, *end;
	const char *err;
	int depth;
};

static struct jval *jfail(struct jparser *jp, const char *err)
{
	if (!jp->err)
		jp->err = err;
	return NULL;
}

static void jfree(struct jval *v)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < v->n; i++) {
		jfree(v->items[i]);
		if (v->keys)
			jfree(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->str);
	free(v);
}

static struct jval *jnew(struct jparser *jp, enum jtype t)
{
	struct jval *v = calloc(1, sizeof(*v));

	if (!v)
		return jfail(jp, "out of memory");
	v->type = t;
	return v;
}

static void jws(struct jparser *jp)
{
	while (jp->p < jp->end && (*jp->p == ' ' || *jp->p == '\t' ||
				   *jp->p == '\n' || *jp->p == '\r'))
		jp->p++;
}

/*
 * Length of the well-formed UTF-8 sequence at s (RFC 3629 section 4), or 0.
 */
static size_t utf8_len(const unsigned char *s, size_t n)
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
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

static int jhex4(const unsigned char *p)
{
	int v = 0, i;

	for (i = 0; i < 4; i++) {
		int c = p[i], d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		v = v * 16 + d;
	}
	return v;
}

static size_t put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

static struct jval *jstring(struct jparser *jp)
{
	struct jval *v;
	char *o;
	size_t n = 0;

	if (jp->p >= jp->end || *jp->p != '"')
		return jfail(jp, "expected a string");
	jp->p++;
	/* The decoded string is never longer than its source. */
	o = malloc((size_t)(jp->end - jp->p) + 1);
	if (!o)
		return jfail(jp, "out of memory");
	for (;;) {
		unsigned char c;

		if (jp->p >= jp->end) {
			free(o);
			return jfail(jp, "unterminated string");
		}
		c = *jp->p;
		if (c == '"') {
			jp->p++;
			break;
		}
		if (c < 0x20) {
			free(o);
			return jfail(jp, "unescaped control character in a string");
		}
		if (c >= 0x80) {
			size_t l = utf8_len(jp->p, (size_t)(jp->end - jp->p));

			if (!l) {
				free(o);
				return jfail(jp, "invalid UTF-8 in a string");
			}
			memcpy(o + n, jp->p, l);
			n += l;
			jp->p += l;
			continue;
		}
		if (c != '\\') {
			o[n++] = (char)c;
			jp->p++;
			continue;
		}
		if (jp->end - jp->p < 2) {
			free(o);
			return jfail(jp, "unterminated escape");
		}
		c = jp->p[1];
		jp->p += 2;
		switch (c) {
		case '"': o[n++] = '"'; break;
		case '\\': o[n++] = '\\'; break;
		case '/': o[n++] = '/'; break;
		case 'b': o[n++] = '\b'; break;
		case 'f': o[n++] = '\f'; break;
		case 'n': o[n++] = '\n'; break;
		case 'r': o[n++] = '\r'; break;
		case 't': o[n++] = '\t'; break;
		case 'u': {
			int u, u2;
			uint32_t cp;

			if (jp->end - jp->p < 4 || (u = jhex4(jp->p)) < 0) {
				free(o);
				return jfail(jp, "bad \\u escape");
			}
			jp->p += 4;
			cp = (uint32_t)u;
			if (u >= 0xdc00 && u <= 0xdfff) {
				free(o);
				return jfail(jp, "unpaired low surrogate escape");
			}
			if (u >= 0xd800 && u <= 0xdbff) {
				if (jp->end - jp->p < 6 || jp->p[0] != '\\' ||
				    jp->p[1] != 'u' || (u2 = jhex4(jp->p + 2)) < 0xdc00 ||
				    u2 > 0xdfff) {
					free(o);
					return jfail(jp, "unpaired high surrogate escape");
				}
				jp->p += 6;
				cp = 0x10000 + (((uint32_t)u - 0xd800) << 10) +
				     ((uint32_t)u2 - 0xdc00);
			}
			n += put_utf8(o + n, cp);
			break;
		}
		default:
			free(o);
			return jfail(jp, "unknown escape");
		}
	}
	o[n] = '\0';
	v = jnew(jp, J_STR);
	if (!v) {
		free(o);
		return NULL;
	}
	v->str = o;
	v->len = n;
	return v;
}

static bool jdigit(struct jparser *jp)
{
	return jp->p < jp->end && *jp->p >= '0' && *jp->p <= '9';
}

static struct jval *jnumber(struct jparser *jp)
{
	const unsigned char *s = jp->p;
	char buf[64];
	struct jval *v;

	if (jp->p < jp->end && *jp->p == '-')
		jp->p++;
	if (!jdigit(jp))
		return jfail(jp, "bad number");
	if (*jp->p == '0') {
		jp->p++;
		if (jdigit(jp))
			return jfail(jp, "leading zero in a number");
	} else {
		while (jdigit(jp))
			jp->p++;
	}
	if (jp->p < jp->end && *jp->p == '.') {
		jp->p++;
		if (!jdigit(jp))
			return jfail(jp, "no digit after the decimal point");
		while (jdigit(jp))
			jp->p++;
	}
	if (jp->p < jp->end && (*jp->p == 'e' || *jp->p == 'E')) {
		jp->p++;
		if (jp->p < jp->end && (*jp->p == '+' || *jp->p == '-'))
			jp->p++;
		if (!jdigit(jp))
			return jfail(jp, "no digit in the exponent");
		while (jdigit(jp))
			jp->p++;
	}
	if ((size_t)(jp->p - s) >= sizeof(buf))
		return jfail(jp, "number too long for this test");
	memcpy(buf, s, (size_t)(jp->p - s));
	buf[jp->p - s] = '\0';
	v = jnew(jp, J_NUM);
	if (v)
		v->num = strtod(buf, NULL);
	return v;
}

static struct jval *jvalue(struct jparser *jp);

static bool jappend(struct jparser *jp, struct jval *v, struct jval *key,
		    struct jval *item)
{
	struct jval **ni = realloc(v->items, (v->n + 1) * sizeof(*ni));

	if (ni)
		v->items = ni;
	if (ni && key) {
		struct jval **nk = realloc(v->keys, (v->n + 1) * sizeof(*nk));

		if (!nk)
			ni = NULL;
		else
			v->keys = nk;
	}
	if (!ni) {
		jfree(key);
		jfree(item);
		jfail(jp, "out of memory");
		return false;
	}
	v->items[v->n] = item;
	if (key)
		v->keys[v->n] = key;
	v->n++;
	return true;
}

static struct jval *jcontainer(struct jparser *jp, bool obj)
{
	struct jval *v = jnew(jp, obj ? J_OBJ : J_ARR);
	unsigned char close = obj ? '}' : ']';

	if (!v)
		return NULL;
	if (++jp->depth > 64) {
		jfree(v);
		return jfail(jp, "nested too deeply");
	}
	jp->p++;
	jws(jp);
	if (jp->p < jp->end && *jp->p == close) {
		jp->p++;
		jp->depth--;
		return v;
	}
	for (;;) {
		struct jval *key = NULL, *item;
		size_t i;

		if (obj) {
			jws(jp);
			key = jstring(jp);
			if (!key)
				break;
			for (i = 0; i < v->n; i++)
				if (v->keys[i]->len == key->len &&
				    !memcmp(v->keys[i]->str, key->str, key->len))
					break;
			if (i < v->n) {
				jfree(key);
				jfail(jp, "duplicate member name");
				break;
			}
			jws(jp);
			if (jp->p >= jp->end || *jp->p != ':') {
				jfree(key);
				jfail(jp, "expected ':'");
				break;
			}
			jp->p++;
		}
		item = jvalue(jp);
		if (!item) {
			jfree(key);
			break;
		}
		if (!jappend(jp, v, key, item))
			break;
		jws(jp);
		if (jp->p < jp->end && *jp->p == ',') {
			jp->p++;
			continue;
		}
		if (jp->p < jp->end && *jp->p == close) {
			jp->p++;
			jp->depth--;
			return v;
		}
		jfail(jp, obj ? "expected ',' or '}'" : "expected ',' or ']'");
		break;
	}
	jfree(v);
	return NULL;
}

static bool jliteral(struct jparser *jp, const char *lit)
{
	size_t l = strlen(lit);

	if ((size_t)(jp->end - jp->p) < l || memcmp(jp->p, lit, l))
		return false;
	jp->p += l;
	return true;
}

static struct jval *jvalue(struct jparser *jp)
{
	jws(jp);
	if (jp->p >= jp->end)
		return jfail(jp, "expected a value");
	switch (*jp->p) {
	case '{':
		return jcontainer(jp, true);
	case '[':
		return jcontainer(jp, false);
	case '"':
		return jstring(jp);
	case 't':
		return jliteral(jp, "true") ? jnew(jp, J_TRUE) : jfail(jp, "bad literal");
	case 'f':
		return jliteral(jp, "false") ? jnew(jp, J_FALSE) : jfail(jp, "bad literal");
	case 'n':
		return jliteral(jp, "null") ? jnew(jp, J_NULL) : jfail(jp, "bad literal");
	default:
		if (*jp->p == '-' || (*jp->p >= '0' && *jp->p <= '9'))
			return jnumber(jp);
		return jfail(jp, "expected a value");
	}
}

/* Parse a whole JSON text; on error *err says what and *at where. */
static struct jval *jparse(const char *text, size_t len, const char **err,
			   size_t *at)
{
	struct jparser jp = { (const unsigned char *)text,
			      (const unsigned char *)text,
			      (const unsigned char *)text + len, NULL, 0 };
	struct jval *v = jvalue(&jp);

	if (v) {
		jws(&jp);
		if (jp.p != jp.end) {
			jfree(v);
			v = jfail(&jp, "trailing characters after the value");
		}
	}
	*err = jp.err;
	*at = (size_t)(jp.p - jp.start);
	return v;
}

static const struct jval *jget(const struct jval *o, const char *key)
{
	size_t i;

	if (!o || o->type != J_OBJ)
		return NULL;
	for (i = 0; i < o->n; i++)
		if (o->keys[i]->len == strlen(key) && !strcmp(o->keys[i]->str, key))
			return o->items[i];
	return NULL;
}

/* The parser must reject what RFC 8259 rejects, and accept the rest. */
static void validator_self_test(void)
{
	static const struct { const char *text; bool valid; } cases[] = {
		{ "{\"a\":[1,-0.5,2e10,true,false,null,\"x\"]}\n", true },
		{ "\"\\u00e9\\ud834\\udd1e\\\"\\\\\\/\\b\\f\\n\\r\\t\"", true },
		{ "\"\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e\"", true },
		{ " [ ] ", true },
		{ "\"a\tb\"", false },		/* raw control character */
		{ "\"a\nb\"", false },
		{ "\"\x01\"", false },
		{ "\"\xff\"", false },		/* not UTF-8 */
		{ "\"\xe2\x82\"", false },	/* truncated sequence */
		{ "\"\xc0\xaf\"", false },	/* overlong */
		{ "\"\xed\xa0\x80\"", false },	/* surrogate */
		{ "\"\xf4\x90\x80\x80\"", false },/* above U+10FFFF */
		{ "\"\\ud800\"", false },	/* unpaired surrogate escape */
		{ "\"\\udc00\"", false },
		{ "\"\\x41\"", false },		/* no such escape */
		{ "\"\\u12\"", false },
		{ "[1,]", false },
		{ "{\"a\":1,}", false },
		{ "{a:1}", false },
		{ "{\"a\" 1}", false },
		{ "01", false },
		{ "1.", false },
		{ "-", false },
		{ ".5", false },
		{ "+1", false },
		{ "[1] [2]", false },
		{ "tru", false },
		{ "'a'", false },
		{ "{\"a\":1,\"a\":2}", false },	/* duplicate name (stricter) */
		{ "", false },
	};
	size_t i, bad = 0;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *err;
		size_t at;
		struct jval *v = jparse(cases[i].text, strlen(cases[i].text),
					&err, &at);

		if ((v != NULL) != cases[i].valid) {
			tap_diag("  validator case %zu: %s, want %s (%s)", i,
				 v ? "accepted" : "rejected",
				 cases[i].valid ? "accept" : "reject",
				 err ? err : "no error");
			bad++;
		}
		jfree(v);
	}
	tap_ok(bad == 0, "the strict JSON parser passes its %zu self-test cases",
	       sizeof(cases) / sizeof(cases[0]));
}

/* ------------------------------------------------------------------ */
/* The names                                                          */
/* ------------------------------------------------------------------ */

struct hostile {
	const char *what;
	char file[64];		/* the file name ("" for the long path) */
	char path[512];		/* the full path */
	char shown[600];	/* as /proc/PID/maps shows it */
	char *addr;
};

static struct hostile names[] = {
	{ "tab", "tab\there", "", "", NULL },
	{ "newline (\\012 in maps)", "new\nline", "", "", NULL },
	{ "control characters \\x01 \\x1f \\x7f", "ctl\x01-\x1f-\x7f", "", "", NULL },
	{ "quote and backslash", "q\"b\\s", "", "", NULL },
	{ "lone bytes \\xff \\xfe \\x80", "bad\xff\xfe-\x80", "", "", NULL },
	{ "truncated, overlong, surrogate, > U+10FFFF",
	  "bad\xe2\x82-\xc0\xaf-\xed\xa0\x80-\xf4\x90\x80\x80", "", "", NULL },
	{ "valid UTF-8 (2, 3, 4 bytes)", "ok-\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e",
	  "", "", NULL },
	{ "path over 300 bytes, a 3-byte character across byte 251", "", "", "",
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
		exit(1);
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

/* The kernel shows '\n' in a path as "\012" (seq_file_path(..., "\n")). */
static void kernel_shown(const char *path, char *out)
{
	for (; *path; path++) {
		if (*path == '\n') {
			strcpy(out, "\\012");
			out += 4;
		} else {
			*out++ = *path;
		}
	}
	*out = '\0';
}

/* The scheme of memwatch(1): valid UTF-8 as is, other bytes as U+00XX. */
static size_t scheme(const unsigned char *raw, size_t n, char *out)
{
	size_t i = 0, o = 0;

	while (i < n) {
		size_t l = utf8_len(raw + i, n - i);

		if (l) {
			memcpy(out + o, raw + i, l);
			o += l;
			i += l;
		} else {
			o += put_utf8(out + o, raw[i]);
			i++;
		}
	}
	out[o] = '\0';
	return o;
}

/* The exact bytes of a mapping's name: "name_hex" if present, else "name". */
static bool raw_name(const struct jval *m, unsigned char *out, size_t *len,
		     const char **why)
{
	const struct jval *name = jget(m, "name"), *hex = jget(m, "name_hex");
	char expect[2048];
	size_t i, el;

	if (!name || name->type != J_STR) {
		*why = "no \"name\" string";
		return false;
	}
	if (!hex) {
		memcpy(out, name->str, name->len);
		*len = name->len;
		return true;
	}
	if (hex->type != J_STR || hex->len % 2 || hex->len / 2 > 1000) {
		*why = "\"name_hex\" is not a hex string";
		return false;
	}
	for (i = 0; i < hex->len / 2; i++) {
		unsigned int b;

		if (sscanf(hex->str + 2 * i, "%2x", &b) != 1 ||
		    !strchr("0123456789abcdef", hex->str[2 * i]) ||
		    !strchr("0123456789abcdef", hex->str[2 * i + 1])) {
			*why = "\"name_hex\" is not lowercase hex";
			return false;
		}
		out[i] = (unsigned char)b;
	}
	*len = hex->len / 2;
	el = scheme(out, *len, expect);
	if (el != name->len || memcmp(expect, name->str, el)) {
		*why = "\"name\" is not \"name_hex\" with non-UTF-8 bytes as U+00XX";
		return false;
	}
	for (i = 0; i < *len && utf8_len(out + i, *len - i); i += utf8_len(out + i, *len - i))
		;
	if (i == *len) {
		*why = "\"name_hex\" given for a name that is valid UTF-8";
		return false;
	}
	return true;
}

/* ------------------------------------------------------------------ */
/* Running the CLI                                                    */
/* ------------------------------------------------------------------ */

/* Run ./memwatch ARGS; its stdout in *out, its pid in *child. */
static int run_cli(char *const args[], char **out, size_t *len, pid_t *child)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	int pfd[2], status;
	ssize_t r;
	pid_t pid;

	if (!buf || pipe(pfd))
		exit(1);
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
				exit(1);
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

/* Show where the text went wrong, bytes escaped. */
static void show_error(const char *text, size_t len, const char *err, size_t at)
{
	char ctx[200];
	size_t i, o = 0, from = at > 40 ? at - 40 : 0;

	for (i = from; i < len && i < at + 20 && o + 5 < sizeof(ctx); i++) {
		unsigned char c = (unsigned char)text[i];

		if (c >= 0x20 && c < 0x7f)
			ctx[o++] = (char)c;
		else
			o += (size_t)snprintf(ctx + o, sizeof(ctx) - o, "<%02x>", c);
	}
	ctx[o] = '\0';
	tap_diag("  invalid JSON at byte %zu: %s", at, err);
	tap_diag("  near: %s", ctx);
}

static struct jval *parse_output(const char *what, const char *text, size_t len)
{
	const char *err;
	size_t at;
	struct jval *v = jparse(text, len, &err, &at);

	if (!tap_ok(v != NULL, "%s: valid JSON (strict RFC 8259, UTF-8)", what))
		show_error(text, len, err, at);
	return v;
}

static const struct jval *find_mapping(const struct jval *doc, const char *addr)
{
	const struct jval *maps = jget(doc, "mappings");
	char want[32];
	size_t i;

	snprintf(want, sizeof(want), "0x%lx", (unsigned long)(uintptr_t)addr);
	if (!maps || maps->type != J_ARR)
		return NULL;
	for (i = 0; i < maps->n; i++) {
		const struct jval *s = jget(maps->items[i], "start");

		if (s && s->type == J_STR && !strcmp(s->str, want))
			return maps->items[i];
	}
	return NULL;
}

/* Does the mapping's name give exactly the path the kernel shows? */
static bool name_matches(const struct jval *doc, const struct hostile *h,
			 const char **why)
{
	const struct jval *m = find_mapping(doc, h->addr);
	unsigned char raw[2048];
	size_t len, want = strlen(h->shown);

	if (!m) {
		*why = "mapping not listed";
		return false;
	}
	if (!raw_name(m, raw, &len, why))
		return false;
	const struct jval *cut = jget(m, "name_truncated");

	if (len == want && !memcmp(raw, h->shown, len) && !cut)
		return true;
	/*
	 * memwatch_vma.name holds 251 bytes: a prefix of that length, said
	 * so by "name_truncated":true, never silently.
	 */
	if (len == 251 && want > 251 && !memcmp(raw, h->shown, len)) {
		if (cut && cut->type == J_TRUE)
			return true;
		*why = "the name is cut without \"name_truncated\":true";
		return false;
	}
	*why = "the name differs from /proc/PID/maps";
	return false;
}

static bool all_names(const struct jval *doc, const char **why, const char **which)
{
	size_t i;

	for (i = 0; i < NNAMES; i++) {
		if (!name_matches(doc, &names[i], why)) {
			*which = names[i].what;
			return false;
		}
	}
	return true;
}

/* Every "name" with a "name_hex" is consistent with it. */
static bool all_consistent(const struct jval *doc, const char **why)
{
	const struct jval *maps = jget(doc, "mappings");
	unsigned char raw[2048];
	size_t i, len;

	if (!maps || maps->type != J_ARR) {
		*why = "no \"mappings\" array";
		return false;
	}
	for (i = 0; i < maps->n; i++)
		if (!raw_name(maps->items[i], raw, &len, why))
			return false;
	return true;
}

static bool num_is(const struct jval *v, double want)
{
	return v && v->type == J_NUM && v->num == want;
}

static bool str_is(const struct jval *v, const char *want)
{
	return v && v->type == J_STR && !strcmp(v->str, want);
}

int main(int argc, char **argv)
{
	char dir[64], pidstr[16], *out;
	const char *method, *why = "", *which = "";
	struct jval *doc;
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
	tap_plan(21);
	validator_self_test();

	ps = sysconf(_SC_PAGESIZE);
	snprintf(dir, sizeof(dir), "/tmp/cli-json.%d", (int)getpid());
	if (mkdir(dir, 0755))
		return 1;
	for (i = 0; i < NNAMES; i++) {
		struct hostile *h = &names[i];
		int fd;

		if (h->file[0])
			snprintf(h->path, sizeof(h->path), "%s/%s", dir, h->file);
		else
			make_long_path(h, dir);
		kernel_shown(h->path, h->shown);
		fd = open(h->path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || ftruncate(fd, ps)) {
			tap_diag("cannot create %s: %s", h->what, strerror(errno));
			return 1;
		}
		h->addr = mmap(NULL, (size_t)ps, PROT_READ, MAP_PRIVATE, fd, 0);
		close(fd);
		if (h->addr == MAP_FAILED)
			return 1;
	}
	tap_ok(strlen(names[NNAMES - 1].path) > 300, "the long path has %zu bytes",
	       strlen(names[NNAMES - 1].path));

	/* memwatch scan OURPID --json */
	snprintf(pidstr, sizeof(pidstr), "%d", (int)getpid());
	rc = run_cli((char *[]){ "memwatch", "scan", pidstr, "--json", NULL },
		     &out, &len, &child);
	CHECK_EQ(rc, 0, "scan PID --json exits 0");
	doc = parse_output("scan PID --json", out, len);
	tap_ok(num_is(jget(doc, "pid"), getpid()), "\"pid\" is the pid scanned (%s)",
	       pidstr);
	tap_ok(str_is(jget(doc, "method"), method), "\"method\" is \"%s\", as the suite list says",
	       method);
	for (i = 0; i < NNAMES; i++) {
		if (!tap_ok(doc && name_matches(doc, &names[i], &why),
			    "name with %s decodes to the bytes the kernel shows",
			    names[i].what))
			tap_diag("  %s", doc ? why : "no document");
	}
	if (!tap_ok(doc && all_consistent(doc, &why),
		    "every \"name_hex\" matches its \"name\", and only non-UTF-8 names have one"))
		tap_diag("  %s", doc ? why : "no document");
	jfree(doc);
	free(out);

	/* The same through the pagemap read. */
	rc = run_cli((char *[]){ "memwatch", "scan", pidstr, "--json", "--pread", NULL },
		     &out, &len, &child);
	CHECK_EQ(rc, 0, "scan PID --json --pread exits 0");
	doc = parse_output("scan PID --json --pread", out, len);
	if (!tap_ok(doc && str_is(jget(doc, "method"), "pagemap-read") &&
		    all_names(doc, &why, &which) && all_consistent(doc, &why),
		    "--pread: every hostile name decodes right"))
		tap_diag("  %s: %s", which, why);
	jfree(doc);
	free(out);

	/* memwatch scan self --json: the pid of the memwatch process. */
	rc = run_cli((char *[]){ "memwatch", "scan", "self", "--json", NULL },
		     &out, &len, &child);
	doc = parse_output("scan self --json", out, len);
	tap_ok(rc == 0 && num_is(jget(doc, "pid"), child),
	       "scan self --json: exit 0, \"pid\" is memwatch's own pid (%d)", (int)child);
	jfree(doc);
	free(out);
	rc = run_cli((char *[]){ "memwatch", "scan", "self", NULL }, &out, &len, &child);
	snprintf(dir, sizeof(dir), "memwatch scan: pid %d via ", (int)child);
	tap_ok(rc == 0 && !strncmp(out, dir, strlen(dir)),
	       "scan self: the table names memwatch's own pid (%d)", (int)child);
	free(out);
	return tap_done();
}
