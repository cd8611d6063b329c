#include <criterion/criterion.h>
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "terp/tui_colorpair.h"
#include "terp/tui_theme.h"
#include "terp/util.h"

Test(tui_theme, parses_roles_attrs_and_colours)
{
	struct theme t;
	const char *txt =
	    "# a comment\n"
	    "\n"
	    "conversation.user = bold underline cyan default   # trailing\n"
	    "cell.stderr=italic #ff8000 17\n"
	    "status.bar = reverse bright-white grey\n"
	    "code.number = 208\n";
	char *err = NULL;

	tui_theme_init_builtin(&t);
	cr_assert_eq(tui_theme_parse(&t, txt, strlen(txt), "t", &err), 0, "%s",
	    err);
	const struct theme_style *s = &t.role[THEME_CONV_USER];
	cr_assert_eq(s->attrs, THEME_BOLD | THEME_UNDERLINE);
	cr_assert_eq(s->fg.kind, THEME_COLOR_INDEX);
	cr_assert_eq(s->fg.value, 6);
	cr_assert_eq(s->bg.kind, THEME_COLOR_DEFAULT);
	s = &t.role[THEME_CELL_STDERR];
	cr_assert_eq(s->attrs, THEME_ITALIC);
	cr_assert_eq(s->fg.kind, THEME_COLOR_RGB);
	cr_assert_eq(s->fg.value, 0xff8000);
	cr_assert_eq(s->bg.value, 17);
	cr_assert_eq(t.role[THEME_STATUS_BAR].fg.value, 15);
	cr_assert_eq(t.role[THEME_STATUS_BAR].bg.value, 8);
	cr_assert_eq(t.role[THEME_CODE_NUMBER].bg.kind, THEME_COLOR_DEFAULT);
	cr_assert_eq(tui_theme_role_find("markdown.heading"), THEME_MD_HEADING);
	cr_assert_str_eq(tui_theme_role_name(THEME_TABLE_BORDER), "table.border");
	cr_assert_eq(tui_theme_role_find("nope"), -1);
}

Test(tui_theme, bad_lines_name_their_line)
{
	struct theme t;
	const char *txt =
	    "input = default\n"
	    "conversation.usr = red\n"
	    "cell.ok = bold chartreuse\n"
	    "cell.ok green\n"
	    "cell.error = 300\n"
	    "cell.value = red green blue\n"
	    "help = #12345\n"
	    "pane.title = bold\n";
	char *err = NULL;

	tui_theme_init_builtin(&t);
	cr_assert_eq(tui_theme_parse(&t, txt, strlen(txt), "my.theme", &err), -1);
	cr_assert_not_null(err);
	cr_assert(strstr(err, "my.theme:2: unknown role 'conversation.usr'"),
	    "%s", err);
	cr_assert(strstr(err, "my.theme:3: unknown colour or attribute "
	    "'chartreuse'"), "%s", err);
	cr_assert(strstr(err, "my.theme:4: expected"), "%s", err);
	cr_assert(strstr(err, "my.theme:5: bad colour"), "%s", err);
	cr_assert(strstr(err, "my.theme:6: too many colours"), "%s", err);
	cr_assert(strstr(err, "my.theme:7:"), "%s", err);
	cr_assert(strstr(err, "my.theme:8: no colour"), "%s", err);
	cr_assert(strstr(err, "my.theme:1:") == NULL, "%s", err);
	free(err);
	/* The good line was applied; bad ones left the built-in style. */
	cr_assert_eq(t.role[THEME_CELL_OK].fg.value, 2);
}

