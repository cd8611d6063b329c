/* numtrace: numbers in an answer traced to the numbers the cells
 * printed. One scanner finds numbers in answers, questions and outputs
 * (with more rules for prose); the index keeps each source's numbers
 * sorted by absolute value, so one answer number costs one binary search
 * per source, newest source first. */
#include "terp/numtrace.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "terp/util.h"

#include "numscan.h"

/* One indexed output number. */
struct nt_ent {
	double		 key;	/* fabs(v): the sort key */
	double		 v;	/* as printed (or derived: 48% gives 0.48) */
	size_t		 off;
	uint32_t	 len;
	uint32_t	 line;
};

/* Row counts an output shows, kept per source: an answer's "the top 3"
 * or "4 regions" is a count of what was shown, not a result. */
#define NT_COUNTS_MAX	32

struct nt_src {
	int		 cell, stream, rank;
	uint64_t	 seq;
	struct nt_ent	*e;
	size_t		 n, cap;
	unsigned	 counts[NT_COUNTS_MAX];	/* distinct, unsorted */
	int		 ncounts;
};

struct numtrace_index {
	struct nt_src	**src;	/* sorted by (cell, rank, seq) */
	size_t		  n, cap;
	uint64_t	  seq;
	size_t		  total;
};

/* Index */

static int
nt_rank(int stream)
{
	/* stdout first, then the value, then stderr (warnings carry line
	 * numbers and sizes that are rarely what an answer reports) */
	return stream == NUMTRACE_STDOUT ? 2 : stream == NUMTRACE_VALUE ? 1 : 0;
}

static void
nt_src_push(struct nt_src *src, double v, const struct numscan_tok *t)
{
	struct nt_ent *e;

	if (src->n == src->cap) {
		src->cap = src->cap ? src->cap * 2 : 64;
		src->e = xrealloc(src->e, src->cap * sizeof *src->e);
	}
	e = &src->e[src->n++];
	e->key = fabs(v);
	e->v = v;
	e->off = t->off;
	e->len = (uint32_t)t->len;
	e->line = (uint32_t)t->line;
}

static int
nt_on_output(void *ctx, const struct numscan_tok *t)
{
	struct nt_src *src = ctx;

	if (src->n + 3 > NUMTRACE_MAX_PER_SOURCE)
		return 1;
	nt_src_push(src, t->value, t);
	/* 48% is also 0.48 and 3.4M also 3.4: an answer may report either */
	if (t->flags & NT_PCT)
		nt_src_push(src, t->value / 100, t);
	if (t->flags & NT_MAG)
		nt_src_push(src, t->value / t->mult, t);
	return 0;
}

static void
nt_count_add(struct nt_src *src, unsigned c)
{
	for (int i = 0; i < src->ncounts; i++)
		if (src->counts[i] == c)
			return;
	if (c > 1 && src->ncounts < NT_COUNTS_MAX)
		src->counts[src->ncounts++] = c;
}

/* The fields of line s[a..e), split at runs of spaces. */
static unsigned
nt_fields(const char *s, size_t a, size_t e)
{
	unsigned f = 0;
	int in = 0;

	for (size_t k = a; k < e; k++) {
		int sp = s[k] == ' ' || s[k] == '\t';
		if (!sp && !in)
			f++;
		in = !sp;
	}
	return f;
}

/* The row counts of text[0..n): each run of table rows (lines holding a
 * digit, with as many fields as the line before: a Series' or a frame's
 * rows between its header and its "Name:"/"dtype:" footer). */
static void
nt_src_counts(struct nt_src *src, const char *text, size_t n)
{
	size_t i = 0;
	unsigned run = 0, width = 0;

	while (i < n) {
		const char *nl = memchr(text + i, '\n', n - i);
		size_t e = nl ? (size_t)(nl - text) : n;
		unsigned f = nt_fields(text, i, e);
		int digit = 0;

		for (size_t k = i; k < e && !digit; k++)
			digit = numscan_digit((unsigned char)text[k]);
		if (numscan_at(text, e, i, "Name:") || numscan_at(text, e, i, "dtype:") ||
		    numscan_at(text, e, i, "Length:"))
			digit = 0;
		if (!digit || (run > 0 && f != width)) {
			nt_count_add(src, run);
			run = 0;
		}
		if (digit) {
			run++;
			width = f;
		}
		i = e + 1;
	}
	nt_count_add(src, run);
}

