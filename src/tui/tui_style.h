/* tui_style: theme roles to curses attributes and colour pairs for the
 * notebook UI (tui_style.c). Called by the drawing code only, once the
 * screen is up. */
#ifndef TERP_TUI_STYLE_H
#define TERP_TUI_STYLE_H

#include "terp/thumb.h"

#include "tui_priv.h"

/* Loads the theme (t->o.theme, else "default", else the built-in one)
 * and sets up the colours. Returns 0, or -1 with *err (caller frees)
 * when the theme file had problems (the built-in look fills in). */
int tui_style_init(struct tui *t, char **err);
void tui_style_free(struct tui *t);
/* Once per frame, before drawing: lets tui_colorpair.c recycle the pairs of
 * thumbnail cells no longer on screen. */
void tui_style_frame(struct tui *t);

/* Sets w's attributes for segment g: over >= 0 is a role that replaces
 * g's own style (a selected row); g may then be NULL. */
void tui_style_seg(struct tui *t, WINDOW *w, const struct tseg *g, int over);
void tui_style_role(struct tui *t, WINDOW *w, int role);

/* Whether the terminal shows UTF-8 (the locale's codeset; else ASCII
 * fallbacks). */
int tui_style_utf8(void);
/* Draws n bytes of UTF-8 text at w's cursor: as is on a UTF-8
 * terminal, else each character as ASCII in the columns the layout
 * gave it (tui_uwidth), so that nothing runs over a border. */
void tui_style_put(WINDOW *w, const char *s, size_t n);
/* The symbols and palette of thumbnails on this terminal. */
void tui_style_thumb_opts(const struct tui *t, struct thumb_opts *to);

#endif
