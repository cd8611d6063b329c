/* png: bounded PNG decoding with libpng's progressive-free low-level API.
 * The simplified API cannot set chunk limits, so the classic API is used
 * with every limit libpng offers plus our own pixel-count cap. */
#include "terp/png.h"

#include <errno.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "terp/util.h"

/* Where the bytes come from: memory (p, len) or an open file (fd, len
 * its size), read at off. */
struct pngl_src {
	const uint8_t	*p;
	size_t		 len, off;
	int		 fd;		/* -1: memory */
};

struct pngl_errctx {
	char		 msg[160];
};

/* Reads exactly n bytes at off; -1 on an error or a short file. */
static int
pngl_pread(int fd, void *out, size_t n, size_t off)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = pread(fd, (char *)out + got, n - got,
		    (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/* n bytes of src at off into out: 0, or -1 past the end. */
static int
pngl_at(const struct pngl_src *src, size_t off, uint8_t *out, size_t n)
{
	if (off > src->len || src->len - off < n)
		return -1;
	if (src->fd < 0) {
		memcpy(out, src->p + off, n);
		return 0;
	}
	return pngl_pread(src->fd, out, n, off);
}

static void
pngl_read_cb(png_structp png, png_bytep out, size_t n)
{
	struct pngl_src *src = png_get_io_ptr(png);

	if (src->len - src->off < n)
		png_error(png, "file is truncated");
	if (src->fd < 0)
		memcpy(out, src->p + src->off, n);
	else if (pngl_pread(src->fd, out, n, src->off) < 0)
		png_error(png, "cannot read the file");
	src->off += n;
}

static void
pngl_error_cb(png_structp png, png_const_charp msg)
{
	struct pngl_errctx *ctx = png_get_error_ptr(png);

	snprintf(ctx->msg, sizeof ctx->msg, "%s", msg);
	png_longjmp(png, 1);
}

static void
pngl_warning_cb(png_structp png, png_const_charp msg)
{
	/* Warnings (bad CRC in an ancillary chunk, odd sRGB profile) are
	 * not worth a message: the image still decodes. */
}

static void
pngl_set_err(char **err, const char *what)
{
	if (err != NULL)
		*err = xasprintf("not a usable PNG: %s", what);
}

static uint32_t
pngl_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Walks the chunk list before libpng sees it. libpng allocates a
 * chunk's declared length before reading its data, and a hostile file
 * can declare 2 GB in a 1 KB file (found by tests/fuzz/fuzz_png.c): every
 * chunk must fit in the bytes we have, and only image data may be big.
 * Returns NULL or the reason. */
static const char *
pngl_scan_chunks(const struct pngl_src *src)
{
	size_t off = 8, len = src->len;
	uint8_t hd[8];

	while (off + 8 <= len && pngl_at(src, off, hd, 8) == 0) {
		uint32_t n = pngl_be32(hd);
		int idat = memcmp(hd + 4, "IDAT", 4) == 0;
		if (n > 0x7fffffffu || n > len - off - 8)
			return "a chunk runs past the end of the file";
		if (!idat && n > TERP_PNG_MAX_CHUNK)
			return "a chunk is too large";
		if (memcmp(hd + 4, "IEND", 4) == 0)
			return NULL;
		off += 12 + (size_t)n;
	}
	return NULL;	/* a missing IEND is libpng's to report */
}

/* Everything to 8-bit RGBA rows of w pixels; deinterlaced by libpng
 * when deint (which needs the whole image in memory). */
static void
pngl_to_rgba(png_structp png, png_infop info, int depth, int ctype,
    int deint, png_uint_32 w)
{
	if (depth == 16)
		png_set_strip_16(png);
	if (ctype == PNG_COLOR_TYPE_PALETTE)
		png_set_palette_to_rgb(png);
	if (ctype == PNG_COLOR_TYPE_GRAY && depth < 8)
		png_set_expand_gray_1_2_4_to_8(png);
	if (png_get_valid(png, info, PNG_INFO_tRNS))
		png_set_tRNS_to_alpha(png);
	if (ctype == PNG_COLOR_TYPE_GRAY || ctype == PNG_COLOR_TYPE_GRAY_ALPHA)
		png_set_gray_to_rgb(png);
	if (!(ctype & PNG_COLOR_MASK_ALPHA))
		png_set_filler(png, 0xFF, PNG_FILLER_AFTER);
	if (deint)
		png_set_interlace_handling(png);
	png_read_update_info(png, info);
	if (png_get_rowbytes(png, info) != (size_t)w * 4)
		png_error(png, "unexpected row layout");
}

/* Does the work once setjmp is armed. Separate so that the locals the
 * longjmp may clobber live in the caller as volatile. */
static void
pngl_do_read(png_structp png, png_infop info, struct png_rgba *img,
    png_bytep *rows)
{
	png_uint_32 w, h;
	int depth, ctype, interlace;

	png_read_info(png, info);
	png_get_IHDR(png, info, &w, &h, &depth, &ctype, &interlace, NULL,
	    NULL);
	if ((uint64_t)w * h > TERP_PNG_MAX_PIXELS)
		png_error(png, "image has too many pixels");

	pngl_to_rgba(png, info, depth, ctype, interlace != PNG_INTERLACE_NONE,
	    w);

	img->w = w;
	img->h = h;
	img->px = xmalloc((size_t)w * h * 4);
	for (png_uint_32 y = 0; y < h; y++)
		rows[y] = img->px + (size_t)y * w * 4;
	png_read_image(png, rows);
	png_read_end(png, NULL);
}

/* A libpng reader of src with terp's limits (side pixels a side, the
 * chunk caps), after the chunk scan that refuses what libpng would
 * spend on (a chunk flood); NULL with *err then. The caller sets its
 * setjmp before the first libpng call that may fail and destroys both
 * structs. */
static png_structp
pngl_reader(struct pngl_src *src, struct pngl_errctx *ctx, uint32_t side,
    png_infop *info, char **err)
{
	const char *why = pngl_scan_chunks(src);
	png_structp png;

	if (why != NULL) {
		pngl_set_err(err, why);
		return NULL;
	}
	png = png_create_read_struct(PNG_LIBPNG_VER_STRING, ctx,
	    pngl_error_cb, pngl_warning_cb);
	if (png == NULL)
		fatal("out of memory");
	*info = png_create_info_struct(png);
	if (*info == NULL)
		fatal("out of memory");
	png_set_user_limits(png, side, side);
	png_set_chunk_malloc_max(png, TERP_PNG_MAX_CHUNK);
	png_set_chunk_cache_max(png, TERP_PNG_MAX_CHUNKS);
	png_set_read_fn(png, src, pngl_read_cb);
	return png;
}

struct png_rgba *
png_decode_mem(const void *data, size_t len, char **err)
{
	struct pngl_src src = { data, len, 0, -1 };
	struct pngl_errctx ctx = { "" };
	png_structp png;
	png_infop info;
	struct png_rgba *volatile img = NULL;
	png_bytep *volatile rows = NULL;

	if (err != NULL)
		*err = NULL;
	if (len < 8 || png_sig_cmp(data, 0, 8) != 0) {
		pngl_set_err(err, "no PNG signature");
		return NULL;
	}
	if ((png = pngl_reader(&src, &ctx, TERP_PNG_MAX_SIDE, &info, err)) == NULL)
		return NULL;

	if (setjmp(png_jmpbuf(png))) {
		png_destroy_read_struct(&png, &info, NULL);
		if (img != NULL)
			png_rgba_free(img);
		free(rows);
		pngl_set_err(err, ctx.msg[0] ? ctx.msg : "decoder error");
		return NULL;
	}
	img = xcalloc(1, sizeof *img);
	/* The row array is sized after the header is read; allocate for
	 * the maximum side up front so no allocation happens under the
	 * longjmp's feet. */
	rows = xcalloc(TERP_PNG_MAX_SIDE, sizeof *rows);
	pngl_do_read(png, info, img, rows);
	png_destroy_read_struct(&png, &info, NULL);
	free(rows);
	return img;
}

struct png_rgba *
png_decode_file(const char *path, char **err)
{
	struct png_rgba *img;
	size_t len;
	char *data;

	data = read_file(path, TERP_PNG_MAX_FILE, &len);
	if (data == NULL) {
		if (err != NULL)
			*err = xasprintf("%s: %s", path, errno == EFBIG ?
			    "file is too big for a preview" : strerror(errno));
		return NULL;
	}
	img = png_decode_mem(data, len, err);
	free(data);
	return img;
}

/* The streaming decoder's buffers, on the heap so that a longjmp from
 * libpng finds them (locals changed after setjmp would be lost). */
struct pngl_fit {
	struct png_rgba	*img;
	uint8_t		*row;		/* one decoded row, w * 4 */
	uint64_t	*sum;		/* per output column: r*a, g*a, b*a, a */
	png_bytep	*rows;		/* small interlaced images: all rows */
	uint32_t	 w, h, k;	/* source size, box side */
	uint32_t	 cur, nrows;	/* output row being summed, rows in it */
	size_t		 max;		/* pixels kept at most */
};

/* Writes the summed output row f->cur and clears the sums. */
static void
pngl_fit_flush(struct pngl_fit *f)
{
	uint32_t ow = f->img->w;
	uint8_t *out = f->img->px + (size_t)f->cur * ow * 4;

	if (f->nrows == 0 || f->cur >= f->img->h)
		return;
	for (uint32_t ox = 0; ox < ow; ox++) {
		uint64_t *s = f->sum + (size_t)ox * 4;
		uint32_t cw = f->w - ox * f->k < f->k ? f->w - ox * f->k : f->k;
		uint64_t n = (uint64_t)cw * f->nrows, a = s[3];
		for (int c = 0; c < 3; c++)
			out[ox * 4 + c] = a ? (uint8_t)((s[c] + a / 2) / a) : 0;
		out[ox * 4 + 3] = (uint8_t)((a + n / 2) / n);
	}
	memset(f->sum, 0, (size_t)ow * 4 * sizeof *f->sum);
	f->nrows = 0;
}

/* Adds source row y (w RGBA pixels) to its output row. */
static void
pngl_fit_add(struct pngl_fit *f, uint32_t y, const uint8_t *row)
{
	if (y / f->k != f->cur) {
		pngl_fit_flush(f);
		f->cur = y / f->k;
	}
	for (uint32_t x = 0; x < f->w; x++) {
		uint64_t *s = f->sum + (size_t)(x / f->k) * 4;
		const uint8_t *p = row + (size_t)x * 4;
		s[0] += (uint64_t)p[0] * p[3];
		s[1] += (uint64_t)p[1] * p[3];
		s[2] += (uint64_t)p[2] * p[3];
		s[3] += p[3];
	}
	f->nrows++;
}

/* The least box side k that brings w x h to at most max pixels. */
static uint32_t
pngl_fit_side(uint32_t w, uint32_t h, size_t max)
{
	uint32_t k = 1;

	if ((uint64_t)w * h > max)
		k = (uint32_t)sqrt((double)w * h / (double)max);
	if (k < 1)
		k = 1;
	while ((uint64_t)((w + k - 1) / k) * ((h + k - 1) / k) > max)
		k++;
	return k;
}

static void
pngl_do_fit(png_structp png, png_infop info, struct pngl_fit *f)
{
	png_uint_32 w, h;
	int depth, ctype, interlace;

	png_read_info(png, info);
	png_get_IHDR(png, info, &w, &h, &depth, &ctype, &interlace, NULL,
	    NULL);
	f->w = w;
	f->h = h;
	f->k = pngl_fit_side(w, h, f->max);
	/* A small interlaced image is read whole (at most max pixels); a big
	 * one from its last pass, every odd row in full width, which needs
	 * the box to span two rows at least. */
	int small = interlace != PNG_INTERLACE_NONE && f->k == 1;
	int last_pass = interlace != PNG_INTERLACE_NONE && !small;
	pngl_to_rgba(png, info, depth, ctype, small, w);

	f->img->w = (w + f->k - 1) / f->k;
	f->img->h = (h + f->k - 1) / f->k;
	if (last_pass && f->img->h > 1 && (h - (f->img->h - 1) * f->k) < 2 &&
	    ((f->img->h - 1) * f->k) % 2 == 0)
		f->img->h--;	/* the last box holds no odd row */
	f->img->px = xmalloc((size_t)f->img->w * f->img->h * 4);
	if (small) {
		for (png_uint_32 y = 0; y < h; y++)
			f->rows[y] = f->img->px + (size_t)y * w * 4;
		png_read_image(png, f->rows);
		return;
	}
	if (f->k == 1) {	/* fits as it is: no box to average */
		for (png_uint_32 y = 0; y < h; y++)
			png_read_row(png, f->img->px + (size_t)y * w * 4, NULL);
		return;
	}
	f->row = xmalloc((size_t)w * 4);
	f->sum = xcalloc((size_t)f->img->w * 4, sizeof *f->sum);
	if (!last_pass) {
		for (png_uint_32 y = 0; y < h; y++) {
			png_read_row(png, f->row, NULL);
			pngl_fit_add(f, y, f->row);
		}
	} else {
		for (int pass = 0; pass < 7; pass++) {
			png_uint_32 pr = PNG_PASS_ROWS(h, pass);
			if (pr == 0 || PNG_PASS_COLS(w, pass) == 0)
				continue;	/* libpng skips empty passes */
			for (png_uint_32 i = 0; i < pr; i++) {
				png_read_row(png, f->row, NULL);
				if (pass == 6 && (2 * i + 1) / f->k < f->img->h)
					pngl_fit_add(f, 2 * i + 1, f->row);
			}
		}
	}
	pngl_fit_flush(f);
}

/* The size in a PNG's IHDR (the first chunk, at byte 16); 0 when there
 * is none, which libpng then reports. */
static int
pngl_ihdr_size(const struct pngl_src *src, uint32_t *w, uint32_t *h)
{
	uint8_t hd[16];

	if (pngl_at(src, 8, hd, 16) < 0 || memcmp(hd + 4, "IHDR", 4) != 0)
		return 0;
	*w = pngl_be32(hd + 8);
	*h = pngl_be32(hd + 12);
	return 1;
}

static struct png_rgba *
pngl_fit_src(struct pngl_src *src, size_t max_px, char **err)
{
	const size_t max = max_px ? max_px : TERP_PNG_FIT_PIXELS;
	struct pngl_errctx ctx = { "" };
	struct pngl_fit *f;
	png_structp png;
	png_infop info;
	uint8_t sig[8];
	uint32_t w, h;

	if (pngl_at(src, 0, sig, 8) < 0 || png_sig_cmp(sig, 0, 8) != 0) {
		pngl_set_err(err, "no PNG signature");
		return NULL;
	}
	if (pngl_ihdr_size(src, &w, &h) && (w > TERP_PNG_FIT_SIDE ||
	    h > TERP_PNG_FIT_SIDE || (uint64_t)w * h > TERP_PNG_FIT_MAX)) {
		if (err != NULL)
			*err = xasprintf("too big to preview (%u x %u pixels)",
			    (unsigned)w, (unsigned)h);
		return NULL;
	}
	if ((png = pngl_reader(src, &ctx, TERP_PNG_FIT_SIDE, &info, err)) == NULL)
		return NULL;
	f = xcalloc(1, sizeof *f);
	f->max = max;
	f->img = xcalloc(1, sizeof *f->img);
	/* sized for the largest image read whole: max rows of 1 pixel */
	f->rows = xcalloc(max < TERP_PNG_FIT_SIDE ? max : TERP_PNG_FIT_SIDE,
	    sizeof *f->rows);
	struct png_rgba *img = NULL;
	if (setjmp(png_jmpbuf(png))) {
		png_rgba_free(f->img);
		pngl_set_err(err, ctx.msg[0] ? ctx.msg : "decoder error");
	} else {
		pngl_do_fit(png, info, f);
		img = f->img;
	}
	png_destroy_read_struct(&png, &info, NULL);
	free(f->row);
	free(f->sum);
	free(f->rows);
	free(f);
	return img;
}

struct png_rgba *
png_decode_mem_fit(const void *data, size_t len, size_t max_px, char **err)
{
	struct pngl_src src = { data, len, 0, -1 };

	if (err != NULL)
		*err = NULL;
	return pngl_fit_src(&src, max_px, err);
}

struct png_rgba *
png_decode_file_fit(const char *path, size_t max_px, char **err)
{
	struct pngl_src src = { NULL, 0, 0, -1 };
	struct png_rgba *img;
	struct stat st;

	if (err != NULL)
		*err = NULL;
	src.fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	const char *why = src.fd < 0 || fstat(src.fd, &st) < 0 ?
	    strerror(errno) : !S_ISREG(st.st_mode) ? "not a regular file" : NULL;
	if (why != NULL) {
		if (err != NULL)
			*err = xasprintf("%s: %s", path, why);
		if (src.fd >= 0)
			close(src.fd);
		return NULL;
	}
	src.len = (size_t)st.st_size;
	img = pngl_fit_src(&src, max_px, err);
	close(src.fd);
	return img;
}

void
png_rgba_free(struct png_rgba *img)
{
	if (img == NULL)
		return;
	free(img->px);
	free(img);
}
