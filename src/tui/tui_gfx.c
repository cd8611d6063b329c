/* tui_gfx: graphics protocols' detection and encoders (tui_gfx.h). */
#include "terp/tui_gfx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "terp/digest.h"

#define GFX_KITTY_CHUNK	4096	/* base64 bytes per APC, as kitty asks */

static const char *const gfx_names[] = {
	"auto", "kitty", "iterm", "sixel", "blocks", "off",
};

int
tui_gfx_parse(const char *s, enum tui_gfx_mode *m)
{
	for (size_t i = 0; i < sizeof gfx_names / sizeof gfx_names[0]; i++)
		if (s != NULL && strcmp(s, gfx_names[i]) == 0) {
			*m = (enum tui_gfx_mode)i;
			return 0;
		}
	return -1;
}

const char *
tui_gfx_name(enum tui_gfx_mode m)
{
	return (size_t)m < sizeof gfx_names / sizeof gfx_names[0] ?
	    gfx_names[m] : "?";
}

static int
gfx_is(const char *(*env)(const char *), const char *k, const char *v)
{
	const char *s = env(k);
	return s != NULL && (v == NULL ? *s != '\0' : strcmp(s, v) == 0);
}

/* The protocol the terminal declares by its environment, or BLOCKS. */
static enum tui_gfx_mode
gfx_declared(const char *(*env)(const char *), int sixel_ok)
{
	if (gfx_is(env, "KITTY_WINDOW_ID", NULL) ||
	    gfx_is(env, "TERM", "xterm-kitty") ||
	    gfx_is(env, "TERM_PROGRAM", "ghostty"))
		return TUI_GFX_KITTY;
	/* iTerm2 and WezTerm speak OSC 1337; LC_TERMINAL survives ssh and
	 * tmux where TERM_PROGRAM does not */
	if (gfx_is(env, "TERM_PROGRAM", "iTerm.app") ||
	    gfx_is(env, "LC_TERMINAL", "iTerm2") ||
	    gfx_is(env, "TERM_PROGRAM", "WezTerm"))
		return TUI_GFX_ITERM;
	if (sixel_ok > 0)
		return TUI_GFX_SIXEL;
	return TUI_GFX_BLOCKS;
}

enum tui_gfx_mode
tui_gfx_detect(enum tui_gfx_mode want, const char *(*env)(const char *),
    int tmux_passthrough_ok, int sixel_ok, int *passthrough)
{
	int in_tmux = gfx_is(env, "TMUX", NULL);
	enum tui_gfx_mode m = want;

	*passthrough = 0;
	if (want == TUI_GFX_BLOCKS || want == TUI_GFX_OFF)
		return want;
	if (want == TUI_GFX_AUTO) {
		/* tmux answers DA1 itself: its sixel says nothing of the
		 * terminal outside */
		m = gfx_declared(env, in_tmux ? -1 : sixel_ok);
		if (m == TUI_GFX_BLOCKS)
			return m;
		if (in_tmux && !tmux_passthrough_ok)
			return TUI_GFX_BLOCKS;
	}
	*passthrough = in_tmux;
	return m;
}

int
tui_gfx_da1_sixel(const char *s, size_t len)
{
	size_t i = 0;

	/* ESC [ ? Ps ; Ps ... c */
	while (i < len && s[i] != '?')
		i++;
	while (++i < len && s[i] != 'c') {
		int v = 0, any = 0;
		while (i < len && s[i] >= '0' && s[i] <= '9') {
			v = v * 10 + (s[i++] - '0');
			any = 1;
			if (v > 100000)
				return 0;
		}
		if (any && v == 4)
			return 1;
		if (i >= len || s[i] != ';')
			break;
	}
	return 0;
}

int
tui_gfx_tmux_passthrough(void)
{
	char line[32] = "";
	FILE *f = popen("tmux show-options -gqv allow-passthrough 2>/dev/null",
	    "r");

	if (f == NULL)
		return 0;
	if (fgets(line, sizeof line, f) == NULL)
		line[0] = '\0';
	pclose(f);
	return strncmp(line, "on", 2) == 0 || strncmp(line, "all", 3) == 0;
}

/* The PNG in base64 APC chunks after the first chunk's keys. */
static int
gfx_kitty_chunks(struct buf *out, const void *png, size_t len,
    const char *keys)
{
	size_t n, off = 0;
	char *b = base64_encode(png, len, &n);
	int rc = 0, first = 1;

	do {
		size_t k = n - off > GFX_KITTY_CHUNK ? GFX_KITTY_CHUNK : n - off;
		int more = off + k < n;
		if (first)
			rc |= buf_printf(out, "\033_G%s,m=%d;", keys, more);
		else
			rc |= buf_printf(out, "\033_Gm=%d;", more);
		rc |= buf_add(out, b + off, k);
		rc |= buf_adds(out, "\033\\");
		off += k;
		first = 0;
	} while (off < n && rc == 0);
	free(b);
	return rc < 0 ? -1 : 0;
}

