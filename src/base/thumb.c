/* thumb: the block-character thumbnail renderer (TUI.md section 1).
 * Chart mode splits each cell's pixels into two colour clusters and lights
 * the quadrants where the minority ("ink") cluster lives, so 1-pixel lines
 * keep their colour; photo mode picks the least-error partition of the
 * cell's 2x2 area means. Mono output draws ink as shapes and shades. */
#include "terp/thumb.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/palette.h"
#include "terp/util.h"

#define THUMB_MAX_CELLS	1000	/* either side of the grid */
#define THUMB_FLAT	8	/* channel range under which a cell is flat */
#define THUMB_FLOOR	0.05	/* least ink share that lights a quadrant */
#define THUMB_SPARSE	0.35	/* ink shares below this are blended */
/* Mono: thin features this close to the background (grid lines, legend
 * frames: matplotlib's grid is #b0b0b0, 0.31 away) are background, so
 * that the series and the axes stand out; the lightest tab: colour
 * (pink) is 0.38 away. */
#define THUMB_FAINT	0.35
/* Colour: thin ink this close to the cell's own paper is a faint grid
 * line (matplotlib's grid at alpha 0.3 is 0.08 from white and 0.09
 * from a tab:blue bar; seaborn's white grid 0.07 from its grey fill),
 * not data: the lightest tab: series colour is 0.38 from white, and
 * half of it (an antialiased 1-pixel line) 0.19. */
#define THUMB_FAINT_LINE	0.15
#define THUMB_TEXT_FADE		0.2	/* of a glyph's contrast kept */

/* Quadrant symbols by mask: bit 0 upper left, 1 upper right, 2 lower
 * left, 3 lower right. */
static const char *const thumb_quad[16] = {
	" ", "\u2598", "\u259d", "\u2580", "\u2596", "\u258c", "\u259e",
	"\u259b", "\u2597", "\u259a", "\u2590", "\u259c", "\u2584", "\u2599",
	"\u259f", "\u2588",
};
/* The closest ASCII shapes for the same masks. */
static const char thumb_ascii[16] = {
	' ', '\'', '\'', '"', ',', '[', '/', 'P', '.', '\\', ']', '7', '_',
	'L', 'J', '#',
};
static const char *const thumb_shade[4] = { " ", "\u2591", "\u2592",
	"\u2593" };
static const char thumb_ramp[] = " .:-=+*#%@";

struct thumb_px {
	uint8_t	c[3];
	uint8_t	reg;		/* region: quadrant or half index */
};

struct thumb_ctx {
	const uint8_t		*px;
	int			 w, h, ch;
	size_t			 stride;
	const struct thumb_opts	*o;
	int			 ncolors;	/* 256, 16, 8; 0 = mono */
	double			 blend_floor;	/* least strength of sparse ink */
	uint8_t			 paper[3];	/* the image's background */
	struct thumb_px		*s;		/* one cell's samples */
	uint8_t			*text;		/* chart mode: 3 = a glyph's
						 * pixel (thumb_find_text) */
	size_t			 ns, cap;
};

void
thumb_opts_init(struct thumb_opts *o)
{
	memset(o, 0, sizeof *o);
	o->cols = 40;
	o->cell_aspect = 0.5;
	o->symbols = THUMB_SYM_QUAD;
	o->palette = THUMB_PAL_256;
	o->mode = THUMB_MODE_CHART;
	o->background[0] = o->background[1] = o->background[2] = 255;
}

void
thumb_fit(int w, int h, const struct thumb_opts *o, int *colsp, int *rowsp)
{
	double a = o->cell_aspect > 0.05 && o->cell_aspect < 5 ?
	    o->cell_aspect : 0.5;
	int cols = o->cols, rows;

	if (cols < 1)
		cols = 1;
	if (cols > THUMB_MAX_CELLS)
		cols = THUMB_MAX_CELLS;
	rows = (int)lround(cols * ((double)h / w) * a);
	if (rows < 1)
		rows = 1;
	if (o->max_rows > 0 && rows > o->max_rows) {
		rows = o->max_rows;
		cols = (int)lround(rows * ((double)w / h) / a);
		if (cols < 1)
			cols = 1;
		if (cols > o->cols)
			cols = o->cols;
	}
	if (rows > THUMB_MAX_CELLS)
		rows = THUMB_MAX_CELLS;
	*colsp = cols;
	*rowsp = rows;
}

