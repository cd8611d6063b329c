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

/* Scanner modes. */
#define NT_SPACEGRP	0x1	/* "1 203 455" with plain spaces is one number */
#define NT_PROSE	0x2	/* skip dates by context, cell refs, ordinals */
#define NT_MD		0x4	/* skip code spans, fences, link targets */

/* Token flags. */
#define NT_PCT		0x01
#define NT_NEG		0x02
#define NT_GROUP	0x04
#define NT_FRAC		0x08
#define NT_EXP		0x10
#define NT_CUR		0x20
#define NT_MAG		0x40

#define U_MINUS		"\xe2\x88\x92"
#define U_EURO		"\xe2\x82\xac"
#define U_POUND		"\xc2\xa3"
#define U_YEN		"\xc2\xa5"
#define U_THIN		"\xe2\x80\x89"
#define U_NNBSP		"\xe2\x80\xaf"
#define U_NBSP		"\xc2\xa0"
#define U_ENDASH	"\xe2\x80\x93"
#define U_EMDASH	"\xe2\x80\x94"

struct nt_tok {
	size_t		 off, len;
	double		 value;	/* signed, magnitude applied, % as written */
	double		 step;	/* the unit of the last digit shown */
	double		 mult;	/* the magnitude: 1, 1e3, 1e6, ... */
	unsigned	 flags;
	int		 ndig;	/* digits before the point */
	int		 line;
};

/* Returns nonzero to stop the scan. */
typedef int (*nt_emit_fn)(void *ctx, const struct nt_tok *t);

/* What the previous number was, for chains such as "from 2023 to 2024"
 * and "cells 2, 3 and 4". */
enum nt_kind { NT_K_NONE, NT_K_NUM, NT_K_DATE, NT_K_CELL };

struct nt_scan {
	const char	*s;
	size_t		 n;
	int		 mode;
	nt_emit_fn	 emit;
	void		*ctx;
	int		 line;
	enum nt_kind	 last;
	size_t		 last_end;
};

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

static int
nt_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int
nt_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int
nt_alnum(int c)
{
	return nt_digit(c) || nt_alpha(c);
}

static size_t
nt_ndigits(const char *s, size_t n, size_t i)
{
	size_t k = i;

	while (k < n && nt_digit((unsigned char)s[k]))
		k++;
	return k - i;
}

