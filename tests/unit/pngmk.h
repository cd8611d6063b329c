/* Test helper: writes PNGs into memory with libpng's classic API so the
 * tests can make palette, grey, 16-bit and interlaced images. */
#ifndef TEST_PNGMK_H
#define TEST_PNGMK_H

#include <png.h>
#include <stdlib.h>
#include <string.h>

struct pngmk_out {
	unsigned char	*p;
	size_t		 len, cap;
};

static void
pngmk_write(png_structp png, png_bytep data, size_t n)
{
	struct pngmk_out *o = png_get_io_ptr(png);

	if (o->len + n > o->cap) {
		o->cap = (o->len + n) * 2;
		o->p = realloc(o->p, o->cap);
	}
	memcpy(o->p + o->len, data, n);
	o->len += n;
}

static void
pngmk_flush(png_structp png)
{
}

/* rows: h rows of the raw bytes for (ctype, depth). Returns a malloc'd
 * PNG in *len bytes. */
static unsigned char *
pngmk(int w, int h, int ctype, int depth, int interlace,
    unsigned char **rows, const png_color *pal, int npal, size_t *len)
{
	struct pngmk_out o = { 0 };
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING,
	    NULL, NULL, NULL);
	png_infop info = png_create_info_struct(png);

	if (setjmp(png_jmpbuf(png)))
		abort();
	png_set_write_fn(png, &o, pngmk_write, pngmk_flush);
	png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, ctype,
	    interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
	    PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	if (pal != NULL)
		png_set_PLTE(png, info, pal, npal);
	png_write_info(png, info);
	png_write_image(png, rows);
	png_write_end(png, NULL);
	png_destroy_write_struct(&png, &info);
	*len = o.len;
	return o.p;
}

/* An 8-bit RGB PNG from a packed w*h*3 buffer. */
static unsigned char *
pngmk_rgb(int w, int h, unsigned char *px, size_t *len)
{
	unsigned char **rows = malloc((size_t)h * sizeof *rows);
	unsigned char *p;

	for (int y = 0; y < h; y++)
		rows[y] = px + (size_t)y * w * 3;
	p = pngmk(w, h, PNG_COLOR_TYPE_RGB, 8, 0, rows, NULL, 0, len);
	free(rows);
	return p;
}

#endif
