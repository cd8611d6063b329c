#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "pngmk.h"
#include "terp/png.h"

static uint32_t
crc32_png(const unsigned char *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
	}
	return c ^ 0xffffffffu;
}

static void
put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

Test(png, rejects_huge_declared_size)
{
	unsigned char f[8 + 25 + 12];
	char *err = NULL;

	memcpy(f, "\x89PNG\r\n\x1a\n", 8);
	put32(f + 8, 13);
	memcpy(f + 12, "IHDR", 4);
	put32(f + 16, 100000);
	put32(f + 20, 100000);
	f[24] = 8; f[25] = 2; f[26] = 0; f[27] = 0; f[28] = 0;
	put32(f + 29, crc32_png(f + 12, 17));
	/* An empty IEND so only the size can be the problem. */
	put32(f + 33, 0);
	memcpy(f + 37, "IEND", 4);
	put32(f + 41, crc32_png(f + 37, 4));
	cr_assert_null(png_decode_mem(f, sizeof f, &err));
	cr_assert_not_null(err);
	cr_assert(strstr(err, "not a usable PNG") != NULL, "%s", err);
	cr_assert(strchr(err, '\n') == NULL);
	free(err);
}

Test(png, rejects_truncated_and_garbage)
{
	unsigned char px[32 * 32 * 3];
	size_t len;
	unsigned char *p;
	char *err = NULL;

	for (size_t i = 0; i < sizeof px; i++)
		px[i] = (unsigned char)(i * 7);
	p = pngmk_rgb(32, 32, px, &len);
	struct png_rgba *ok = png_decode_mem(p, len, NULL);
	cr_assert_not_null(ok);
	cr_assert_eq(ok->w, 32);
	cr_assert_eq(ok->px[4 * 5 + 0], px[3 * 5]);
	cr_assert_eq(ok->px[3], 255);
	png_rgba_free(ok);
	for (size_t cut = 8; cut < len; cut += len / 7) {
		cr_assert_null(png_decode_mem(p, cut, &err), "cut %zu", cut);
		cr_assert_not_null(err);
		free(err);
		err = NULL;
	}
	cr_assert_null(png_decode_mem("GIF89a..", 8, &err));
	cr_assert(strstr(err, "signature") != NULL);
	free(err);
	free(p);
	cr_assert_null(png_decode_file("/nonexistent/x.png", &err));
	free(err);
}

Test(png, converts_palette_grey_16bit_interlaced)
{
	unsigned char r8[4][4], r16[4][4 * 3 * 2], rp[4][4];
	unsigned char *rows[4];
	png_color pal[2] = { { 255, 0, 0 }, { 0, 0, 255 } };
	size_t len;
	unsigned char *p;
	struct png_rgba *img;

	/* Grey 8-bit, interlaced. */
	for (int y = 0; y < 4; y++) {
		for (int x = 0; x < 4; x++)
			r8[y][x] = (unsigned char)(y * 64 + x);
		rows[y] = r8[y];
	}
	p = pngmk(4, 4, PNG_COLOR_TYPE_GRAY, 8, 1, rows, NULL, 0, &len);
	img = png_decode_mem(p, len, NULL);
	cr_assert_not_null(img);
	cr_assert_eq(img->px[(2 * 4 + 3) * 4 + 0], 131);
	cr_assert_eq(img->px[(2 * 4 + 3) * 4 + 2], 131);
	png_rgba_free(img);
	free(p);

	/* 16-bit RGB: the high byte survives. */
	for (int y = 0; y < 4; y++) {
		for (int i = 0; i < 24; i++)
			r16[y][i] = (unsigned char)(i % 2 ? 0x55 : 0xA0 + y);
		rows[y] = r16[y];
	}
	p = pngmk(4, 4, PNG_COLOR_TYPE_RGB, 16, 0, rows, NULL, 0, &len);
	img = png_decode_mem(p, len, NULL);
	cr_assert_not_null(img);
	cr_assert(img->px[(3 * 4) * 4] == 0xA3 || img->px[(3 * 4) * 4] == 0xA4);
	png_rgba_free(img);
	free(p);

	/* 1-bit palette. */
	for (int y = 0; y < 4; y++) {
		rp[y][0] = y % 2 ? 0x50 : 0xA0;	/* 0101 / 1010 */
		rows[y] = rp[y];
	}
	p = pngmk(4, 4, PNG_COLOR_TYPE_PALETTE, 1, 0, rows, pal, 2, &len);
	img = png_decode_mem(p, len, NULL);
	cr_assert_not_null(img);
	cr_assert_eq(img->px[0], 0);	/* y0 x0: bit 1 -> blue */
	cr_assert_eq(img->px[2], 255);
	cr_assert_eq(img->px[4], 255);	/* y0 x1: bit 0 -> red */
	cr_assert_eq(img->px[7], 255);
	png_rgba_free(img);
	free(p);
}

