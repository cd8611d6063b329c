/* tui_pics: inline pictures in pixels (tui_pics.h). */
#include "tui_pics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "terp/buf.h"
#include "terp/png.h"
#include "terp/tui_gfx.h"
#include "terp/util.h"

#include "tui_cells.h"
#include "tui_style.h"

#define PICS_MAX_FILE	(8u << 20)	/* bigger PNGs stay blocks */
#define PICS_KITTY_ID0	16	/* ids 16..: a 256-colour index each */

int
tui_pics_on(const struct tui *t)
{
	if (!tui_style_utf8())
		return 0;
	if (t->gfx.mode == TUI_GFX_KITTY)	/* the id is the fg colour */
		return t->sty.colors && t->sty.ncolors >= 256;
	/* sixel through tmux lands where tmux's cursor is, not at the row */
	return t->gfx.mode == TUI_GFX_SIXEL && !t->gfx.passthrough;
}

/* A PNG's size from its header, 0 when it is not one. */
static int
pics_png_size(const char *path, uint32_t *w, uint32_t *h)
{
	unsigned char b[24];
	FILE *f = fopen(path, "rb");
	size_t n = f ? fread(b, 1, sizeof b, f) : 0;
	struct stat st;

	if (f == NULL)
		return 0;
	int big = fstat(fileno(f), &st) != 0 || (uint64_t)st.st_size > PICS_MAX_FILE;
	fclose(f);
	if (big || n < 24 || memcmp(b + 12, "IHDR", 4) != 0)
		return 0;
	*w = (uint32_t)b[16] << 24 | (uint32_t)b[17] << 16 | (uint32_t)b[18] << 8 | b[19];
	*h = (uint32_t)b[20] << 24 | (uint32_t)b[21] << 16 | (uint32_t)b[22] << 8 | b[23];
	return *w > 0 && *h > 0;
}

static void
pic_clear(struct pic *p)
{
	free(p->path);
	free(p->px);
	memset(p, 0, sizeof *p);
}

/* The slot of path at cols x rows, made (the least recently used one
 * taken) when there is none. */
static int
pics_slot(struct tui *t, const char *path, int cols, int rows, int indent)
{
	int free_i = -1;

	for (int i = 0; i < NPICS; i++) {
		struct pic *p = &t->pics.slot[i];
		if (p->path && p->cols == cols && p->rows == rows &&
		    p->indent == indent && strcmp(p->path, path) == 0) {
			p->stamp = ++t->pics.stamp;
			return i;
		}
		if (free_i < 0 || (t->pics.slot[free_i].path &&
		    (!p->path || p->stamp < t->pics.slot[free_i].stamp)))
			free_i = i;
	}
	struct pic *p = &t->pics.slot[free_i];
	if (p->path) {
		/* a cached cell body may still name it: built again */
		pic_clear(p);
		tui_cells_invalidate(t);
	}
	p->path = xstrdup(path);
	p->cols = cols;
	p->rows = rows;
	p->indent = indent;
	p->stamp = ++t->pics.stamp;
	return free_i;
}

int
tui_pics_lines(struct tui *t, struct tlines *ls, const char *path, int cols,
    int rows_max, int indent, int tag)
{
	uint32_t w, h;

	if (!tui_pics_on(t) || !pics_png_size(path, &w, &h))
		return -1;
	if (cols > TUI_GFX_PLACE_MAX)
		cols = TUI_GFX_PLACE_MAX;
	if (rows_max > TUI_GFX_PLACE_MAX)
		rows_max = TUI_GFX_PLACE_MAX;
	if (cols < 2 || rows_max < 1)
		return -1;
	int rows = rows_max;
	tui_gfx_box(w, h, t->gfx.cellw, t->gfx.cellh, &cols, &rows);
	int i = pics_slot(t, path, cols, rows, indent);
	struct buf b;
	buf_init(&b, (size_t)cols * 8 + 16);
	for (int r = 0; r < rows; r++) {
		struct tline *l = tui_tlines_add(ls, tag);
		if (indent > 0)
			tui_tline_add(l, R_TEXT, "        ", (size_t)(indent < 8 ? indent : 8));
		buf_reset(&b);
		if (t->gfx.mode == TUI_GFX_KITTY) {
			/* placeholders: curses draws and scrolls the picture */
			tui_gfx_kitty_row(&b, r, cols);
			tui_tline_add_color(l, b.data, b.len, PICS_KITTY_ID0 + i, -1);
		} else {
			/* blank cells for the sixel to cover */
			for (int c = 0; c < cols; c++)
				buf_addc(&b, ' ');
			tui_tline_add(l, R_TEXT, b.data, b.len);
			l->pic = i + 1;
			l->pic_row = r;
		}
	}
	buf_free(&b);
	return 0;
}

void
tui_pics_begin(struct tui *t)
{
	t->pics.nnow = 0;
}

void
tui_pics_seen(struct tui *t, const struct tline *l, int y, int x)
{
	if (l->pic <= 0 || l->pic > NPICS || !t->pics.slot[l->pic - 1].path)
		return;
	struct place *last = t->pics.nnow ? &t->pics.now[t->pics.nnow - 1] : NULL;
	if (last && last->pic == l->pic - 1 && last->y + (last->r1 - last->r0) == y &&
	    last->r1 == l->pic_row) {
		last->r1++;
		return;
	}
	if (t->pics.nnow == NPLACES)
		return;		/* more than fit a screen: the rest blank */
	struct place *p = &t->pics.now[t->pics.nnow++];
	p->pic = l->pic - 1;
	p->y = y;
	p->x = x + t->pics.slot[p->pic].indent;
	p->r0 = l->pic_row;
	p->r1 = l->pic_row + 1;
	t->pics.slot[p->pic].stamp = ++t->pics.stamp;
}

