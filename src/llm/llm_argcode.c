/* llm_argcode: a python_exec call's "code" decoded from its arguments'
 * JSON text as the pieces stream (see the header). A byte-at-a-time
 * scanner over one JSON object: member names are compared with "code",
 * other values are skipped (strings, nested objects and arrays,
 * scalars), and the code string's escapes are decoded, \uXXXX and
 * surrogate pairs included, wherever a piece ends. Broken JSON stops
 * the scanner (what was decoded stays); the complete call is judged by
 * the agent's own parse, not here. */
#include "terp/llm_argcode.h"

#include <string.h>

#include "terp/sanitize.h"

enum {
	A_START,	/* before the object's '{' */
	A_KEYWAIT,	/* a member name's '"' or the object's end */
	A_KEY,		/* inside a member name */
	A_KEYESC,	/* after a '\' in a member name */
	A_COLON,	/* after a member name */
	A_VALWAIT,	/* after the ':' */
	A_SKIP,		/* inside a value that is not the code */
	A_AFTER,	/* after a value: ',' or '}' */
	A_CODE,		/* inside the code string */
	A_ESC,		/* after a '\' in it */
	A_HEX,		/* inside a \uXXXX */
	A_LOWBS,	/* a high surrogate came: its low one's '\' */
	A_LOWU,		/* and its 'u' */
	A_FIN,		/* the code is over, or the text is no JSON object */
};

void
llm_argcode_init(struct llm_argcode *d, size_t max)
{
	memset(d, 0, sizeof *d);
	buf_init(&d->out, max);
}

void
llm_argcode_reset(struct llm_argcode *d)
{
	struct buf keep = d->out;

	memset(d, 0, sizeof *d);
	d->out = keep;
	buf_reset(&d->out);
}

void
llm_argcode_free(struct llm_argcode *d)
{
	buf_free(&d->out);
	memset(d, 0, sizeof *d);
}

static int
is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Appends bytes of code; a full buffer ends the decoding. */
static void
put(struct llm_argcode *d, const char *p, size_t n)
{
	if (d->full)
		return;
	if (buf_add(&d->out, p, n) < 0) {
		d->full = 1;
		d->st = A_FIN;
	}
}

static void
put_cp(struct llm_argcode *d, unsigned cp)
{
	char u[4];
	size_t n;

	if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		cp = 0xfffd;	/* NUL and lone halves: shown as U+FFFD */
	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | cp >> 6);
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | cp >> 12);
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | cp >> 18);
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	put(d, u, n);
}

/* A \uXXXX is complete: pairs a high surrogate with the low one that
 * must follow. */
static void
code_point(struct llm_argcode *d, unsigned cp)
{
	d->st = A_CODE;
	if (d->high != 0) {
		unsigned hi = d->high;
		d->high = 0;
		if (cp >= 0xdc00 && cp <= 0xdfff) {
			put_cp(d, 0x10000 + ((hi - 0xd800) << 10) + (cp - 0xdc00));
			return;
		}
		put_cp(d, 0xfffd);
	}
	if (cp >= 0xd800 && cp <= 0xdbff) {
		d->high = cp;
		d->st = A_LOWBS;
		return;
	}
	put_cp(d, cp);
}

static int
hex_val(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* One byte inside the code string (A_CODE to A_LOWU). Returns 0 when
 * the byte must be read again in the state it left (a broken escape). */
static int
code_byte(struct llm_argcode *d, char c)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *e;
	int v;

	switch (d->st) {
	case A_CODE:
		if (c == '"') {
			d->found = 2;
			d->st = A_FIN;
		} else if (c == '\\')
			d->st = A_ESC;
		else
			put(d, &c, 1);
		return 1;
	case A_ESC:
		d->st = A_CODE;
		if (c == 'u') {
			d->st = A_HEX;
			d->hex = d->nhex = 0;
		} else if (c != '\0' && (e = strchr(from, c)) != NULL)
			put(d, &to[e - from], 1);
		else
			put(d, &c, 1);	/* not JSON: shown as it came */
		return 1;
	case A_HEX:
		if ((v = hex_val(c)) < 0) {
			d->high = 0;
			put_cp(d, 0xfffd);
			d->st = A_CODE;
			return 0;
		}
		d->hex = d->hex << 4 | (unsigned)v;
		if (++d->nhex == 4)
			code_point(d, d->hex);
		return 1;
	case A_LOWBS:
		if (c == '\\') {
			d->st = A_LOWU;
			return 1;
		}
		d->high = 0;
		put_cp(d, 0xfffd);
		d->st = A_CODE;
		return 0;
	default:	/* A_LOWU */
		if (c == 'u') {
			d->st = A_HEX;
			d->hex = d->nhex = 0;
			return 1;
		}
		d->high = 0;
		put_cp(d, 0xfffd);
		d->st = A_ESC;
		return 0;
	}
}

