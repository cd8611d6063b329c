/* sse: Server-Sent Events parser. Bytes are split into lines on CR, LF
 * or CRLF (a CR ending one read and the LF starting the next count as
 * one terminator), lines into fields, fields into events. Pure. */
#include "terp/sse.h"

#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/util.h"

struct sse {
	sse_event_fn	 cb;
	void		*arg;
	struct buf	 line;		/* the line being read */
	struct buf	 data;		/* data of the pending event */
	struct buf	 type;		/* event: of the pending event */
	struct buf	 id;		/* last event id */
	int		 skip_lf;	/* the last byte was a CR */
	int		 bom;		/* BOM bytes matched at the start, -1 done */
	long		 retry;
	const char	*err;
	int		 failed;	/* -1 after an error, else 0 */
};

static const unsigned char bom_bytes[3] = { 0xef, 0xbb, 0xbf };

struct sse *
sse_new(size_t max_line, size_t max_event, sse_event_fn cb, void *arg)
{
	struct sse *p = xcalloc(1, sizeof *p);

	p->cb = cb;
	p->arg = arg;
	buf_init(&p->line, max_line);
	buf_init(&p->data, max_event);
	buf_init(&p->type, max_line);
	buf_init(&p->id, max_line);
	p->retry = -1;
	return p;
}

void
sse_free(struct sse *p)
{
	if (p == NULL)
		return;
	buf_free(&p->line);
	buf_free(&p->data);
	buf_free(&p->type);
	buf_free(&p->id);
	free(p);
}

const char *
sse_error(const struct sse *p)
{
	return p->err;
}

long
sse_retry(const struct sse *p)
{
	return p->retry;
}

static int
fail(struct sse *p, const char *why)
{
	p->err = why;
	p->failed = -1;
	return -1;
}

static int
emit(struct sse *p, const char *type, const char *data, size_t len)
{
	struct sse_event ev;

	ev.type = type;
	ev.data = data;
	ev.len = len;
	ev.id = buf_str(&p->id);
	return p->cb(p->arg, &ev);
}

/* A blank line: deliver the pending event, if it has data. */
static int
dispatch(struct sse *p)
{
	int r = 0;

	if (p->data.len > 0) {
		size_t len = p->data.len - 1;	/* the last '\n' goes */
		p->data.data[len] = '\0';
		r = emit(p, p->type.len ? buf_str(&p->type) : "message",
		    p->data.data, len);
	}
	buf_reset(&p->data);
	buf_reset(&p->type);
	return r;
}

static int
all_digits(const char *s, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

static int
field(struct sse *p, const char *name, size_t nlen, const char *v, size_t vlen)
{
#define IS(s) (nlen == sizeof(s) - 1 && memcmp(name, s, nlen) == 0)
	if (IS("data")) {
		if (buf_add(&p->data, v, vlen) < 0 || buf_addc(&p->data, '\n') < 0)
			return fail(p, "SSE event too big");
	} else if (IS("event")) {
		buf_reset(&p->type);
		if (buf_add(&p->type, v, vlen) < 0)
			return fail(p, "SSE event name too long");
	} else if (IS("id")) {
		if (memchr(v, '\0', vlen) == NULL) {
			buf_reset(&p->id);
			if (buf_add(&p->id, v, vlen) < 0)
				return fail(p, "SSE id too long");
		}
	} else if (IS("retry")) {
		if (all_digits(v, vlen) && vlen < 10)
			p->retry = strtol(v, NULL, 10);
	} else if (IS("error")) {
		/* Non-standard (old llama.cpp): an error outside data:. The
		 * value may hold NUL bytes: copy it whole. */
		char *s = xmalloc(vlen + 1);
		int r;
		memcpy(s, v, vlen);
		s[vlen] = '\0';
		r = emit(p, "error", s, vlen);
		free(s);
		return r;
	}
	return 0;
#undef IS
}

/* One line, s (n bytes, without its end; not NUL-terminated). */
static int
line(struct sse *p, const char *s, size_t n)
{
	const char *colon;
	int r;

	if (n == 0)
		return dispatch(p);
	if (s[0] == ':')
		return 0;	/* a comment: keep-alive */
	colon = memchr(s, ':', n);
	if (colon == NULL)
		return field(p, s, n, "", 0);
	{
		size_t nlen = (size_t)(colon - s);
		const char *v = colon + 1;
		size_t vlen = n - nlen - 1;
		if (vlen > 0 && *v == ' ') {
			v++;
			vlen--;
		}
		r = field(p, s, nlen, v, vlen);
	}
	return r;
}

static int
feed(struct sse *p, const unsigned char *s, size_t len)
{
	size_t i = 0;
	int r;

	while (i < len) {
		size_t j;

		if (p->skip_lf) {
			p->skip_lf = 0;
			if (s[i] == '\n') {
				i++;
				continue;
			}
		}
		/* the line's end: two vector scans, not a byte loop */
		{
			const unsigned char *nl = memchr(s + i, '\n', len - i);
			const unsigned char *cr;
			j = nl != NULL ? (size_t)(nl - s) : len;
			cr = memchr(s + i, '\r', j - i);
			if (cr != NULL)
				j = (size_t)(cr - s);
		}
		if (j < len && p->line.len == 0 && j - i <= p->line.max) {
			/* A whole line in this read: read in place. */
			if (s[j] == '\r')
				p->skip_lf = 1;
			r = line(p, (const char *)s + i, j - i);
		} else {
			if (buf_add(&p->line, s + i, j - i) < 0)
				return fail(p, "SSE line too long");
			if (j == len)
				break;
			if (s[j] == '\r')
				p->skip_lf = 1;
			r = line(p, p->line.data, p->line.len);
			buf_reset(&p->line);
		}
		if (r != 0)
			return r;
		i = j + 1;
	}
	return 0;
}

int
sse_feed(struct sse *p, const void *data, size_t len)
{
	const unsigned char *s = data;

	if (p->failed)
		return -1;
	/* One BOM at the very start is dropped; it may come split. */
	while (p->bom >= 0 && len > 0) {
		if (*s == bom_bytes[p->bom]) {
			s++;
			len--;
			if (++p->bom == 3)
				p->bom = -1;
		} else {
			int matched = p->bom, r;
			p->bom = -1;
			if (matched > 0 && (r = feed(p, bom_bytes, (size_t)matched)) != 0)
				return r;
		}
	}
	return feed(p, s, len);
}

int
sse_finish(struct sse *p)
{
	int r;

	if (p->failed)
		return -1;
	if (p->bom > 0) {
		int matched = p->bom;
		p->bom = -1;
		if ((r = feed(p, bom_bytes, (size_t)matched)) != 0)
			return r;
	}
	if (p->line.len > 0) {
		r = line(p, p->line.data, p->line.len);
		buf_reset(&p->line);
		if (r != 0)
			return r;
	}
	return dispatch(p);
}
