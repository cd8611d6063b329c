/* tui_termquery: asks the terminal what it is before curses takes the
 * screen (tui_termquery.c): its background colour (OSC 11), so that a
 * light terminal gets the light theme's colours, and its DA1 attributes,
 * which name sixel. One round trip for both, and what the user typed
 * meanwhile is kept for the input line, not lost with the replies. */
#ifndef TERP_TUI_TERMQUERY_H
#define TERP_TUI_TERMQUERY_H

#include <stddef.h>

#define TUI_TERMQUERY_MAX	512	/* bytes read at most, keys kept at most */

struct tui_termquery {
	int	light;		/* 1 light, 0 dark, -1 unknown (asked
				 * only with ask_bg; else -1) */
	int	sixel;		/* DA1 names sixel: 1, 0 not, -1 no DA1
				 * answer */
	char	keys[TUI_TERMQUERY_MAX];	/* typed meanwhile, in order, the
					 * replies taken out */
	size_t	nkeys;
};

/* Sends OSC 11 (when ask_bg) and then DA1, which every terminal answers,
 * to out_fd and reads in_fd (ttys, in a short raw mode of its own) until
 * the DA1 answer or timeout_ms: a terminal that ignores OSC 11 costs one
 * round trip, one that answers nothing the timeout. Without an OSC 11
 * answer, $COLORFGBG says the background when it can. Not ttys: nothing
 * asked, q says unknown. */
void tui_termquery(int in_fd, int out_fd, int ask_bg, int timeout_ms,
    struct tui_termquery *q);
/* The bytes of in[0..n) that are not a terminal's answer (an OSC string
 * ended by BEL or ST, a CSI ? ... c DA1 answer; an answer cut short at
 * the end is dropped), copied to keys (at most max); returns their
 * count. */
size_t tui_termquery_keys(const char *in, size_t n, char *keys, size_t max);

#endif
