/* numscan: the numbers in a text, as numtrace reads them: one scanner
 * for answers, questions and outputs, with more rules for prose
 * (dates by context, cell references, ordinals) and for Markdown (code
 * spans, fences, link targets). Pure and linear. Private to src/core
 * (numtrace.c is its one user). */
#ifndef TERP_NUMSCAN_H
#define TERP_NUMSCAN_H

#include <stddef.h>

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

struct numscan_tok {
	size_t		 off, len;
	double		 value;	/* signed, magnitude applied, % as written */
	double		 step;	/* the unit of the last digit shown */
	double		 mult;	/* the magnitude: 1, 1e3, 1e6, ... */
	unsigned	 flags;
	int		 ndig;	/* digits before the point */
	int		 line;
};

/* Returns nonzero to stop the scan. */
typedef int (*numscan_emit_fn)(void *ctx, const struct numscan_tok *t);

/* What the previous number was, for chains such as "from 2023 to 2024"
 * and "cells 2, 3 and 4". */
enum nt_kind { NT_K_NONE, NT_K_NUM, NT_K_DATE, NT_K_CELL };

struct numscan {
	const char	*s;
	size_t		 n;
	int		 mode;
	numscan_emit_fn	 emit;
	void		*ctx;
	int		 line;
	enum nt_kind	 last;
	size_t		 last_end;
};

/* Scans sc->s[0..sc->n) in sc->mode for numbers, calling sc->emit for
 * each until it returns nonzero. Linear: every look-ahead is bounded or
 * stops at the end of the line. */
void numscan_run(struct numscan *sc);
/* Whether t is a plain four-digit integer from 1900 to 2100: a year
 * unless shown otherwise. */
int numscan_yearlike(const struct numscan_tok *t);

/* Character and word tests the index's rules share with the scanner. */
int numscan_digit(int c);
int numscan_alpha(int c);
/* 1 when s[i..n) starts with lit. */
int numscan_at(const char *s, size_t n, size_t i, const char *lit);
/* Whether the word w[0..l) is one of set (case-insensitive). */
int numscan_is(const char *w, size_t l, const char *const *set, size_t nset);
/* The word before i, past up to six characters of skip; the word after
 * i, past spaces and emphasis marks. Each returns the word's length (0:
 * none) and its start in *w. */
size_t numscan_prev_word(const char *s, size_t i, const char *skip, size_t *w);
size_t numscan_next_word(const char *s, size_t n, size_t i, size_t *w);

#endif
