/* palette: the terminal colour palettes terp draws with (xterm 256, the
 * 16 and 8 ANSI colours) and nearest-colour mapping into them. Used by
 * the thumbnail renderer and by themes' #rrggbb colours. Pure. */
#ifndef TERP_PALETTE_H
#define TERP_PALETTE_H

#include <stdint.h>

/* The RGB that xterm shows for colour idx (0..255). Colours 0-15 are
 * the xterm defaults; a user's terminal theme may differ. */
void palette_rgb(int idx, uint8_t rgb[3]);

/* The palette colour nearest to (r,g,b) among the first ncolors colours
 * (8, 16 or 256) under the weighted distance 2dr^2 + 4dg^2 + 3db^2. With
 * 256 colours the answer is in 16..255 (the cube and the greys), which
 * do not depend on the user's terminal theme. */
int palette_nearest(int ncolors, int r, int g, int b);

/* The weighted squared distance palette_nearest minimises. */
static inline int
palette_dist(int r1, int g1, int b1, int r2, int g2, int b2)
{
	int dr = r1 - r2, dg = g1 - g2, db = b1 - b2;

	return 2 * dr * dr + 4 * dg * dg + 3 * db * db;
}

#endif