/* Found by tests/fuzz/fuzz_png.c: a text chunk declaring 2 GB right after
 * the header made libpng allocate 2 GB before noticing the file ends. */
Test(png, rejects_a_chunk_longer_than_the_file)
{
	unsigned char px[16 * 16 * 3] = { 0 };
	size_t len, n;
	unsigned char *p = pngmk_rgb(16, 16, px, &len), *q;
	char *err = NULL;

	/* signature (8) + IHDR (25): insert a tEXt chunk claiming 0x7a000039 */
	n = len + 12 + 4;
	q = malloc(n);
	memcpy(q, p, 33);
	put32(q + 33, 0x7a000039u);
	memcpy(q + 37, "tEXtabcd", 8);
	put32(q + 45, 0);
	memcpy(q + 49, p + 33, len - 33);
	cr_assert_null(png_decode_mem(q, len + 16, &err));
	cr_assert_not_null(err);
	/* said before libpng allocates anything (libpng says "file is truncated") */
	cr_assert(strstr(err, "runs past the end") != NULL, "%s", err);
	free(err);
	free(q);
	free(p);
}

/* Issue 23 item 7: the streaming decoder keeps at most max_px pixels,
 * box-averaged, whatever the image's size. */
static unsigned char *
mk_same_rows(int w, int h, int ctype, int interlace, unsigned char *row,
    size_t *len)
{
	unsigned char **rows = malloc((size_t)h * sizeof *rows);

	for (int y = 0; y < h; y++)
		rows[y] = row;
	unsigned char *p = pngmk(w, h, ctype, 8, interlace, rows, NULL, 0, len);
	free(rows);
	return p;
}

Test(png, a_zlib_bomb_decodes_to_a_small_image)
{
	/* 4800x4800 RGBA of zeros: ~90 KB of file, 92 MB decoded whole */
	unsigned char *row = calloc(4800, 4);
	size_t len;
	unsigned char *p = mk_same_rows(4800, 4800, PNG_COLOR_TYPE_RGBA, 0, row, &len);
	char *err = NULL;

	cr_assert_lt(len, 200000);
	struct png_rgba *img = png_decode_mem_fit(p, len, 0, &err);
	cr_assert_not_null(img, "%s", err ? err : "");
	cr_assert_leq((size_t)img->w * img->h, TERP_PNG_FIT_PIXELS);
	cr_assert_eq(img->w, 960);	/* 4800 / 5 */
	cr_assert_eq(img->h, 960);
	cr_assert_eq(img->px[3], 0);	/* transparent stays transparent */
	png_rgba_free(img);
	free(p);
	free(row);
}

Test(png, a_10000_square_png_gets_a_preview_and_a_bigger_one_says_why_not)
{
	unsigned char *row = malloc(10000);
	size_t len;
	char *err = NULL;

	for (int x = 0; x < 10000; x++)
		row[x] = x < 5000 ? 0 : 200;
	unsigned char *p = mk_same_rows(10000, 10000, PNG_COLOR_TYPE_GRAY, 0, row, &len);
	struct png_rgba *img = png_decode_mem_fit(p, len, 0, &err);
	cr_assert_not_null(img, "%s", err ? err : "");
	cr_assert_eq(img->w, 1000);
	cr_assert_eq(img->h, 1000);
	cr_assert_eq(img->px[(500 * 1000 + 10) * 4], 0);
	cr_assert_eq(img->px[(500 * 1000 + 990) * 4], 200);
	cr_assert_eq(img->px[(500 * 1000 + 990) * 4 + 3], 255);
	png_rgba_free(img);
	free(p);
	free(row);

	/* a header declaring 70000 x 70000: one clear line, nothing decoded */
	unsigned char f[8 + 25 + 12];
	memcpy(f, "\x89PNG\r\n\x1a\n", 8);
	put32(f + 8, 13);
	memcpy(f + 12, "IHDR", 4);
	put32(f + 16, 70000);
	put32(f + 20, 70000);
	f[24] = 8; f[25] = 2; f[26] = 0; f[27] = 0; f[28] = 0;
	put32(f + 29, crc32_png(f + 12, 17));
	put32(f + 33, 0);
	memcpy(f + 37, "IEND", 4);
	put32(f + 41, crc32_png(f + 37, 4));
	cr_assert_null(png_decode_mem_fit(f, sizeof f, 0, &err));
	cr_assert_str_eq(err, "too big to preview (70000 x 70000 pixels)");
	free(err);
}

