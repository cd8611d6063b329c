/* tui_theme: role names, the theme file parser and the lookup of theme files.
 * The built-in theme is itself theme text, parsed at start-up, so it and
 * themes/default.theme are the same language (a unit test compares). */
#include "terp/tui_theme.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "terp/buf.h"
#include "terp/palette.h"
#include "terp/util.h"

#ifndef TERP_DATADIR
#define TERP_DATADIR "/usr/local/share/terp"
#endif

#define THEME_MAX_ERRORS	10

static const char *const theme_roles[THEME_NROLES] = {
	[THEME_NORMAL] = "normal",
	[THEME_CONV_USER] = "conversation.user",
	[THEME_CONV_ASSISTANT] = "conversation.assistant",
	[THEME_CONV_NOTICE] = "conversation.notice",
	[THEME_CELL_HEADER] = "cell.header",
	[THEME_CELL_CODE] = "cell.code",
	[THEME_CODE_KEYWORD] = "code.keyword",
	[THEME_CODE_STRING] = "code.string",
	[THEME_CODE_COMMENT] = "code.comment",
	[THEME_CODE_NUMBER] = "code.number",
	[THEME_CODE_DECORATOR] = "code.decorator",
	[THEME_CODE_BUILTIN] = "code.builtin",
	[THEME_CELL_STDOUT] = "cell.stdout",
	[THEME_CELL_STDERR] = "cell.stderr",
	[THEME_CELL_VALUE] = "cell.value",
	[THEME_CELL_ERROR] = "cell.error",
	[THEME_CELL_OK] = "cell.ok",
	[THEME_STATUS_BAR] = "status.bar",
	[THEME_STATUS_BUSY] = "status.busy",
	[THEME_STATUS_ERROR] = "status.error",
	[THEME_PANE_BORDER] = "pane.border",
	[THEME_PANE_TITLE] = "pane.title",
	[THEME_PANE_FOCUS] = "pane.focus",
	[THEME_ARTIFACT_NAME] = "artifact.name",
	[THEME_INPUT] = "input",
	[THEME_INPUT_PROMPT] = "input.prompt",
	[THEME_HELP] = "help",
	[THEME_SELECTION] = "selection",
	[THEME_MD_HEADING] = "markdown.heading",
	[THEME_MD_BOLD] = "markdown.bold",
	[THEME_MD_ITALIC] = "markdown.italic",
	[THEME_MD_CODE] = "markdown.code",
	[THEME_MD_BULLET] = "markdown.bullet",
	[THEME_MD_QUOTE] = "markdown.quote",
	[THEME_TABLE_BORDER] = "table.border",
	[THEME_TABLE_HEADER] = "table.header",
	[THEME_ANSWER_TRACED] = "answer.traced",
	[THEME_ANSWER_UNTRACED] = "answer.untraced",
};

/* Keep in step with themes/default.theme (test_theme.c checks). */
static const char theme_builtin[] =
	"normal = default default\n"
	"conversation.user = bold cyan default\n"
	"conversation.assistant = default default\n"
	"conversation.notice = dim yellow default\n"
	"cell.header = bold blue default\n"
	"cell.code = default default\n"
	"code.keyword = bold magenta default\n"
	"code.string = green default\n"
	"code.comment = dim bright-black default\n"
	"code.number = yellow default\n"
	"code.decorator = cyan default\n"
	"code.builtin = blue default\n"
	"cell.stdout = default default\n"
	"cell.stderr = yellow default\n"
	"cell.value = bright-white default\n"
	"cell.error = bold red default\n"
	"cell.ok = green default\n"
	"status.bar = reverse default default\n"
	"status.busy = bold black yellow\n"
	"status.error = bold white red\n"
	"pane.border = bright-black default\n"
	"pane.title = bold default default\n"
	"pane.focus = bold cyan default\n"
	"artifact.name = underline cyan default\n"
	"input = default default\n"
	"input.prompt = bold green default\n"
	"help = default default\n"
	"selection = reverse default default\n"
	"markdown.heading = bold bright-white default\n"
	"markdown.bold = bold default default\n"
	"markdown.italic = italic default default\n"
	"markdown.code = cyan default\n"
	"markdown.bullet = bold cyan default\n"
	"markdown.quote = dim default default\n"
	"table.border = bright-black default\n"
	"table.header = bold default default\n"
	"answer.traced = underline default default\n"
	"answer.untraced = bold underline yellow default\n";