/* The pixel at (x,y), alpha composited on the background. */
static void
thumb_get(const struct thumb_ctx *t, int x, int y, uint8_t out[3])
{
	const uint8_t *p = t->px + (size_t)y * t->stride + (size_t)x * t->ch;

	if (t->ch == 4 && p[3] != 255) {
		unsigned a = p[3];
		for (int i = 0; i < 3; i++)
			out[i] = (uint8_t)((p[i] * a +
			    t->o->background[i] * (255 - a) + 127) / 255);
	} else {
		out[0] = p[0];
		out[1] = p[1];
		out[2] = p[2];
	}
	if (t->text && t->text[(size_t)y * t->w + x] == 3)
		for (int i = 0; i < 3; i++)
			out[i] = (uint8_t)lround(t->paper[i] +
			    (out[i] - t->paper[i]) * THUMB_TEXT_FADE);
}

/* Samples quadrant (rx,ry) of the cell spanning [x0,x1) x [y0,y1) into
 * t->s, at most about 8x16 samples (16x32 per cell for quadrants). */
static void
thumb_sample_region(struct thumb_ctx *t, double x0, double x1, double y0,
    double y1, int rx, int ry)
{
	int ax = (int)(x0 + (x1 - x0) * rx / 2);
	int bx = (int)(x0 + (x1 - x0) * (rx + 1) / 2);
	int ay = (int)(y0 + (y1 - y0) * ry / 2);
	int by = (int)(y0 + (y1 - y0) * (ry + 1) / 2);
	int sx, sy;

	if (ax >= t->w)
		ax = t->w - 1;
	if (ay >= t->h)
		ay = t->h - 1;
	if (bx <= ax)
		bx = ax + 1;
	if (by <= ay)
		by = ay + 1;
	sx = (bx - ax) / 8;
	sy = (by - ay) / 16;
	if (sx < 1)
		sx = 1;
	if (sy < 1)
		sy = 1;
	for (int y = ay + sy / 2; y < by; y += sy)
		for (int x = ax + sx / 2; x < bx; x += sx) {
			if (t->ns == t->cap) {
				t->cap = t->cap ? 2 * t->cap : 1024;
				t->s = xrealloc(t->s, t->cap * sizeof *t->s);
			}
			thumb_get(t, x, y, t->s[t->ns].c);
			t->s[t->ns].reg = (uint8_t)(ry * 2 + rx);
			t->ns++;
		}
}

/* Half blocks: the nearest of the masks the half set can draw (none,
 * upper, lower, left, right, all) to mask, by the quadrants' shares. */
static int
thumb_snap_half(int mask, const double sh[4])
{
	static const int ok[] = { 0, 3, 12, 5, 10, 15 };
	double best = -1, mx = 0;
	int bm = 0;

	for (int i = 0; i < 6; i++)
		if (mask == ok[i])
			return mask;
	for (int r = 0; r < 4; r++)
		if (sh[r] > mx)
			mx = sh[r];
	for (int i = 0; i < 6; i++) {
		double e = 0;
		for (int r = 0; r < 4; r++) {
			double v = mx > 0 ? sh[r] / mx : 0;
			e += (ok[i] >> r & 1) ? 1 - v : v;
		}
		if (best < 0 || e < best) {
			best = e;
			bm = ok[i];
		}
	}
	return bm;
}

static double thumb_strength(const struct thumb_ctx *t, const double c[3]);
static double thumb_dist(const double a[3], const double b[3]);

/* How strongly sparse ink of colour ink with the given share is drawn
 * (0..1). */
