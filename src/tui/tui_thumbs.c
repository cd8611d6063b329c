/* tui_thumbs: chart thumbnails for the notebook UI: PNG artifacts
 * decoded and rendered (thumb.c) at the sizes the panes ask for, the
 * last NTHUMBS kept, and turned into display lines. */
#include "tui_thumbs.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "terp/buf.h"
#include "terp/png.h"
#include "terp/sanitize.h"
#include "terp/util.h"

#include "tui_style.h"

/* The thumbnail of a PNG at most cols wide and rows_max high, cached.
 * NULL when the file is not a decodable PNG (*why says so). */
struct thumb *
tui_thumbs_get(struct tui *t, const char *path, int cols, int rows_max,
    const char **why)
{
	struct tcache *slot = NULL;

	*why = NULL;
	if (t->gfx.mode == TUI_GFX_OFF)
		return NULL;	/* --images off: the file's line only */
	if (cols < 2)
		cols = 2;
	for (int i = 0; i < NTHUMBS; i++) {
		struct tcache *c = &t->thumbs.slot[i];
		if (c->path && c->cols == cols && c->rows_max == rows_max &&
		    strcmp(c->path, path) == 0) {
			c->stamp = ++t->thumbs.stamp;
			*why = c->err;
			return c->t;
		}
		if (!slot || !c->path || (slot->path && c->stamp < slot->stamp))
			slot = c;
	}
	free(slot->path);
	free(slot->err);
	thumb_free(slot->t);
	memset(slot, 0, sizeof *slot);
	slot->path = xstrdup(path);
	slot->cols = cols;
	slot->rows_max = rows_max;
	slot->stamp = ++t->thumbs.stamp;

	char *err = NULL;
	struct png_rgba *img = png_decode_file_fit(path, 0, &err);
	if (img) {
		struct thumb_opts to;
		thumb_opts_init(&to);
		to.cols = cols;
		to.max_rows = rows_max;
		tui_style_thumb_opts(t, &to);
		slot->t = thumb_render(img->px, (int)img->w, (int)img->h, 4,
		    (size_t)img->w * 4, &to, &err);
		png_rgba_free(img);
	}
	if (!slot->t)
		slot->err = err ? sanitize_str(err, strlen(err), 0) :
		    xstrdup("cannot render");
	else
		free(err);
	*why = slot->err;
	return slot->t;
}

void
tui_thumbs_clear(struct tui *t)
{
	for (int i = 0; i < NTHUMBS; i++) {
		free(t->thumbs.slot[i].path);
		free(t->thumbs.slot[i].err);
		thumb_free(t->thumbs.slot[i].t);
		memset(&t->thumbs.slot[i], 0, sizeof t->thumbs.slot[i]);
	}
}

/* Appends the grid as lines: runs of one colour become one segment. */
void
tui_thumbs_lines(struct tlines *ls, const struct thumb *th, int indent, int tag)
{
	for (int y = 0; y < th->rows; y++) {
		struct tline *l = tui_tlines_add(ls, tag);
		if (indent > 0)
			tui_tline_add(l, R_TEXT, "        ", (size_t)(indent < 8 ? indent : 8));
		struct buf run;
		buf_init(&run, 4096);
		int fg = -2, bg = -2;
		for (int x = 0; x < th->cols; x++) {
			const struct thumb_cell *c = &th->cells[y * th->cols + x];
			if ((c->fg != fg || c->bg != bg) && run.len) {
				tui_tline_add_color(l, run.data, run.len, fg, bg);
				buf_reset(&run);
			}
			fg = c->fg;
			bg = c->bg;
			buf_adds(&run, c->sym[0] ? c->sym : " ");
		}
		if (run.len)
			tui_tline_add_color(l, run.data, run.len, fg, bg);
		buf_free(&run);
	}
}

int
tui_thumbs_is_png(const char *name)
{
	size_t n = strlen(name);
	return n > 4 && strcasecmp(name + n - 4, ".png") == 0;
}
