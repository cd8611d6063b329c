/* outdisp: display regions in a cell's stream (see the header for the
 * format), resolved for readers of the notebook and unmarked for a live
 * reader. */
#include "terp/outdisp.h"

#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/outnorm.h"
#include "terp/util.h"

#define PREFIX_LEN	(sizeof OUTDISP_MARK - 1)
/* "update;text/markdown;" and an id: a longer header is not a mark */
#define HEADER_MAX	(32 + OUTDISP_ID_MAX)
/* ids whose updates are followed; a cell with more gets the first ones */
#define IDS_MAX		256

enum mark { M_NONE, M_SHOW, M_UPDATE, M_END, M_CLEAR };

struct mark_at {
	enum mark	 kind;
	size_t		 len;		/* the mark line, its '\n' included */
	int		 markdown;
	const char	*id;
	size_t		 id_len;
};

/* The next occurrence of the prefix in s[from..n), or n. */
static size_t
find_prefix(const char *s, size_t n, size_t from)
{
	while (from + PREFIX_LEN <= n) {
		const char *e = memchr(s + from, '\x1b', n - from);
		if (e == NULL)
			break;
		from = (size_t)(e - s);
		if (from + PREFIX_LEN <= n &&
		    memcmp(s + from, OUTDISP_MARK, PREFIX_LEN) == 0)
			return from;
		from++;
	}
	return n;
}

static int
id_ok(const char *p, size_t n)
{
	if (n > OUTDISP_ID_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_'))
			return 0;
	}
	return 1;
}

/* Parses the mark at s[at] (the prefix is there). m->kind is M_NONE when
 * it is malformed: then it is text. */
static void
parse_mark(const char *s, size_t n, size_t at, struct mark_at *m)
{
	const char *h = s + at + PREFIX_LEN, *bel, *semi;
	size_t room = n - at - PREFIX_LEN, hl;

	memset(m, 0, sizeof *m);
	bel = memchr(h, '\a', room < HEADER_MAX ? room : HEADER_MAX);
	if (bel == NULL)
		return;
	hl = (size_t)(bel - h);
	m->len = PREFIX_LEN + hl + 1;
	if (at + m->len < n) {
		if (s[at + m->len] != '\n')
			return;
		m->len++;
	}
	if (hl == 3 && memcmp(h, "end", 3) == 0) {
		m->kind = M_END;
		return;
	}
	if (hl == 5 && memcmp(h, "clear", 5) == 0) {
		m->kind = M_CLEAR;
		return;
	}
	if (hl > 5 && memcmp(h, "show;", 5) == 0)
		h += 5, hl -= 5, m->kind = M_SHOW;
	else if (hl > 7 && memcmp(h, "update;", 7) == 0)
		h += 7, hl -= 7, m->kind = M_UPDATE;
	else
		return;
	if (hl >= 14 && memcmp(h, "text/markdown;", 14) == 0)
		h += 14, hl -= 14, m->markdown = 1;
	else if (hl >= 11 && memcmp(h, "text/plain;", 11) == 0)
		h += 11, hl -= 11;
	else
		hl = (size_t)-1;
	semi = hl != (size_t)-1 ? memchr(h, ';', hl) : NULL;
	if (hl == (size_t)-1 || semi != NULL || !id_ok(h, hl)) {
		m->kind = M_NONE;
		return;
	}
	m->id = h;
	m->id_len = hl;
}

/* The next well-formed mark in s[from..n), parsed into *m; n when none
 * (a malformed one is text: the search goes on past it). */
static size_t
next_mark(const char *s, size_t n, size_t from, struct mark_at *m)
{
	while ((from = find_prefix(s, n, from)) < n) {
		parse_mark(s, n, from, m);
		if (m->kind != M_NONE)
			return from;
		from++;
	}
	return n;
}

/* ------------------------------------------------------------ items */

/* A stretch of prints or a region, pointing into the input. */
struct item {
	const char	*p;
	size_t		 n;
	int		 region, update, markdown;
	const char	*id;
	size_t		 id_len;
	const char	*shown;		/* a region: the content it shows */
	size_t		 shown_n;
	int		 shown_md;	/* and its mime's */
};

struct items {
	struct item	*v;
	size_t		 n, cap;
};

static struct item *
items_add(struct items *it)
{
	if (it->n == it->cap) {
		it->cap = it->cap ? it->cap * 2 : 16;
		it->v = xrealloc(it->v, it->cap * sizeof *it->v);
	}
	memset(&it->v[it->n], 0, sizeof it->v[0]);
	return &it->v[it->n++];
}

static void
add_text(struct items *it, const char *p, size_t n)
{
	if (n > 0) {
		struct item *t = items_add(it);
		t->p = p;
		t->n = n;
	}
}

/* Splits s into stretches of prints and regions. */
static void
split(const char *s, size_t n, struct items *it)
{
	size_t at = 0, text = 0;
	struct item *open = NULL;	/* index-stable: re-found by n */
	size_t open_i = 0, content = 0;

	struct mark_at m;

	while ((at = next_mark(s, n, at, &m)) < n) {
		if (open != NULL) {
			open = &it->v[open_i];
			open->p = s + content;
			open->n = at - content;
			open = NULL;
		} else {
			/* the line break written before a mark so that it
			 * starts a line (a region starts one anyway) */
			size_t e = m.kind != M_END && at > text &&
			    s[at - 1] == '\n' ? at - 1 : at;
			add_text(it, s + text, e - text);
		}
		if (m.kind == M_CLEAR)
			it->n = 0;	/* clear_output(): what came before goes */
		else if (m.kind != M_END) {
			struct item *r = items_add(it);
			r->region = 1;
			r->update = m.kind == M_UPDATE;
			r->markdown = m.markdown;
			r->id = m.id;
			r->id_len = m.id_len;
			open = r;
			open_i = it->n - 1;
			content = at + m.len;
		}
		at += m.len;
		text = at;
	}
	if (open != NULL) {
		it->v[open_i].p = s + content;
		it->v[open_i].n = n - content;
	} else {
		add_text(it, s + text, n - text);
	}
}

