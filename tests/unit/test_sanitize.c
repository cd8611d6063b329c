/* Unit tests of what terp writes from strings the sandbox chose: the
 * JSON escaper behind --json (C1, DEL and bidi controls as \uXXXX), the
 * terminal sanitizer's set of controls, and host file names offered for
 * artifacts (issue 8, 2.1 and 2.8). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "terp/buf.h"
#include "terp/event.h"
#include "terp/jsonout.h"
#include "terp/kernel.h"
#include "terp/notebook.h"
#include "terp/printer.h"
#include "terp/sanitize.h"

/* U+009D (an OSC on terminals that read C1), BEL, U+202E, DEL, U+2066,
 * U+200F, U+061C, U+0085, then text that stays as is. */
static const char hostile[] = "\xc2\x9d]0;x\x07 \xe2\x80\xae \x7f "
    "\xe2\x81\xa6\xe2\x80\x8f\xd8\x9c\xc2\x85 caf\xc3\xa9 \xe2\x82\xac";

/* 1 when s holds a raw DEL, C1 or bidi control as UTF-8. */
static int
has_raw_control(const char *s)
{
	for (size_t i = 0, n = strlen(s); i < n; ) {
		unsigned cp;
		size_t k = utf8_decode(s + i, n - i, &cp);
		if (k == 0)
			return 1;
		if (cp >= 0x7f && sanitize_is_control(cp))
			return 1;
		i += k;
	}
	return 0;
}

Test(json_inert, escapes_c1_del_and_bidi_and_decodes_the_same)
{
	cJSON *o = cJSON_CreateObject(), *back;
	char *json;
	struct buf b;

	cJSON_AddStringToObject(o, "text", hostile);
	json = cJSON_PrintUnformatted(o);
	/* what cJSON alone prints: the controls raw */
	cr_assert(has_raw_control(json));
	buf_init(&b, 1 << 20);
	cr_assert_eq(sanitize_json_inert(&b, json, strlen(json)), 0);
	cr_assert(!has_raw_control(buf_str(&b)), "%s", buf_str(&b));
	cr_assert_not_null(strstr(buf_str(&b), "\\u009d]0;x\\u0007 \\u202e \\u007f "
	    "\\u2066\\u200f\\u061c\\u0085 caf\xc3\xa9 \xe2\x82\xac"), "%s",
	    buf_str(&b));
	back = cJSON_Parse(buf_str(&b));
	cr_assert_not_null(back);
	cr_assert_str_eq(cJSON_GetObjectItem(back, "text")->valuestring, hostile);
	cJSON_Delete(back);
	cJSON_Delete(o);
	free(json);
	buf_free(&b);
}

Test(json_inert, keeps_layout_and_bounds_the_output)
{
	const char *in = "{\n\t\"a\": \"\xc2\x80\"\n}";
	struct buf b;

	buf_init(&b, 1 << 10);
	cr_assert_eq(sanitize_json_inert(&b, in, strlen(in)), 0);
	cr_assert_str_eq(buf_str(&b), "{\n\t\"a\": \"\\u0080\"\n}");
	buf_free(&b);
	buf_init(&b, 8);
	cr_assert_eq(sanitize_json_inert(&b, in, strlen(in)), -1);
	buf_free(&b);
}

/* The --json writer itself: every line it prints is inert and parses
 * back to the text of the event. */
Test(json_inert, jsonout_lines_are_inert)
{
	char *out = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&out, &len);
	struct jsonout *j = jsonout_new(fp);
	struct event ev = { .type = EV_ANSWER, .text = hostile,
		.len = sizeof hostile - 1 };
	cJSON *o;
	int nlines = 0;

	jsonout_event(j, &ev);
	ev.type = EV_NOTICE;
	jsonout_event(j, &ev);
	fclose(fp);
	free(j);
	cr_assert(!has_raw_control(out), "%s", out);
	/* two lines, each one JSON object holding the text */
	for (char *line = out, *nl; *line != '\0'; line = nl + 1) {
		nl = strchr(line, '\n');
		cr_assert_not_null(nl);
		*nl = '\0';
		o = cJSON_Parse(line);
		cr_assert_not_null(o, "%s", line);
		cr_assert_str_eq(cJSON_GetObjectItem(o,
		    cJSON_GetObjectItem(o, "text") ? "text" : "message")->valuestring,
		    hostile);
		cJSON_Delete(o);
		nlines++;
	}
	cr_assert_eq(nlines, 2);
	free(out);
}

Test(sanitize_controls, c1_as_code_points_bidi_and_del_are_escaped)
{
	char *s = sanitize_str(hostile, sizeof hostile - 1, 0);

	cr_assert_str_eq(s, "\\u009d]0;x\\u0007 \\u202e \\u007f "
	    "\\u2066\\u200f\\u061c\\u0085 caf\xc3\xa9 \xe2\x82\xac");
	free(s);
	/* a raw C1 byte is not UTF-8: it becomes U+FFFD */
	s = sanitize_str("a\x9b" "b", 3, 0);
	cr_assert_str_eq(s, "a\xef\xbf\xbd" "b");
	free(s);
}

Test(filename, one_safe_component)
{
	struct { const char *in, *want; } t[] = {
		{ "chart.png", "chart.png" },
		{ "../.bash_aliases", "_bash_aliases" },
		{ "/abs/path/x.csv", "x.csv" },
		{ "..", "_." },
		{ ".", "_" },
		{ "", "_" },
		{ "dir/", "_" },
		{ "a\nb\x1b]0;x\x07.txt", "a_b__0_x_.txt" },
		{ "caf\xc3\xa9 \xe2\x80\xae.png", "caf___.png" },
		{ "r\xff.png", "r_.png" },
	};

	for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
		char *s = sanitize_filename(t[i].in, 100);
		cr_assert_str_eq(s, t[i].want, "in: %s", t[i].in);
		free(s);
	}
}

Test(filename, bounded)
{
	char in[300];
	char *s;

	memset(in, 'a', sizeof in - 1);
	in[sizeof in - 1] = '\0';
	s = sanitize_filename(in, 100);
	cr_assert_eq(strlen(s), 100);
	free(s);
}

/* The text printer: a kernel message (it may quote what the sandbox
 * printed while starting) and an artifact's path go out inert too. */
Test(sanitize_controls, printer_kernel_message_and_artifact_path)
{
	char *out = NULL, *err = NULL;
	size_t olen = 0, elen = 0;
	FILE *fo = open_memstream(&out, &olen), *fe = open_memstream(&err, &elen);
	struct printer *p = printer_new(fo, fe, PRINTER_EXEC);
	struct artifact a = { .cell = 1, .name = "x", .bytes = 3,
		.path = "out/a\x1b]0;t\x07\xc2\x9d.txt" };
	struct event ev = { .type = EV_KERNEL, .kstate = KERNEL_DEAD,
		.text = "bwrap: \x1b]0;t\x07 \xe2\x80\xae" };

	printer_event(p, &ev);
	memset(&ev, 0, sizeof ev);
	ev.type = EV_ARTIFACT;
	ev.artifact = &a;
	printer_event(p, &ev);
	fclose(fo);
	fclose(fe);
	free(p);
	cr_assert_null(strchr(err, '\x1b'), "%s", err);
	cr_assert(!has_raw_control(err), "%s", err);
	cr_assert_str_eq(err, "terp: bwrap: \\u001b]0;t\\u0007 \\u202e\n"
	    "terp: [1] artifact out/a\\u001b]0;t\\u0007\\u009d.txt (3 B)\n");
	free(out);
	free(err);
}
