/* libFuzzer target for the PNG decoder: any bytes give an image within
 * the limits or a reason, never a crash, a leak or a huge allocation. */
#include <stdint.h>
#include <stdlib.h>

#include "terp/png.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *err = NULL;
	struct png_rgba *img = png_decode_mem(data, size, &err);

	if (img != NULL) {
		if (img->w == 0 || img->h == 0 || img->w > TERP_PNG_MAX_SIDE ||
		    img->h > TERP_PNG_MAX_SIDE)
			abort();
		png_rgba_free(img);
	} else if (err == NULL) {
		abort();	/* a failure always says why */
	}
	free(err);
	return 0;
}