static const char *const theme_names[16] = {
	"black", "red", "green", "yellow", "blue", "magenta", "cyan", "white",
	"bright-black", "bright-red", "bright-green", "bright-yellow",
	"bright-blue", "bright-magenta", "bright-cyan", "bright-white",
};

static const struct {
	const char	*name;
	unsigned	 bit;
} theme_attrs[] = {
	{ "bold", THEME_BOLD }, { "dim", THEME_DIM },
	{ "italic", THEME_ITALIC }, { "underline", THEME_UNDERLINE },
	{ "reverse", THEME_REVERSE },
};

const char *
tui_theme_role_name(enum theme_role role)
{
	if ((int)role < 0 || role >= THEME_NROLES)
		return "?";
	return theme_roles[role];
}

int
tui_theme_role_find(const char *name)
{
	for (int i = 0; i < THEME_NROLES; i++)
		if (strcmp(theme_roles[i], name) == 0)
			return i;
	return -1;
}

void
tui_theme_init_builtin(struct theme *t)
{
	char *err = NULL;

	memset(t, 0, sizeof *t);
	if (tui_theme_parse(t, theme_builtin, sizeof theme_builtin - 1,
	    "built-in", &err) != 0)
		fatal("%s", err);	/* a bug in the table above */
}

/* Parses one colour word. Returns 0 or -1. */
static int
theme_parse_color(const char *w, struct theme_color *c)
{
	char name[32];
	size_t n = 0;

	if (strcmp(w, "default") == 0) {
		c->kind = THEME_COLOR_DEFAULT;
		c->value = 0;
		return 0;
	}
	if (w[0] == '#') {
		if (strlen(w) != 7)
			return -1;
		for (int i = 1; i < 7; i++)
			if (!isxdigit((unsigned char)w[i]))
				return -1;
		c->kind = THEME_COLOR_RGB;
		c->value = (uint32_t)strtoul(w + 1, NULL, 16);
		return 0;
	}
	if (isdigit((unsigned char)w[0])) {
		char *end;
		unsigned long v;
		errno = 0;
		v = strtoul(w, &end, 10);
		if (*end != '\0' || errno != 0 || v > 255 || strlen(w) > 3)
			return -1;
		c->kind = THEME_COLOR_INDEX;
		c->value = (uint32_t)v;
		return 0;
	}
	/* Names: "bright-red", "brightred", "bright_red"; grey for
	 * bright-black. */
	for (; *w != '\0' && n + 1 < sizeof name; w++)
		if (*w != '-' && *w != '_')
			name[n++] = (char)tolower((unsigned char)*w);
	name[n] = '\0';
	if (*w != '\0')
		return -1;
	if (strcmp(name, "grey") == 0 || strcmp(name, "gray") == 0)
		snprintf(name, sizeof name, "brightblack");
	for (int i = 0; i < 16; i++) {
		char want[32];
		size_t m = 0;
		for (const char *p = theme_names[i]; *p; p++)
			if (*p != '-')
				want[m++] = *p;
		want[m] = '\0';
		if (strcmp(name, want) == 0) {
			c->kind = THEME_COLOR_INDEX;
			c->value = (uint32_t)i;
			return 0;
		}
	}
	return -1;
}

/* Parses "role = words..." into *role and *st. Returns NULL or a static
 * reason. line is modified. */
