/* numscan: numbers found in text (numscan.h). */
#include "numscan.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "terp/util.h"

#define U_MINUS		"\xe2\x88\x92"
#define U_EURO		"\xe2\x82\xac"
#define U_POUND		"\xc2\xa3"
#define U_YEN		"\xc2\xa5"
#define U_THIN		"\xe2\x80\x89"
#define U_NNBSP		"\xe2\x80\xaf"
#define U_NBSP		"\xc2\xa0"
#define U_ENDASH	"\xe2\x80\x93"
#define U_EMDASH	"\xe2\x80\x94"

int
numscan_digit(int c)
{
	return c >= '0' && c <= '9';
}

int
numscan_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int
nt_alnum(int c)
{
	return numscan_digit(c) || numscan_alpha(c);
}

static size_t
nt_ndigits(const char *s, size_t n, size_t i)
{
	size_t k = i;

	while (k < n && numscan_digit((unsigned char)s[k]))
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
int
numscan_at(const char *s, size_t n, size_t i, const char *lit)
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
		if (p + 1 < n && s[p] == '.' && numscan_digit((unsigned char)s[p + 1]))
			return 0;
		return p;
	}
	if (a >= 1 && a <= 2 && d + a < n && s[d + a] == ':' &&
	    nt_ndigits(s, n, d + a + 1) == 2) {
		p = d + a + 3;
		if (p < n && s[p] == ':' && nt_ndigits(s, n, p + 1) == 2) {
			p += 3;
			if (p + 1 < n && s[p] == '.' &&
			    numscan_digit((unsigned char)s[p + 1]))
				p += 1 + nt_ndigits(s, n, p + 1);
		}
		return p;
	}
	return 0;
}

/* A group separator at i: comma, thin, narrow no-break or no-break
 * space, and a plain space in prose. Returns its length or 0. */
static size_t
nt_gsep(const struct numscan *sc, size_t i)
{
	const char *s = sc->s;
	size_t n = sc->n;

	if (i >= n)
		return 0;
	if (s[i] == ',')
		return 1;
	if (s[i] == ' ')
		return sc->mode & NT_SPACEGRP ? 1 : 0;
	if (numscan_at(s, n, i, U_THIN) || numscan_at(s, n, i, U_NNBSP))
		return 3;
	if (numscan_at(s, n, i, U_NBSP))
		return 2;
	return 0;
}

