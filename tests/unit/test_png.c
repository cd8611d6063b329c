#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