/* One byte of a value that is not the code: strings (skip_str 1, 2
 * after a '\'), nested [ and { (nest) and scalars (nest 0). */
static void
skip_byte(struct llm_argcode *d, char c)
{
	if (d->skip_str == 2) {
		d->skip_str = 1;
	} else if (d->skip_str == 1) {
		if (c == '\\')
			d->skip_str = 2;
		else if (c == '"') {
			d->skip_str = 0;
			if (d->nest == 0)
				d->st = A_AFTER;
		}
	} else if (d->nest > 0) {
		if (c == '"')
			d->skip_str = 1;
		else if (c == '{' || c == '[')
			d->nest += d->nest < 1 << 20;	/* depth is not kept beyond */
		else if ((c == '}' || c == ']') && --d->nest == 0)
			d->st = A_AFTER;
	} else if (c == ',')
		d->st = A_KEYWAIT;
	else if (c == '}')
		d->st = A_FIN;
}

/* One byte of the object outside the code string. */
static void
object_byte(struct llm_argcode *d, char c)
{
	switch (d->st) {
	case A_START:
		if (!is_ws(c))
			d->st = c == '{' ? A_KEYWAIT : A_FIN;
		break;
	case A_KEYWAIT:
		if (c == '"') {
			d->st = A_KEY;
			d->klen = 0;
		} else if (!is_ws(c))
			d->st = A_FIN;	/* '}' or broken: nothing more to read */
		break;
	case A_KEY:
		if (c == '"')
			d->st = A_COLON;
		else if (c == '\\') {
			d->st = A_KEYESC;
			d->klen = 5;	/* an escaped name is not taken for "code" */
		} else if (d->klen < 4)
			d->key[d->klen++] = c;
		else
			d->klen = 5;
		break;
	case A_KEYESC:
		d->st = A_KEY;
		break;
	case A_COLON:
		if (c == ':')
			d->st = A_VALWAIT;
		else if (!is_ws(c))
			d->st = A_FIN;
		break;
	case A_VALWAIT:
		if (is_ws(c))
			break;
		if (c == '"' && d->found == 0 && d->klen == 4 &&
		    memcmp(d->key, "code", 4) == 0) {
			d->found = 1;
			d->st = A_CODE;
			break;
		}
		d->st = A_SKIP;
		d->nest = c == '{' || c == '[';
		d->skip_str = c == '"';
		break;
	case A_SKIP:
		skip_byte(d, c);
		break;
	case A_AFTER:
		if (c == ',')
			d->st = A_KEYWAIT;
		else if (!is_ws(c))
			d->st = A_FIN;
		break;
	default:
		break;
	}
}

int
llm_argcode_feed(struct llm_argcode *d, const char *p, size_t n)
{
	size_t before = d->out.len;

	for (size_t i = 0; i < n && d->st != A_FIN; ) {
		if (d->st >= A_CODE && d->st <= A_LOWU) {
			if (code_byte(d, p[i]))
				i++;
		} else {
			object_byte(d, p[i]);
			i++;
		}
	}
	return utf8_complete_prefix(buf_str(&d->out), d->out.len) !=
	    utf8_complete_prefix(buf_str(&d->out), before);
}

const char *
llm_argcode_text(const struct llm_argcode *d, size_t *len)
{
	*len = utf8_complete_prefix(buf_str(&d->out), d->out.len);
	return buf_str(&d->out);
}

int
llm_argcode_done(const struct llm_argcode *d)
{
	return d->found == 2;
}