static const char *
theme_parse_line(char *line, int *role, struct theme_style *st,
    const char **bad)
{
	char *eq = strchr(line, '='), *key = line, *end, *w, *save = NULL;
	int ncol = 0;

	*bad = NULL;
	if (eq == NULL)
		return "expected 'role = [attributes] foreground [background]'";
	*eq = '\0';
	while (isspace((unsigned char)*key))
		key++;
	end = key + strlen(key);
	while (end > key && isspace((unsigned char)end[-1]))
		*--end = '\0';
	if (*key == '\0')
		return "missing role name before '='";
	if ((*role = tui_theme_role_find(key)) < 0) {
		*bad = key;
		return "unknown role";
	}
	memset(st, 0, sizeof *st);
	for (w = strtok_r(eq + 1, " \t", &save); w != NULL;
	    w = strtok_r(NULL, " \t", &save)) {
		size_t i;
		struct theme_color c;
		for (i = 0; i < sizeof theme_attrs / sizeof theme_attrs[0]; i++)
			if (strcmp(w, theme_attrs[i].name) == 0)
				break;
		if (i < sizeof theme_attrs / sizeof theme_attrs[0]) {
			st->attrs |= theme_attrs[i].bit;
			continue;
		}
		if (strcmp(w, "none") == 0 || strcmp(w, "normal") == 0)
			continue;
		if (theme_parse_color(w, &c) != 0) {
			*bad = w;
			return w[0] == '#' || isdigit((unsigned char)w[0]) ?
			    "bad colour (use 0-255 or #rrggbb)" :
			    "unknown colour or attribute";
		}
		if (ncol == 2) {
			*bad = w;
			return "too many colours (foreground, background)";
		}
		if (ncol++ == 0)
			st->fg = c;
		else
			st->bg = c;
	}
	if (ncol == 0)
		return "no colour given (use 'default' for the terminal's)";
	return NULL;
}

int
tui_theme_parse(struct theme *t, const char *text, size_t len,
    const char *source, char **err)
{
	struct buf errs;
	const char *p = text, *end = text + len;
	int lineno = 0, nerr = 0;

	buf_init(&errs, 4096);
	if (err != NULL)
		*err = NULL;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char *line = xstrndup(p, n), *hash, *s;
		const char *why, *bad;
		struct theme_style st;
		int role;

		lineno++;
		p += n + (nl != NULL);
		/* '#' at the start of a word starts a comment, unless it is
		 * a #rrggbb colour after the '='. */
		for (hash = line; (hash = strchr(hash, '#')) != NULL; hash++) {
			if (hash != line && !isspace((unsigned char)hash[-1]))
				continue;
			if (hash != line && strspn(hash + 1,
			    "0123456789abcdefABCDEF") == 6 && (hash[7] == '\0' ||
			    isspace((unsigned char)hash[7])))
				continue;
			*hash = '\0';
			break;
		}
		for (s = line; isspace((unsigned char)*s); s++)
			;
		if (*s == '\0') {
			free(line);
			continue;
		}
		why = theme_parse_line(s, &role, &st, &bad);
		if (why == NULL) {
			t->role[role] = st;
		} else if (nerr++ < THEME_MAX_ERRORS) {
			if (errs.len > 0)
				buf_addc(&errs, '\n');
			buf_printf(&errs, "%s:%d: %s%s%.40s%s", source, lineno,
			    why, bad ? " '" : "", bad ? bad : "",
			    bad ? "'" : "");
		}
		free(line);
	}
	if (nerr > THEME_MAX_ERRORS)
		buf_printf(&errs, "\n%s: %d more bad lines", source,
		    nerr - THEME_MAX_ERRORS);
	if (nerr > 0) {
		if (err != NULL)
			*err = buf_take(&errs);
		buf_free(&errs);
		return -1;
	}
	buf_free(&errs);
	return 0;
}

static int
theme_name_ok(const char *name)
{
	if (*name == '\0' || strlen(name) > 64)
		return 0;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' &&
		    *p != '.')
			return 0;
	return name[0] != '.';
}

/* The shipped themes (the files in themes/), built in by the Makefile, so
 * that --theme light works from any folder, installed or not. */
#include "themes.h"
#define NSHIPPED	(sizeof theme_shipped / sizeof theme_shipped[0])

static const struct theme_shipped *
theme_shipped_find(const char *name)
{
	for (size_t i = 0; i < NSHIPPED; i++)
		if (strcmp(theme_shipped[i].name, name) == 0)
			return &theme_shipped[i];
	return NULL;
}

