#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "pngmk.h"
#include "terp/palette.h"
#include "terp/png.h"
#include "terp/thumb.h"

/* Round-trips px through a PNG so the decoder is part of every test. */
static struct thumb *
render_png(int w, int h, unsigned char *px, struct thumb_opts *o)
{
	size_t len;
	unsigned char *p = pngmk_rgb(w, h, px, &len);
	struct png_rgba *img = png_decode_mem(p, len, NULL);
	struct thumb *t;
	char *err = NULL;

	cr_assert_not_null(img);
	t = thumb_render(img->px, (int)img->w, (int)img->h, 4,
	    (size_t)img->w * 4, o, &err);
	cr_assert_not_null(t, "%s", err ? err : "");
	png_rgba_free(img);
	free(p);
	return t;
}

static void
fill(unsigned char *px, int w, int x0, int y0, int x1, int y1,
    int r, int g, int b)
{
	for (int y = y0; y < y1; y++)
		for (int x = x0; x < x1; x++) {
			px[(y * w + x) * 3] = (unsigned char)r;
			px[(y * w + x) * 3 + 1] = (unsigned char)g;
			px[(y * w + x) * 3 + 2] = (unsigned char)b;
		}
}

Test(thumb, palette_mapping)
{
	uint8_t c[3];

	cr_assert_eq(palette_nearest(256, 255, 0, 0), 196);
	cr_assert_eq(palette_nearest(256, 255, 255, 255), 231);
	cr_assert_eq(palette_nearest(256, 128, 128, 128), 244);
	cr_assert_eq(palette_nearest(256, 0, 95, 135), 16 + 36 * 0 + 6 * 1 + 2);
	cr_assert_eq(palette_nearest(16, 250, 10, 10), 9);
	cr_assert_eq(palette_nearest(8, 250, 10, 10), 1);
	cr_assert_eq(palette_nearest(8, 255, 255, 255), 7);
	cr_assert_eq(palette_nearest(16, 0, 0, 0), 0);
	palette_rgb(196, c);
	cr_assert(c[0] == 255 && c[1] == 0 && c[2] == 0);
	palette_rgb(232, c);
	cr_assert_eq(c[0], 8);
	/* Every colour of the 240 maps to itself. */
	for (int i = 16; i < 256; i++) {
		palette_rgb(i, c);
		int j = palette_nearest(256, c[0], c[1], c[2]);
		uint8_t d[3];
		palette_rgb(j, d);
		cr_assert(memcmp(c, d, 3) == 0, "%d -> %d", i, j);
	}
}

Test(thumb, fit_keeps_aspect)
{
	struct thumb_opts o;
	int c, r;

	thumb_opts_init(&o);
	thumb_fit(640, 480, &o, &c, &r);
	cr_assert_eq(c, 40);
	cr_assert_eq(r, 15);
	o.max_rows = 10;
	thumb_fit(640, 480, &o, &c, &r);
	cr_assert_eq(r, 10);
	cr_assert_eq(c, 27);
}

Test(thumb, solid_square_is_uniform)
{
	int w = 64, h = 64;
	unsigned char *px = malloc((size_t)w * h * 3);
	struct thumb_opts o;
	struct thumb *t;

	fill(px, w, 0, 0, w, h, 255, 0, 0);
	thumb_opts_init(&o);
	o.cols = 8;
	t = render_png(w, h, px, &o);
	cr_assert_eq(t->cols, 8);
	cr_assert_eq(t->rows, 4);
	for (int i = 0; i < t->cols * t->rows; i++) {
		cr_assert_str_eq(t->cells[i].sym, " ");
		cr_assert_eq(t->cells[i].bg, 196);
	}
	thumb_free(t);
	o.palette = THUMB_PAL_8;
	t = render_png(w, h, px, &o);
	cr_assert_eq(t->cells[5].bg, 1);
	thumb_free(t);
	free(px);
}

Test(thumb, gradient_gets_lighter)
{
	int w = 256, h = 32;
	unsigned char *px = malloc((size_t)w * h * 3);
	struct thumb_opts o;
	struct thumb *t;
	int prev = -1;

	for (int x = 0; x < w; x++)
		fill(px, w, x, 0, x + 1, h, x, x, x);
	thumb_opts_init(&o);
	o.cols = 16;
	t = render_png(w, h, px, &o);
	for (int x = 0; x < t->cols; x++) {
		uint8_t c[3];
		/* Cells of a smooth ramp are flat greys. */
		palette_rgb(t->cells[x].bg, c);
		cr_assert_eq(c[0], c[2]);
		cr_assert(c[0] >= prev, "cell %d: %d < %d", x, c[0], prev);
		prev = c[0];
	}
	cr_assert(prev > 200);
	thumb_free(t);
	free(px);
}