/* A space between a number and its unit word: ' ', NBSP or thin. */
static size_t
nt_space(const char *s, size_t n, size_t i)
{
	if (i < n && s[i] == ' ')
		return 1;
	if (numscan_at(s, n, i, U_NBSP))
		return 2;
	if (numscan_at(s, n, i, U_THIN) || numscan_at(s, n, i, U_NNBSP))
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
nt_body(const struct numscan *sc, size_t i, int comma_ok, struct nt_body *b,
    unsigned *flags, size_t *skip)
{
	const char *s = sc->s;
	size_t n = sc->n, q = i, k, sl;

	memset(b, 0, sizeof *b);
	while (q < n && numscan_digit((unsigned char)s[q]))
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
	if (q + 1 < n && s[q] == '.' && numscan_digit((unsigned char)s[q + 1])) {
		q++;
		while (q < n && numscan_digit((unsigned char)s[q]))
			nt_acc(b, s[q++] - '0', 1);
		*flags |= NT_FRAC;
		if (q + 1 < n && s[q] == '.' &&
		    numscan_digit((unsigned char)s[q + 1])) {
			while (q < n && (numscan_digit((unsigned char)s[q]) ||
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
		if (p < n && numscan_digit((unsigned char)s[p])) {
			while (p < n && numscan_digit((unsigned char)s[p])) {
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
		if (att[i].exact ? !numscan_at(s, n, q, att[i].w) :
		    !nt_word_at(s, n, q, att[i].w))
			continue;
		if (q + l < n && nt_alnum((unsigned char)s[q + l]))
			continue;
		*mult = att[i].m;
		return q + l;
	}
	if ((sp = nt_space(s, n, q)) == 0 || q + sp >= n ||
	    !numscan_alpha((unsigned char)s[q + sp]))
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
	else if (numscan_at(s, lim, k, U_ENDASH) || numscan_at(s, lim, k, U_EMDASH))
		k += 3;
	else if (nt_word_at(s, lim, k, "to") || nt_word_at(s, lim, k, "and"))
		k += s[k] == 't' || s[k] == 'T' ? 2 : 3;
	else
		return 0;
	while (k < lim && s[k] == ' ')
		k++;
	if (numscan_at(s, lim, k, U_MINUS))
		k += 3;
	else if (k < lim && s[k] == '-')
		k++;
	if (k >= lim || !numscan_digit((unsigned char)s[k]))
		return 0;
	while (k < lim && (numscan_digit((unsigned char)s[k]) || s[k] == '.'))
		k++;
	return nt_percent(s, lim, k) > k;
}

/* The word before i, past up to six characters of `skip`. Returns its
 * length (0: none) and its start in *w. */
size_t
numscan_prev_word(const char *s, size_t i, const char *skip, size_t *w)
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
size_t
numscan_next_word(const char *s, size_t n, size_t i, size_t *w)
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

int
numscan_is(const char *w, size_t l, const char *const *set, size_t nset)
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
	return numscan_is(w, l, m, sizeof m / sizeof m[0]);
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
	return numscan_is(buf, k, w, sizeof w / sizeof w[0]);
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
	else if (numscan_at(s, n, k, U_ENDASH) || numscan_at(s, n, k, U_EMDASH))
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
	    numscan_digit((unsigned char)s[d + 1]))
		return 0;
	return 1;
}

/* A plain four-digit integer from 1900 to 2100: a year unless shown
 * otherwise. */
int
numscan_yearlike(const struct numscan_tok *t)
{
	return (t->flags & (NT_PCT | NT_FRAC | NT_EXP | NT_CUR | NT_MAG |
	    NT_GROUP | NT_NEG)) == 0 && t->ndig == 4 && t->value >= 1900 &&
	    t->value <= 2100;
}

/* Prose rules for a number s[a..e): is it a date part, a year, a cell
 * reference, or a claim? */
static enum nt_kind
nt_classify(struct numscan *sc, size_t a, size_t e, const struct numscan_tok *t)
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
	int year = numscan_yearlike(t);
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
		l = numscan_prev_word(s, a, " \t[#", &w);
		if (numscan_is(s + w, l, cellw, 2))
			return NT_K_CELL;
		/* "cells 2, 3 and 4", but not "cell 3, 42 rows" */
		if (sc->last == NT_K_CELL &&
		    (nt_connector(s, sc->last_end, a, 0) ||
		    (nt_connector(s, sc->last_end, a, 1) &&
		    nt_list_goes_on(s, n, e))))
			return NT_K_CELL;
	}
	if (year || day) {
		l = numscan_prev_word(s, a, " \t.,", &w);
		if (nt_month(s + w, l))
			return NT_K_DATE;
		l = numscan_next_word(s, n, e, &w);
		if (day && nt_month(s + w, l))
			return NT_K_DATE;
		if (year && nt_quarter(s + w, l))
			return NT_K_DATE;
	}
	if (year) {
		l = numscan_prev_word(s, a, " \t-(", &w);
		if (numscan_is(s + w, l, yearw, sizeof yearw / sizeof yearw[0]) ||
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
	return numscan_at(s, n, i, "```") || numscan_at(s, n, i, "~~~");
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
	if (s[i] == '-' || s[i] == '+' || numscan_at(s, n, i, U_MINUS)) {
		*kind = 1;
		if (s[i] != '+')
			*flags |= NT_NEG;
		return s[i] == '-' || s[i] == '+' ? 1 : 3;
	}
	*kind = 2;
	*flags |= NT_CUR;
	if (s[i] == '$')
		return 1;
	if (numscan_at(s, n, i, U_EURO))
		return 3;
	if (numscan_at(s, n, i, U_POUND) || numscan_at(s, n, i, U_YEN))
		return 2;
	*flags &= ~(unsigned)NT_CUR;
	return 0;
}

static int
nt_body_start(const char *s, size_t n, size_t i)
{
	return i < n && (numscan_digit((unsigned char)s[i]) || (s[i] == '.' &&
	    i + 1 < n && numscan_digit((unsigned char)s[i + 1])));
}

/* Tries a number at i. Returns the position to go on from: past the
 * number (emitted or skipped), or i + 1 when there is none. *stop gets
 * the emitter's stop request. */
static size_t
nt_number(struct numscan *sc, size_t i, int *stop)
{
	const char *s = sc->s;
	size_t n = sc->n, p = i, l, q, e, skip = 0;
	unsigned flags = 0;
	int kind, kind1 = 0;
	struct nt_body b;
	struct numscan_tok t;
	double mult = 1;

	if (nt_glued(s, i)) {
		/* skip the whole name: float64, v1.2.3, Q3 */
		if (!numscan_digit((unsigned char)s[i]))
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
void
numscan_run(struct numscan *sc)
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
		if (numscan_digit(c) || c == '.' || c == '-' || c == '+' ||
		    c == '$' || c == 0xe2 || c == 0xc2) {
			i = nt_number(sc, i, &stop);
			continue;
		}
		i++;
	}
}
