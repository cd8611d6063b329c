/* outnorm: carriage returns and backspaces resolved as a notebook
 * shows them, and the coalescing of a cell's output stream. */
#include "terp/outnorm.h"

#include <stdlib.h>
#include <string.h>

#include "terp/sanitize.h"
#include "terp/util.h"

/* The text being resolved: committed lines, then the current line from
 * b[line] to b[len) with the cursor at b[cur]. Every byte in b is a byte
 * of the input that was not overwritten, so b never needs more than the
 * input's length. */
struct res {
	char	*b;
	size_t	 len, line, cur;
};

static size_t
cp_len(const char *s, size_t n)
{
	unsigned cp;
	size_t k = utf8_decode(s, n, &cp);

	return k ? k : 1;	/* an invalid byte is one character */
}

/* Writes the run s[0..m) (no control the resolver acts on) at the
 * cursor, over as many characters as it has. */
static void
res_write(struct res *r, const char *s, size_t m)
{
	size_t e = r->cur;

	for (size_t i = 0; i < m && e < r->len; i += cp_len(s + i, m - i))
		e += cp_len(r->b + e, r->len - e);
	if (e - r->cur != m) {
		memmove(r->b + r->cur + m, r->b + e, r->len - e);
		r->len = r->len - (e - r->cur) + m;
	}
	memcpy(r->b + r->cur, s, m);
	r->cur += m;
}

static void
res_back(struct res *r)
{
	if (r->cur <= r->line)
		return;
	r->cur--;
	for (int i = 0; i < 3 && r->cur > r->line &&
	    ((unsigned char)r->b[r->cur] & 0xC0) == 0x80; i++)
		r->cur--;
}

/* Resolves s[0..n) into r, which holds the lines before (its current
 * line starts empty). */
static void
res_feed(struct res *r, const char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t m = i;
		while (m < n && s[m] != '\r' && s[m] != '\n' && s[m] != '\b')
			m++;
		if (m > i)
			res_write(r, s + i, m - i);
		if (m >= n)
			break;
		if (s[m] == '\n') {
			r->cur = r->len;
			r->b[r->len++] = '\n';
			r->line = r->cur = r->len;
		} else if (s[m] == '\r') {
			if (m + 1 < n && s[m + 1] == '\n') {
				i = m + 1;
				continue;
			}
			r->cur = r->line;
		} else {
			res_back(r);
		}
		i = m + 1;
	}
}

char *
outnorm_text(const char *s, size_t n, size_t *len)
{
	struct res r = { xmalloc(n + 1), 0, 0, 0 };

	res_feed(&r, s, n);
	r.b[r.len] = '\0';
	if (len)
		*len = r.len;
	return r.b;
}

/* ------------------------------------------------------------ stream */

void
outnorm_init(struct outnorm *o, size_t max)
{
	memset(o, 0, sizeof *o);
	o->max = max ? max : 1;
}

void
outnorm_free(struct outnorm *o)
{
	free(o->p);
	outnorm_init(o, o->max);
}

size_t
outnorm_pending(const struct outnorm *o)
{
	return o->len;
}

/* One piece out: resolved within itself. When what went out before
 * ends inside a line, that line's first rewrite must reach the reader:
 * the piece's text before it goes as it is, then the "\r", then the
 * rest resolved on a line of its own (overwriting composes). */
static void
emit_piece(struct outnorm *o, const char *s, size_t n, outnorm_fn emit, void *arg)
{
	struct res r;

	if (n == 0)
		return;
	/* Most output rewrites nothing: it resolves to itself, so it goes
	 * out as it is, without a copy or a byte-by-byte walk (a cell
	 * printing 256 MB spent a fifth of terp's time here). */
	if (memchr(s, '\r', n) == NULL && memchr(s, '\b', n) == NULL) {
		emit(arg, s, n);
		o->midline = s[n - 1] != '\n';
		return;
	}
	r.b = xmalloc(2 * n + 2);	/* the text, "\r" and the line again */
	r.len = r.line = r.cur = 0;
	if (o->midline) {
		size_t fl = 0, i;
		while (fl < n && s[fl] != '\n')
			fl++;
		for (i = 0; i < fl; i++)
			if (s[i] == '\r' && (i + 1 >= n || s[i + 1] != '\n'))
				break;
		if (i < fl) {
			memcpy(r.b, s, i + 1);
			r.len = r.line = r.cur = i + 1;
			res_feed(&r, s + i + 1, n - i - 1);
		} else {
			size_t k = fl < n ? fl + 1 : n;
			memcpy(r.b, s, k);
			r.len = r.line = r.cur = k;
			res_feed(&r, s + k, n - k);
		}
	} else {
		res_feed(&r, s, n);
	}
	if (r.cur < r.len) {
		/* The cursor is inside the line (a shorter rewrite): the
		 * reader's goes there too, by writing the same again. */
		size_t k = r.cur - r.line;
		r.b[r.len++] = '\r';
		memcpy(r.b + r.len, r.b + r.line, k);
		r.len += k;
	}
	if (r.len > 0) {
		emit(arg, r.b, r.len);
		o->midline = r.b[r.len - 1] != '\n';
	}
	free(r.b);
}

void
outnorm_flush(struct outnorm *o, int final, outnorm_fn emit, void *arg)
{
	size_t m = o->len;
	int hold = 0;

	if (m > 0 && o->p[m - 1] == '\r') {
		m--;
		hold = !final;
	}
	emit_piece(o, o->p, m, emit, arg);
	o->len = 0;
	if (hold)
		o->p[o->len++] = '\r';
	if (final)
		o->midline = 0;
}

void
outnorm_add(struct outnorm *o, const char *p, size_t n, outnorm_fn emit, void *arg)
{
	size_t from = o->len;
	const char *nl;

	if (n == 0)
		return;
	if (o->len + n > o->max) {
		outnorm_flush(o, 0, emit, arg);
		if (o->len + n > o->max) {
			/* a write longer than the bound: out at once, with
			 * the held '\r' in front */
			char *t = xmalloc(o->len + n);
			memcpy(t, o->p, o->len);
			memcpy(t + o->len, p, n);
			emit_piece(o, t, o->len + n, emit, arg);
			o->len = 0;
			free(t);
			return;
		}
		from = o->len;
	}
	if (o->len + n > o->cap) {
		size_t cap = o->cap ? o->cap : 256;
		while (cap < o->len + n)
			cap *= 2;
		o->p = xrealloc(o->p, cap);
		o->cap = cap;
	}
	memcpy(o->p + o->len, p, n);
	o->len += n;
	/* up to the last whole line (memrchr: a long line without one
	 * was walked byte by byte) */
	if ((nl = memrchr(o->p + from, '\n', o->len - from)) != NULL) {
		size_t k = (size_t)(nl - o->p) + 1;
		emit_piece(o, o->p, k, emit, arg);
		memmove(o->p, o->p + k, o->len - k);
		o->len -= k;
	}
}