static int
nt_ent_cmp(const void *a, const void *b)
{
	const struct nt_ent *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

struct numtrace_index *
numtrace_index_new(void)
{
	return xcalloc(1, sizeof(struct numtrace_index));
}

static void
nt_src_free(struct nt_src *src)
{
	free(src->e);
	free(src);
}

void
numtrace_index_free(struct numtrace_index *idx)
{
	if (idx == NULL)
		return;
	for (size_t i = 0; i < idx->n; i++)
		nt_src_free(idx->src[i]);
	free(idx->src);
	free(idx);
}

/* 1 when a sorts after b: (cell, rank, seq). */
static int
nt_src_after(const struct nt_src *a, const struct nt_src *b)
{
	if (a->cell != b->cell)
		return a->cell > b->cell;
	if (a->rank != b->rank)
		return a->rank > b->rank;
	return a->seq > b->seq;
}

size_t
numtrace_index_add(struct numtrace_index *idx,
    const struct numtrace_source *src)
{
	struct numscan sc;
	struct nt_src *ns;
	size_t k;

	ns = xcalloc(1, sizeof *ns);
	ns->cell = src->cell;
	ns->stream = src->stream;
	ns->rank = nt_rank(src->stream);
	ns->seq = idx->seq++;
	memset(&sc, 0, sizeof sc);
	sc.s = src->text;
	sc.n = src->text != NULL ? src->len : 0;
	sc.mode = 0;
	sc.emit = nt_on_output;
	sc.ctx = ns;
	numscan_run(&sc);
	if (ns->n == 0) {
		nt_src_free(ns);
		return 0;
	}
	nt_src_counts(ns, sc.s, sc.n);
	qsort(ns->e, ns->n, sizeof *ns->e, nt_ent_cmp);
	if (idx->n == idx->cap) {
		idx->cap = idx->cap ? idx->cap * 2 : 16;
		idx->src = xrealloc(idx->src, idx->cap * sizeof *idx->src);
	}
	/* Cells arrive in order, so this is an append but for re-runs. */
	for (k = idx->n; k > 0 && nt_src_after(idx->src[k - 1], ns); k--)
		idx->src[k] = idx->src[k - 1];
	idx->src[k] = ns;
	idx->n++;
	idx->total += ns->n;
	return ns->n;
}

void
numtrace_index_drop_cell(struct numtrace_index *idx, int cell)
{
	size_t j = 0;

	for (size_t i = 0; i < idx->n; i++) {
		if (idx->src[i]->cell == cell) {
			idx->total -= idx->src[i]->n;
			nt_src_free(idx->src[i]);
		} else {
			idx->src[j++] = idx->src[i];
		}
	}
	idx->n = j;
}

size_t
numtrace_index_count(const struct numtrace_index *idx)
{
	return idx->total;
}

/* The first entry whose key is >= x. */
static size_t
nt_lower(const struct nt_ent *e, size_t n, double x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (e[mid].key < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Half the unit of the last digit shown, with slack for the binary
 * representation of both numbers (10.045 printed is 10.04499999...). */
static double
nt_tol(double target, double step)
{
	return 0.5 * step * (1 + 1e-7) + fabs(target) * 1e-12;
}

/* Finds the source of one answer number; fills h's source fields. */
static int
nt_lookup(const struct numtrace_index *idx, const struct numscan_tok *t,
    struct numtrace_hit *h)
{
	double tg[2], tol[2];
	int nc = 1;

	tg[0] = fabs(t->value);
	tol[0] = nt_tol(tg[0], t->step);
	if (t->flags & NT_PCT) {
		tg[1] = tg[0] / 100;
		tol[1] = nt_tol(tg[1], t->step / 100);
		nc = 2;
	}
	for (size_t k = idx->n; k-- > 0; ) {
		const struct nt_src *src = idx->src[k];
		const struct nt_ent *best = NULL;
		double bd = 0;

		for (int c = 0; c < nc; c++) {
			for (size_t j = nt_lower(src->e, src->n, tg[c] - tol[c]);
			    j < src->n && src->e[j].key <= tg[c] + tol[c]; j++) {
				const struct nt_ent *e = &src->e[j];
				double d = fabs(e->key - tg[c]) /
				    (tol[c] > 0 ? tol[c] : 1);
				if (best == NULL || d < bd || (d == bd &&
				    e->line < best->line)) {
					best = e;
					bd = d;
				}
			}
		}
		if (best != NULL) {
			h->cell = src->cell;
			h->stream = src->stream;
			h->line = (int)best->line;
			h->src_off = best->off;
			h->src_len = best->len;
			h->matched = best->v;
			return 1;
		}
	}
	return 0;
}

/* The question's numbers, sorted by absolute value. */
struct nt_qset {
	double		*v;
	size_t		 n, cap;
};

static int
nt_on_question(void *ctx, const struct numscan_tok *t)
{
	struct nt_qset *q = ctx;

	if (q->n == q->cap) {
		q->cap = q->cap ? q->cap * 2 : 16;
		q->v = xrealloc(q->v, q->cap * sizeof *q->v);
	}
	q->v[q->n++] = fabs(t->value);
	return 0;
}

static int
nt_dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int
nt_in_question(const struct nt_qset *q, double v)
{
	size_t lo = 0, hi = q->n;
	double x = fabs(v), eps = x * 1e-9;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (q->v[mid] < x - eps)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < q->n && q->v[lo] <= x + eps;
}

/* A plain integer: no sign, fraction, unit, separator or magnitude. */
static int
nt_plain_int(const struct numscan_tok *t)
{
	return (t->flags & (NT_PCT | NT_FRAC | NT_EXP | NT_CUR | NT_MAG |
	    NT_GROUP | NT_NEG)) == 0 && t->value <= 100000;
}

/* An integer that names a thing rather than measuring it:
 * "observation number 1", "month 01", "day 3", "step 2", "#4". */
static int
nt_label(const char *s, size_t n, const struct numscan_tok *t)
{
	static const char *const w[] = { "number", "no", "nr", "num",
	    "observation", "obs", "item", "step", "option", "figure", "fig",
	    "table", "section", "page", "part", "chapter", "month", "day",
	    "week", "weekday", "hour", "minute", "quarter", "id", "index",
	    "rank", "ranked", "position", "place", "version", "level", "tier",
	    "line", "lines", "column", "col", "row", "sample", "case",
	    "iteration", "run", "batch", "trial", "question", "point",
	    "stage", "phase", "round", "model", "cluster", "fold", "seed",
	    "code", "exit" };
	size_t l, b;

	(void)n;
	if (!nt_plain_int(t))
		return 0;
	if (t->off > 0 && s[t->off - 1] == '#')
		return 1;
	l = numscan_prev_word(s, t->off, " \t.", &b);
	return l > 0 && numscan_is(s + b, l, w, sizeof w / sizeof w[0]);
}

/* An integer that counts what an output showed: "the top 3",
 * "4 regions", when some output has a run of exactly that many rows. */
static int
nt_count(const struct numtrace_index *idx, const char *s, size_t n,
    const struct numscan_tok *t)
{
	static const char *const before[] = { "top", "bottom", "first",
	    "last", "all", "the", "these", "those", "other", "across" };
	size_t l, b;
	unsigned v;
	int ctx;

	if (!nt_plain_int(t) || t->value < 2 || t->value > 10000)
		return 0;
	v = (unsigned)t->value;
	l = numscan_prev_word(s, t->off, " \t", &b);
	ctx = l > 0 && numscan_is(s + b, l, before, sizeof before / sizeof before[0]);
	if (!ctx) {
		/* "3 regions": a word follows */
		l = numscan_next_word(s, n, t->off + t->len, &b);
		ctx = l > 1 && t->off + t->len < n && s[t->off + t->len] == ' ' &&
		    numscan_alpha((unsigned char)s[b]);
	}
	if (!ctx)
		return 0;
	for (size_t k = 0; k < idx->n; k++)
		for (int i = 0; i < idx->src[k]->ncounts; i++)
			if (idx->src[k]->counts[i] == v)
				return 1;
	return 0;
}

struct nt_match {
	const char			*s;	/* the answer */
	size_t				 len;
	const struct numtrace_index	*idx;
	const struct nt_qset		*q;
	struct numtrace_hit		*h;
	size_t				 n, cap, traced;
};

static int
nt_on_answer(void *ctx, const struct numscan_tok *t)
{
	struct nt_match *m = ctx;
	struct numtrace_hit *h;

	if (nt_in_question(m->q, t->value) || nt_label(m->s, m->len, t) ||
	    nt_count(m->idx, m->s, m->len, t))
		return 0;
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 16;
		m->h = xrealloc(m->h, m->cap * sizeof *m->h);
	}
	h = &m->h[m->n++];
	memset(h, 0, sizeof *h);
	h->off = t->off;
	h->len = t->len;
	h->value = t->value;
	h->percent = (t->flags & NT_PCT) != 0;
	if (nt_lookup(m->idx, t, h))
		m->traced++;
	else if (numscan_yearlike(t))
		m->n--;
	return 0;
}

size_t
numtrace_index_match(const struct numtrace_index *idx, const char *answer,
    size_t alen, const char *question, size_t qlen,
    struct numtrace_hit **hits, size_t *traced)
{
	struct nt_qset q = { 0 };
	struct nt_match m = { 0 };
	struct numscan sc;

	if (question != NULL && qlen > 0) {
		memset(&sc, 0, sizeof sc);
		sc.s = question;
		sc.n = qlen;
		sc.mode = NT_SPACEGRP;
		sc.emit = nt_on_question;
		sc.ctx = &q;
		numscan_run(&sc);
		if (q.n > 1)
			qsort(q.v, q.n, sizeof *q.v, nt_dbl_cmp);
	}
	m.idx = idx;
	m.q = &q;
	m.s = answer;
	m.len = alen;
	if (answer != NULL) {
		memset(&sc, 0, sizeof sc);
		sc.s = answer;
		sc.n = alen;
		sc.mode = NT_SPACEGRP | NT_PROSE | NT_MD;
		sc.emit = nt_on_answer;
		sc.ctx = &m;
		numscan_run(&sc);
	}
	free(q.v);
	*hits = m.h;
	if (traced != NULL)
		*traced = m.traced;
	return m.n;
}

size_t
numtrace_answer(const char *answer, const char *question,
    const struct numtrace_source *src, size_t nsrc,
    struct numtrace_hit **hits, size_t *traced)
{
	struct numtrace_index *idx = numtrace_index_new();
	size_t n;

	for (size_t i = 0; i < nsrc; i++)
		numtrace_index_add(idx, &src[i]);
	n = numtrace_index_match(idx, answer, answer ? strlen(answer) : 0,
	    question, question ? strlen(question) : 0, hits, traced);
	numtrace_index_free(idx);
	return n;
}
