/* png: bounded PNG decoding with libpng's progressive-free low-level API.
 * The simplified API cannot set chunk limits, so the classic API is used
 * with every limit libpng offers plus our own pixel-count cap. */
#include "terp/png.h"

#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/util.h"

struct pngl_src {
	const uint8_t	*p;
	size_t		 len, off;
};

struct pngl_errctx {
	char		 msg[160];
};

static void
pngl_read_cb(png_structp png, png_bytep out, size_t n)
{
	struct pngl_src *src = png_get_io_ptr(png);

	if (src->len - src->off < n)
		png_error(png, "file is truncated");
	memcpy(out, src->p + src->off, n);
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
pngl_scan_chunks(const uint8_t *p, size_t len)
{
	size_t off = 8;

	while (off + 8 <= len) {
		uint32_t n = pngl_be32(p + off);
		int idat = memcmp(p + off + 4, "IDAT", 4) == 0;
		if (n > 0x7fffffffu || n > len - off - 8)
			return "a chunk runs past the end of the file";
		if (!idat && n > TERP_PNG_MAX_CHUNK)
			return "a chunk is too large";
		if (memcmp(p + off + 4, "IEND", 4) == 0)
			return NULL;
		off += 12 + (size_t)n;
	}
	return NULL;	/* a missing IEND is libpng's to report */
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

	/* Everything to 8-bit RGBA. */
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
	if (interlace != PNG_INTERLACE_NONE)
		png_set_interlace_handling(png);
	png_read_update_info(png, info);
	if (png_get_rowbytes(png, info) != (size_t)w * 4)
		png_error(png, "unexpected row layout");

	img->w = w;
	img->h = h;
	img->px = xmalloc((size_t)w * h * 4);
	for (png_uint_32 y = 0; y < h; y++)
		rows[y] = img->px + (size_t)y * w * 4;
	png_read_image(png, rows);
	png_read_end(png, NULL);
}

struct png_rgba *
png_decode_mem(const void *data, size_t len, char **err)
{
	struct pngl_src src = { data, len, 0 };
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
	{
		const char *why = pngl_scan_chunks(data, len);
		if (why != NULL) {
			pngl_set_err(err, why);
			return NULL;
		}
	}
	png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &ctx,
	    pngl_error_cb, pngl_warning_cb);
	if (png == NULL)
		fatal("out of memory");
	info = png_create_info_struct(png);
	if (info == NULL)
		fatal("out of memory");
	png_set_user_limits(png, TERP_PNG_MAX_SIDE, TERP_PNG_MAX_SIDE);
	png_set_chunk_malloc_max(png, TERP_PNG_MAX_CHUNK);
	png_set_chunk_cache_max(png, TERP_PNG_MAX_CHUNKS);
	png_set_read_fn(png, &src, pngl_read_cb);

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

void
png_rgba_free(struct png_rgba *img)
{
	if (img == NULL)
		return;
	free(img->px);
	free(img);
}