static double
thumb_blend(const struct thumb_ctx *t, double share, const double ink[3])
{
	/* Linear: a square root keeps lines bolder but doubles the pixel
	 * error against the source (measured with bench/thumbs.sh). But a
	 * strong colour (a series, an axis; not a faint grid line) never
	 * under the floor: in a small thumbnail every line is sparse and
	 * would fade to the paper. */
	double k = share / THUMB_SPARSE;
	if (k < t->blend_floor && thumb_strength(t, ink) >= THUMB_FAINT)
		k = t->blend_floor;
	return k;
}

static int
thumb_popcount(int m)
{
	return (m & 1) + (m >> 1 & 1) + (m >> 2 & 1) + (m >> 3 & 1);
}

/* 0..1: how far a is from b, weighted as the eye weighs channels. */
static double
thumb_dist(const double a[3], const double b[3])
{
	double dr = a[0] - b[0], dg = a[1] - b[1], db = a[2] - b[2];

	return sqrt((2 * dr * dr + 4 * dg * dg + 3 * db * db) /
	    (9.0 * 255 * 255));
}

/* 0..1: how far c is from the image's background. */
static double
thumb_strength(const struct thumb_ctx *t, const double c[3])
{
	double dr = c[0] - t->paper[0], dg = c[1] - t->paper[1];
	double db = c[2] - t->paper[2];

	return sqrt((2 * dr * dr + 4 * dg * dg + 3 * db * db) /
	    (9.0 * 255 * 255));
}

static int
thumb_quant(const struct thumb_ctx *t, const double c[3])
{
	return palette_nearest(t->ncolors, (int)lround(c[0]),
	    (int)lround(c[1]), (int)lround(c[2]));
}

static void
thumb_set(const struct thumb_ctx *t, struct thumb_cell *cell, int mask,
    int fg, int bg)
{
	if (t->o->symbols == THUMB_SYM_ASCII) {
		cell->sym[0] = thumb_ascii[mask];
		cell->sym[1] = '\0';
	} else {
		snprintf(cell->sym, sizeof cell->sym, "%s", thumb_quad[mask]);
	}
	cell->fg = (int16_t)fg;
	cell->bg = (int16_t)bg;
}

/* A cell of one colour. */
static void
thumb_emit_flat(const struct thumb_ctx *t, struct thumb_cell *cell,
    const double c[3])
{
	int q;

	if (t->ncolors > 0) {
		q = thumb_quant(t, c);
		thumb_set(t, cell, 0, q, q);
		return;
	}
	/* Mono: a shade for how far the colour is from the background. */
	double s = thumb_strength(t, c);
	int lvl = s < 0.12 ? 0 : s < 0.35 ? 1 : s < 0.6 ? 2 : 3;

	if (t->o->symbols == THUMB_SYM_ASCII) {
		cell->sym[0] = thumb_ramp[(int)(s * 9.99)];
		cell->sym[1] = '\0';
	} else {
		snprintf(cell->sym, sizeof cell->sym, "%s", thumb_shade[lvl]);
	}
	cell->fg = cell->bg = -1;
}

/* Ink over paper in mask's quadrants; makes sure a visible ink does not
 * quantise to the paper's colour by strengthening it step by step. */