/* The value of s[0..k), k <= 4 digits. */
static int
nt_atoi(const char *s, size_t k)
{
	int v = 0;

	for (size_t i = 0; i < k; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

/* 1 when s[i..] starts with lit. */
static int
nt_at(const char *s, size_t n, size_t i, const char *lit)
{
	size_t l;

	if (i >= n || s[i] != lit[0])
		return 0;
	l = strlen(lit);
	return n - i >= l && memcmp(s + i, lit, l) == 0;
}

/* 1 when s[i..] starts with word, case-insensitively, not followed by a
 * letter or digit. */
static int
nt_word_at(const char *s, size_t n, size_t i, const char *word)
{
	size_t l;

	/* most calls fail on the first byte: spare the string calls */
	if (i >= n || ((s[i] ^ word[0]) & ~0x20) != 0)
		return 0;
	l = strlen(word);
	if (n - i < l || strncasecmp(s + i, word, l) != 0)
		return 0;
	return i + l == n || !nt_alnum((unsigned char)s[i + l]);
}

static double
nt_scale(double m, int e)
{
	static const double p[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7,
	    1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
	    1e19, 1e20, 1e21, 1e22 };

	/* Exact powers, so 100498 / 1e4 is the double nearest 10.0498. */
	if (e >= 0 && e <= 22)
		return m * p[e];
	if (e < 0 && e >= -22)
		return m / p[-e];
	return m * pow(10.0, e);
}

/* A number glued to a word on its left is part of a name (Q3, float64,
 * col_2, v1.2): not a number. */
static int
nt_glued(const char *s, size_t i)
{
	unsigned char p;

	if (i == 0)
		return 0;
	p = (unsigned char)s[i - 1];
	if (nt_alnum(p))
		return 1;
	if ((p == '_' || p == '.') && i >= 2 &&
	    nt_alnum((unsigned char)s[i - 2]))
		return 1;
	return 0;
}

/* A date or a time starting at digit d: 2024-11, 2023-12-01, 2024/1/5,
 * 11/05/2024, 5.11.24, 12:30, 12:30:05.2. Returns its end, or 0. */
static size_t
nt_date(const char *s, size_t n, size_t d)
{
	size_t a = nt_ndigits(s, n, d), p, b, c;
	int x, y;

	if (a == 4 && d + 4 < n && (s[d + 4] == '-' || s[d + 4] == '/')) {
		char sep = s[d + 4];
		int yr = nt_atoi(s + d, 4);

		p = d + 5;
		b = nt_ndigits(s, n, p);
		if (yr < 1800 || yr > 2199 || b < 1 || b > 2)
			return 0;
		x = nt_atoi(s + p, b);
		if (x < 1 || x > 12)
			return 0;
		p += b;
		if (p + 1 < n && s[p] == sep) {
			c = nt_ndigits(s, n, p + 1);
			y = c >= 1 && c <= 2 ? nt_atoi(s + p + 1, c) : 0;
			if (y >= 1 && y <= 31)
				p += 1 + c;
		}
		return p;
	}
	if (a >= 1 && a <= 2 && d + a < n &&
	    (s[d + a] == '/' || s[d + a] == '-' || s[d + a] == '.')) {
		char sep = s[d + a];

		p = d + a + 1;
		b = nt_ndigits(s, n, p);
		if (b < 1 || b > 2 || p + b >= n || s[p + b] != sep)
			return 0;
		c = nt_ndigits(s, n, p + b + 1);
		if (c != 2 && c != 4)
			return 0;
		x = nt_atoi(s + d, a);
		y = nt_atoi(s + p, b);
		if (x < 1 || y < 1 || x > 31 || y > 31 || (x > 12 && y > 12))
			return 0;
		p += b + 1 + c;
		/* 1.2.33.4 is an address, not a date */
		if (p + 1 < n && s[p] == '.' && nt_digit((unsigned char)s[p + 1]))
			return 0;
		return p;
	}
	if (a >= 1 && a <= 2 && d + a < n && s[d + a] == ':' &&
	    nt_ndigits(s, n, d + a + 1) == 2) {
		p = d + a + 3;
		if (p < n && s[p] == ':' && nt_ndigits(s, n, p + 1) == 2) {
			p += 3;
			if (p + 1 < n && s[p] == '.' &&
			    nt_digit((unsigned char)s[p + 1]))
				p += 1 + nt_ndigits(s, n, p + 1);
		}
		return p;
	}
	return 0;
}

/* A group separator at i: comma, thin, narrow no-break or no-break
 * space, and a plain space in prose. Returns its length or 0. */
static size_t
nt_gsep(const struct nt_scan *sc, size_t i)
{
	const char *s = sc->s;
	size_t n = sc->n;

	if (i >= n)
		return 0;
	if (s[i] == ',')
		return 1;
	if (s[i] == ' ')
		return sc->mode & NT_SPACEGRP ? 1 : 0;
	if (nt_at(s, n, i, U_THIN) || nt_at(s, n, i, U_NNBSP))
		return 3;
	if (nt_at(s, n, i, U_NBSP))
		return 2;
	return 0;
}

/* A space between a number and its unit word: ' ', NBSP or thin. */
static size_t
nt_space(const char *s, size_t n, size_t i)
{
	if (i < n && s[i] == ' ')
		return 1;
	if (nt_at(s, n, i, U_NBSP))
		return 2;
	if (nt_at(s, n, i, U_THIN) || nt_at(s, n, i, U_NNBSP))
		return 3;
	return 0;
}

struct nt_body {
	double	 m;	/* significant digits as an integer */
	int	 e;	/* m * 10^e is the value */
	int	 sig;	/* significant digits taken into m */
	int	 frac;	/* digits shown after the point */
	int	 ndig;	/* digits before the point (up to 99) */
	int	 x;	/* the written exponent (1.2e+06: 6) */
};

static void
nt_acc(struct nt_body *b, int d, int frac)
{
	/* Past 17 significant digits a double has no more to keep; the
	 * counts stop growing long before an int could overflow. */
	if (b->sig < 17) {
		b->m = b->m * 10 + d;
		if (b->m != 0)
			b->sig++;
		if (frac)
			b->e--;
	} else if (!frac && b->e < 100000) {
		b->e++;
	}
	if (frac && b->frac < 100000)
		b->frac++;
}

/* Digits, groups, fraction and exponent at i (a digit, or '.' and a
 * digit). Returns the end; 0 for a version or an address (3.11.2), whose
 * whole run *skip gets. */
static size_t
nt_body(const struct nt_scan *sc, size_t i, int comma_ok, struct nt_body *b,
    unsigned *flags, size_t *skip)
{
	const char *s = sc->s;
	size_t n = sc->n, q = i, k, sl;

	memset(b, 0, sizeof *b);
	while (q < n && nt_digit((unsigned char)s[q]))
		nt_acc(b, s[q++] - '0', 0);
	b->ndig = q - i > 99 ? 99 : (int)(q - i);
	/* Groups of exactly three digits, all with the same separator, after
	 * a first group of one to three. */
	if (b->ndig >= 1 && b->ndig <= 3 && (sl = nt_gsep(sc, q)) > 0 &&
	    (s[q] != ',' || comma_ok)) {
		const char *sep = s + q;

		while (nt_gsep(sc, q) == sl && memcmp(s + q, sep, sl) == 0 &&
		    nt_ndigits(s, n, q + sl) == 3) {
			for (k = q + sl; k < q + sl + 3; k++)
				nt_acc(b, s[k] - '0', 0);
			q += sl + 3;
			if (b->ndig < 99)
				b->ndig += 3;
			*flags |= NT_GROUP;
		}
	}
	if (q + 1 < n && s[q] == '.' && nt_digit((unsigned char)s[q + 1])) {
		q++;
		while (q < n && nt_digit((unsigned char)s[q]))
			nt_acc(b, s[q++] - '0', 1);
		*flags |= NT_FRAC;
		if (q + 1 < n && s[q] == '.' &&
		    nt_digit((unsigned char)s[q + 1])) {
			while (q < n && (nt_digit((unsigned char)s[q]) ||
			    s[q] == '.'))
				q++;
			*skip = q;
			return 0;
		}
	}
	if (q + 1 < n && (s[q] == 'e' || s[q] == 'E') && b->ndig + b->frac > 0) {
		size_t p = q + 1;
		int neg = 0, x = 0;

		if (p < n && (s[p] == '+' || s[p] == '-'))
			neg = s[p++] == '-';
		if (p < n && nt_digit((unsigned char)s[p])) {
			while (p < n && nt_digit((unsigned char)s[p])) {
				if (x < 10000)
					x = x * 10 + (s[p] - '0');
				p++;
			}
			b->x = neg ? -x : x;
			b->e += b->x;
			q = p;
			*flags |= NT_EXP;
		}
	}
	return q;
}

/* A magnitude after the number at q: 1.2k, 3.4M, 2.5bn, $1.2 million.
 * Returns its end (q when none) and the multiplier. */
static size_t
nt_magnitude(const char *s, size_t n, size_t q, double *mult)
{
	static const struct {
		const char	*w;
		double		 m;
		int		 exact;	/* case matters (M, B) */
	} att[] = {
		{ "k", 1e3, 0 }, { "M", 1e6, 1 }, { "B", 1e9, 1 },
		{ "bn", 1e9, 0 }, { "mn", 1e6, 0 }, { "mln", 1e6, 0 },
		{ "tn", 1e12, 0 },
	}, spc[] = {
		{ "thousand", 1e3, 0 }, { "million", 1e6, 0 },
		{ "billion", 1e9, 0 }, { "trillion", 1e12, 0 },
		{ "bn", 1e9, 0 }, { "mn", 1e6, 0 }, { "mln", 1e6, 0 },
	};
	size_t sp;

	for (size_t i = 0; i < sizeof att / sizeof att[0]; i++) {
		size_t l = strlen(att[i].w);
		if (att[i].exact ? !nt_at(s, n, q, att[i].w) :
		    !nt_word_at(s, n, q, att[i].w))
			continue;
		if (q + l < n && nt_alnum((unsigned char)s[q + l]))
			continue;
		*mult = att[i].m;
		return q + l;
	}
	if ((sp = nt_space(s, n, q)) == 0 || q + sp >= n ||
	    !nt_alpha((unsigned char)s[q + sp]))
		return q;
	for (size_t i = 0; i < sizeof spc / sizeof spc[0]; i++) {
		size_t l = strlen(spc[i].w), e = q + sp + l;
		if (((s[q + sp] ^ spc[i].w[0]) & ~0x20) != 0 ||
		    n - (q + sp) < l ||
		    strncasecmp(s + q + sp, spc[i].w, l) != 0)
			continue;
		if (e < n && (s[e] == 's' || s[e] == 'S') && l > 2)
			e++;
		if (e < n && nt_alnum((unsigned char)s[e]))
			continue;
		*mult = spc[i].m;
		return e;
	}
	return q;
}

/* A percent sign or word after the number at q: %, " %", percent, per
 * cent, pct, pp, percentage point(s). Returns its end, or q. */
static size_t
nt_percent(const char *s, size_t n, size_t q)
{
	static const char *const w[] = { "percentage points",
	    "percentage point", "percent", "per cent", "pct", "pp" };
	size_t sp = nt_space(s, n, q);

	if (q < n && s[q] == '%')
		return q + 1;
	if (sp > 0 && q + sp < n && s[q + sp] == '%')
		return q + sp + 1;
	for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
		if (nt_word_at(s, n, q, w[i]))
			return q + strlen(w[i]);
		if (sp > 0 && nt_word_at(s, n, q + sp, w[i]))
			return q + sp + strlen(w[i]);
	}
	return q;
}

/* A range whose second end carries the percent sign: "10-15%", "10 to
 * 15 percent". 1 when one follows e (looks at most 40 bytes ahead). */
static int
nt_range_percent(const char *s, size_t n, size_t e)
{
	size_t k = e, lim = e + 40 < n ? e + 40 : n;

	while (k < lim && s[k] == ' ')
		k++;
	if (k < lim && s[k] == '-')
		k++;
	else if (nt_at(s, lim, k, U_ENDASH) || nt_at(s, lim, k, U_EMDASH))
		k += 3;
	else if (nt_word_at(s, lim, k, "to") || nt_word_at(s, lim, k, "and"))
		k += s[k] == 't' || s[k] == 'T' ? 2 : 3;
	else
		return 0;
	while (k < lim && s[k] == ' ')
		k++;
	if (nt_at(s, lim, k, U_MINUS))
		k += 3;
	else if (k < lim && s[k] == '-')
		k++;
	if (k >= lim || !nt_digit((unsigned char)s[k]))
		return 0;
	while (k < lim && (nt_digit((unsigned char)s[k]) || s[k] == '.'))
		k++;
	return nt_percent(s, lim, k) > k;
}

/* The word before i, past up to six characters of `skip`. Returns its
 * length (0: none) and its start in *w. */
static size_t
nt_prev_word(const char *s, size_t i, const char *skip, size_t *w)
{
	size_t k = i, e;

	for (int lim = 0; k > 0 && lim < 6 && s[k - 1] != '\0' &&
	    strchr(skip, s[k - 1]) != NULL; lim++)
		k--;
	e = k;
	while (k > 0 && e - k < 16 && nt_alnum((unsigned char)s[k - 1]))
		k--;
	if (k > 0 && (nt_alnum((unsigned char)s[k - 1]) || s[k - 1] == '_'))
		return 0;
	*w = k;
	return e - k;
}

/* The word after i, past spaces and emphasis marks. */
static size_t
nt_next_word(const char *s, size_t n, size_t i, size_t *w)
{
	size_t k = i, b;

	for (int lim = 0; k < n && lim < 4 && (s[k] == ' ' || s[k] == '*' ||
	    s[k] == '_' || s[k] == ','); lim++)
		k++;
	b = k;
	while (k < n && k - b < 16 && nt_alnum((unsigned char)s[k]))
		k++;
	if (k < n && nt_alnum((unsigned char)s[k]))
		return 0;
	*w = b;
	return k - b;
}

static int
nt_is(const char *w, size_t l, const char *const *set, size_t nset)
{
	for (size_t i = 0; i < nset; i++)
		if (strlen(set[i]) == l && strncasecmp(w, set[i], l) == 0)
			return 1;
	return 0;
}

/* Month names, capitalised as in prose (so "may" and "march" as words
 * are not months). */
static int
nt_month(const char *w, size_t l)
{
	static const char *const m[] = { "Jan", "January", "Feb", "February",
	    "Mar", "March", "Apr", "April", "May", "Jun", "June", "Jul",
	    "July", "Aug", "August", "Sep", "Sept", "September", "Oct",
	    "October", "Nov", "November", "Dec", "December" };

	if (l < 3 || w[0] < 'A' || w[0] > 'Z')
		return 0;
	return nt_is(w, l, m, sizeof m / sizeof m[0]);
}

/* Q1..Q4, H1, H2. */
static int
nt_quarter(const char *w, size_t l)
{
	return l == 2 && (((w[0] == 'Q' || w[0] == 'q') && w[1] >= '1' &&
	    w[1] <= '4') || ((w[0] == 'H' || w[0] == 'h') && (w[1] == '1' ||
	    w[1] == '2')));
}

/* 1 when s[a..b) only joins two numbers of a list or a range: commas,
 * spaces, dashes, slash, &, and, to, or, vs, through, until. */
static int
nt_connector(const char *s, size_t a, size_t b, int allow_empty)
{
	static const char *const w[] = { "-", U_ENDASH, U_EMDASH, "/", "&",
	    "and", "to", "or", "vs", "vs.", "through", "thru", "until",
	    "till" };
	char buf[16];
	size_t k = 0;

	if (b < a || b - a > 24)
		return 0;
	for (size_t i = a; i < b; i++) {
		if (s[i] == ' ' || s[i] == '\t' || s[i] == ',')
			continue;
		if (s[i] == '\n' || k + 1 >= sizeof buf)
			return 0;
		buf[k++] = s[i];
	}
	if (k == 0)
		return allow_empty;
	return nt_is(buf, k, w, sizeof w / sizeof w[0]);
}

/* 1 when a list of references goes on or ends after e: end of text,
 * punctuation, "and", "or". */
static int
nt_list_goes_on(const char *s, size_t n, size_t e)
{
	size_t k = e;

	if (k >= n || strchr(",.;:)]", s[k]) != NULL)
		return 1;
	while (k < n && s[k] == ' ')
		k++;
	return nt_word_at(s, n, k, "and") || nt_word_at(s, n, k, "or") ||
	    (k < n && s[k] == '&');
}

/* A year-like number after a range connector at e (2023-2024, 2023 to
 * 2024, 2023 and 2024, 2023 vs 2024). */
static int
nt_year_follows(const char *s, size_t n, size_t e)
{
	size_t k = e, d;
	int y;

	while (k < n && s[k] == ' ')
		k++;
	if (k < n && (s[k] == '-' || s[k] == '/'))
		k++;
	else if (nt_at(s, n, k, U_ENDASH) || nt_at(s, n, k, U_EMDASH))
		k += 3;
	else if (nt_word_at(s, n, k, "to") || nt_word_at(s, n, k, "vs"))
		k += 2;
	else if (nt_word_at(s, n, k, "and"))
		k += 3;
	else
		return 0;
	if (k < n && s[k] == '.')
		k++;
	while (k < n && s[k] == ' ')
		k++;
	if (nt_ndigits(s, n, k) != 4)
		return 0;
	y = nt_atoi(s + k, 4);
	d = k + 4;
	if (y < 1900 || y > 2100)
		return 0;
	if (d < n && (s[d] == '%' || nt_alnum((unsigned char)s[d])))
		return 0;
	if (d + 1 < n && (s[d] == '.' || s[d] == ',') &&
	    nt_digit((unsigned char)s[d + 1]))
		return 0;
	return 1;
}

/* A plain four-digit integer from 1900 to 2100: a year unless shown
 * otherwise. */
static int
nt_yearlike(const struct nt_tok *t)
{
	return (t->flags & (NT_PCT | NT_FRAC | NT_EXP | NT_CUR | NT_MAG |
	    NT_GROUP | NT_NEG)) == 0 && t->ndig == 4 && t->value >= 1900 &&
	    t->value <= 2100;
}

/* Prose rules for a number s[a..e): is it a date part, a year, a cell
 * reference, or a claim? */
static enum nt_kind
nt_classify(struct nt_scan *sc, size_t a, size_t e, const struct nt_tok *t)
{
	static const char *const yearw[] = { "in", "since", "during", "from",
	    "until", "till", "through", "between", "year", "years", "fy",
	    "before", "after", "early", "late", "mid" };
	static const char *const cellw[] = { "cell", "cells" };
	const char *s = sc->s;
	size_t n = sc->n, w, l;
	int plain = (t->flags & (NT_PCT | NT_FRAC | NT_EXP | NT_CUR | NT_MAG |
	    NT_GROUP | NT_NEG)) == 0 && t->value < 1e6;
	int iv = plain ? (int)t->value : -1;
	int year = nt_yearlike(t);
	int day = plain && t->ndig <= 2 && iv >= 1 && iv <= 31;

	if (plain) {
		if (a > 0 && s[a - 1] == '[' && e < n && s[e] == ']')
			return NT_K_CELL;
		if (a > 1 && s[a - 1] == '^' && s[a - 2] == '[')
			return NT_K_CELL;	/* a footnote */
		/* a manual page's section, "terp(1)": a reference too */
		if (a > 1 && s[a - 1] == '(' && e < n && s[e] == ')' &&
		    t->ndig == 1 && (isalnum((unsigned char)s[a - 2]) ||
		    s[a - 2] == '_' || s[a - 2] == '-'))
			return NT_K_CELL;
		l = nt_prev_word(s, a, " \t[#", &w);
		if (nt_is(s + w, l, cellw, 2))
			return NT_K_CELL;
		/* "cells 2, 3 and 4", but not "cell 3, 42 rows" */
		if (sc->last == NT_K_CELL &&
		    (nt_connector(s, sc->last_end, a, 0) ||
		    (nt_connector(s, sc->last_end, a, 1) &&
		    nt_list_goes_on(s, n, e))))
			return NT_K_CELL;
	}
	if (year || day) {
		l = nt_prev_word(s, a, " \t.,", &w);
		if (nt_month(s + w, l))
			return NT_K_DATE;
		l = nt_next_word(s, n, e, &w);
		if (day && nt_month(s + w, l))
			return NT_K_DATE;
		if (year && nt_quarter(s + w, l))
			return NT_K_DATE;
	}
	if (year) {
		l = nt_prev_word(s, a, " \t-(", &w);
		if (nt_is(s + w, l, yearw, sizeof yearw / sizeof yearw[0]) ||
		    nt_quarter(s + w, l))
			return NT_K_DATE;
		if (sc->last == NT_K_DATE &&
		    nt_connector(s, sc->last_end, a, 1))
			return NT_K_DATE;
		if (nt_year_follows(s, n, e))
			return NT_K_DATE;
	}
	if (day && sc->last == NT_K_DATE && nt_connector(s, sc->last_end, a, 0))
		return NT_K_DATE;	/* March 3-5 */
	return NT_K_NUM;
}

/* A list marker at a line start: indentation, quotes, heading marks,
 * bullets, then "12." or "3)" followed by a space: skipped. */
static size_t
nt_line_prefix(const char *s, size_t n, size_t i)
{
	size_t k;

	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	while (i < n && s[i] == '>') {
		i++;
		while (i < n && s[i] == ' ')
			i++;
	}
	for (k = i; k < n && s[k] == '#'; k++)
		;
	if (k > i && k - i <= 6 && (k == n || s[k] == ' ')) {
		i = k;
		while (i < n && s[i] == ' ')
			i++;
	}
	if (i + 1 < n && (s[i] == '-' || s[i] == '*' || s[i] == '+') &&
	    (s[i + 1] == ' ' || s[i + 1] == '\t')) {
		i += 2;
		while (i < n && s[i] == ' ')
			i++;
	}
	k = nt_ndigits(s, n, i);
	if (k >= 1 && k <= 9 && i + k < n && (s[i + k] == '.' ||
	    s[i + k] == ')') && (i + k + 1 == n || s[i + k + 1] == ' ' ||
	    s[i + k + 1] == '\t' || s[i + k + 1] == '\n' ||
	    s[i + k + 1] == '\r'))
		i += k + 1;
	return i;
}

/* A fence line (``` or ~~~ after any indentation, as mdlite reads it). */
static int
nt_fence(const char *s, size_t n, size_t i)
{
	while (i < n && s[i] == ' ')
		i++;
	return nt_at(s, n, i, "```") || nt_at(s, n, i, "~~~");
}

static size_t
nt_eol(const char *s, size_t n, size_t i)
{
	const char *p = memchr(s + i, '\n', n - i);

	return p == NULL ? n : (size_t)(p - s);
}

/* A sign or currency prefix at i: its length, 0 when none. */
static size_t
nt_prefix1(const char *s, size_t n, size_t i, unsigned *flags, int *kind)
{
	if (i >= n)
		return 0;
	if (s[i] == '-' || s[i] == '+' || nt_at(s, n, i, U_MINUS)) {
		*kind = 1;
		if (s[i] != '+')
			*flags |= NT_NEG;
		return s[i] == '-' || s[i] == '+' ? 1 : 3;
	}
	*kind = 2;
	*flags |= NT_CUR;
	if (s[i] == '$')
		return 1;
	if (nt_at(s, n, i, U_EURO))
		return 3;
	if (nt_at(s, n, i, U_POUND) || nt_at(s, n, i, U_YEN))
		return 2;
	*flags &= ~(unsigned)NT_CUR;
	return 0;
}

static int
nt_body_start(const char *s, size_t n, size_t i)
{
	return i < n && (nt_digit((unsigned char)s[i]) || (s[i] == '.' &&
	    i + 1 < n && nt_digit((unsigned char)s[i + 1])));
}

/* Tries a number at i. Returns the position to go on from: past the
 * number (emitted or skipped), or i + 1 when there is none. *stop gets
 * the emitter's stop request. */
static size_t
nt_number(struct nt_scan *sc, size_t i, int *stop)
{
	const char *s = sc->s;
	size_t n = sc->n, p = i, l, q, e, skip = 0;
	unsigned flags = 0;
	int kind, kind1 = 0;
	struct nt_body b;
	struct nt_tok t;
	double mult = 1;

	if (nt_glued(s, i)) {
		/* skip the whole name: float64, v1.2.3, Q3 */
		if (!nt_digit((unsigned char)s[i]))
			return i + 1;
		while (i < n && (nt_alnum((unsigned char)s[i]) || s[i] == '_' ||
		    (s[i] == '.' && i + 1 < n &&
		    nt_alnum((unsigned char)s[i + 1]))))
			i++;
		return i;
	}
	for (int k = 0; k < 2 && (l = nt_prefix1(s, n, p, &flags, &kind)) > 0;
	    k++) {
		if (kind == kind1)
			break;
		kind1 = kind;
		p += l;
	}
	if (!nt_body_start(s, n, p))
		return i + 1;
	if (p == i && (e = nt_date(s, n, p)) > 0) {
		sc->last = NT_K_DATE;
		sc->last_end = e;
		return e;
	}
	q = nt_body(sc, p, !(p > 0 && (sc->mode & NT_SPACEGRP) == 0 &&
	    (s[p - 1] == '[' || s[p - 1] == ',')), &b, &flags, &skip);
	if (q == 0)
		return skip;
	/* 0x1f, 0b101: code */
	if (q - p == 1 && s[p] == '0' && q + 1 < n && (s[q] == 'x' ||
	    s[q] == 'b' || s[q] == 'o') && nt_alnum((unsigned char)s[q + 1]))
		return q;
	e = q;
	/* A table column ends at two spaces or a newline: no suffix to look
	 * for (the common case in outputs). */
	if (q < n && s[q] != '\n' && !(s[q] == ' ' && (q + 1 == n ||
	    s[q + 1] == ' ' || s[q + 1] == '\n'))) {
		e = nt_magnitude(s, n, q, &mult);
		if (e > q)
			flags |= NT_MAG;
		else if ((e = nt_percent(s, n, q)) > q)
			flags |= NT_PCT;
		else if ((sc->mode & NT_PROSE) && nt_range_percent(s, n, q))
			flags |= NT_PCT;
		/* 1st, 2nd, 3rd, 4th: ranks */
		if (e == q && (nt_word_at(s, n, q, "st") ||
		    nt_word_at(s, n, q, "nd") || nt_word_at(s, n, q, "rd") ||
		    nt_word_at(s, n, q, "th")))
			return q + 2;
	}
	memset(&t, 0, sizeof t);
	t.off = i;
	t.len = e - i;
	t.mult = mult;
	t.value = nt_scale(b.m, b.e) * mult;
	if (flags & NT_NEG)
		t.value = -t.value;
	/* the unit of the last digit shown: 10^(exponent - decimals) */
	t.step = nt_scale(1, b.x - b.frac) * mult;
	t.flags = flags;
	t.ndig = b.ndig;
	t.line = sc->line;
	if (!isfinite(t.value) || !isfinite(t.step))
		return e;
	kind = NT_K_NUM;
	if (sc->mode & NT_PROSE)
		kind = nt_classify(sc, i, e, &t);
	sc->last = kind;
	sc->last_end = e;
	if (kind == NT_K_NUM && sc->emit(sc->ctx, &t) != 0)
		*stop = 1;
	return e;
}

/* Inline code: a run of backticks closed by the next run of as many
 * on the same line (mdlite reads code spans within a line). Returns the
 * position after the span, or after the run when it is not closed.
 * *absent remembers the run lengths known to have no closer on this
 * line, so a line of unclosed runs is not searched again and again;
 * runs longer than 16 are taken as text. */
static size_t
nt_code_span(const char *s, size_t i, size_t eol, unsigned *absent)
{
	size_t r = 0, j, k;

	while (i + r < eol && s[i + r] == '`')
		r++;
	if (r > 16 || (*absent & (1u << r)))
		return i + r;
	for (j = i + r; j < eol; j += k > 0 ? k : 1) {
		for (k = 0; j + k < eol && s[j + k] == '`'; k++)
			;
		if (k == r)
			return j + r;
	}
	*absent |= 1u << r;
	return i + r;
}

/* Scans s[0..n) for numbers, calling sc->emit for each. Linear: every
 * look-ahead is bounded or stops at the end of the line, whose position
 * is computed once. */
static void
nt_run(struct nt_scan *sc)
{
	const char *s = sc->s;
	size_t n = sc->n, i = 0, eol = 0, rparen = 0;
	int bol = 1, fence = 0, stop = 0;
	unsigned absent = 0;

	sc->line = 1;
	sc->last = NT_K_NONE;
	sc->last_end = 0;
	while (i < n && !stop) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\n') {
			sc->line++;
			i++;
			bol = 1;
			continue;
		}
		if (bol) {
			eol = nt_eol(s, n, i);
			absent = 0;
			rparen = i;
		}
		if (bol && (sc->mode & NT_MD)) {
			bol = 0;
			if (nt_fence(s, n, i)) {
				fence = !fence;
				i = eol;
				continue;
			}
			if (fence) {
				i = eol;
				continue;
			}
			i = nt_line_prefix(s, eol, i);
			continue;
		}
		bol = 0;
		if ((sc->mode & NT_MD) && c == '`') {
			i = nt_code_span(s, i, eol, &absent);
			continue;
		}
		/* a link target: [text](target) */
		if ((sc->mode & NT_MD) && c == ']' && i + 1 < eol &&
		    s[i + 1] == '(') {
			const char *rp;
			if (rparen <= i) {
				rp = memchr(s + i, ')', eol - i);
				rparen = rp == NULL ? eol : (size_t)(rp - s);
			}
			i = rparen < eol ? rparen + 1 : i + 1;
			continue;
		}
		if ((c == 'h' || c == 'H') && (nt_word_at(s, n, i, "http") ||
		    nt_word_at(s, n, i, "https")) && !nt_glued(s, i)) {
			while (i < eol && s[i] != ' ' && s[i] != '\t' &&
			    s[i] != '>')
				i++;
			continue;
		}
		if (nt_digit(c) || c == '.' || c == '-' || c == '+' ||
		    c == '$' || c == 0xe2 || c == 0xc2) {
			i = nt_number(sc, i, &stop);
			continue;
		}
		i++;
	}
}

