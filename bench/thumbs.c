/* bench/thumbs: a test and benchmark driver for the thumbnail renderer.
 *   thumbs render FILE [opts]          ANSI thumbnail on stdout
 *   thumbs topng FILE OUT.png [opts]   the grid drawn back as a PNG
 *   thumbs time FILE N [opts]          ms per decode+render (mean of N)
 *   thumbs error FILE GRID.ansi        RMS error of an ANSI grid (ours
 *                                      or chafa's) against FILE
 *   thumbs text FILE MASK.png GRID.ansi  in the cells where MASK (the
 *                                      chart's text alone) has ink: how
 *                                      many are drawn as a pattern of
 *                                      blocks (noise) and their RMS error
 *   thumbs mem FILE [whole]            peak RSS of one preview (decode +
 *                                      100-column render) as terp does it
 *                                      (streaming) or whole-image decode
 * opts: --cols N --rows N --sym quad|half|ascii --pal 256|16|8|mono
 *       --mode chart|photo */
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "terp/buf.h"
#include "terp/palette.h"
#include "terp/png.h"
#include "terp/sanitize.h"
#include "terp/thumb.h"
#include "terp/util.h"

struct grid {
	int		 cols, rows;
	int		*mask;		/* quadrant mask, or -(shade percent) */
	uint8_t		(*fg)[3], (*bg)[3];
};

static void
usage(void)
{
	fprintf(stderr, "usage: thumbs render|topng|time|error FILE ...\n");
	exit(2);
}

static void
parse_opts(int argc, char **argv, int i, struct thumb_opts *o)
{
	thumb_opts_init(o);
	for (; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];
		if (strcmp(k, "--cols") == 0)
			o->cols = atoi(v);
		else if (strcmp(k, "--rows") == 0)
			o->max_rows = atoi(v);
		else if (strcmp(k, "--sym") == 0)
			o->symbols = strcmp(v, "half") == 0 ? THUMB_SYM_HALF :
			    strcmp(v, "ascii") == 0 ? THUMB_SYM_ASCII :
			    THUMB_SYM_QUAD;
		else if (strcmp(k, "--pal") == 0)
			o->palette = strcmp(v, "16") == 0 ? THUMB_PAL_16 :
			    strcmp(v, "8") == 0 ? THUMB_PAL_8 :
			    strcmp(v, "mono") == 0 ? THUMB_PAL_MONO :
			    THUMB_PAL_256;
		else if (strcmp(k, "--mode") == 0)
			o->mode = strcmp(v, "photo") == 0 ? THUMB_MODE_PHOTO :
			    THUMB_MODE_CHART;
		else
			usage();
	}
}

static struct png_rgba *
load(const char *path)
{
	char *err;
	/* as terp's previews do: streamed and box-averaged to 1 Mpixel */
	struct png_rgba *img = png_decode_file_fit(path, 0, &err);

	if (img == NULL) {
		fprintf(stderr, "thumbs: %s\n", err);
		exit(1);
	}
	return img;
}

static struct thumb *
render(struct png_rgba *img, const struct thumb_opts *o)
{
	char *err;
	struct thumb *t = thumb_render(img->px, (int)img->w, (int)img->h, 4,
	    (size_t)img->w * 4, o, &err);

	if (t == NULL) {
		fprintf(stderr, "thumbs: %s\n", err);
		exit(1);
	}
	return t;
}

static int
shade_pct(const char *s)
{
	if (strcmp(s, "\u2591") == 0)
		return 25;
	if (strcmp(s, "\u2592") == 0)
		return 50;
	if (strcmp(s, "\u2593") == 0)
		return 75;
	return 40;	/* ASCII and anything else: a rough ink share */
}

static void
grid_alloc(struct grid *g, int cols, int rows)
{
	g->cols = cols;
	g->rows = rows;
	g->mask = xcalloc((size_t)cols * rows, sizeof *g->mask);
	g->fg = xcalloc((size_t)cols * rows, sizeof *g->fg);
	g->bg = xcalloc((size_t)cols * rows, sizeof *g->bg);
}

static void
grid_set(struct grid *g, int i, const char *sym, const uint8_t fg[3],
    const uint8_t bg[3])
{
	int m = thumb_symbol_mask(sym);

	g->mask[i] = m >= 0 ? m : -shade_pct(sym);
	memcpy(g->fg[i], fg, 3);
	memcpy(g->bg[i], bg, 3);
}