static void
thumb_emit_two(const struct thumb_ctx *t, struct thumb_cell *cell, int mask,
    double ink[3], double paper[3], const double ink_full[3])
{
	int fg, bg;

	if (t->ncolors == 0) {
		double m[3];
		/* Mono: ink shapes on the terminal's own background, or a
		 * shade when the "paper" is itself far from the image's
		 * background (a line over a bar). */
		if (thumb_strength(t, ink) < thumb_strength(t, paper)) {
			double *tmp = ink;
			ink = paper;
			paper = tmp;
			mask ^= 15;
		}
		if (mask == 15 || thumb_strength(t, paper) >= 0.35) {
			for (int i = 0; i < 3; i++)
				m[i] = (ink[i] + paper[i]) / 2;
			thumb_emit_flat(t, cell, m);
			return;
		}
		thumb_set(t, cell, mask, -1, -1);
		return;
	}
	if (thumb_popcount(mask) > 2) {
		double *tmp = ink;
		ink = paper;
		paper = tmp;
		mask ^= 15;
	}
	if (mask == 0) {
		thumb_emit_flat(t, cell, paper);
		return;
	}
	bg = thumb_quant(t, paper);
	fg = thumb_quant(t, ink);
	if (fg == bg && ink_full != NULL) {
		double k = 0.5, c[3];
		while (fg == bg && k > 0.01) {
			for (int i = 0; i < 3; i++)
				c[i] = ink[i] + (ink_full[i] - ink[i]) * (1 - k);
			fg = thumb_quant(t, c);
			k /= 2;
		}
	}
	thumb_set(t, cell, mask, fg, bg);
}

static void
thumb_mean(const struct thumb_ctx *t, double m[3])
{
	double sum[3] = { 0, 0, 0 };

	for (size_t i = 0; i < t->ns; i++)
		for (int c = 0; c < 3; c++)
			sum[c] += t->s[i].c[c];
	for (int c = 0; c < 3; c++)
		m[c] = t->ns ? sum[c] / t->ns : 0;
}

/* Mono: without colour a faint line weighs as much as a dark one, so a
 * chart's grid would cover it in blocks. Samples close to the
 * background become background before the cell is thresholded, when
 * they are a thin feature (under half the cell); a faint area (a pastel
 * bar) keeps its shade. */
static void
thumb_drop_faint(struct thumb_ctx *t)
{
	size_t faint = 0;

	for (size_t i = 0; i < t->ns; i++) {
		double c[3] = { t->s[i].c[0], t->s[i].c[1], t->s[i].c[2] };
		double st = thumb_strength(t, c);
		if (st > 0 && st < THUMB_FAINT)
			faint++;
	}
	if (faint == 0 || faint * 2 >= t->ns)
		return;
	for (size_t i = 0; i < t->ns; i++) {
		double c[3] = { t->s[i].c[0], t->s[i].c[1], t->s[i].c[2] };
		if (thumb_strength(t, c) < THUMB_FAINT)
			memcpy(t->s[i].c, t->paper, 3);
	}
}

/* Text in a chart (a title, tick labels, a legend's words) is dark grey
 * glyphs a few pixels wide: quadrants cannot draw it, and the two-means
 * split turns it into a scatter of blocks that reads as data. Before the
 * cells are drawn, the image's dark achromatic pixels are grouped into
 * 8-connected pieces; a piece no taller than a twentieth of the image
 * and no wider than a tenth (a glyph, a word; not an axis, not a frame)
 * is text, and its pixels are faded to the background (thumb_get), so
 * the words become a light tint instead of noise. */
#define THUMB_TEXT_PX		(4u << 20)	/* images up to this many pixels */

static int
thumb_dark_px(const struct thumb_ctx *t, int x, int y)
{
	const uint8_t *p = t->px + (size_t)y * t->stride + (size_t)x * t->ch;
	int lo = p[0], hi = p[0];

	if (t->ch == 4 && p[3] < 128)
		return 0;
	for (int i = 1; i < 3; i++) {
		lo = p[i] < lo ? p[i] : lo;
		hi = p[i] > hi ? p[i] : hi;
	}
	if (hi - lo > 48)
		return 0;
	/* thumb_strength >= 0.3 in integers (it runs on every pixel):
	 * 2dr^2 + 4dg^2 + 3db^2 >= 0.09 * 9 * 255^2, never equal */
	int dr = p[0] - t->paper[0], dg = p[1] - t->paper[1];
	int db = p[2] - t->paper[2];
	return 100 * (2 * dr * dr + 4 * dg * dg + 3 * db * db) >= 81 * 255 * 255;
}

