/* outdisp: display regions resolve as Jupyter shows them (updates in
 * place, Markdown spans known, marks gone); forged and broken marks are
 * text or dropped, never a crash or an unbounded output. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/outdisp.h"

#define SHOW(mime, id)	"\n\x1b]7701;show;" mime ";" id "\a\n"
#define UPD(mime, id)	"\n\x1b]7701;update;" mime ";" id "\a\n"
#define END		"\x1b]7701;end\a\n"

static char *
resolve(const char *in, struct outdisp_span **sp, size_t *nsp)
{
	size_t len;
	char *got = outdisp_resolve(in, strlen(in), &len, sp, nsp);

	cr_assert_eq(len, strlen(got));
	return got;
}

static void
expect(const char *in, const char *want)
{
	char *got = resolve(in, NULL, NULL);

	cr_assert_str_eq(got, want, "%s", in);
	free(got);
}

Test(outdisp, plain_text_unchanged)
{
	expect("a\nb\n", "a\nb\n");
	expect("50%\r100%\n", "100%\n");
	cr_assert_not(outdisp_has("a\x1b]7700;x\a\n", 11));
}

Test(outdisp, region_marks_gone_and_in_place)
{
	expect("before\n" SHOW("text/plain", "") "shown\n" END "after\n",
	    "before\nshown\nafter\n");
	/* a partial print before a display ends its line, as Jupyter's
	 * separate outputs do */
	expect("a" SHOW("text/plain", "") "b\n" END "c\n", "a\nb\nc\n");
}

Test(outdisp, update_replaces_every_earlier_region_of_the_id)
{
	expect(SHOW("text/plain", "p") "0%\n" END "x\n"
	    UPD("text/plain", "p") "50%\n" END
	    UPD("text/plain", "p") "100%\n" END "y\n",
	    "100%\nx\ny\n");
	/* a later display of the id shows its own until updated again */
	expect(SHOW("text/plain", "p") "a\n" END UPD("text/plain", "p") "b\n" END
	    SHOW("text/plain", "p") "c\n" END, "b\nc\n");
	expect(SHOW("text/plain", "p") "a\n" END SHOW("text/plain", "p") "c\n" END
	    UPD("text/plain", "p") "d\n" END, "d\nd\n");
	/* other ids and no id are left alone; an update of nothing shows
	 * nothing */
	expect(SHOW("text/plain", "q") "q\n" END UPD("text/plain", "p") "z\n" END
	    SHOW("text/plain", "") "n\n" END, "q\nn\n");
}

Test(outdisp, markdown_spans)
{
	struct outdisp_span *sp;
	size_t n;
	char *got = resolve("t\n" SHOW("text/markdown", "") "# Title\n" END
	    SHOW("text/plain", "x") "plain\n" END, &sp, &n);

	cr_assert_str_eq(got, "t\n# Title\nplain\n");
	cr_assert_eq(n, 2);
	cr_assert_eq(sp[0].off, 2);
	cr_assert_eq(sp[0].len, 8);
	cr_assert(sp[0].markdown);
	cr_assert_not(sp[1].markdown);
	cr_assert_eq(sp[1].off, 10);
	free(sp);
	free(got);
}

Test(outdisp, malformed_marks_are_text_or_dropped)
{
	/* an unknown mime, a bad id, no BEL: text */
	const char *bad = "\x1b]7701;show;text/html;x\a\nk\n";
	char *got = resolve(bad, NULL, NULL);
	cr_assert_str_eq(got, bad);
	free(got);
	got = resolve("\x1b]7701;show;text/plain;a/b\a\nk\n", NULL, NULL);
	cr_assert(strstr(got, "a/b") != NULL);
	free(got);
	got = resolve("\x1b]7701;show;text/plain;x", NULL, NULL);
	cr_assert(strstr(got, "x") != NULL);
	free(got);
	/* an end with no region is dropped; an unfinished region runs to
	 * the end (the middle of the output was cut) */
	expect("a\n" END "b\n", "a\nb\n");
	expect(SHOW("text/plain", "") "open\nstill", "open\nstill\n");
	expect(SHOW("text/plain", "") "one\n" SHOW("text/plain", "") "two\n" END,
	    "one\ntwo\n");
}

Test(outdisp, carriage_returns_resolve_within_regions)
{
	expect(SHOW("text/plain", "") "10%\r90%\n" END, "90%\n");
}

Test(outdisp, repeated_update_output_is_bounded)
{
	/* 2,000 regions of one id and one 64 KiB update: not 128 MiB */
	size_t big = 64 * 1024, cap = 2000 * 64 + big + 1024;
	char *s = malloc(cap), *got;
	size_t n = 0, len;

	for (int i = 0; i < 2000; i++)
		n += (size_t)snprintf(s + n, cap - n, "%s", SHOW("text/plain", "x") "a\n" END);
	n += (size_t)snprintf(s + n, cap - n, "%s", UPD("text/plain", "x"));
	memset(s + n, 'u', big);
	n += big;
	s[n++] = '\n';
	got = outdisp_resolve(s, n, &len, NULL, NULL);
	cr_assert_leq(len, 2 * n + (64u << 10));
	cr_assert(len > big, "the update is shown at least once");
	free(got);
	free(s);
}

Test(outdisp, unmark_keeps_content)
{
	const char *in = "a\n" SHOW("text/markdown", "i") "**b**\n" END
	    UPD("text/plain", "i") "c\n" END;
	size_t len;
	char *got = outdisp_unmark(in, strlen(in), &len);

	cr_assert_str_eq(got, "a\n**b**\nc\n");
	cr_assert(outdisp_has(in, strlen(in)));
	free(got);
}

Test(outdisp, a_built_region_resolves_and_its_id_is_made_safe)
{
	size_t n, k;
	char *r = outdisp_region("**x**", 5, 1, "../a b", 0, &n);
	char *u = outdisp_region("y\n", 2, 0, "../a b", 1, &k);
	char *both = malloc(n + k + 1), *got;
	struct outdisp_span *sp;
	size_t nsp;

	cr_assert(strstr(r, ";___a_b\a") != NULL, "%s", r);
	memcpy(both, r, n);
	memcpy(both + n, u, k);
	both[n + k] = '\0';
	got = outdisp_resolve(both, n + k, NULL, &sp, &nsp);
	cr_assert_str_eq(got, "y\n");
	cr_assert_eq(nsp, 1);
	cr_assert_not(sp[0].markdown, "the update brings its own mime");
	free(sp);
	free(got);
	free(both);
	free(r);
	free(u);
}

Test(outdisp, clear_drops_what_came_before)
{
	expect("a\n" SHOW("text/plain", "p") "x\n" END "\x1b]7701;clear\a\nb\n"
	    UPD("text/plain", "p") "gone\n" END, "b\n");
	expect("1\n\x1b]7701;clear\a\n2\n\x1b]7701;clear\a\n3\n", "3\n");
}

Test(outdisp, a_progress_line_before_a_display_never_eats_its_mark)
{
	/* a tqdm bar left mid-line, resolved by the coalescer before the
	 * notebook sees it, then a display */
	const char *in = "100%|##########|\r" SHOW("text/plain", "") "x\n" END "next\n";
	expect(in, "100%|##########|\nx\nnext\n");
	expect("a\n" SHOW("text/plain", "") "x\n" END SHOW("text/plain", "") "y\n" END,
	    "a\nx\ny\n");
}
