/* tui_colorpair: hands out ncurses colour pairs for (fg, bg) colours, a
 * limited resource (COLOR_PAIRS), so that many thumbnails on screen never
 * run out of pairs or recolour cells drawn earlier. The low pairs belong
 * to the theme's roles. The only module besides the TUI that includes
 * <curses.h>. */
#ifndef TERP_TUI_COLORPAIR_H
#define TERP_TUI_COLORPAIR_H

#include "terp/tui_theme.h"

struct colorpair;

/* Pairs 1..THEME_NROLES are the theme roles'; dynamic pairs start after. */
#define COLORPAIR_FIRST_DYNAMIC	(THEME_NROLES + 1)

/* Manages pairs first..last (inclusive) after start_color(). With 256
 * colours and room for it, the 240x240 pairs of colours 16..255 get a
 * fixed number each (initialised on first use, never evicted); all other
 * combinations share the rest with least-recently-used eviction. Returns
 * a new manager the caller frees with tui_colorpair_free (which does not
 * touch the terminal), or NULL when first..last is empty. */
struct colorpair *tui_colorpair_new(int first, int last);
void tui_colorpair_free(struct colorpair *cp);

/* Starts a frame: pairs used since the previous call may be evicted from
 * now on; pairs used after it are kept until the next call. Call it once
 * per full redraw. */
void tui_colorpair_frame(struct colorpair *cp);

/* The pair for (fg, bg), -1 being the terminal default. Initialises or
 * evicts as needed. When every pair is in use in this frame it returns
 * the existing pair nearest in colour, never recolouring a visible one.
 * Returns 0 (the terminal default pair) only if the manager has no
 * pairs at all. Use the number with setcchar or wattr_set (it may be
 * above 255). */
int tui_colorpair_get(struct colorpair *cp, int fg, int bg);

/* Statistics for tests and the debug line. */
struct tui_colorpair_stats {
	long	inits;		/* pairs (re)initialised */
	long	evictions;
	long	fallbacks;	/* nearest-pair answers when full */
};
void tui_colorpair_stats(const struct colorpair *cp, struct tui_colorpair_stats *st);

/* Initialises pairs 1..THEME_NROLES from theme t for a terminal showing
 * ncolors colours (see tui_theme_ncolors; 0 = no colour: the pairs are left
 * at the default), light when its background is (tui_theme_style_resolve
 * keeps every role visible on it). Call after start_color() and
 * use_default_colors(). */
void tui_colorpair_apply_theme(const struct theme *t, int ncolors, int light);

/* The ncurses attributes and pair to draw role with (for wattr_set or
 * setcchar): the role's attributes, and its pair unless ncolors was 0. */
void tui_colorpair_role(const struct theme *t, enum theme_role role, int ncolors,
    unsigned long *attrs, int *pair);

#endif