Test(thumb, checkerboard_gives_quadrants)
{
	/* 8x4 cells of 8x16 px; each cell: upper left and lower right
	 * black, the others white. */
	int w = 64, h = 64;
	unsigned char *px = malloc((size_t)w * h * 3);
	struct thumb_opts o;
	struct thumb *t;

	fill(px, w, 0, 0, w, h, 255, 255, 255);
	for (int y = 0; y < h; y += 16)
		for (int x = 0; x < w; x += 8) {
			fill(px, w, x, y, x + 4, y + 8, 0, 0, 0);
			fill(px, w, x + 4, y + 8, x + 8, y + 16, 0, 0, 0);
		}
	thumb_opts_init(&o);
	o.cols = 8;
	for (int mode = 0; mode < 2; mode++) {
		o.mode = mode ? THUMB_MODE_PHOTO : THUMB_MODE_CHART;
		t = render_png(w, h, px, &o);
		cr_assert_eq(t->rows, 4);
		for (int i = 0; i < t->cols * t->rows; i++) {
			int m = thumb_symbol_mask(t->cells[i].sym);
			const struct thumb_cell *c = &t->cells[i];
			/* ▚ black on white, or ▞ white on black. */
			cr_assert(m == 9 || m == 6, "cell %d: %s", i, c->sym);
			cr_assert_eq(m == 9 ? c->fg : c->bg, 16);
			cr_assert_eq(m == 9 ? c->bg : c->fg, 231);
		}
		thumb_free(t);
	}
	/* Half blocks cannot draw a checkerboard: no quadrant glyphs. */
	o.symbols = THUMB_SYM_HALF;
	o.mode = THUMB_MODE_CHART;
	t = render_png(w, h, px, &o);
	for (int i = 0; i < t->cols * t->rows; i++) {
		int m = thumb_symbol_mask(t->cells[i].sym);
		cr_assert(m == 0 || m == 3 || m == 12 || m == 5 || m == 10 ||
		    m == 15, "%s", t->cells[i].sym);
	}
	thumb_free(t);
	free(px);
}

/* A 640x480 white chart with a black frame and a 2-pixel blue line
 * rising from bottom left to top right. */
static unsigned char *
line_chart(int w, int h)
{
	unsigned char *px = malloc((size_t)w * h * 3);

	fill(px, w, 0, 0, w, h, 255, 255, 255);
	fill(px, w, 80, 60, 81, 420, 0, 0, 0);		/* y axis */
	fill(px, w, 80, 420, 580, 421, 0, 0, 0);	/* x axis */
	for (int x = 100; x < 560; x++) {
		int y = 400 - (x - 100) * 320 / 460;
		fill(px, w, x, y, x + 1, y + 2, 31, 119, 180);
	}
	return px;
}

Test(thumb, thin_line_stays_visible)
{
	int w = 640, h = 480;
	unsigned char *px = line_chart(w, h);
	struct thumb_opts o;
	struct thumb *t;
	int blueish = 0, axis = 0;

	thumb_opts_init(&o);
	t = render_png(w, h, px, &o);
	cr_assert_eq(t->cols, 40);
	cr_assert_eq(t->rows, 15);
	for (int x = 100; x < 560; x += 16) {
		int y = 400 - (x - 100) * 320 / 460;
		const struct thumb_cell *c = &t->cells[(y * 15 / 480) * 40 +
		    x * 40 / 640];
		uint8_t rgb[3];
		cr_assert(strcmp(c->sym, " ") != 0 || c->bg != 231,
		    "line cell at x=%d is blank", x);
		palette_rgb(strcmp(c->sym, " ") ? c->fg : c->bg, rgb);
		if (rgb[2] > rgb[0] + 20)
			blueish++;
	}
	/* The axis column (x=80 -> cell 5) is drawn all the way down. */
	for (int y = 60 * 15 / 480 + 1; y < 420 * 15 / 480; y++)
		if (strcmp(t->cells[y * 40 + 5].sym, " ") != 0)
			axis++;
	cr_assert(blueish >= 25, "only %d blue line cells", blueish);
	cr_assert(axis >= 9, "axis cells %d", axis);
	thumb_free(t);

	/* Mono: the same line, as shapes. */
	o.palette = THUMB_PAL_MONO;
	t = render_png(w, h, px, &o);
	for (int x = 100; x < 560; x += 16) {
		int y = 400 - (x - 100) * 320 / 460;
		const struct thumb_cell *c = &t->cells[(y * 15 / 480) * 40 +
		    x * 40 / 640];
		cr_assert_str_neq(c->sym, " ", "mono line cell x=%d", x);
		cr_assert_eq(c->fg, -1);
	}
	cr_assert_str_eq(t->cells[0].sym, " ");
	thumb_free(t);
	free(px);
}

