/* tui_gfx: real pixels in the terminal: picks a graphics protocol
 * (kitty's graphics protocol, iTerm2's inline images, sixel) from what
 * the terminal declares, and encodes images for it, wrapped for tmux's
 * passthrough when inside tmux. The encoders are pure (they append to a
 * buf); only tui_gfx_detect reads the environment and may query the
 * terminal. Block characters (thumb.c) stay the fallback everywhere. */
#ifndef TERP_TUI_GFX_H
#define TERP_TUI_GFX_H

#include <stddef.h>
#include <stdint.h>

#include "terp/buf.h"

enum tui_gfx_mode {
	TUI_GFX_AUTO,		/* detect (tui_gfx_detect) */
	TUI_GFX_KITTY,
	TUI_GFX_ITERM,
	TUI_GFX_SIXEL,
	TUI_GFX_BLOCKS,		/* block-character thumbnails only */
	TUI_GFX_OFF,		/* no pictures at all: the file's line only */
};

/* "auto", "kitty", "iterm", "sixel", "blocks", "off" -> *m; -1 for
 * anything else. */
int tui_gfx_parse(const char *s, enum tui_gfx_mode *m);
const char *tui_gfx_name(enum tui_gfx_mode m);

/* What to use. want: the user's choice (AUTO detects). getenv_fn reads
 * the environment (getenv, or a test's table). Inside tmux ($TMUX) an
 * image protocol is used only through passthrough: *passthrough is set
 * when tmux_passthrough_ok (tmux's allow-passthrough is on) and the
 * outer terminal is known (KITTY_WINDOW_ID, LC_TERMINAL=iTerm2), else
 * the answer is BLOCKS. sixel_ok: whether the terminal answered DA1
 * with attribute 4 (tui_gfx_da1_sixel; asked by tui_termquery), -1 when
 * it was not asked.
 * A forced protocol is kept (wrapped when inside tmux). */
enum tui_gfx_mode tui_gfx_detect(enum tui_gfx_mode want,
    const char *(*getenv_fn)(const char *), int tmux_passthrough_ok,
    int sixel_ok, int *passthrough);

/* Inside tmux: whether its allow-passthrough option is on (asks the
 * tmux binary; 0 when that fails). */
int tui_gfx_tmux_passthrough(void);

/* Whether a DA1 answer ("\033[?62;4;22c") lists attribute 4 (sixel). */
int tui_gfx_da1_sixel(const char *answer, size_t len);

/* kitty: transmits and shows the PNG in png[0..len) over cols x rows
 * cells at the cursor, base64 in APC chunks of at most 4096 bytes
 * ("\033_Ga=T,f=100,...,m=1;...\033\\" then "\033_Gm=1;...\033\\", the last
 * m=0), the cursor not moved, no answers asked for. Returns 0 or -1
 * when out is full. */
int tui_gfx_kitty(struct buf *out, const void *png, size_t len, int cols,
    int rows);
/* The most rows and columns a kitty placeholder picture may take (the
 * diacritics table's length). */
#define TUI_GFX_PLACE_MAX	100
/* kitty, Unicode placeholders: transmits the PNG as image id (1..255)
 * with a virtual placement of cols x rows cells ("a=T,U=1,f=100,q=2,
 * i=ID,c=C,r=R"), chunked as tui_gfx_kitty; nothing is drawn until
 * placeholder cells (tui_gfx_kitty_row) in the foreground colour id
 * are. Returns 0 or -1 when out is full. */
int tui_gfx_kitty_virtual(struct buf *out, const void *png, size_t len,
    int id, int cols, int rows);
/* kitty: deletes image id and its placements ("a=d,d=I,i=ID,q=2"). */
int tui_gfx_kitty_delete(struct buf *out, int id);
/* kitty: row `row` of a placeholder picture, cols cells of U+10EEEE each
 * followed by the row's and the column's diacritics (UTF-8; both always
 * given, so a cell redrawn alone is still placed). -1 when row or cols
 * is out of 0..TUI_GFX_PLACE_MAX or out is full. */
int tui_gfx_kitty_row(struct buf *out, int row, int cols);
/* The cells a w x h picture takes within *cols x *rows cells of cellw x
 * cellh pixels, its aspect kept; written back, each at least 1. */
void tui_gfx_box(uint32_t w, uint32_t h, int cellw, int cellh, int *cols,
    int *rows);
/* src (w x h RGBA) area-averaged to nw x nh: a new buffer the caller
 * frees, or NULL when out of memory. */
uint8_t *tui_gfx_scale(const uint8_t *src, int w, int h, int nw, int nh);
/* kitty: deletes every image shown (on leaving the preview). */
int tui_gfx_kitty_clear(struct buf *out);
/* iTerm2: OSC 1337 inline file, fit to cols x rows cells, the aspect
 * kept: "\033]1337;File=inline=1;size=N;width=C;height=R;
 * preserveAspectRatio=1:BASE64\a". */
int tui_gfx_iterm(struct buf *out, const void *png, size_t len, int cols,
    int rows);
/* sixel: w x h RGBA pixels (alpha composited on white) as a DCS sixel
 * image: raster attributes, a palette of at most 216 colours (the 6x6x6
 * cube, "#i;2;r;g;b" in percent), then bands of 6 rows, each colour's
 * row of sixels run-length coded ("!n"), "$" between colours, "-"
 * between bands. */
int tui_gfx_sixel(struct buf *out, const uint8_t *rgba, int w, int h);
/* Wraps in[0..n) for tmux's passthrough: "\033Ptmux;" + the bytes with
 * every ESC doubled + "\033\\". */
int tui_gfx_tmux_wrap(struct buf *out, const char *in, size_t n);

#endif