static void
grid_from_thumb(struct grid *g, const struct thumb *t)
{
	static const uint8_t black[3] = { 0, 0, 0 }, white[3] = { 255, 255,
		255 };
	uint8_t fg[3], bg[3];

	grid_alloc(g, t->cols, t->rows);
	for (int i = 0; i < t->cols * t->rows; i++) {
		const struct thumb_cell *c = &t->cells[i];
		if (c->fg < 0)
			memcpy(fg, black, 3);
		else
			palette_rgb(c->fg, fg);
		if (c->bg < 0)
			memcpy(bg, white, 3);
		else
			palette_rgb(c->bg, bg);
		grid_set(g, i, c->sym, fg, bg);
	}
}

/* Parses SGR-coloured text (ours or chafa's) into a grid. */
static void
grid_from_ansi(struct grid *g, const char *s, size_t len)
{
	uint8_t fg[3] = { 0, 0, 0 }, bg[3] = { 255, 255, 255 };
	int rev = 0, col = 0, row = 0, maxc = 0, rows = 0;
	size_t i;
	unsigned cp;

	/* Pass 1: the size. */
	for (i = 0; i < len;) {
		if (s[i] == '\033') {
			i++;
			if (i < len && s[i] == '[')
				for (i++; i < len && !(s[i] >= 0x40 &&
				    s[i] <= 0x7e); i++)
					;
			i++;
		} else if (s[i] == '\n') {
			if (col > maxc)
				maxc = col;
			if (col > 0)
				rows++;
			col = 0;
			i++;
		} else {
			size_t n = utf8_decode(s + i, len - i, &cp);
			i += n ? n : 1;
			col++;
		}
	}
	if (col > 0) {
		rows++;
		if (col > maxc)
			maxc = col;
	}
	grid_alloc(g, maxc, rows);
	col = 0;
	for (i = 0; i < len;) {
		if (s[i] == '\033' && i + 1 < len && s[i + 1] == '[') {
			size_t j = i + 2;
			int p[32], np = 0, v = 0, have = 0;
			while (j < len && !(s[j] >= 0x40 && s[j] <= 0x7e)) {
				if (s[j] >= '0' && s[j] <= '9') {
					v = v * 10 + s[j] - '0';
					have = 1;
				} else if (s[j] == ';' && np < 31) {
					p[np++] = v;
					v = 0;
					have = 0;
				} else if (s[j] == '?') {
					have = -100;
				}
				j++;
			}
			if (j < len && s[j] == 'm' && have >= 0) {
				p[np++] = v;
				for (int k = 0; k < np; k++) {
					int c = p[k];
					uint8_t *dst = NULL;
					if (c == 0) {
						memcpy(fg, (uint8_t[]){ 0, 0, 0 }, 3);
						memcpy(bg, (uint8_t[]){ 255, 255, 255 }, 3);
						rev = 0;
					} else if (c == 7) {
						rev = 1;
					} else if (c == 27) {
						rev = 0;
					} else if ((c == 38 || c == 48) && k + 2 < np &&
					    p[k + 1] == 5) {
						palette_rgb(p[k + 2], c == 38 ? fg : bg);
						k += 2;
					} else if ((c == 38 || c == 48) && k + 4 < np &&
					    p[k + 1] == 2) {
						dst = c == 38 ? fg : bg;
						dst[0] = (uint8_t)p[k + 2];
						dst[1] = (uint8_t)p[k + 3];
						dst[2] = (uint8_t)p[k + 4];
						k += 4;
					} else if (c >= 30 && c <= 37) {
						palette_rgb(c - 30, fg);
					} else if (c >= 90 && c <= 97) {
						palette_rgb(c - 90 + 8, fg);
					} else if (c >= 40 && c <= 47) {
						palette_rgb(c - 40, bg);
					} else if (c >= 100 && c <= 107) {
						palette_rgb(c - 100 + 8, bg);
					} else if (c == 39) {
						memset(fg, 0, 3);
					} else if (c == 49) {
						memset(bg, 255, 3);
					}
				}
			}
			i = j + 1;
		} else if (s[i] == '\033') {
			i += 2;
		} else if (s[i] == '\n') {
			if (col > 0)
				row++;
			col = 0;
			i++;
		} else {
			size_t n = utf8_decode(s + i, len - i, &cp);
			char sym[5] = { 0 };
			if (n == 0)
				n = 1;
			memcpy(sym, s + i, n < 5 ? n : 4);
			if (row < g->rows && col < g->cols)
				grid_set(g, row * g->cols + col, sym,
				    rev ? bg : fg, rev ? fg : bg);
			i += n;
			col++;
		}
	}
}

