/* palette: xterm's colour table and nearest-colour search. The cube is
 * searched by per-channel midpoint thresholds (O(1)), the greys and the
 * 16 ANSI colours by brute force. */
#include "terp/palette.h"

static const uint8_t palette_ansi[16][3] = {
	{ 0, 0, 0 }, { 205, 0, 0 }, { 0, 205, 0 }, { 205, 205, 0 },
	{ 0, 0, 238 }, { 205, 0, 205 }, { 0, 205, 205 }, { 229, 229, 229 },
	{ 127, 127, 127 }, { 255, 0, 0 }, { 0, 255, 0 }, { 255, 255, 0 },
	{ 92, 92, 255 }, { 255, 0, 255 }, { 0, 255, 255 }, { 255, 255, 255 },
};

static const uint8_t palette_cube[6] = { 0, 95, 135, 175, 215, 255 };

void
palette_rgb(int idx, uint8_t rgb[3])
{
	if (idx < 0 || idx > 255)
		idx = 0;
	if (idx < 16) {
		rgb[0] = palette_ansi[idx][0];
		rgb[1] = palette_ansi[idx][1];
		rgb[2] = palette_ansi[idx][2];
	} else if (idx < 232) {
		idx -= 16;
		rgb[0] = palette_cube[idx / 36];
		rgb[1] = palette_cube[idx / 6 % 6];
		rgb[2] = palette_cube[idx % 6];
	} else {
		rgb[0] = rgb[1] = rgb[2] = (uint8_t)(8 + 10 * (idx - 232));
	}
}

/* The cube level index nearest to v (midpoints 47, 115, 155, 195, 235). */
static int
palette_cube_level(int v)
{
	if (v < 48)
		return 0;
	if (v < 115)
		return 1;
	return (v - 35) / 40;
}

int
palette_nearest(int ncolors, int r, int g, int b)
{
	int best = 0, bestd = -1;

	if (ncolors >= 256) {
		int cr = palette_cube_level(r), cg = palette_cube_level(g);
		int cb = palette_cube_level(b);
		int gi, gv, d;

		best = 16 + 36 * cr + 6 * cg + cb;
		bestd = palette_dist(r, g, b, palette_cube[cr],
		    palette_cube[cg], palette_cube[cb]);
		/* The grey nearest to the mean, and its neighbours. */
		gi = ((r + g + b) / 3 - 3) / 10;
		for (int i = gi - 1; i <= gi + 1; i++) {
			if (i < 0 || i > 23)
				continue;
			gv = 8 + 10 * i;
			d = palette_dist(r, g, b, gv, gv, gv);
			if (d < bestd) {
				bestd = d;
				best = 232 + i;
			}
		}
		return best;
	}
	if (ncolors > 16)
		ncolors = 16;
	if (ncolors < 2)
		ncolors = 2;
	for (int i = 0; i < ncolors; i++) {
		int d = palette_dist(r, g, b, palette_ansi[i][0],
		    palette_ansi[i][1], palette_ansi[i][2]);
		if (bestd < 0 || d < bestd) {
			bestd = d;
			best = i;
		}
	}
	return best;
}