/* One piece from (x,y): its pixels marked 2 in t->text while it is
 * grown (stack: the scratch), then 3 (text) or 1 (not) by its size. */
static void
thumb_text_piece(struct thumb_ctx *t, int x, int y, uint32_t *stack)
{
	size_t top = 0;
	int x0 = x, x1 = x, y0 = y, y1 = y;
	size_t w = (size_t)t->w;

	t->text[y * w + x] = 2;
	stack[top++] = (uint32_t)(y * w + x);
	while (top > 0) {
		uint32_t i = stack[--top];
		int cx = (int)(i % w), cy = (int)(i / w);
		x0 = cx < x0 ? cx : x0;
		x1 = cx > x1 ? cx : x1;
		y0 = cy < y0 ? cy : y0;
		y1 = cy > y1 ? cy : y1;
		for (int dy = -1; dy <= 1; dy++)
			for (int dx = -1; dx <= 1; dx++) {
				int nx = cx + dx, ny = cy + dy;
				if (nx < 0 || ny < 0 || nx >= t->w || ny >= t->h)
					continue;
				size_t j = (size_t)ny * w + nx;
				if (t->text[j] == 0 && thumb_dark_px(t, nx, ny)) {
					t->text[j] = 2;
					stack[top++] = (uint32_t)j;
				} else if (t->text[j] == 0)
					t->text[j] = 1;	/* seen, not dark */
			}
	}
	int is_text = y1 - y0 + 1 <= t->h / 20 && x1 - x0 + 1 <= t->w / 10;
	/* second pass over the bounding box: the piece's pixels settle */
	for (int yy = y0; yy <= y1; yy++)
		for (int xx = x0; xx <= x1; xx++) {
			uint8_t *m = &t->text[(size_t)yy * w + xx];
			if (*m == 2)
				*m = is_text ? 3 : 4;
		}
}

/* t->text: 3 on the pixels of text pieces (others 1 or 4). */
static void
thumb_find_text(struct thumb_ctx *t)
{
	size_t np = (size_t)t->w * t->h;

	if (np > THUMB_TEXT_PX || t->w < 40 || t->h < 40)
		return;
	t->text = xcalloc(np, 1);
	uint32_t *stack = xmalloc(np * sizeof *stack);	/* below top only */
	for (int y = 0; y < t->h; y++)
		for (int x = 0; x < t->w; x++)
			if (t->text[(size_t)y * t->w + x] == 0) {
				if (thumb_dark_px(t, x, y))
					thumb_text_piece(t, x, y, stack);
				else
					t->text[(size_t)y * t->w + x] = 1;
			}
	free(stack);
}

