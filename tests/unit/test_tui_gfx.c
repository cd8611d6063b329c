#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/digest.h"
#include "terp/tui_gfx.h"

static const char *env_k[8], *env_v[8];

static const char *
fake_env(const char *k)
{
	for (int i = 0; i < 8 && env_k[i]; i++)
		if (strcmp(env_k[i], k) == 0)
			return env_v[i];
	return NULL;
}

static void
set_env(const char *k0, const char *v0, const char *k1, const char *v1)
{
	memset(env_k, 0, sizeof env_k);
	env_k[0] = k0;
	env_v[0] = v0;
	env_k[1] = k1;
	env_v[1] = v1;
}

Test(tui_gfx, kitty_sends_base64_in_4096_byte_apc_chunks)
{
	unsigned char *png = malloc(10000);
	struct buf b;
	size_t n;

	for (int i = 0; i < 10000; i++)
		png[i] = (unsigned char)(i * 7);
	buf_init(&b, 1 << 20);
	cr_assert_eq(tui_gfx_kitty(&b, png, 10000, 40, 12), 0);
	buf_addc(&b, '\0');
	char *want = base64_encode(png, 10000, &n);	/* 13336 bytes */
	cr_assert_eq(n, 13336);
	const char *s = b.data;
	const char *head = "\033_Ga=T,f=100,q=2,C=1,c=40,r=12,m=1;";
	cr_assert(strncmp(s, head, strlen(head)) == 0, "%.40s", s);
	s += strlen(head);
	cr_assert(strncmp(s, want, 4096) == 0);
	s += 4096;
	cr_assert(strncmp(s, "\033\\\033_Gm=1;", 9) == 0);
	s += 9 + 4096;
	cr_assert(strncmp(s, "\033\\\033_Gm=1;", 9) == 0);
	s += 9 + 4096;
	cr_assert(strncmp(s, "\033\\\033_Gm=0;", 9) == 0);
	s += 9;
	cr_assert(strncmp(s, want + 3 * 4096, 1048) == 0);
	cr_assert_str_eq(s + 1048, "\033\\");
	free(want);
	buf_reset(&b);
	tui_gfx_kitty_clear(&b);
	cr_assert_eq(b.len, strlen("\033_Ga=d,d=a,q=2\033\\"));
	buf_free(&b);
	free(png);
}

Test(tui_gfx, iterm_is_one_osc_1337)
{
	struct buf b;

	buf_init(&b, 4096);
	cr_assert_eq(tui_gfx_iterm(&b, "abc", 3, 20, 5), 0);
	buf_addc(&b, '\0');
	cr_assert_str_eq(b.data, "\033]1337;File=inline=1;size=3;width=20;height=5;"
	    "preserveAspectRatio=1:YWJj\a");
	buf_free(&b);
}

Test(tui_gfx, sixel_has_a_palette_and_bands_of_six_rows)
{
	/* 3 x 7: red, white, red columns; the last row blue */
	unsigned char px[7][3][4];
	struct buf b;

	for (int y = 0; y < 7; y++)
		for (int x = 0; x < 3; x++) {
			unsigned char *p = px[y][x];
			p[0] = y == 6 ? 0 : 255;
			p[1] = y == 6 || x != 1 ? 0 : 255;
			p[2] = y == 6 || x == 1 ? 255 : 0;
			p[3] = 255;
		}
	buf_init(&b, 4096);
	cr_assert_eq(tui_gfx_sixel(&b, &px[0][0][0], 3, 7), 0);
	buf_addc(&b, '\0');
	/* colours by cube index: blue 5, red 180, white 215 (percent 0..100);
	 * band 1: red in columns 0 and 2 (all six bits: '~'), white in 1;
	 * band 2: the blue row (bit 0: '@') */
	cr_assert_str_eq(b.data, "\033P7;1;0q\"1;1;3;7"
	    "#5;2;0;0;100#180;2;100;0;0#215;2;100;100;100"
	    "#180~?~$#215?~?-"
	    "#5@@@-"
	    "\033\\");
	buf_free(&b);
}

Test(tui_gfx, sixel_runs_are_length_coded)
{
	unsigned char *px = calloc(10 * 1 * 4, 1);
	struct buf b;

	for (int i = 0; i < 10; i++)
		px[i * 4 + 3] = 255;	/* 10 black pixels */
	buf_init(&b, 4096);
	tui_gfx_sixel(&b, px, 10, 1);
	buf_addc(&b, '\0');
	cr_assert(strstr(b.data, "#0!10@-") != NULL, "%s", b.data);
	buf_free(&b);
	free(px);
}

Test(tui_gfx, tmux_wrap_doubles_every_escape)
{
	struct buf b;

	buf_init(&b, 256);
	tui_gfx_tmux_wrap(&b, "\033_Gm=0;x\033\\", 10);
	buf_addc(&b, '\0');
	cr_assert_str_eq(b.data, "\033Ptmux;\033\033_Gm=0;x\033\033\\\033\\");
	buf_free(&b);
}