/* Index */

static int
nt_rank(int stream)
{
	/* stdout first, then the value, then stderr (warnings carry line
	 * numbers and sizes that are rarely what an answer reports) */
	return stream == NUMTRACE_STDOUT ? 2 : stream == NUMTRACE_VALUE ? 1 : 0;
}

static void
nt_src_push(struct nt_src *src, double v, const struct nt_tok *t)
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
nt_on_output(void *ctx, const struct nt_tok *t)
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
			digit = nt_digit((unsigned char)text[k]);
		if (nt_at(text, e, i, "Name:") || nt_at(text, e, i, "dtype:") ||
		    nt_at(text, e, i, "Length:"))
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
	struct nt_scan sc;
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
	nt_run(&sc);
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
nt_lookup(const struct numtrace_index *idx, const struct nt_tok *t,
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
nt_on_question(void *ctx, const struct nt_tok *t)
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
nt_plain_int(const struct nt_tok *t)
{
	return (t->flags & (NT_PCT | NT_FRAC | NT_EXP | NT_CUR | NT_MAG |
	    NT_GROUP | NT_NEG)) == 0 && t->value <= 100000;
}

/* An integer that names a thing rather than measuring it:
 * "observation number 1", "month 01", "day 3", "step 2", "#4". */
static int
nt_label(const char *s, size_t n, const struct nt_tok *t)
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
	l = nt_prev_word(s, t->off, " \t.", &b);
	return l > 0 && nt_is(s + b, l, w, sizeof w / sizeof w[0]);
}