/* Chart mode (TUI.md variant B) on the samples in t->s. */
static void
thumb_cell_chart(struct thumb_ctx *t, struct thumb_cell *cell)
{
	int lo[3] = { 255, 255, 255 }, hi[3] = { 0, 0, 0 }, ch = 0;
	size_t ilo = 0, ihi = 0;
	double mean[2][3], m[3];
	size_t cnt[2], rc[4] = { 0 }, ic[2][4] = { { 0 } };
	int nreg = 4, small, mask = 0;
	double sh[4], maxshare = 0;

	if (t->ncolors == 0)
		thumb_drop_faint(t);
	for (size_t i = 0; i < t->ns; i++)
		for (int c = 0; c < 3; c++) {
			if (t->s[i].c[c] < lo[c])
				lo[c] = t->s[i].c[c];
			if (t->s[i].c[c] > hi[c])
				hi[c] = t->s[i].c[c];
		}
	for (int c = 1; c < 3; c++)
		if (hi[c] - lo[c] > hi[ch] - lo[ch])
			ch = c;
	if (hi[ch] - lo[ch] < THUMB_FLAT) {
		thumb_mean(t, m);
		thumb_emit_flat(t, cell, m);
		return;
	}
	for (size_t i = 0; i < t->ns; i++) {
		if (t->s[i].c[ch] == lo[ch])
			ilo = i;
		if (t->s[i].c[ch] == hi[ch])
			ihi = i;
	}
	for (int c = 0; c < 3; c++) {
		mean[0][c] = t->s[ilo].c[c];
		mean[1][c] = t->s[ihi].c[c];
	}
	/* Two-means; the last pass also counts per region. */
	for (int it = 0; it < 3; it++) {
		double sum[2][3] = { { 0 } };
		cnt[0] = cnt[1] = 0;
		for (size_t i = 0; i < t->ns; i++) {
			const uint8_t *p = t->s[i].c;
			double d0 = 0, d1 = 0;
			int k;
			for (int c = 0; c < 3; c++) {
				d0 += (p[c] - mean[0][c]) * (p[c] - mean[0][c]);
				d1 += (p[c] - mean[1][c]) * (p[c] - mean[1][c]);
			}
			k = d1 < d0;
			cnt[k]++;
			for (int c = 0; c < 3; c++)
				sum[k][c] += p[c];
			if (it == 2) {
				ic[k][t->s[i].reg]++;
				rc[t->s[i].reg]++;
			}
		}
		for (int k = 0; k < 2; k++)
			if (cnt[k] > 0)
				for (int c = 0; c < 3; c++)
					mean[k][c] = sum[k][c] / cnt[k];
	}
	small = cnt[1] < cnt[0];
	for (int r = 0; r < nreg; r++) {
		sh[r] = rc[r] ? (double)ic[small][r] / rc[r] : 0;
		if (sh[r] > maxshare)
			maxshare = sh[r];
	}
	/* Substantial ink lights the quadrants it mostly covers; sparse ink
	 * (a thin line) lights those near its strongest share. */
	for (int r = 0; r < nreg; r++)
		if (maxshare >= 0.5 ? sh[r] >= 0.5 :
		    sh[r] >= THUMB_FLOOR && sh[r] >= 0.5 * maxshare)
			mask |= 1 << r;
	if (t->ncolors > 0 && maxshare < 0.5 &&
	    thumb_dist(mean[small], mean[!small]) < THUMB_FAINT_LINE) {
		thumb_emit_flat(t, cell, mean[!small]);
		return;
	}
	if (t->o->symbols == THUMB_SYM_HALF)
		mask = thumb_snap_half(mask, sh);
	double ink[3], paper[3], full[3];
	/* With 8 or 16 colours there are no light tints to blend to: a
	 * blended line would turn grey, so ink keeps its own colour. */
	for (int c = 0; c < 3; c++)
		full[c] = mean[small][c];
	double k = maxshare < THUMB_SPARSE && t->ncolors > 16 ?
	    thumb_blend(t, maxshare, full) : 1;
	for (int c = 0; c < 3; c++) {
		paper[c] = mean[!small][c];
		/* Sparse ink (a thin line, a text smudge) is drawn lighter
		 * rather than as a solid block. */
		ink[c] = paper[c] + (full[c] - paper[c]) * k;
	}
	thumb_emit_two(t, cell, mask, t->ncolors ? ink : full, paper, full);
}

/* Photo mode (TUI.md variant A): region means, then the partition with
 * the least error after quantisation. */