static int
place_same(const struct place *a, const struct place *b)
{
	return a->pic == b->pic && a->y == b->y && a->x == b->x &&
	    a->r0 == b->r0 && a->r1 == b->r1;
}

static int
place_in(const struct place *p, const struct place *v, int n)
{
	for (int i = 0; i < n; i++)
		if (place_same(p, &v[i]))
			return 1;
	return 0;
}

void
tui_pics_before_update(struct tui *t)
{
	/* sixel pixels stay until text is written over them, and curses
	 * writes only what it thinks changed: the rows of a picture that
	 * moved or went are thrown away, so curses writes them whole */
	for (int i = 0; i < t->pics.ndrawn; i++) {
		const struct place *p = &t->pics.drawn[i];
		if (!place_in(p, t->pics.now, t->pics.nnow))
			wredrawln(t->lay.mainw, p->y, p->r1 - p->r0);
	}
}

/* Writes seq to the terminal at row y, col x (1-based), the cursor
 * saved and restored around it, through tmux's passthrough when inside
 * tmux. */
static void
pics_send(const struct tui *t, const char *seq, size_t n, int y, int x)
{
	struct buf out;

	buf_init(&out, n * 2 + 64);
	if (y > 0)
		buf_printf(&out, "\0337\033[%d;%dH", y, x);
	if (t->gfx.passthrough)
		tui_gfx_tmux_wrap(&out, seq, n);
	else
		buf_add(&out, seq, n);
	if (y > 0)
		buf_adds(&out, "\0338");
	fflush(stdout);
	/* a terminal gone is found out by the next frame */
	(void)write_all(STDOUT_FILENO, out.data, out.len);
	buf_free(&out);
}

/* kitty: the pictures not yet sent, transmitted. */
static void
pics_kitty_send(struct tui *t)
{
	for (int i = 0; i < NPICS; i++) {
		struct pic *p = &t->pics.slot[i];
		if (!p->path || p->sent)
			continue;
		size_t len;
		char *png = read_file(p->path, PICS_MAX_FILE, &len);
		struct buf b;
		p->sent = 1;	/* once: a file gone is not asked again */
		if (png == NULL)
			continue;
		buf_init(&b, len * 4 / 3 + 1024);
		if (tui_gfx_kitty_virtual(&b, png, len, PICS_KITTY_ID0 + i,
		    p->cols, p->rows) == 0)
			pics_send(t, b.data, b.len, 0, 0);
		buf_free(&b);
		free(png);
	}
}

/* sixel: the picture scaled to its cells, made on first use. */
static int
pics_pixels(struct tui *t, struct pic *p)
{
	if (p->px)
		return 0;
	int pw = p->cols * t->gfx.cellw, ph = p->rows * t->gfx.cellh;
	char *err = NULL;
	/* twice the target a side: the area average still has pixels */
	struct png_rgba *img = png_decode_file_fit(p->path, (size_t)pw * ph * 4,
	    &err);
	free(err);
	if (img == NULL)
		return -1;
	p->px = tui_gfx_scale(img->px, (int)img->w, (int)img->h, pw, ph);
	png_rgba_free(img);
	p->pw = pw;
	p->ph = ph;
	return p->px ? 0 : -1;
}

static void
pics_sixel_draw(struct tui *t, const struct place *pl)
{
	struct pic *p = &t->pics.slot[pl->pic];
	struct buf b;

	if (pics_pixels(t, p) < 0)
		return;
	int y0 = pl->r0 * t->gfx.cellh, h = (pl->r1 - pl->r0) * t->gfx.cellh;
	if (y0 + h > p->ph)
		h = p->ph - y0;
	if (h <= 0)
		return;
	buf_init(&b, (size_t)p->pw * h / 2 + 4096);
	if (tui_gfx_sixel(&b, p->px + (size_t)y0 * p->pw * 4, p->pw, h) == 0)
		pics_send(t, b.data, b.len, pl->y + 1, pl->x + 1);
	buf_free(&b);
}

void
tui_pics_after_update(struct tui *t)
{
	if (t->gfx.mode == TUI_GFX_KITTY) {
		pics_kitty_send(t);
		return;
	}
	for (int i = 0; i < t->pics.nnow; i++)
		if (!place_in(&t->pics.now[i], t->pics.drawn, t->pics.ndrawn))
			pics_sixel_draw(t, &t->pics.now[i]);
	memcpy(t->pics.drawn, t->pics.now, sizeof t->pics.now);
	t->pics.ndrawn = t->pics.nnow;
}

void
tui_pics_lost(struct tui *t, int images)
{
	t->pics.ndrawn = 0;
	if (images && t->gfx.mode == TUI_GFX_KITTY)
		for (int i = 0; i < NPICS; i++)
			t->pics.slot[i].sent = 0;
}

void
tui_pics_free(struct tui *t)
{
	struct buf b;

	buf_init(&b, 256);
	for (int i = 0; i < NPICS; i++) {
		if (t->pics.slot[i].sent && t->gfx.mode == TUI_GFX_KITTY)
			tui_gfx_kitty_delete(&b, PICS_KITTY_ID0 + i);
		pic_clear(&t->pics.slot[i]);
	}
	if (b.len)
		pics_send(t, b.data, b.len, 0, 0);
	buf_free(&b);
	t->pics.nnow = t->pics.ndrawn = 0;
}
