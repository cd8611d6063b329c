/* tui_preview: the full-pane preview's picture in real pixels (kitty,
 * iTerm2 or sixel): the PNG read, encoded for the terminal's protocol
 * and written past curses once per picture and size, and taken away
 * when the preview closes. The overlay's text and block drawing stay
 * in tui_draw.c. */
#include "tui_preview.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include "terp/buf.h"
#include "terp/png.h"
#include "terp/tui_gfx.h"
#include "terp/util.h"

#include "tui_items.h"
#include "tui_pics.h"

/* PNGs bigger than this are previewed in blocks (streamed in a few
 * MB) rather than read whole and sent in base64. */
#define GFX_MAX_FILE	(8u << 20)

/* Whether the preview's picture goes out in pixels rather than block
 * characters. */
int
tui_preview_in_pixels(const struct tui *t)
{
	struct stat st;

	if (t->gfx.mode != TUI_GFX_KITTY && t->gfx.mode != TUI_GFX_ITERM &&
	    t->gfx.mode != TUI_GFX_SIXEL)
		return 0;
	return t->ov.png && stat(t->ov.png, &st) == 0 &&
	    (uint64_t)st.st_size <= GFX_MAX_FILE;
}

/* The preview's PNG encoded for the protocol into out, within cols x
 * rows cells (the cells it takes are written back). 0, or -1 with a
 * reason in *why. */
static int
gfx_encode(struct tui *t, struct buf *out, int *cols, int *rows,
    char **why)
{
	size_t len;
	char *png = read_file(t->ov.png, GFX_MAX_FILE, &len);
	int rc = -1;

	*why = NULL;
	if (png == NULL || len < 24 || memcmp(png + 12, "IHDR", 4) != 0) {
		*why = xstrdup("not a PNG that can be shown");
		free(png);
		return -1;
	}
	const uint8_t *p = (const uint8_t *)png;
	uint32_t w = (uint32_t)p[16] << 24 | p[17] << 16 | p[18] << 8 | p[19];
	uint32_t h = (uint32_t)p[20] << 24 | p[21] << 16 | p[22] << 8 | p[23];
	if (w == 0 || h == 0) {
		*why = xstrdup("an empty picture");
		free(png);
		return -1;
	}
	tui_gfx_box(w, h, t->gfx.cellw, t->gfx.cellh, cols, rows);
	if (t->gfx.mode == TUI_GFX_KITTY)
		rc = tui_gfx_kitty(out, png, len, *cols, *rows);
	else if (t->gfx.mode == TUI_GFX_ITERM)
		rc = tui_gfx_iterm(out, png, len, *cols, *rows);
	else {
		size_t px = (size_t)*cols * t->gfx.cellw * *rows * t->gfx.cellh;
		struct png_rgba *img = png_decode_mem_fit(png, len, px, why);
		if (img)
			rc = tui_gfx_sixel(out, img->px, (int)img->w, (int)img->h);
		png_rgba_free(img);
	}
	free(png);
	if (rc < 0 && *why == NULL)
		*why = xstrdup("the picture is too big to send");
	return rc;
}

/* Writes seq to the terminal, through tmux when inside it. */
static void
gfx_send(const struct tui *t, const char *seq, size_t n, int row, int col)
{
	struct buf out;

	buf_init(&out, n * 2 + 64);
	/* save the cursor, go to the picture's corner, restore: curses'
	 * idea of the cursor stays true */
	buf_printf(&out, "\0337\033[%d;%dH", row, col);
	if (t->gfx.passthrough)
		tui_gfx_tmux_wrap(&out, seq, n);
	else
		buf_add(&out, seq, n);
	buf_adds(&out, "\0338");
	fflush(stdout);
	/* a terminal gone is found out by the next frame */
	(void)write_all(STDOUT_FILENO, out.data, out.len);
	buf_free(&out);
}

/* After doupdate: the full-pane preview's picture in pixels, once per
 * picture and size (curses leaves the blank body alone after that). */
void
tui_preview_pixels(struct tui *t)
{
	if (!t->ov.on || !t->ov.png || !tui_preview_in_pixels(t))
		return;
	int h = t->lay.rows - t->lay.inrows - 1, w = t->lay.cols;
	int rows = h - 2, cols = w - 2;
	if (rows < 2 || cols < 4)
		return;
	char *key = xasprintf("%s@%dx%d", t->ov.png, cols, rows);
	if (t->ov.shown && strcmp(t->ov.shown, key) == 0) {
		free(key);
		return;
	}
	if (t->ov.shown && t->gfx.mode == TUI_GFX_KITTY) {
		struct buf c;
		buf_init(&c, 64);
		tui_gfx_kitty_clear(&c);
		gfx_send(t, c.data, c.len, 1, 1);
		buf_free(&c);
	}
	free(t->ov.shown);
	t->ov.shown = key;
	struct buf img;
	char *why;
	buf_init(&img, 32u << 20);
	if (gfx_encode(t, &img, &cols, &rows, &why) == 0)
		gfx_send(t, img.data, img.len, 2, 2);
	else {
		tui_flash(t, "%s", why);
		free(why);
	}
	buf_free(&img);
}

/* Leaving a preview drawn in pixels: kitty's image is deleted, and the
 * screen repainted (sixel and iTerm2 pixels stay until overwritten). */
void
tui_preview_pixels_gone(struct tui *t)
{
	if (!t->ov.shown)
		return;
	if (t->gfx.mode == TUI_GFX_KITTY) {
		struct buf c;
		buf_init(&c, 64);
		tui_gfx_kitty_clear(&c);
		gfx_send(t, c.data, c.len, 1, 1);
		buf_free(&c);
	}
	clearok(curscr, TRUE);
	free(t->ov.shown);
	t->ov.shown = NULL;
	tui_pics_lost(t, 1);
}
