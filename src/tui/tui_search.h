/* tui_search: `/`, n and N in the conversation and cell panes
 * (tui_search.c). */
#ifndef TERP_TUI_SEARCH_H
#define TERP_TUI_SEARCH_H

#include <stddef.h>

#include "tui_priv.h"

/* Whether pat occurs in s[0..n) (ignoring ASCII case when pat has no
 * capital): its offset and length in *off, *len. */
int tui_search_find(const char *pat, const char *s, size_t n, size_t *off,
    size_t *len);

/* `/` in the focused pane: the input line (its text kept aside) becomes
 * the search prompt (M_SEARCH). */
void tui_search_begin(struct tui *t);
/* The prompt's line: searches pat (empty: the last pattern again) from
 * the top of the pane, the input line and the focus back as they were. */
void tui_search_set(struct tui *t, const char *pat);
/* Esc, Ctrl-C or Ctrl-D on the prompt: no search. */
void tui_search_cancel(struct tui *t);
/* n (dir 1) and N (dir -1). */
void tui_search_next(struct tui *t, int dir);
/* No more highlighting. */
void tui_search_end(struct tui *t);
/* Whether a search is on in pane p. */
int tui_search_active(const struct tui *t, enum pane p);
void tui_search_free(struct tui *t);

#endif