int
tui_gfx_kitty(struct buf *out, const void *png, size_t len, int cols,
    int rows)
{
	char keys[64];

	snprintf(keys, sizeof keys, "a=T,f=100,q=2,C=1,c=%d,r=%d", cols, rows);
	return gfx_kitty_chunks(out, png, len, keys);
}

int
tui_gfx_kitty_virtual(struct buf *out, const void *png, size_t len, int id,
    int cols, int rows)
{
	char keys[80];

	snprintf(keys, sizeof keys, "a=T,U=1,f=100,q=2,i=%d,c=%d,r=%d", id,
	    cols, rows);
	return gfx_kitty_chunks(out, png, len, keys);
}

int
tui_gfx_kitty_delete(struct buf *out, int id)
{
	return buf_printf(out, "\033_Ga=d,d=I,i=%d,q=2\033\\", id);
}

/* kitty's rowcolumn-diacritics.txt: entry i stands for row or column i. */
static const unsigned gfx_diacritics[TUI_GFX_PLACE_MAX] = {
	0x0305, 0x030D, 0x030E, 0x0310, 0x0312, 0x033D, 0x033E, 0x033F,
	0x0346, 0x034A, 0x034B, 0x034C, 0x0350, 0x0351, 0x0352, 0x0357,
	0x035B, 0x0363, 0x0364, 0x0365, 0x0366, 0x0367, 0x0368, 0x0369,
	0x036A, 0x036B, 0x036C, 0x036D, 0x036E, 0x036F, 0x0483, 0x0484,
	0x0485, 0x0486, 0x0487, 0x0592, 0x0593, 0x0594, 0x0595, 0x0597,
	0x0598, 0x0599, 0x059C, 0x059D, 0x059E, 0x059F, 0x05A0, 0x05A1,
	0x05A8, 0x05A9, 0x05AB, 0x05AC, 0x05AF, 0x05C4, 0x0610, 0x0611,
	0x0612, 0x0613, 0x0614, 0x0615, 0x0616, 0x0617, 0x0657, 0x0658,
	0x0659, 0x065A, 0x065B, 0x065D, 0x065E, 0x06D6, 0x06D7, 0x06D8,
	0x06D9, 0x06DA, 0x06DB, 0x06DC, 0x06DF, 0x06E0, 0x06E1, 0x06E2,
	0x06E4, 0x06E7, 0x06E8, 0x06EB, 0x06EC, 0x0730, 0x0732, 0x0733,
	0x0735, 0x0736, 0x073A, 0x073D, 0x073F, 0x0740, 0x0741, 0x0743,
	0x0745, 0x0747, 0x0749, 0x074A,
};