Test(tui_theme, resolve_and_no_color)
{
	struct theme_color rgb = { THEME_COLOR_RGB, 0xff0000 };
	struct theme_color br = { THEME_COLOR_INDEX, 9 };
	struct theme_color hi = { THEME_COLOR_INDEX, 196 };
	struct theme_color def = { THEME_COLOR_DEFAULT, 0 };

	cr_assert_eq(tui_theme_color_resolve(rgb, 256), 196);
	cr_assert_eq(tui_theme_color_resolve(rgb, 16), 9);
	cr_assert_eq(tui_theme_color_resolve(rgb, 8), 1);
	cr_assert_eq(tui_theme_color_resolve(br, 8), 1);
	cr_assert_eq(tui_theme_color_resolve(br, 16), 9);
	cr_assert_eq(tui_theme_color_resolve(hi, 16), 9);
	cr_assert_eq(tui_theme_color_resolve(def, 256), -1);
	cr_assert_eq(tui_theme_color_resolve(rgb, 0), -1);
	unsetenv("NO_COLOR");
	cr_assert_eq(tui_theme_ncolors(256), 256);
	cr_assert_eq(tui_theme_ncolors(88), 16);
	cr_assert_eq(tui_theme_ncolors(2), 0);
	setenv("NO_COLOR", "1", 1);
	cr_assert_eq(tui_theme_ncolors(256), 0);
	unsetenv("NO_COLOR");
}

Test(tui_theme, shipped_themes_load_and_default_matches_builtin)
{
	struct theme a, b;
	char *err = NULL;

	setenv("XDG_CONFIG_HOME", "/nonexistent-terp-test", 1);
	tui_theme_init_builtin(&a);
	cr_assert_eq(tui_theme_load(&b, "default", &err), 0, "%s", err);
	cr_assert(memcmp(&a, &b, sizeof a) == 0);
	cr_assert_eq(tui_theme_load(&b, "light", &err), 0, "%s", err);
	cr_assert_eq(tui_theme_load(&b, "mono", &err), 0, "%s", err);
	for (int r = 0; r < THEME_NROLES; r++) {
		cr_assert_eq(b.role[r].fg.kind, THEME_COLOR_DEFAULT);
		cr_assert_eq(b.role[r].bg.kind, THEME_COLOR_DEFAULT);
	}
	cr_assert_eq(tui_theme_load(&b, "no-such-theme", &err), -1);
	cr_assert(strstr(err, "not found") != NULL, "%s", err);
	free(err);
	cr_assert_eq(tui_theme_load(&b, "../etc/passwd", &err), -1);
	free(err);
	cr_assert_eq(tui_theme_load(&b, "bad name", &err), -1);
	cr_assert(strstr(err, "not valid") != NULL, "%s", err);
	free(err);
}

/* ncurses on a throwaway terminal: output to /dev/null. */
static SCREEN *
fake_term(const char *term)
{
	FILE *out = fopen("/dev/null", "w"), *in = fopen("/dev/null", "r");
	SCREEN *s = newterm(term, out, in);

	cr_assert_not_null(s, "no terminfo for %s", term);
	start_color();
	use_default_colors();
	return s;
}

Test(tui_colorpair, lru_reuses_and_never_evicts_the_current_frame)
{
	struct colorpair *cp;
	struct tui_colorpair_stats st;
	int p[4], fg, bg;

	fake_term("xterm-256color");
	/* A deliberately tiny range of 4 pairs. */
	cp = tui_colorpair_new(COLORPAIR_FIRST_DYNAMIC, COLORPAIR_FIRST_DYNAMIC + 3);
	for (int i = 0; i < 4; i++)
		p[i] = tui_colorpair_get(cp, i, -1);
	cr_assert_eq(tui_colorpair_get(cp, 2, -1), p[2]);
	for (int i = 0; i < 4; i++)
		for (int j = i + 1; j < 4; j++)
			cr_assert_neq(p[i], p[j]);
	/* Still frame 1: all four are on screen, a fifth colour must not
	 * evict any; it gets the nearest existing pair. */
	int q = tui_colorpair_get(cp, 9, -1);	/* bright red ~ red (1) */
	cr_assert_eq(q, p[1]);
	extended_pair_content(p[1], &fg, &bg);
	cr_assert_eq(fg, 1);
	tui_colorpair_stats(cp, &st);
	cr_assert_eq(st.fallbacks, 1);
	cr_assert_eq(st.evictions, 0);
	/* Next frame: 0 and 3 are drawn again; 1 and 2 may go. */
	tui_colorpair_frame(cp);
	cr_assert_eq(tui_colorpair_get(cp, 0, -1), p[0]);
	cr_assert_eq(tui_colorpair_get(cp, 3, -1), p[3]);
	int a = tui_colorpair_get(cp, 5, 6), b = tui_colorpair_get(cp, 6, 5);
	cr_assert(a == p[1] || a == p[2]);
	cr_assert(b == p[1] || b == p[2]);
	cr_assert_neq(a, b);
	extended_pair_content(a, &fg, &bg);
	cr_assert(fg == 5 && bg == 6);
	extended_pair_content(p[0], &fg, &bg);
	cr_assert_eq(fg, 0);
	tui_colorpair_stats(cp, &st);
	cr_assert_eq(st.evictions, 2);
	tui_colorpair_free(cp);
	endwin();
}