/* "default, light, mono" */
static char *
theme_shipped_names(void)
{
	struct buf b;

	buf_init(&b, 1024);
	for (size_t i = 0; i < NSHIPPED; i++)
		buf_printf(&b, "%s%s", i ? ", " : "", theme_shipped[i].name);
	return buf_take(&b);
}

/* Finds NAME.theme on disk (see tui_theme_load): a new path, or NULL
 * (*shipped set when the name is a built-in theme instead), or NULL
 * with *err (caller frees). */
static char *
theme_find(const char *name, const struct theme_shipped **shipped,
    char **err)
{
	char *dirs[2], *path = NULL;
	char *conf;

	*shipped = NULL;
	if (err != NULL)
		*err = NULL;
	if (strchr(name, '/') != NULL) {
		if (access(name, R_OK) == 0)
			return xstrdup(name);
		if (err != NULL)
			*err = xasprintf("theme %s: %s", name, strerror(errno));
		return NULL;
	}
	if (!theme_name_ok(name)) {
		if (err != NULL)
			*err = xasprintf("theme name '%.64s' is not valid "
			    "(letters, digits, '-', '_')", name);
		return NULL;
	}
	/* the user's own first: it may replace a shipped one */
	conf = xdg_config_home();
	dirs[0] = xasprintf("%s/terp/themes", conf);
	dirs[1] = xstrdup(TERP_DATADIR "/themes");
	free(conf);
	path = xasprintf("%s/%s.theme", dirs[0], name);
	if (access(path, R_OK) != 0) {
		free(path);
		path = NULL;
		if ((*shipped = theme_shipped_find(name)) == NULL) {
			path = xasprintf("%s/%s.theme", dirs[1], name);
			if (access(path, R_OK) != 0) {
				free(path);
				path = NULL;
			}
		}
	}
	if (path == NULL && *shipped == NULL && err != NULL) {
		char *names = theme_shipped_names();
		*err = xasprintf("theme '%s' not found (built in: %s; your own "
		    "goes in %s/%s.theme)", name, names, dirs[0], name);
		free(names);
	}
	free(dirs[0]);
	free(dirs[1]);
	return path;
}

int
tui_theme_load(struct theme *t, const char *name, char **err)
{
	const struct theme_shipped *sh;
	char *path, *text, *why;
	size_t len;
	int rc;

	tui_theme_init_builtin(t);
	if ((path = theme_find(name, &sh, err)) == NULL) {
		if (sh == NULL)
			return -1;
		return tui_theme_parse(t, (const char *)sh->text, sh->len,
		    sh->name, err);
	}
	/* a FIFO does not hang, another user's file is not taken */
	text = read_trusted_file(path, THEME_MAX_FILE, &len, &why);
	if (text == NULL) {
		if (err != NULL)
			*err = why != NULL ? xstrdup(why) : xasprintf("%s: %s", path,
			    errno == EFBIG ? "theme file is too big" : strerror(errno));
		free(why);
		free(path);
		return -1;
	}
	rc = tui_theme_parse(t, text, len, path, err);
	free(text);
	free(path);
	return rc;
}

int
tui_theme_check(const char *name, char **err)
{
	struct theme t;
	char *e = NULL;

	if (tui_theme_load(&t, name, &e) == 0)
		return 0;
	/* one line: the first problem, and how many more */
	char *nl = e ? strchr(e, '\n') : NULL;
	if (nl == NULL) {
		*err = e ? e : xstrdup("cannot load the theme");
		return -1;
	}
	int more = 0;
	for (char *p = nl; p; p = strchr(p + 1, '\n'))
		more++;
	*nl = '\0';
	*err = xasprintf("%s (and %d more problem%s)", e, more,
	    more == 1 ? "" : "s");
	free(e);
	return -1;
}

int
tui_theme_ncolors(int term_colors)
{
	const char *nc = getenv("NO_COLOR");

	if (nc != NULL && *nc != '\0')
		return 0;
	if (term_colors >= 256)
		return 256;
	if (term_colors >= 16)
		return 16;
	if (term_colors >= 8)
		return 8;
	return 0;
}

