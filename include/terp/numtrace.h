/* numtrace: the numbers of a final answer traced to the cell outputs
 * that printed them (issue 11, part 2). Pure: text in, offsets out; no
 * I/O, no notebook, no terminal. The caller keeps one index per session,
 * adds each cell's output texts once, and matches every answer against
 * it; an answer's number is "traced" when some output printed it, up to
 * the rounding the answer shows.
 *
 * What counts as a number in an answer (Markdown): 1203, 10.05, -3.2,
 * U+2212 minus, 48%, 48 percent, 3.2 pp, 1,203,455, 1 203 455 (plain,
 * thin or no-break spaces), 1.2k, 3.4M, 2.5bn, $1.2 million, EUR and GBP
 * signs, 1.2e+06. Not numbers (never reported): dates (2024-11,
 * 2023-12-01, 11/05/2024, 12:30), days and years next to a month name
 * ("Nov 2024", "March 3, 2024"), years after in/since/during/from/
 * between/until/through/year/FY or a quarter (Q3 2024, H1 2024), and a
 * year chained to one of those ("from 2023 to 2024"); cell references
 * ([3], cell 3, cells 2-4, In [3]); list ordinals ("1. ", "2) " at the
 * start of a line or after a heading mark); ordinals (3rd); numbers
 * glued to a word on their left (Q3, float64, v1.2); versions and
 * addresses (3.11.2); numbers inside `inline code`, fenced code blocks
 * and link targets, which are code and addresses, not claims; any
 * number whose value the question already holds ("top 5 regions"); and
 * a bare year-like integer (1900-2100, no separator, decimals or unit)
 * that no output holds: "2024 beat 2023" is about years, while "2023"
 * printed as a year label or a count is reported, traced.
 * Two more kinds of integer are left out, traced or not, as they are
 * not results (issue 24): labels, after a word that names a thing
 * ("observation number 1", "month 01", "day 3", "step 2", "#4"), and
 * counts of what an
 * output showed ("the top 3", "4 regions") when some output has a run
 * of exactly that many rows (lines with a digit and as many fields as
 * the line before, between a header and a "Name:"/"dtype:" footer).
 *
 * Matching: the answer's number, at the precision it shows, must cover
 * an output number: 10.05 covers [10.045, 10.055], so 10.0498 matches;
 * "about 1,203" covers 1203.4; 1.2M covers 1,150,000..1,250,000; 3.4k
 * covers 3412. A percentage matches either the percent (48.12) or the
 * ratio (0.4812). Signs are not compared: "a decrease of 3.2%" is as
 * likely written from -0.032 as from 0.032, so matching is on absolute
 * values, and -3.2 also matches 3.2. When several outputs match, the most
 * recent cell wins (the answer usually reports the latest computation);
 * within a cell stdout is preferred to the value, the value to stderr,
 * then the closest number, then the first line.
 *
 * Output parsing takes the same numbers (pandas tables and their index
 * labels, dict and list reprs, numpy arrays, 1.234560e+06, percentages,
 * thousands separators) except plain-space grouping (table columns are
 * separated by spaces); nan and inf are words, not numbers; dates in
 * outputs (a "2024-07" index) are skipped as in answers. A percentage or
 * a magnitude in an output is indexed in both forms (48% as 48 and 0.48;
 * 1.2M as 1200000 and 1.2). */
#ifndef TERP_NUMTRACE_H
#define TERP_NUMTRACE_H

#include <stddef.h>

/* Numbers indexed from one source at most; the rest of a (capped) cell
 * output is not indexed. The index takes 32 bytes per number. */
#define NUMTRACE_MAX_PER_SOURCE	(1 << 16)

enum numtrace_stream {
	NUMTRACE_STDOUT = 0,
	NUMTRACE_STDERR = 1,
	NUMTRACE_VALUE = 2	/* the repr of the cell's trailing expression */
};

/* One text a cell printed. */
struct numtrace_source {
	int		 cell;		/* the cell's number, as shown in [k] */
	int		 stream;	/* enum numtrace_stream */
	const char	*text;		/* only read during numtrace_index_add */
	size_t		 len;
};

/* One number found in an answer. */
struct numtrace_hit {
	size_t	 off, len;	/* its bytes in the answer: sign, currency,
				 * magnitude word and % included */
	double	 value;		/* as written: "1.2M" 1200000, "-3.2%" -3.2 */
	int	 percent;	/* 1 when written as a percentage */
	int	 line;		/* 1-based line in the source; 0: untraced,
				 * "not in any output" (the fields below
				 * are then 0) */
	int	 cell;		/* the source: its cell and stream */
	int	 stream;
	size_t	 src_off, src_len;	/* the output number's bytes in
					 * that source's text */
	double	 matched;	/* the output number as printed (a
				 * percentage matched as a ratio: the
				 * ratio) */
};

struct numtrace_index;

/* A new, empty index; free it with numtrace_index_free. */
struct numtrace_index *numtrace_index_new(void);
void numtrace_index_free(struct numtrace_index *idx);

/* Indexes the numbers of one source: parses src->text once, keeps the
 * numbers sorted, and never reads the text again (offsets and lines are
 * kept, not the text). Add each cell's stdout, stderr and value once,
 * in any order; a cell with several chunks of one stream can add each
 * chunk, but then lines count within the chunk. Returns the count of
 * numbers indexed. */
size_t numtrace_index_add(struct numtrace_index *idx,
    const struct numtrace_source *src);

/* Forgets every source of a cell (the cell was re-run or deleted). */
void numtrace_index_drop_cell(struct numtrace_index *idx, int cell);

/* The count of numbers indexed, over all sources. */
size_t numtrace_index_count(const struct numtrace_index *idx);

/* Finds the numbers of answer[0..alen) (Markdown) that are not in
 * question[0..qlen) (question may be NULL) and traces each to the
 * index. *hits gets a new array of them in answer order (NULL when there
 * are none) that the caller frees with free(); *traced (may be NULL)
 * gets how many have a source. Returns the count of hits. Neither text
 * is kept. */
size_t numtrace_index_match(const struct numtrace_index *idx,
    const char *answer, size_t alen, const char *question, size_t qlen,
    struct numtrace_hit **hits, size_t *traced);

/* One-shot form for NUL-terminated texts: builds an index of src[0..nsrc)
 * and matches the answer, as above. */
size_t numtrace_answer(const char *answer, const char *question,
    const struct numtrace_source *src, size_t nsrc,
    struct numtrace_hit **hits, size_t *traced);

#endif