Test(tui_colorpair, static_map_for_256_colours)
{
	struct colorpair *cp;
	int fg, bg;

	fake_term("xterm-256color");
	cr_assert_geq(COLOR_PAIRS, 60000);
	cp = tui_colorpair_new(COLORPAIR_FIRST_DYNAMIC, COLOR_PAIRS - 1);
	int a = tui_colorpair_get(cp, 196, 231);
	cr_assert_eq(a, COLORPAIR_FIRST_DYNAMIC + (196 - 16) * 240 + 215);
	extended_pair_content(a, &fg, &bg);
	cr_assert(fg == 196 && bg == 231);
	/* Thousands of distinct pairs in one frame: all distinct. */
	for (int f = 16; f < 256; f += 3)
		for (int g = 16; g < 256; g += 3)
			cr_assert_eq(tui_colorpair_get(cp, f, g),
			    COLORPAIR_FIRST_DYNAMIC + (f - 16) * 240 + g - 16);
	/* Others go to the LRU region above the fixed map. */
	cr_assert_gt(tui_colorpair_get(cp, -1, 3), COLORPAIR_FIRST_DYNAMIC + 57599);
	tui_colorpair_free(cp);
	endwin();
}

Test(tui_colorpair, theme_roles)
{
	struct theme t;
	unsigned long attrs;
	int pair, fg, bg;

	fake_term("xterm-256color");
	tui_theme_init_builtin(&t);
	tui_colorpair_apply_theme(&t, 256, 0);
	tui_colorpair_role(&t, THEME_CELL_ERROR, 256, &attrs, &pair);
	cr_assert_eq(pair, THEME_CELL_ERROR + 1);
	cr_assert(attrs & A_BOLD);
	extended_pair_content(pair, &fg, &bg);
	cr_assert(fg == 1 && bg == -1, "%d %d", fg, bg);
	tui_colorpair_role(&t, THEME_CELL_ERROR, 0, &attrs, &pair);
	cr_assert_eq(pair, 0);
	cr_assert(attrs & A_BOLD);
	endwin();
}

/* Issue 12, item 6: the shipped themes are in the binary, so they load
 * from any folder; a user's theme of the same name still comes first. */
Test(tui_theme, shipped_themes_load_anywhere_and_yours_win)
{
	struct theme t;
	char *err = NULL;
	char dir[] = "/tmp/terp-theme-XXXXXX";

	setenv("XDG_CONFIG_HOME", "/nonexistent-terp-test", 1);
	cr_assert_eq(chdir("/"), 0);
	cr_assert_eq(tui_theme_load(&t, "light", &err), 0, "%s", err);
	cr_assert_eq(t.role[THEME_CONV_USER].fg.kind, THEME_COLOR_INDEX);
	cr_assert_eq(t.role[THEME_CONV_USER].fg.value, 4);	/* blue */
	cr_assert_eq(tui_theme_load(&t, "mono", &err), 0, "%s", err);
	cr_assert_eq(tui_theme_check("nosuch", &err), -1);
	cr_assert(strstr(err, "built in: default, light, mono") != NULL, "%s", err);
	cr_assert(strchr(err, '\n') == NULL, "%s", err);
	free(err);

	cr_assert_not_null(mkdtemp(dir));
	char *themes = xasprintf("%s/terp/themes", dir);
	cr_assert_eq(mkdir_p(themes, 0700), 0);
	char *path = xasprintf("%s/light.theme", themes);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("conversation.user = red default\nbogus = red\nalso.bogus = red\n", f);
	fclose(f);
	setenv("XDG_CONFIG_HOME", dir, 1);
	cr_assert_eq(tui_theme_load(&t, "light", &err), -1);
	free(err);
	cr_assert_eq(t.role[THEME_CONV_USER].fg.value, 1);	/* red: yours */
	/* one line for the command line, the first problem and a count */
	cr_assert_eq(tui_theme_check("light", &err), -1);
	cr_assert(strchr(err, '\n') == NULL && strstr(err, "(and 1 more problem)"),
	    "%s", err);
	free(err);
	unlink(path);
	rmdir(themes);
	char *terp = xasprintf("%s/terp", dir);
	rmdir(terp);
	rmdir(dir);
	free(terp);
	free(path);
	free(themes);
}