/* The colour of sub-pixel (sx,sy) (0..1 each) of cell i. */
static void
grid_subpixel(const struct grid *g, int i, int sx, int sy, double out[3])
{
	int m = g->mask[i];

	if (m >= 0) {
		const uint8_t *c = (m >> (sy * 2 + sx) & 1) ? g->fg[i] :
		    g->bg[i];
		for (int k = 0; k < 3; k++)
			out[k] = c[k];
	} else {
		double a = -m / 100.0;
		for (int k = 0; k < 3; k++)
			out[k] = g->fg[i][k] * a + g->bg[i][k] * (1 - a);
	}
}

/* The image composited on white, area-averaged to w x h. */
static double *
downscale(const struct png_rgba *img, int w, int h)
{
	double *out = xcalloc((size_t)w * h * 3, sizeof *out);

	for (int y = 0; y < h; y++) {
		int y0 = (int)((double)y * img->h / h);
		int y1 = (int)((double)(y + 1) * img->h / h);
		if (y1 <= y0)
			y1 = y0 + 1;
		for (int x = 0; x < w; x++) {
			int x0 = (int)((double)x * img->w / w);
			int x1 = (int)((double)(x + 1) * img->w / w);
			double sum[3] = { 0, 0, 0 };
			if (x1 <= x0)
				x1 = x0 + 1;
			for (int yy = y0; yy < y1; yy++)
				for (int xx = x0; xx < x1; xx++) {
					const uint8_t *p = img->px +
					    ((size_t)yy * img->w + xx) * 4;
					for (int k = 0; k < 3; k++)
						sum[k] += (p[k] * p[3] + 255.0 *
						    (255 - p[3])) / 255;
				}
			for (int k = 0; k < 3; k++)
				out[((size_t)y * w + x) * 3 + k] = sum[k] /
				    ((x1 - x0) * (y1 - y0));
		}
	}
	return out;
}

static double
grid_error(const struct grid *g, const struct png_rgba *img)
{
	int w = g->cols * 2, h = g->rows * 2;
	double *ref = downscale(img, w, h), se = 0, c[3];

	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++) {
			grid_subpixel(g, y / 2 * g->cols + x / 2, x & 1, y & 1,
			    c);
			for (int k = 0; k < 3; k++) {
				double d = c[k] - ref[((size_t)y * w + x) * 3 +
				    k];
				se += d * d;
			}
		}
	free(ref);
	return sqrt(se / ((double)w * h * 3));
}

/* The text cells of g: where mask (the same chart with only its text
 * drawn) has dark pixels in 3% of the cell or more; of them, those
 * drawn as a pattern (a partial quadrant mask between colours 40 or
 * more apart, or a shade), and the RMS error over them. */
static void
grid_text(const struct grid *g, const struct png_rgba *img,
    const struct png_rgba *mask)
{
	int w = g->cols * 2, h = g->rows * 2, ntext = 0, noise = 0;
	double *ref = downscale(img, w, h), se = 0, c[3];

	for (int i = 0; i < g->cols * g->rows; i++) {
		int cx = i % g->cols, cy = i / g->cols, dark = 0, all = 0;
		int x0 = cx * (int)mask->w / g->cols, x1 = (cx + 1) * (int)mask->w / g->cols;
		int y0 = cy * (int)mask->h / g->rows, y1 = (cy + 1) * (int)mask->h / g->rows;
		for (int y = y0; y < y1; y++)
			for (int x = x0; x < x1; x++) {
				const uint8_t *p = mask->px + ((size_t)y * mask->w + x) * 4;
				dark += p[3] > 128 && p[0] + p[1] + p[2] < 3 * 160;
				all++;
			}
		if (all == 0 || dark * 100 < all * 3)
			continue;
		ntext++;
		int d = 0;
		for (int k = 0; k < 3; k++)
			d += abs(g->fg[i][k] - g->bg[i][k]);
		noise += (g->mask[i] > 0 && g->mask[i] < 15 && d >= 200) ||
		    g->mask[i] < 0;
		for (int sy = 0; sy < 2; sy++)
			for (int sx = 0; sx < 2; sx++) {
				grid_subpixel(g, i, sx, sy, c);
				for (int k = 0; k < 3; k++) {
					double e = c[k] - ref[((size_t)(cy * 2 + sy) * w +
					    cx * 2 + sx) * 3 + k];
					se += e * e;
				}
			}
	}
	free(ref);
	printf("text %d noise %d %.0f%% err %.2f\n", ntext, noise,
	    ntext ? 100.0 * noise / ntext : 0, ntext ? sqrt(se / (ntext * 12.0)) : 0);
}