Test(thumb, alpha_over_background_and_ansi)
{
	unsigned char px[4 * 4 * 4];
	struct thumb_opts o;
	struct thumb *t;
	struct buf b;

	memset(px, 0, sizeof px);	/* fully transparent black */
	thumb_opts_init(&o);
	o.cols = 2;
	t = thumb_render(px, 4, 4, 4, 16, &o, NULL);
	cr_assert_eq(t->cells[0].bg, 231);	/* white shows through */
	buf_init(&b, 4096);
	cr_assert_eq(thumb_write_ansi(t, &b), 0);
	cr_assert(strstr(buf_str(&b), "48;5;231m") != NULL, "%s", buf_str(&b));
	cr_assert(strstr(buf_str(&b), "\033[0m\n") != NULL);
	buf_free(&b);
	thumb_free(t);
	char *err = NULL;
	cr_assert_null(thumb_render(px, 0, 4, 4, 16, &o, &err));
	cr_assert_not_null(err);
	free(err);
}

Test(thumb, ascii_is_ascii)
{
	int w = 640, h = 480;
	unsigned char *px = line_chart(w, h);
	struct thumb_opts o;
	struct thumb *t;
	int ink = 0;

	thumb_opts_init(&o);
	o.symbols = THUMB_SYM_ASCII;
	o.palette = THUMB_PAL_MONO;
	t = render_png(w, h, px, &o);
	for (int i = 0; i < t->cols * t->rows; i++) {
		cr_assert((unsigned char)t->cells[i].sym[0] < 0x80);
		cr_assert_eq(t->cells[i].sym[1], '\0');
		ink += t->cells[i].sym[0] != ' ';
	}
	cr_assert(ink > 40 && ink < 200, "%d ink cells", ink);
	thumb_free(t);
	free(px);
}

/* Issue 12, item 12: without colour, a chart's light grid lines no
 * longer weigh as much as its series and axes: cells crossed only by
 * the grid are blank, the series, the axes and a pastel area still
 * show. */
Test(thumb, mono_drops_the_grid_keeps_series_axes_and_areas)
{
	int w = 400, h = 200;
	unsigned char *px = malloc((size_t)w * h * 3);
	struct thumb_opts o;
	struct thumb *t;

	memset(px, 255, (size_t)w * h * 3);
	for (int x = 55; x < w; x += 100)		/* matplotlib's grid */
		fill(px, w, x, 0, x + 1, h, 0xb0, 0xb0, 0xb0);
	fill(px, w, 0, 50, w, 51, 0xb0, 0xb0, 0xb0);
	fill(px, w, 0, 150, w, 151, 0xb0, 0xb0, 0xb0);
	fill(px, w, 15, 0, 17, h, 0, 0, 0);		/* the axes */
	fill(px, w, 0, 190, w, 192, 0, 0, 0);
	fill(px, w, 20, 110, 380, 112, 31, 119, 180);	/* a tab:blue series */
	fill(px, w, 270, 120, 330, 180, 0xae, 0xc7, 0xe8);	/* a pastel bar */
	thumb_opts_init(&o);
	o.palette = THUMB_PAL_MONO;
	t = render_png(w, h, px, &o);
	cr_assert_eq(t->cols, 40);
	cr_assert_eq(t->rows, 10);
#define SYM(x, y) (t->cells[(y) * 40 + (x)].sym)
	/* the grid alone: blank, rows 2 and 7 and columns 5, 15, 25, 35 */
	cr_assert_str_eq(SYM(15, 3), " ", "vertical grid line drawn");
	cr_assert_str_eq(SYM(25, 8), " ", "vertical grid line drawn");
	cr_assert_str_eq(SYM(10, 2), " ", "horizontal grid line drawn");
	cr_assert_str_eq(SYM(20, 7), " ", "horizontal grid line drawn");
	/* the series, also where the grid crosses it; the axes */
	cr_assert_str_neq(SYM(10, 5), " ");
	cr_assert_str_neq(SYM(15, 5), " ");
	cr_assert_str_neq(SYM(1, 3), " ");
	cr_assert_str_neq(SYM(10, 9), " ");
	/* the pastel area keeps a shade */
	cr_assert_str_neq(SYM(30, 7), " ");
#undef SYM
	thumb_free(t);
	free(px);
}