Test(tui_gfx, parse_and_detect)
{
	enum tui_gfx_mode m;
	int pt;

	cr_assert_eq(tui_gfx_parse("sixel", &m), 0);
	cr_assert_eq(m, TUI_GFX_SIXEL);
	cr_assert_eq(tui_gfx_parse("pixels", &m), -1);
	cr_assert_str_eq(tui_gfx_name(TUI_GFX_ITERM), "iterm");

	set_env("KITTY_WINDOW_ID", "3", NULL, NULL);
	cr_assert_eq(tui_gfx_detect(TUI_GFX_AUTO, fake_env, 0, -1, &pt), TUI_GFX_KITTY);
	cr_assert_eq(pt, 0);
	set_env("TERM_PROGRAM", "iTerm.app", NULL, NULL);
	cr_assert_eq(tui_gfx_detect(TUI_GFX_AUTO, fake_env, 0, -1, &pt), TUI_GFX_ITERM);
	set_env("TERM", "xterm-256color", NULL, NULL);
	cr_assert_eq(tui_gfx_detect(TUI_GFX_AUTO, fake_env, 0, 1, &pt), TUI_GFX_SIXEL);
	cr_assert_eq(tui_gfx_detect(TUI_GFX_AUTO, fake_env, 0, 0, &pt), TUI_GFX_BLOCKS);
	cr_assert_eq(tui_gfx_detect(TUI_GFX_OFF, fake_env, 0, 1, &pt), TUI_GFX_OFF);
	/* inside tmux: passthrough when allowed, else blocks; tmux's own
	 * sixel answer says nothing of the terminal outside */
	set_env("TMUX", "/tmp/s,1,0", "LC_TERMINAL", "iTerm2");
	cr_assert_eq(tui_gfx_detect(TUI_GFX_AUTO, fake_env, 1, -1, &pt), TUI_GFX_ITERM);
	cr_assert_eq(pt, 1);
	cr_assert_eq(tui_gfx_detect(TUI_GFX_AUTO, fake_env, 0, -1, &pt), TUI_GFX_BLOCKS);
	cr_assert_eq(pt, 0);
	set_env("TMUX", "/tmp/s,1,0", NULL, NULL);
	cr_assert_eq(tui_gfx_detect(TUI_GFX_AUTO, fake_env, 1, 1, &pt), TUI_GFX_BLOCKS);
	/* forced: kept, wrapped inside tmux */
	cr_assert_eq(tui_gfx_detect(TUI_GFX_KITTY, fake_env, 0, -1, &pt), TUI_GFX_KITTY);
	cr_assert_eq(pt, 1);
}

Test(tui_gfx, da1_answers)
{
	cr_assert_eq(tui_gfx_da1_sixel("\033[?62;4;22c", 11), 1);
	cr_assert_eq(tui_gfx_da1_sixel("\033[?64;1;2;6;9;15;22c", 21), 0);
	cr_assert_eq(tui_gfx_da1_sixel("\033[?1;2c", 7), 0);
	cr_assert_eq(tui_gfx_da1_sixel("\033[?4", 4), 1);	/* cut: as far as it goes */
	cr_assert_eq(tui_gfx_da1_sixel("", 0), 0);
}

Test(tui_gfx, kitty_virtual_placement_and_its_delete)
{
	unsigned char png[100] = { 0x89, 'P', 'N', 'G' };
	struct buf b;

	buf_init(&b, 1 << 16);
	cr_assert_eq(tui_gfx_kitty_virtual(&b, png, sizeof png, 17, 35, 13), 0);
	buf_addc(&b, '\0');
	const char *head = "\033_Ga=T,U=1,f=100,q=2,i=17,c=35,r=13,m=0;iVBORw";
	cr_assert(strncmp(b.data, head, strlen(head)) == 0, "%.60s", b.data);
	buf_reset(&b);
	tui_gfx_kitty_delete(&b, 17);
	buf_addc(&b, '\0');
	cr_assert_str_eq(b.data, "\033_Ga=d,d=I,i=17,q=2\033\\");
	buf_free(&b);
}

Test(tui_gfx, kitty_row_is_placeholders_with_row_and_column_marks)
{
	struct buf b;

	buf_init(&b, 256);
	cr_assert_eq(tui_gfx_kitty_row(&b, 2, 3), 0);
	/* U+10EEEE, the row's mark (2: U+030E), the column's (0, 1, 2) */
	const char want[] = "\xf4\x8e\xbb\xae\xcc\x8e\xcc\x85"
	    "\xf4\x8e\xbb\xae\xcc\x8e\xcc\x8d"
	    "\xf4\x8e\xbb\xae\xcc\x8e\xcc\x8e";
	cr_assert_eq(b.len, sizeof want - 1);
	cr_assert(memcmp(b.data, want, b.len) == 0);
	buf_reset(&b);
	/* the last mark of the table, and out of its range */
	cr_assert_eq(tui_gfx_kitty_row(&b, TUI_GFX_PLACE_MAX - 1, 1), 0);
	cr_assert(memcmp(b.data + 4, "\xdd\x8a", 2) == 0);	/* U+074A */
	cr_assert_eq(tui_gfx_kitty_row(&b, TUI_GFX_PLACE_MAX, 1), -1);
	cr_assert_eq(tui_gfx_kitty_row(&b, 0, TUI_GFX_PLACE_MAX + 1), -1);
	buf_free(&b);
}

Test(tui_gfx, box_keeps_the_aspect_and_scale_averages)
{
	int c = 70, r = 12;

	/* 640x480 in 10x20 cells: 70 columns would need 26 rows */
	tui_gfx_box(640, 480, 10, 20, &c, &r);
	cr_assert_eq(r, 12);
	cr_assert_eq(c, 32);
	uint8_t src[4 * 4 * 4];
	for (int i = 0; i < 16; i++) {
		uint8_t v = (uint8_t)((i % 4) < 2 ? 0 : 200);
		src[i * 4] = src[i * 4 + 1] = src[i * 4 + 2] = v;
		src[i * 4 + 3] = 255;
	}
	uint8_t *d = tui_gfx_scale(src, 4, 4, 2, 1);
	cr_assert_eq(d[0], 0);
	cr_assert_eq(d[4], 200);
	free(d);
	d = tui_gfx_scale(src, 4, 4, 1, 1);
	cr_assert_eq(d[0], 100);
	free(d);
}
