/* tui_style: the notebook UI's look on this terminal: the theme's roles
 * turned into curses attributes and colour pairs (tui_colorpair.c), the
 * explicit colours of thumbnail cells, and whether the terminal shows
 * UTF-8 (block symbols, box lines) or only ASCII. */
#include "tui_style.h"

#include <langinfo.h>
#include <stdlib.h>
#include <string.h>

#include "terp/sanitize.h"
#include "terp/tui_colorpair.h"
#include "terp/tui_theme.h"
#include "terp/tui_uwidth.h"

/* Each TUI role drawn with a theme role, plus attributes of its own. */
static const struct {
	enum theme_role	 theme;
	attr_t		 extra;
} role_map[R_NROLES] = {
	[R_TEXT]	= { THEME_NORMAL, 0 },
	[R_DIM]		= { THEME_CONV_NOTICE, 0 },
	[R_USER]	= { THEME_CONV_USER, 0 },
	[R_USER_MARK]	= { THEME_CONV_USER, A_BOLD },
	[R_ASSIST]	= { THEME_CONV_ASSISTANT, 0 },
	[R_NOTICE]	= { THEME_CONV_NOTICE, 0 },
	[R_ERROR]	= { THEME_CELL_ERROR, A_BOLD },
	[R_LINK]	= { THEME_ARTIFACT_NAME, 0 },
	[R_CELL_HDR]	= { THEME_CELL_HEADER, 0 },
	[R_STDOUT]	= { THEME_CELL_STDOUT, 0 },
	[R_STDERR]	= { THEME_CELL_STDERR, 0 },
	[R_VALUE]	= { THEME_CELL_VALUE, 0 },
	[R_TRACE]	= { THEME_CELL_ERROR, 0 },
	[R_GOOD]	= { THEME_CELL_OK, 0 },
	[R_RUNNING]	= { THEME_STATUS_BUSY, 0 },
	[R_FAIL]	= { THEME_CELL_ERROR, A_BOLD },
	[R_TITLE]	= { THEME_PANE_TITLE, 0 },
	[R_TITLE_FOCUS]	= { THEME_PANE_FOCUS, 0 },
	[R_BORDER]	= { THEME_PANE_BORDER, 0 },
	[R_STATUS]	= { THEME_STATUS_BAR, 0 },
	[R_STATUS_KEY]	= { THEME_STATUS_BAR, A_BOLD },
	[R_SEL]		= { THEME_SELECTION, 0 },
	[R_PROMPT]	= { THEME_INPUT_PROMPT, 0 },
	[R_INPUT]	= { THEME_INPUT, 0 },
	[R_HIDDEN]	= { THEME_CONV_NOTICE, 0 },
	[R_HEADING]	= { THEME_MD_HEADING, 0 },
};

/* Colour pairs for explicit fg/bg (thumbnails), from tui_colorpair.c. */
static int
pair_for(struct tui *t, int fg, int bg)
{
	if (!t->sty.cp)
		return 0;
	return tui_colorpair_get(t->sty.cp, fg, bg);
}

/* Loads the theme and sets up colours. Returns 0, or -1 with *err
 * (caller frees) when the theme file had problems (the built-in look
 * fills in). */
int
tui_style_init(struct tui *t, char **err)
{
	struct theme th;
	int rc = 0;

	if (t->o.theme)
		rc = tui_theme_load(&th, t->o.theme, err);
	else {
		/* default.theme (light.theme on a light background) when
		 * installed, else the same built in */
		char *ignored = NULL;
		if (tui_theme_load(&th, t->sty.light ? "light" : "default",
		    &ignored) < 0)
			tui_theme_init_builtin(&th);
		free(ignored);
	}

	t->sty.colors = 0;
	t->sty.ncolors = 0;
	if (!t->o.no_color && has_colors() && start_color() == OK) {
		use_default_colors();
		t->sty.ncolors = tui_theme_ncolors(COLORS);
		t->sty.colors = t->sty.ncolors > 0;
	}
	if (t->sty.colors) {
		tui_colorpair_apply_theme(&th, t->sty.ncolors, t->sty.light);
		t->sty.cp = tui_colorpair_new(COLORPAIR_FIRST_DYNAMIC, COLOR_PAIRS - 1);
	}
	for (int r = 0; r < R_NROLES; r++) {
		unsigned long at;
		int pair;
		tui_colorpair_role(&th, role_map[r].theme, t->sty.ncolors, &at, &pair);
		t->sty.role_attr[r] = (attr_t)at | role_map[r].extra;
		t->sty.role_pair[r] = t->sty.colors ? pair : 0;
		if (!t->sty.colors && (r == R_STATUS || r == R_SEL || r == R_STATUS_KEY))
			t->sty.role_attr[r] |= A_REVERSE;
	}
	for (int r = 0; r < THEME_NROLES; r++) {
		unsigned long at;
		int pair;
		tui_colorpair_role(&th, (enum theme_role)r, t->sty.ncolors, &at, &pair);
		t->sty.theme_attr[r] = (attr_t)at;
		t->sty.theme_pair[r] = t->sty.colors ? pair : 0;
	}
	return rc;
}