/* Issue 24: a faint grid (matplotlib's at alpha 0.3: #ebebeb on white,
 * a tint over a bar) is not drawn as data: the thumbnail is the one of
 * the same chart without the grid, cell for cell, but where the line
 * crosses the grid. */
Test(thumb, faint_grid_lines_are_background)
{
	int w = 640, h = 480;
	unsigned char *px = line_chart(w, h), *plain = line_chart(w, h);
	struct thumb_opts o;
	struct thumb *t, *u;

	fill(px, w, 300, 300, 360, 420, 31, 119, 180);	/* a blue bar */
	fill(plain, w, 300, 300, 360, 420, 31, 119, 180);
	for (int y = 100; y < 400; y += 60)
		fill(px, w, 82, y, 578, y + 1, 235, 235, 235);
	fill(px, w, 300, 340, 360, 341, 74, 136, 179);	/* across the bar */
	thumb_opts_init(&o);
	o.cols = 60;
	t = render_png(w, h, px, &o);
	u = render_png(w, h, plain, &o);
	cr_assert_eq(t->rows, u->rows);
	int differ = 0;
	for (int i = 0; i < t->cols * t->rows; i++) {
		const struct thumb_cell *a = &t->cells[i], *b = &u->cells[i];
		if (strcmp(a->sym, b->sym) != 0 || a->fg != b->fg || a->bg != b->bg)
		{
			/* where the line crosses a grid line: still the line's
			 * colour, in another tint or shape */
			uint8_t c[3];
			palette_rgb(a->fg == 231 ? a->bg : a->fg, c);
			cr_assert(c[2] > c[0] + 20, "cell %d: %s %d/%d", i, a->sym,
			    a->fg, a->bg);
			differ++;
		}
	}
	/* 5 grid lines cross the series once each (213 cells differed) */
	cr_assert_leq(differ, 5, "%d cells draw the grid", differ);
	thumb_free(t);
	thumb_free(u);
	free(px);
	free(plain);
}

/* The darkest of a cell's two colours, 0..255 (a space: its bg). */
static int
cell_dark(const struct thumb_cell *c)
{
	uint8_t a[3], b[3];

	palette_rgb(c->bg, a);
	if (strcmp(c->sym, " ") == 0)
		return (a[0] + a[1] + a[2]) / 3;
	palette_rgb(c->fg, b);
	int la = (a[0] + a[1] + a[2]) / 3, lb = (b[0] + b[1] + b[2]) / 3;
	return la < lb ? la : lb;
}

Test(thumb, text_is_a_light_tint_not_dark_blocks_and_the_axis_stays)
{
	int w = 640, h = 480;
	unsigned char *px = line_chart(w, h);
	struct thumb_opts o;

	/* a title: a word of 5 glyphs 9x13 pixels (two strokes and a bar
	 * each, 2 pixels apart) above the plot, and tick labels under the
	 * x axis */
	for (int k = 0; k < 5; k++) {
		int x = 280 + k * 11, y = 20;
		fill(px, w, x, y, x + 2, y + 13, 0, 0, 0);
		fill(px, w, x + 7, y, x + 9, y + 13, 0, 0, 0);
		fill(px, w, x, y + 6, x + 9, y + 8, 0, 0, 0);
	}
	for (int k = 0; k < 6; k++) {
		int x = 100 + k * 90, y = 452;
		fill(px, w, x, y, x + 2, y + 10, 30, 30, 30);
		fill(px, w, x + 5, y, x + 7, y + 10, 30, 30, 30);
	}
	thumb_opts_init(&o);
	struct thumb *t = render_png(w, h, px, &o);
	/* the title's cells (rows 0-1, columns 17-20): a light tint at
	 * most (as light as the 1-pixel axis' blend), no dark block (the
	 * old render drew them black) */
	for (int y = 0; y <= 1; y++)
		for (int x = 17; x <= 20; x++) {
			const struct thumb_cell *c = &t->cells[y * 40 + x];
			cr_assert(cell_dark(c) >= 200, "title cell %d,%d: %s dark %d",
			    x, y, c->sym, cell_dark(c));
		}
	/* the tick labels' row (452..462: cell row 14) too */
	for (int x = 6; x < 36; x++)
		cr_assert(cell_dark(&t->cells[14 * 40 + x]) >= 200, "label cell %d", x);
	/* the axis (long: not text) is still drawn */
	int axis = 0;
	for (int x = 6; x < 36; x++)
		axis += cell_dark(&t->cells[(420 * 15 / 480) * 40 + x]) < 230;
	cr_assert(axis >= 25, "x axis cells %d", axis);
	thumb_free(t);
	free(px);
}