/* An integer that counts what an output showed: "the top 3",
 * "4 regions", when some output has a run of exactly that many rows. */
static int
nt_count(const struct numtrace_index *idx, const char *s, size_t n,
    const struct nt_tok *t)
{
	static const char *const before[] = { "top", "bottom", "first",
	    "last", "all", "the", "these", "those", "other", "across" };
	size_t l, b;
	unsigned v;
	int ctx;

	if (!nt_plain_int(t) || t->value < 2 || t->value > 10000)
		return 0;
	v = (unsigned)t->value;
	l = nt_prev_word(s, t->off, " \t", &b);
	ctx = l > 0 && nt_is(s + b, l, before, sizeof before / sizeof before[0]);
	if (!ctx) {
		/* "3 regions": a word follows */
		l = nt_next_word(s, n, t->off + t->len, &b);
		ctx = l > 1 && t->off + t->len < n && s[t->off + t->len] == ' ' &&
		    nt_alpha((unsigned char)s[b]);
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
nt_on_answer(void *ctx, const struct nt_tok *t)
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
	else if (nt_yearlike(t))
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
	struct nt_scan sc;

	if (question != NULL && qlen > 0) {
		memset(&sc, 0, sizeof sc);
		sc.s = question;
		sc.n = qlen;
		sc.mode = NT_SPACEGRP;
		sc.emit = nt_on_question;
		sc.ctx = &q;
		nt_run(&sc);
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
		nt_run(&sc);
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
