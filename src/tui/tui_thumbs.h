/* tui_thumbs: the notebook UI's thumbnail cache (tui_thumbs.c). */
#ifndef TERP_TUI_THUMBS_H
#define TERP_TUI_THUMBS_H

#include "terp/thumb.h"
#include "terp/tui_tlines.h"

#include "tui_priv.h"

/* The thumbnail of the PNG at path, at most cols wide and rows_max
 * high, rendered for this terminal (tui_style_thumb_opts) and cached;
 * the cache owns it. NULL when the file is not a decodable PNG (*why,
 * also the cache's, says so). */
struct thumb *tui_thumbs_get(struct tui *t, const char *path, int cols,
    int rows_max, const char **why);
/* Appends th as lines tagged tag, after indent spaces (at most 8). */
void tui_thumbs_lines(struct tlines *ls, const struct thumb *th, int indent,
    int tag);
void tui_thumbs_clear(struct tui *t);

/* Whether a file name ends in .png (any case). */
int tui_thumbs_is_png(const char *name);

#endif