/* Issue 25, item 5: at 8 and 16 colours no role vanishes into the
 * background: bright-black borders were black on black at 8 colours. */
Test(tui_theme, every_role_stays_visible_at_8_and_16_colours)
{
	static const char *const names[] = { "default", "light", "mono" };
	struct theme t;
	char *err = NULL;
	int fg, bg;

	tui_theme_init_builtin(&t);
	tui_theme_style_resolve(&t.role[THEME_PANE_BORDER], 8, 0, &fg, &bg);
	cr_assert(fg == 7 && bg == -1, "%d %d", fg, bg);
	tui_theme_style_resolve(&t.role[THEME_PANE_BORDER], 16, 0, &fg, &bg);
	cr_assert_eq(fg, 8);	/* grey is grey at 16 colours */
	tui_theme_style_resolve(&t.role[THEME_PANE_BORDER], 256, 0, &fg, &bg);
	cr_assert_eq(fg, 8);
	/* bright-white values on a light terminal */
	tui_theme_style_resolve(&t.role[THEME_CELL_VALUE], 16, 1, &fg, &bg);
	cr_assert_eq(fg, 0);
	for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
		cr_assert_eq(tui_theme_load(&t, names[n], &err), 0, "%s", err);
		for (int light = 0; light <= 1; light++)
			for (int nc = 8; nc <= 16; nc += 8)
				for (int r = 0; r < THEME_NROLES; r++) {
					tui_theme_style_resolve(&t.role[r], nc, light,
					    &fg, &bg);
					int back = bg >= 0 ? bg : light ? 15 : 0;
					if (fg < 0)
						continue;
					cr_assert(nc == 8 ? fg % 8 != back % 8 :
					    fg != back, "%s %s at %d colours, light %d: "
					    "%d on %d", names[n], tui_theme_role_name(r),
					    nc, light, fg, back);
				}
	}
}

Test(tui_theme, the_background_from_osc_11_and_colorfgbg)
{
	const char white[] = "\033]11;rgb:ffff/ffff/ffff\033\\\033[?1;2c";
	const char dark[] = "\033]11;rgb:1c1c/1c1c/1c1c\a";
	const char short_hex[] = "junk\033]11;rgb:f0/f0/e0\033\\";
	const char da1_only[] = "\033[?62;22c";
	const char bad[] = "\033]11;rgb:ffff/ffff\033\\";

	cr_assert_eq(tui_theme_bg_reply(white, sizeof white - 1), 1);
	cr_assert_eq(tui_theme_bg_reply(dark, sizeof dark - 1), 0);
	cr_assert_eq(tui_theme_bg_reply(short_hex, sizeof short_hex - 1), 1);
	cr_assert_eq(tui_theme_bg_reply(da1_only, sizeof da1_only - 1), -1);
	cr_assert_eq(tui_theme_bg_reply(bad, sizeof bad - 1), -1);
	/* cut short: no terminator yet */
	cr_assert_eq(tui_theme_bg_reply(white, 20), -1);
	cr_assert_eq(tui_theme_colorfgbg("0;15"), 1);
	cr_assert_eq(tui_theme_colorfgbg("15;default;0"), 0);
	cr_assert_eq(tui_theme_colorfgbg("15;default"), -1);
	cr_assert_eq(tui_theme_colorfgbg(NULL), -1);
}