static size_t
gfx_utf8(char *o, unsigned cp)
{
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

int
tui_gfx_kitty_row(struct buf *out, int row, int cols)
{
	char cell[16];
	size_t n;

	if (row < 0 || row >= TUI_GFX_PLACE_MAX || cols < 0 ||
	    cols > TUI_GFX_PLACE_MAX)
		return -1;
	for (int c = 0; c < cols; c++) {
		n = gfx_utf8(cell, 0x10EEEE);
		n += gfx_utf8(cell + n, gfx_diacritics[row]);
		n += gfx_utf8(cell + n, gfx_diacritics[c]);
		if (buf_add(out, cell, n) < 0)
			return -1;
	}
	return 0;
}

void
tui_gfx_box(uint32_t w, uint32_t h, int cellw, int cellh, int *cols,
    int *rows)
{
	double a = (double)cellw / cellh;
	int c = *cols, r = (int)(c * ((double)h / w) * a + 0.5);

	if (r > *rows) {
		r = *rows;
		c = (int)(r * ((double)w / h) / a + 0.5);
	}
	*cols = c < 1 ? 1 : c;
	*rows = r < 1 ? 1 : r;
}

uint8_t *
tui_gfx_scale(const uint8_t *src, int w, int h, int nw, int nh)
{
	uint8_t *dst = malloc((size_t)nw * nh * 4);

	if (dst == NULL)
		return NULL;
	/* an area average: each target pixel the mean of the source
	 * pixels whose centres fall in it (at least the nearest one) */
	for (int y = 0; y < nh; y++) {
		int y0 = (int)((int64_t)y * h / nh), y1 = (int)((int64_t)(y + 1) * h / nh);
		if (y1 <= y0)
			y1 = y0 + 1;
		for (int x = 0; x < nw; x++) {
			int x0 = (int)((int64_t)x * w / nw);
			int x1 = (int)((int64_t)(x + 1) * w / nw);
			uint64_t sum[4] = { 0, 0, 0, 0 }, k = 0;
			if (x1 <= x0)
				x1 = x0 + 1;
			for (int yy = y0; yy < y1 && yy < h; yy++)
				for (int xx = x0; xx < x1 && xx < w; xx++) {
					const uint8_t *p = src + ((size_t)yy * w + xx) * 4;
					for (int i = 0; i < 4; i++)
						sum[i] += p[i];
					k++;
				}
			uint8_t *d = dst + ((size_t)y * nw + x) * 4;
			for (int i = 0; i < 4; i++)
				d[i] = (uint8_t)(k ? (sum[i] + k / 2) / k : 255);
		}
	}
	return dst;
}

int
tui_gfx_kitty_clear(struct buf *out)
{
	return buf_adds(out, "\033_Ga=d,d=a,q=2\033\\");
}

int
tui_gfx_iterm(struct buf *out, const void *png, size_t len, int cols,
    int rows)
{
	size_t n;
	char *b = base64_encode(png, len, &n);
	int rc = buf_printf(out, "\033]1337;File=inline=1;size=%zu;width=%d;"
	    "height=%d;preserveAspectRatio=1:", len, cols, rows);

	if (rc == 0)
		rc = buf_add(out, b, n);
	if (rc == 0)
		rc = buf_addc(out, '\a');
	free(b);
	return rc;
}

/* The cube index (0..215) of a pixel composited on white. */
static int
gfx_cube(const uint8_t *p)
{
	int c[3];

	for (int i = 0; i < 3; i++) {
		int v = (p[i] * p[3] + 255 * (255 - p[3]) + 127) / 255;
		c[i] = (v * 5 + 127) / 255;
	}
	return c[0] * 36 + c[1] * 6 + c[2];
}

/* One colour's sixels of a band: run-length coded. */
static int
gfx_sixel_run(struct buf *out, int ch, int run)
{
	if (run > 3)
		return buf_printf(out, "!%d%c", run, ch);
	for (int i = 0; i < run; i++)
		if (buf_addc(out, (char)ch) < 0)
			return -1;
	return 0;
}

int
tui_gfx_sixel(struct buf *out, const uint8_t *rgba, int w, int h)
{
	unsigned char used[216] = { 0 };
	unsigned char *idx = malloc((size_t)w * h);
	int rc = 0;

	if (idx == NULL)
		return -1;
	for (size_t i = 0; i < (size_t)w * h; i++) {
		idx[i] = (unsigned char)gfx_cube(rgba + i * 4);
		used[idx[i]] = 1;
	}
	/* 7: pixel aspect 1:1; 1: the background stays; then the size */
	rc |= buf_printf(out, "\033P7;1;0q\"1;1;%d;%d", w, h);
	for (int c = 0; c < 216; c++)
		if (used[c])
			rc |= buf_printf(out, "#%d;2;%d;%d;%d", c,
			    (c / 36) * 20, (c / 6 % 6) * 20, (c % 6) * 20);
	for (int y0 = 0; y0 < h && rc == 0; y0 += 6) {
		unsigned char inband[216] = { 0 };
		for (int y = y0; y < y0 + 6 && y < h; y++)
			for (int x = 0; x < w; x++)
				inband[idx[(size_t)y * w + x]] = 1;
		int firstc = 1;
		for (int c = 0; c < 216 && rc == 0; c++) {
			if (!inband[c])
				continue;
			if (!firstc)
				rc |= buf_addc(out, '$');
			firstc = 0;
			rc |= buf_printf(out, "#%d", c);
			int prev = -1, run = 0;
			for (int x = 0; x < w; x++) {
				int bits = 0;
				for (int k = 0; k < 6 && y0 + k < h; k++)
					if (idx[(size_t)(y0 + k) * w + x] == c)
						bits |= 1 << k;
				int ch = 63 + bits;
				if (ch != prev && run) {
					rc |= gfx_sixel_run(out, prev, run);
					run = 0;
				}
				prev = ch;
				run++;
			}
			rc |= gfx_sixel_run(out, prev, run);
		}
		rc |= buf_addc(out, '-');
	}
	rc |= buf_adds(out, "\033\\");
	free(idx);
	return rc < 0 ? -1 : 0;
}

int
tui_gfx_tmux_wrap(struct buf *out, const char *in, size_t n)
{
	int rc = buf_adds(out, "\033Ptmux;");

	for (size_t i = 0; i < n && rc == 0; i++) {
		if (in[i] == '\033')
			rc = buf_addc(out, '\033');
		if (rc == 0)
			rc = buf_addc(out, in[i]);
	}
	if (rc == 0)
		rc = buf_adds(out, "\033\\");
	return rc;
}