void
tui_style_seg(struct tui *t, WINDOW *w, const struct tseg *g, int over)
{
	int pair;
	attr_t a;

	if (over >= 0) {
		a = t->sty.role_attr[over];
		pair = t->sty.role_pair[over];
	} else if (g->fg >= 0 || g->bg >= 0) {
		a = A_NORMAL;
		pair = pair_for(t, g->fg, g->bg);
	} else if (g->role >= R_THEME && g->role < R_THEME + THEME_NROLES) {
		a = t->sty.theme_attr[g->role - R_THEME];
		pair = t->sty.theme_pair[g->role - R_THEME];
	} else {
		a = t->sty.role_attr[g->role];
		pair = t->sty.role_pair[g->role];
	}
	wattr_set(w, a, 0, &pair);
}

int
tui_style_utf8(void)
{
	/* the codeset, not MB_CUR_MAX: a GB18030 or EUC locale is
	 * multibyte but shows UTF-8 bytes as garbage (not cached: it may be
	 * asked before tui_run's setlocale) */
	return strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
}

/* The ASCII stand-in for code point cp where the terminal is not
 * UTF-8: box drawing becomes - | +, arrows and marks their nearest
 * ASCII, anything else '?'. One character, as cp is one column wide in
 * the layout (tui_uwidth); wide ones get it twice. */
static char
ascii_glyph(unsigned cp)
{
	static const struct { unsigned cp; char c; } map[] = {
		{ 0x00B7, '.' }, { 0x2022, '*' }, { 0x2026, '.' }, { 0x2013, '-' },
		{ 0x2014, '-' }, { 0x2018, '\'' }, { 0x2019, '\'' }, { 0x201C, '"' },
		{ 0x201D, '"' }, { 0x2039, '<' }, { 0x203A, '>' }, { 0x2190, '<' },
		{ 0x2191, '^' }, { 0x2192, '>' }, { 0x2193, 'v' }, { 0x21B3, '>' },
		{ 0x25AA, '*' }, { 0x25AB, '*' }, { 0x25B8, '>' }, { 0x25B6, '>' },
		{ 0x25BE, 'v' }, { 0x25BC, 'v' }, { 0x25C2, '<' }, { 0x25CF, '*' },
		{ 0x25CB, 'o' }, { 0x2713, '+' }, { 0x2714, '+' }, { 0x2717, 'x' },
		{ 0x2718, 'x' }, { 0x00D7, 'x' }, { 0x2212, '-' }, { 0x00A0, ' ' },
	};

	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (map[i].cp == cp)
			return map[i].c;
	if (cp >= 0x2500 && cp <= 0x257F) {	/* box drawing */
		if (cp <= 0x2501 || (cp >= 0x2504 && cp <= 0x2505) ||
		    (cp >= 0x2508 && cp <= 0x2509) || cp == 0x2550 ||
		    (cp >= 0x254C && cp <= 0x254D) || cp == 0x2574 || cp == 0x2576)
			return '-';
		if ((cp >= 0x2502 && cp <= 0x2503) || (cp >= 0x2506 && cp <= 0x2507) ||
		    (cp >= 0x250A && cp <= 0x250B) || cp == 0x2551 ||
		    (cp >= 0x254E && cp <= 0x254F) || cp == 0x2575 || cp == 0x2577)
			return '|';
		return '+';
	}
	if (cp >= 0x2580 && cp <= 0x259F)	/* blocks */
		return '#';
	return '?';
}

void
tui_style_put(WINDOW *w, const char *s, size_t n)
{
	char run[256];
	size_t nrun = 0;

	if (tui_style_utf8()) {
		if (n > 0)
			waddnstr(w, s, (int)n);
		return;
	}
	while (n > 0) {
		unsigned cp;
		size_t k = utf8_decode(s, n, &cp);
		int cw = k == 0 ? 1 : tui_uwidth_cp(cp);
		char c = k == 0 ? '?' : cp < 0x80 ? (char)cp : ascii_glyph(cp);

		if (k == 0)
			k = 1;
		for (int i = 0; i < cw; i++) {
			if (nrun == sizeof run) {
				waddnstr(w, run, (int)nrun);
				nrun = 0;
			}
			run[nrun++] = c;
		}
		s += k;
		n -= k;
	}
	if (nrun > 0)
		waddnstr(w, run, (int)nrun);
}

/* The style of a whole role (padding, borders, the prompt). */
void
tui_style_role(struct tui *t, WINDOW *w, int role)
{
	tui_style_seg(t, w, NULL, role);
}

void
tui_style_frame(struct tui *t)
{
	if (t->sty.cp)
		tui_colorpair_frame(t->sty.cp);
}

void
tui_style_thumb_opts(const struct tui *t, struct thumb_opts *to)
{
	to->symbols = tui_style_utf8() ? THUMB_SYM_QUAD : THUMB_SYM_ASCII;
	to->palette = !t->sty.colors ? THUMB_PAL_MONO :
	    t->sty.ncolors >= 256 ? THUMB_PAL_256 :
	    t->sty.ncolors >= 16 ? THUMB_PAL_16 : THUMB_PAL_8;
}

void
tui_style_free(struct tui *t)
{
	tui_colorpair_free(t->sty.cp);
	t->sty.cp = NULL;
}