static void
thumb_cell_photo(struct thumb_ctx *t, struct thumb_cell *cell)
{
	double rm[4][3] = { { 0 } }, side[2][3];
	size_t rc[4] = { 0 };
	static const int half_parts[] = { 0, 3, 5 };
	int nreg = 4, best = 0;
	int nparts = t->o->symbols == THUMB_SYM_HALF ? 3 : 8;
	double beste = -1;

	for (size_t i = 0; i < t->ns; i++) {
		rc[t->s[i].reg]++;
		for (int c = 0; c < 3; c++)
			rm[t->s[i].reg][c] += t->s[i].c[c];
	}
	for (int r = 0; r < nreg; r++)
		for (int c = 0; c < 3; c++)
			rm[r][c] = rc[r] ? rm[r][c] / rc[r] : 0;
	for (int pi = 0; pi < nparts; pi++) {
		int part = t->o->symbols == THUMB_SYM_HALF ? half_parts[pi] : pi;
		double e = 0;
		int n[2] = { 0, 0 }, q[2];
		uint8_t qc[2][3];
		memset(side, 0, sizeof side);
		for (int r = 0; r < nreg; r++) {
			int k = part >> r & 1;
			n[k]++;
			for (int c = 0; c < 3; c++)
				side[k][c] += rm[r][c];
		}
		for (int k = 0; k < 2; k++) {
			for (int c = 0; c < 3; c++)
				side[k][c] = n[k] ? side[k][c] / n[k] : 0;
			q[k] = t->ncolors ? thumb_quant(t, side[k]) : 0;
			if (t->ncolors)
				palette_rgb(q[k], qc[k]);
			else
				for (int c = 0; c < 3; c++)
					qc[k][c] = (uint8_t)lround(side[k][c]);
		}
		for (int r = 0; r < nreg; r++) {
			int k = part >> r & 1;
			e += palette_dist((int)lround(rm[r][0]),
			    (int)lround(rm[r][1]), (int)lround(rm[r][2]),
			    qc[k][0], qc[k][1], qc[k][2]);
		}
		if (beste < 0 || e < beste) {
			beste = e;
			best = part;
		}
	}
	if (best == 0) {
		double m[3] = { 0, 0, 0 };
		for (int r = 0; r < nreg; r++)
			for (int c = 0; c < 3; c++)
				m[c] += rm[r][c] / nreg;
		thumb_emit_flat(t, cell, m);
		return;
	}
	int mask = 0, n[2] = { 0, 0 };
	memset(side, 0, sizeof side);
	for (int r = 0; r < nreg; r++) {
		int k = best >> r & 1;
		n[k]++;
		if (k)
			mask |= 1 << r;
		for (int c = 0; c < 3; c++)
			side[k][c] += rm[r][c];
	}
	for (int k = 0; k < 2; k++)
		for (int c = 0; c < 3; c++)
			side[k][c] /= n[k];
	thumb_emit_two(t, cell, mask, side[1], side[0], NULL);
}

/* The most common colour (in 4-bit-per-channel bins) of a coarse sample
 * of the image: what mono output treats as empty background, and what
 * faint ink is measured against. */
static void
thumb_find_paper(struct thumb_ctx *t)
{
	static const int N = 4096;
	unsigned *hist = xcalloc(N, sizeof *hist);
	double (*sum)[3] = xcalloc(N, sizeof *sum);
	int sx = t->w / 64 + 1, sy = t->h / 64 + 1, best = 0;
	uint8_t c[3];

	for (int y = sy / 2; y < t->h; y += sy)
		for (int x = sx / 2; x < t->w; x += sx) {
			thumb_get(t, x, y, c);
			int b = (c[0] >> 4) << 8 | (c[1] >> 4) << 4 | c[2] >> 4;
			hist[b]++;
			for (int i = 0; i < 3; i++)
				sum[b][i] += c[i];
		}
	for (int b = 1; b < N; b++)
		if (hist[b] > hist[best])
			best = b;
	for (int i = 0; i < 3; i++)
		t->paper[i] = hist[best] ? (uint8_t)lround(sum[best][i] /
		    hist[best]) : t->o->background[i];
	free(hist);
	free(sum);
}