int
tui_theme_color_resolve(struct theme_color c, int ncolors)
{
	uint8_t rgb[3];

	if (ncolors <= 0 || c.kind == THEME_COLOR_DEFAULT)
		return -1;
	if (c.kind == THEME_COLOR_INDEX) {
		if ((int)c.value < ncolors)
			return (int)c.value;
		if (c.value < 16)	/* bright on an 8-colour terminal */
			return (int)c.value - 8;
		palette_rgb((int)c.value, rgb);
	} else {
		rgb[0] = (uint8_t)(c.value >> 16);
		rgb[1] = (uint8_t)(c.value >> 8);
		rgb[2] = (uint8_t)c.value;
	}
	return palette_nearest(ncolors, rgb[0], rgb[1], rgb[2]);
}

/* Whether colour fg vanishes into background back on a terminal of
 * ncolors (8 or 16) colours, whose RGB the user's terminal theme picks:
 * at 8 colours a bright colour is drawn as its dark one, so the two are
 * the same; at 16 only equal ones and white on bright white are. Blue
 * on black and the like stay: terminals brighten them. */
static int
theme_vanishes(int fg, int back, int ncolors)
{
	if (ncolors <= 8)
		return fg % 8 == back % 8;
	return fg == back || ((fg == 7 || fg == 15) && (back == 7 || back == 15));
}

void
tui_theme_style_resolve(const struct theme_style *st, int ncolors, int light,
    int *fg, int *bg)
{
	uint8_t rgb[3];
	int back;

	*fg = tui_theme_color_resolve(st->fg, ncolors);
	*bg = tui_theme_color_resolve(st->bg, ncolors);
	if (ncolors <= 0 || ncolors > 16 || *fg < 0)
		return;
	/* the terminal's own background is presumed black, or white when
	 * it is light */
	back = *bg >= 0 ? *bg : light ? 15 : 0;
	if (!theme_vanishes(*fg, back, ncolors))
		return;
	palette_rgb(back, rgb);
	*fg = rgb[0] * 2 + rgb[1] * 5 + rgb[2] > 8 * 128 ? 0 : 7;
}

/* One hex field of an X11 colour spec ("ffff", "ff", "f"): its value
 * scaled to 0..255, or -1. *p moves past it. */
static int
theme_hex_field(const char **p, const char *end)
{
	unsigned long v = 0;
	int n = 0;

	while (*p < end && isxdigit((unsigned char)**p) && n < 4) {
		int c = tolower((unsigned char)**p);
		v = v * 16 + (unsigned long)(isdigit(c) ? c - '0' : c - 'a' + 10);
		(*p)++;
		n++;
	}
	if (n == 0)
		return -1;
	return (int)(v * 255 / ((1UL << (4 * n)) - 1));
}

static int
theme_is_light(int r, int g, int b)
{
	/* Rec. 601 luma, as xterm's own light/dark guesses use */
	return 299 * r + 587 * g + 114 * b > 1000 * 128;
}

int
tui_theme_bg_reply(const char *s, size_t n)
{
	static const char key[] = "\033]11;rgb:";
	const char *end = s + n, *p;
	int c[3];

	for (p = s; p + sizeof key - 1 <= end; p++)
		if (memcmp(p, key, sizeof key - 1) == 0)
			break;
	if (p + sizeof key - 1 > end)
		return -1;
	p += sizeof key - 1;
	for (int i = 0; i < 3; i++) {
		if (i > 0) {
			if (p >= end || *p != '/')
				return -1;
			p++;
		}
		if ((c[i] = theme_hex_field(&p, end)) < 0)
			return -1;
	}
	/* the reply ends with ST (ESC \) or BEL */
	if (p >= end || (*p != '\a' && *p != '\033'))
		return -1;
	return theme_is_light(c[0], c[1], c[2]);
}

int
tui_theme_colorfgbg(const char *v)
{
	const char *last;
	char *end;
	long bg;
	uint8_t rgb[3];

	if (v == NULL || (last = strrchr(v, ';')) == NULL)
		return -1;
	errno = 0;
	bg = strtol(last + 1, &end, 10);
	if (end == last + 1 || *end != '\0' || errno != 0 || bg < 0 || bg > 15)
		return -1;
	palette_rgb((int)bg, rgb);
	return theme_is_light(rgb[0], rgb[1], rgb[2]);
}