struct idlast {
	const char	*id;
	size_t		 id_len;
	const struct item *update;	/* the last update of the id */
};

/* What each region shows: its id's last update after it, else itself
 * (Jupyter updates every output of the id that exists). One pass from
 * the end. */
static void
apply_updates(struct items *it)
{
	struct idlast ids[IDS_MAX];
	size_t nids = 0;

	for (size_t k = it->n; k-- > 0;) {
		struct item *r = &it->v[k];
		size_t j;
		if (!r->region)
			continue;
		r->shown = r->p;
		r->shown_n = r->n;
		r->shown_md = r->markdown;
		if (r->id_len == 0)
			continue;
		for (j = 0; j < nids; j++)
			if (ids[j].id_len == r->id_len &&
			    memcmp(ids[j].id, r->id, r->id_len) == 0)
				break;
		if (r->update) {
			if (j == nids && nids < IDS_MAX) {
				ids[nids].id = r->id;
				ids[nids].id_len = r->id_len;
				ids[nids++].update = r;
			}
		} else if (j < nids) {
			r->shown = ids[j].update->p;
			r->shown_n = ids[j].update->n;
			r->shown_md = ids[j].update->markdown;
		}
	}
}

static void
add_span(struct outdisp_span **v, size_t *n, size_t *cap, size_t off,
    size_t len, int md)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		*v = xrealloc(*v, *cap * sizeof **v);
	}
	(*v)[*n].off = off;
	(*v)[*n].len = len;
	(*v)[(*n)++].markdown = md;
}

static void
put_resolved(struct buf *b, const char *p, size_t n)
{
	size_t k;
	char *t = outnorm_text(p, n, &k);

	buf_add(b, t, k);
	free(t);
}

char *
outdisp_resolve(const char *s, size_t n, size_t *len,
    struct outdisp_span **spans, size_t *nspans)
{
	struct items it = { 0 };
	struct buf b;
	struct outdisp_span *sv = NULL;
	size_t sn = 0, scap = 0;
	/* an id shown by many regions repeats its update: bounded */
	size_t budget = n + (64u << 10);

	buf_init(&b, (size_t)-1);
	split(s, n, &it);
	apply_updates(&it);
	for (size_t k = 0; k < it.n; k++) {
		const struct item *r = &it.v[k];
		if (!r->region) {
			put_resolved(&b, r->p, r->n);
			continue;
		}
		if (r->update)
			continue;
		const char *p = r->shown;
		size_t m = r->shown_n;
		int md = r->shown_md;
		if (p != r->p && b.len + m > budget) {
			p = r->p;
			m = r->n;
			md = r->markdown;
		}
		while (m > 0 && p[m - 1] == '\n')
			m--;
		if (m == 0)
			continue;
		if (b.len > 0 && b.data[b.len - 1] != '\n')
			buf_add(&b, "\n", 1);
		size_t off = b.len;
		put_resolved(&b, p, m);
		buf_add(&b, "\n", 1);
		add_span(&sv, &sn, &scap, off, b.len - off, md);
	}
	free(it.v);
	if (spans != NULL) {
		*spans = sv;
		*nspans = sn;
	} else {
		free(sv);
	}
	if (len)
		*len = b.len;
	return buf_take(&b);
}

int
outdisp_has(const char *s, size_t n)
{
	return find_prefix(s, n, 0) < n;
}

char *
outdisp_unmark(const char *s, size_t n, size_t *len)
{
	struct buf b;
	size_t at = 0, from = 0;

	buf_init(&b, (size_t)-1);
	struct mark_at m;

	while ((at = next_mark(s, n, at, &m)) < n) {
		/* the line break before a mark goes with it when the text
		 * before ends a line without it */
		size_t e = at;
		if (m.kind != M_END && e > from && s[e - 1] == '\n' &&
		    (e - 1 == from || s[e - 2] == '\n'))
			e--;
		buf_add(&b, s + from, e - from);
		at += m.len;
		from = at;
	}
	buf_add(&b, s + from, n - from);
	if (len)
		*len = b.len;
	return buf_take(&b);
}

char *
outdisp_region(const char *text, size_t n, int markdown, const char *id,
    int update, size_t *len)
{
	struct buf b;
	size_t k = 0;

	buf_init(&b, (size_t)-1);
	buf_printf(&b, "\n%s%s;%s;", OUTDISP_MARK, update ? "update" : "show",
	    markdown ? "text/markdown" : "text/plain");
	for (; id != NULL && id[k] != '\0' && k < OUTDISP_ID_MAX; k++)
		buf_addc(&b, id_ok(id + k, 1) ? id[k] : '_');
	buf_adds(&b, "\a\n");
	buf_add(&b, text, n);
	if (n == 0 || text[n - 1] != '\n')
		buf_addc(&b, '\n');
	buf_printf(&b, "%send\a\n", OUTDISP_MARK);
	if (len)
		*len = b.len;
	return buf_take(&b);
}