struct thumb *
thumb_render(const uint8_t *px, int w, int h, int channels, size_t stride,
    const struct thumb_opts *o, char **err)
{
	struct thumb_ctx t;
	struct thumb *th;

	if (err != NULL)
		*err = NULL;
	if (px == NULL || w < 1 || h < 1 || (channels != 3 && channels != 4) ||
	    stride < (size_t)w * channels) {
		if (err != NULL)
			*err = xstrdup("thumbnail: bad image geometry");
		return NULL;
	}
	memset(&t, 0, sizeof t);
	t.px = px;
	t.w = w;
	t.h = h;
	t.ch = channels;
	t.stride = stride;
	t.o = o;
	switch (o->palette) {
	case THUMB_PAL_256: t.ncolors = 256; break;
	case THUMB_PAL_16: t.ncolors = 16; break;
	case THUMB_PAL_8: t.ncolors = 8; break;
	default: t.ncolors = 0; break;
	}
	th = xcalloc(1, sizeof *th);
	th->palette = o->palette;
	thumb_fit(w, h, o, &th->cols, &th->rows);
	/* The more source pixels a cell covers, the thinner a chart's lines
	 * are in it: from 12 pixels a cell on, sparse ink keeps up to 60%
	 * of its colour (a 22-column thumbnail of an 800-pixel chart drew
	 * its lines in tints next to white). */
	double cellpx = (double)w / th->cols;
	t.blend_floor = cellpx <= 12 ? 0 : cellpx >= 24 ? 0.6 :
	    0.6 * (cellpx - 12) / 12;
	th->cells = xcalloc((size_t)th->cols * th->rows, sizeof *th->cells);
	thumb_find_paper(&t);
	if (o->mode == THUMB_MODE_CHART)
		thumb_find_text(&t);

	for (int y = 0; y < th->rows; y++) {
		double y0 = (double)y * h / th->rows;
		double y1 = (double)(y + 1) * h / th->rows;
		for (int x = 0; x < th->cols; x++) {
			double x0 = (double)x * w / th->cols;
			double x1 = (double)(x + 1) * w / th->cols;
			struct thumb_cell *cell = &th->cells[y * th->cols + x];
			t.ns = 0;
			for (int ry = 0; ry < 2; ry++)
				for (int rx = 0; rx < 2; rx++)
					thumb_sample_region(&t, x0, x1, y0, y1,
					    rx, ry);
			if (o->mode == THUMB_MODE_PHOTO)
				thumb_cell_photo(&t, cell);
			else
				thumb_cell_chart(&t, cell);
		}
	}
	free(t.s);
	free(t.text);
	return th;
}

void
thumb_free(struct thumb *t)
{
	if (t == NULL)
		return;
	free(t->cells);
	free(t);
}

static int
thumb_sgr(struct buf *out, enum thumb_palette pal, int fg, int bg)
{
	switch (pal) {
	case THUMB_PAL_256:
		return buf_printf(out, "\033[38;5;%d;48;5;%dm", fg, bg);
	case THUMB_PAL_16:
		return buf_printf(out, "\033[%d;%dm",
		    fg < 8 ? 30 + fg : 90 + fg - 8,
		    bg < 8 ? 40 + bg : 100 + bg - 8);
	case THUMB_PAL_8:
		return buf_printf(out, "\033[%d;%dm", 30 + fg, 40 + bg);
	default:
		return 0;
	}
}

int
thumb_write_ansi(const struct thumb *t, struct buf *out)
{
	for (int y = 0; y < t->rows; y++) {
		int fg = -2, bg = -2;
		for (int x = 0; x < t->cols; x++) {
			const struct thumb_cell *c = &t->cells[y * t->cols + x];
			/* A space shows only the background: keep the old
			 * foreground to save bytes. */
			int cfg = strcmp(c->sym, " ") == 0 && fg >= 0 ? fg :
			    c->fg;
			if (c->fg >= 0 && (cfg != fg || c->bg != bg)) {
				if (thumb_sgr(out, t->palette, cfg, c->bg) < 0)
					return -1;
				fg = cfg;
				bg = c->bg;
			}
			if (buf_adds(out, c->sym) < 0)
				return -1;
		}
		if (buf_adds(out, t->palette == THUMB_PAL_MONO ? "\n" :
		    "\033[0m\n") < 0)
			return -1;
	}
	return 0;
}

int
thumb_symbol_mask(const char *sym)
{
	for (int m = 0; m < 16; m++)
		if (strcmp(sym, thumb_quad[m]) == 0)
			return m;
	return -1;
}