static void
grid_topng(const struct grid *g, const char *path)
{
	int cw = 8, chh = 16, w = g->cols * cw, h = g->rows * chh;
	uint8_t *px = xmalloc((size_t)w * h * 3);
	png_image im;
	double c[3];

	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++) {
			int i = y / chh * g->cols + x / cw;
			grid_subpixel(g, i, x % cw >= cw / 2, y % chh >= chh / 2,
			    c);
			for (int k = 0; k < 3; k++)
				px[((size_t)y * w + x) * 3 + k] =
				    (uint8_t)lround(c[k]);
		}
	memset(&im, 0, sizeof im);
	im.version = PNG_IMAGE_VERSION;
	im.width = (png_uint_32)w;
	im.height = (png_uint_32)h;
	im.format = PNG_FORMAT_RGB;
	if (!png_image_write_to_file(&im, path, 0, px, 0, NULL))
		fprintf(stderr, "thumbs: %s: %s\n", path, im.message);
	free(px);
}

int
main(int argc, char **argv)
{
	struct thumb_opts o;
	struct png_rgba *img;
	struct thumb *t;
	struct grid g;

	if (argc < 3)
		usage();
	if (strcmp(argv[1], "render") == 0) {
		struct buf out;
		parse_opts(argc, argv, 3, &o);
		img = load(argv[2]);
		t = render(img, &o);
		buf_init(&out, 64 << 20);
		thumb_write_ansi(t, &out);
		fwrite(out.data, 1, out.len, stdout);
		buf_free(&out);
		thumb_free(t);
		png_rgba_free(img);
	} else if (strcmp(argv[1], "topng") == 0 && argc >= 4) {
		parse_opts(argc, argv, 4, &o);
		img = load(argv[2]);
		t = render(img, &o);
		grid_from_thumb(&g, t);
		grid_topng(&g, argv[3]);
		printf("%dx%d cells, rms error %.2f\n", t->cols, t->rows,
		    grid_error(&g, img));
		thumb_free(t);
		png_rgba_free(img);
	} else if (strcmp(argv[1], "mem") == 0) {
		struct rusage ru;
		char *err = NULL;
		long before;
		getrusage(RUSAGE_SELF, &ru);
		before = ru.ru_maxrss;
		img = argc > 3 && strcmp(argv[3], "whole") == 0 ?
		    png_decode_file(argv[2], &err) :
		    png_decode_file_fit(argv[2], 0, &err);
		t = NULL;
		if (img != NULL) {
			thumb_opts_init(&o);
			o.cols = 100;
			t = render(img, &o);
		}
		getrusage(RUSAGE_SELF, &ru);
		printf("peak_kb %ld start_kb %ld %s\n", ru.ru_maxrss, before,
		    img ? "ok" : err);
		thumb_free(t);
		png_rgba_free(img);
	} else if (strcmp(argv[1], "time") == 0 && argc >= 4) {
		int n = atoi(argv[3]);
		int64_t t0, t1, dec = 0, ren = 0;
		parse_opts(argc, argv, 4, &o);
		for (int i = 0; i < n; i++) {
			t0 = now_us();
			img = load(argv[2]);
			t1 = now_us();
			t = render(img, &o);
			ren += now_us() - t1;
			dec += t1 - t0;
			thumb_free(t);
			png_rgba_free(img);
		}
		printf("decode %.3f ms render %.3f ms\n", dec / 1000.0 / n,
		    ren / 1000.0 / n);
	} else if (strcmp(argv[1], "text") == 0 && argc >= 5) {
		size_t len;
		char *s = read_file(argv[4], 64 << 20, &len);
		if (s == NULL) {
			perror(argv[4]);
			return 1;
		}
		img = load(argv[2]);
		struct png_rgba *mask = load(argv[3]);
		grid_from_ansi(&g, s, len);
		grid_text(&g, img, mask);
		free(s);
		png_rgba_free(mask);
		png_rgba_free(img);
	} else if (strcmp(argv[1], "error") == 0 && argc >= 4) {
		size_t len;
		char *s = read_file(argv[3], 64 << 20, &len);
		if (s == NULL) {
			perror(argv[3]);
			return 1;
		}
		img = load(argv[2]);
		grid_from_ansi(&g, s, len);
		printf("%dx%d %.2f\n", g.cols, g.rows, grid_error(&g, img));
		if (argc >= 5)
			grid_topng(&g, argv[4]);
		free(s);
		png_rgba_free(img);
	} else {
		usage();
	}
	return 0;
}