Test(png, fit_averages_boxes_weighted_by_alpha)
{
	/* 4x2 RGBA, kept at 2 pixels: 2x2 boxes */
	unsigned char r0[16] = { 255, 0, 0, 255,  0, 0, 0, 0,  0, 0, 255, 255,  0, 0, 255, 255 };
	unsigned char r1[16] = { 255, 0, 0, 255,  0, 0, 0, 0,  0, 0, 255, 255,  0, 0, 255, 255 };
	unsigned char *rows[2] = { r0, r1 };
	size_t len;
	unsigned char *p = pngmk(4, 2, PNG_COLOR_TYPE_RGBA, 8, 0, rows, NULL, 0, &len);
	struct png_rgba *img = png_decode_mem_fit(p, len, 2, NULL);

	cr_assert_not_null(img);
	cr_assert_eq(img->w, 2);
	cr_assert_eq(img->h, 1);
	/* red over transparent black: red, half opaque (not dark red) */
	cr_assert_eq(img->px[0], 255);
	cr_assert_eq(img->px[1], 0);
	cr_assert_eq(img->px[3], 128);
	cr_assert_eq(img->px[6], 255);
	cr_assert_eq(img->px[7], 255);
	png_rgba_free(img);
	free(p);
}

Test(png, a_big_interlaced_image_is_previewed_from_its_last_pass)
{
	/* 64x64 grey, interlaced, kept at 256 pixels: 4x4 boxes; columns
	 * dark on the left half, light on the right; rows get lighter */
	unsigned char px[64][64], *rows[64];
	for (int y = 0; y < 64; y++) {
		for (int x = 0; x < 64; x++)
			px[y][x] = (unsigned char)((x < 32 ? 0 : 100) + y);
		rows[y] = px[y];
	}
	size_t len;
	unsigned char *p = pngmk(64, 64, PNG_COLOR_TYPE_GRAY, 8, 1, rows, NULL, 0, &len);
	char *err = NULL;
	struct png_rgba *img = png_decode_mem_fit(p, len, 256, &err);

	cr_assert_not_null(img, "%s", err ? err : "");
	cr_assert_eq(img->w, 16);
	cr_assert_eq(img->h, 16);
	/* box row 0 holds source rows 1 and 3 (the last pass's) */
	cr_assert_eq(img->px[0], 2);
	cr_assert_eq(img->px[15 * 4], 102);
	cr_assert_eq(img->px[(15 * 16) * 4], 62);
	png_rgba_free(img);
	free(p);

	/* small interlaced images are read whole, exactly */
	img = png_decode_mem_fit(p = pngmk(64, 64, PNG_COLOR_TYPE_GRAY, 8, 1, rows,
	    NULL, 0, &len), len, 0, NULL);
	cr_assert_not_null(img);
	cr_assert_eq(img->w, 64);
	cr_assert_eq(img->px[(10 * 64 + 40) * 4], 110);
	png_rgba_free(img);
	free(p);
}

Test(png, fit_reads_a_file_in_small_reads)
{
	unsigned char px[8 * 8 * 3];
	memset(px, 77, sizeof px);
	size_t len;
	unsigned char *p = pngmk_rgb(8, 8, px, &len);
	char path[] = "/tmp/terp-png-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, p, len), (ssize_t)len);
	close(fd);
	struct png_rgba *img = png_decode_file_fit(path, 0, NULL);
	cr_assert_not_null(img);
	cr_assert_eq(img->w, 8);
	cr_assert_eq(img->px[0], 77);
	png_rgba_free(img);
	/* cut short: libpng's reason, no crash */
	char *err = NULL;
	fd = open(path, O_WRONLY | O_TRUNC);
	cr_assert_eq(write(fd, p, len / 2), (ssize_t)(len / 2));
	close(fd);
	cr_assert_null(png_decode_file_fit(path, 0, &err));
	cr_assert_not_null(err);
	free(err);
	cr_assert_null(png_decode_file_fit("/nonexistent/x.png", 0, &err));
	cr_assert(strstr(err, "No such file") != NULL, "%s", err);
	free(err);
	unlink(path);
	free(p);
}

Test(png, an_image_that_fits_comes_back_pixel_for_pixel)
{
	/* 3x2 RGB (no box: read straight into the image), colours exact */
	unsigned char r0[9] = { 1, 2, 3,  250, 251, 252,  0, 128, 255 };
	unsigned char r1[9] = { 9, 8, 7,  60, 70, 80,  255, 0, 1 };
	unsigned char *rows[2] = { r0, r1 };
	size_t len;
	unsigned char *p = pngmk(3, 2, PNG_COLOR_TYPE_RGB, 8, 0, rows, NULL, 0, &len);
	struct png_rgba *img = png_decode_mem_fit(p, len, 6, NULL);

	cr_assert_not_null(img);
	cr_assert_eq(img->w, 3);
	cr_assert_eq(img->h, 2);
	for (int y = 0; y < 2; y++)
		for (int x = 0; x < 3; x++) {
			const unsigned char *want = rows[y] + x * 3;
			const unsigned char *got = img->px + (y * 3 + x) * 4;
			cr_assert_arr_eq(got, want, 3, "pixel %d,%d", x, y);
			cr_assert_eq(got[3], 255);
		}
	png_rgba_free(img);
	free(p);
}
