/* png: decodes PNG files and in-memory PNGs (chart artifacts, images in
 * API responses) into 8-bit RGBA with hard limits, so a hostile or broken
 * file costs bounded memory and time and never crashes terp. Pure. */
#ifndef TERP_PNG_H
#define TERP_PNG_H

#include <stddef.h>
#include <stdint.h>

/* Limits applied to every decode. */
#define TERP_PNG_MAX_SIDE		8192		/* pixels, either side */
#define TERP_PNG_MAX_PIXELS		(24u * 1024 * 1024)	/* width * height */
#define TERP_PNG_MAX_CHUNK		(8u * 1024 * 1024)	/* one ancillary chunk */
#define TERP_PNG_MAX_CHUNKS		128		/* ancillary chunks kept */
#define TERP_PNG_MAX_FILE		(64u * 1024 * 1024)	/* bytes read from disk */

struct png_rgba {
	uint32_t	 w, h;
	uint8_t		*px;	/* w * h * 4 bytes, RGBA, rows top to bottom */
};

/* Decodes the PNG in data[0..len). Palette, grey, 16-bit, tRNS and
 * interlaced images are all converted to 8-bit RGBA. Returns a new image
 * the caller releases with png_rgba_free, or NULL with *err (may be NULL)
 * set to a one-line reason the caller frees. data is only read. */
struct png_rgba *png_decode_mem(const void *data, size_t len, char **err);
/* The same for a file of at most TERP_PNG_MAX_FILE bytes. */
struct png_rgba *png_decode_file(const char *path, char **err);
/* Streaming decode for previews: rows are read one at a time (the file
 * in small reads, never whole) and box-averaged, alpha-weighted, by the
 * least integer factor that brings the image to at most max_px pixels
 * (0: TERP_PNG_FIT_PIXELS), so memory is a few rows plus the result
 * whatever the image's size: a zlib bomb or a 100-megapixel chart cost
 * no more than a small chart. Images up to TERP_PNG_FIT_SIDE a side and
 * TERP_PNG_FIT_MAX pixels are accepted; bigger ones fail with "too big
 * to preview (W x H)". Large interlaced images are previewed from their
 * last Adam7 pass (every other row, in full width). */
#define TERP_PNG_FIT_PIXELS		(1u << 20)
#define TERP_PNG_FIT_SIDE		65535u
#define TERP_PNG_FIT_MAX		(256u * 1024 * 1024)
struct png_rgba *png_decode_file_fit(const char *path, size_t max_px,
    char **err);
struct png_rgba *png_decode_mem_fit(const void *data, size_t len,
    size_t max_px, char **err);
/* Frees an image from png_decode_*; NULL is fine. */
void png_rgba_free(struct png_rgba *img);

#endif
