/* tui_theme: the roles the TUI draws with (conversation.user, cell.stderr,
 * code.keyword, ...) and their styles, read from theme files of lines
 * like `conversation.user = bold cyan default`. Pure: styles are
 * terminal-neutral; colorpair.c turns them into ncurses attributes. */
#ifndef TERP_TUI_THEME_H
#define TERP_TUI_THEME_H

#include <stddef.h>
#include <stdint.h>

enum theme_role {
	THEME_NORMAL,
	THEME_CONV_USER,
	THEME_CONV_ASSISTANT,
	THEME_CONV_NOTICE,
	THEME_CELL_HEADER,
	THEME_CELL_CODE,
	THEME_CODE_KEYWORD,
	THEME_CODE_STRING,
	THEME_CODE_COMMENT,
	THEME_CODE_NUMBER,
	THEME_CODE_DECORATOR,
	THEME_CODE_BUILTIN,
	THEME_CELL_STDOUT,
	THEME_CELL_STDERR,
	THEME_CELL_VALUE,
	THEME_CELL_ERROR,
	THEME_CELL_OK,
	THEME_STATUS_BAR,
	THEME_STATUS_BUSY,
	THEME_STATUS_ERROR,
	THEME_PANE_BORDER,
	THEME_PANE_TITLE,
	THEME_PANE_FOCUS,
	THEME_ARTIFACT_NAME,
	THEME_INPUT,
	THEME_INPUT_PROMPT,
	THEME_HELP,
	THEME_SELECTION,
	THEME_MD_HEADING,
	THEME_MD_BOLD,
	THEME_MD_ITALIC,
	THEME_MD_CODE,
	THEME_MD_BULLET,
	THEME_MD_QUOTE,
	THEME_TABLE_BORDER,
	THEME_TABLE_HEADER,
	THEME_ANSWER_TRACED,	/* a number of an answer that an output printed */
	THEME_ANSWER_UNTRACED,	/* one that no output printed */
	THEME_NROLES
};

/* Attributes. */
enum {
	THEME_BOLD	= 1 << 0,
	THEME_DIM	= 1 << 1,
	THEME_ITALIC	= 1 << 2,
	THEME_UNDERLINE	= 1 << 3,
	THEME_REVERSE	= 1 << 4,
};

enum theme_color_kind {
	THEME_COLOR_DEFAULT,	/* the terminal's own colour */
	THEME_COLOR_INDEX,	/* 0..255: 0-7 basic, 8-15 bright, xterm */
	THEME_COLOR_RGB,	/* 0xRRGGBB, mapped to the nearest colour */
};

struct theme_color {
	enum theme_color_kind	kind;
	uint32_t		value;
};

struct theme_style {
	struct theme_color	fg, bg;
	unsigned		attrs;
};

struct theme {
	struct theme_style	role[THEME_NROLES];
};

#define THEME_MAX_FILE	(64 * 1024)

/* The name used in theme files ("cell.stderr"), and its inverse:
 * -1 when name is not a role. */
const char *tui_theme_role_name(enum theme_role role);
int tui_theme_role_find(const char *name);

/* Fills t with the built-in dark theme (what default.theme ships). */
void tui_theme_init_builtin(struct theme *t);

/* Applies theme text over t, line by line. Returns 0, or -1 with *err
 * (caller frees) listing each bad line as "source:LINE: reason" (at most
 * 10); good lines are applied either way. */
int tui_theme_parse(struct theme *t, const char *text, size_t len,
    const char *source, char **err);

/* tui_theme_init_builtin, then the theme NAME: the file NAME.theme in
 * $XDG_CONFIG_HOME/terp/themes, else the shipped theme of that name
 * (built into the binary), else NAME.theme in TERP_DATADIR/themes (a
 * name with a '/' is taken as a path). Returns 0 or -1
 * with *err (caller frees); t holds the built-in theme plus any good
 * lines even on error. */
int tui_theme_load(struct theme *t, const char *name, char **err);
/* Whether the theme NAME loads without a problem: 0, or -1 with *err
 * (caller frees) in one line, for the command line to refuse it before
 * the screen is taken. */
int tui_theme_check(const char *name, char **err);

/* The colours to use on a terminal with term_colors colours: 0 when
 * NO_COLOR is set (to anything non-empty) or the terminal has fewer than
 * 8, else 8, 16 or 256. */
int tui_theme_ncolors(int term_colors);

/* The colour index to draw c with among ncolors colours, or -1 for the
 * terminal default (always -1 when ncolors is 0). */
int tui_theme_color_resolve(struct theme_color c, int ncolors);

/* The colour indexes to draw style st with (-1: the terminal default),
 * as tui_theme_color_resolve gives them, except that at 8 or 16 colours
 * a foreground that would vanish into its background (st's own, else
 * the terminal's, presumed black, or white when light is set) becomes
 * black or white: bright-black pane borders are black at 8 colours. */
void tui_theme_style_resolve(const struct theme_style *st, int ncolors,
    int light, int *fg, int *bg);

/* The terminal's background from its reply to the OSC 11 query
 * (ESC ] 11 ; rgb:RRRR/GGGG/BBBB, ended by ST or BEL, anywhere in the n
 * bytes of s): 1 light, 0 dark, -1 when s holds no such reply. */
int tui_theme_bg_reply(const char *s, size_t n);
/* The same from $COLORFGBG ("fg;bg", rxvt's and konsole's): 1, 0, or -1
 * when v is NULL or has no colour number 0-15 last. */
int tui_theme_colorfgbg(const char *v);

#endif
