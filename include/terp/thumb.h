/* thumb: renders an RGB(A) image (a chart, usually) as a grid of
 * character cells, each a block symbol with a foreground and a
 * background colour, for the TUI and the headless printer to draw.
 * Pure: no terminal I/O; colours are palette indices (see palette.h). */
#ifndef TERP_THUMB_H
#define TERP_THUMB_H

#include <stdint.h>

#include "terp/buf.h"

enum thumb_symbols {
	THUMB_SYM_QUAD,		/* quadrant blocks: 2x2 sub-pixels per cell */
	THUMB_SYM_HALF,		/* upper/lower half blocks: 1x2 */
	THUMB_SYM_ASCII,	/* ASCII only (non-UTF-8 terminals) */
};

enum thumb_palette {
	THUMB_PAL_256,		/* xterm cube + greys (colours 16..255) */
	THUMB_PAL_16,
	THUMB_PAL_8,
	THUMB_PAL_MONO,		/* no colour: shapes by symbols and shades */
};

enum thumb_mode {
	THUMB_MODE_CHART,	/* keeps thin lines in their real colours */
	THUMB_MODE_PHOTO,	/* least-error fit of the 2x2 area means */
};

struct thumb_opts {
	int			cols;		/* target width in cells (>= 1) */
	int			max_rows;	/* 0 = no limit */
	double			cell_aspect;	/* cell width / height, ~0.5 */
	enum thumb_symbols	symbols;
	enum thumb_palette	palette;
	enum thumb_mode		mode;
	uint8_t			background[3];	/* alpha is composited on it */
};

/* A cell. fg and bg are palette indices, or -1 for the terminal's
 * default colour (always so with THUMB_PAL_MONO). */
struct thumb_cell {
	char	sym[5];		/* one character, UTF-8, NUL-terminated */
	int16_t	fg, bg;
};

struct thumb {
	int			 cols, rows;
	enum thumb_palette	 palette;
	struct thumb_cell	*cells;		/* rows * cols, row-major */
};

/* Defaults: 40 columns, no row limit, aspect 0.5, quadrants, 256
 * colours, chart mode, white background. */
void thumb_opts_init(struct thumb_opts *o);

/* The grid size for a w x h image: cols from the options, rows keeping
 * the aspect ratio; when rows would pass max_rows, the columns shrink. */
void thumb_fit(int w, int h, const struct thumb_opts *o, int *cols,
    int *rows);

/* Renders px (w * h pixels of `channels` bytes each: 3 = RGB, 4 = RGBA;
 * rows `stride` bytes apart) into a new grid the caller frees with
 * thumb_free. Returns NULL with *err set (caller frees) on bad input. */
struct thumb *thumb_render(const uint8_t *px, int w, int h, int channels,
    size_t stride, const struct thumb_opts *o, char **err);
void thumb_free(struct thumb *t);

/* Appends the grid as text with SGR colour sequences, one line per row
 * ending in "\033[0m\n" (plain text for THUMB_PAL_MONO). Returns 0 or -1
 * when out is full. */
int thumb_write_ansi(const struct thumb *t, struct buf *out);

/* The quadrant mask drawn by sym in the foreground colour (bit 0 upper
 * left, 1 upper right, 2 lower left, 3 lower right), or -1 when sym is
 * not a block or space character. Shades (light, medium, dark) answer
 * -1 as well. Used to turn grids back into pixels. */
int thumb_symbol_mask(const char *sym);

#endif
