/* llm_argcode: a python_exec call's code decoded while its arguments
 * stream. Every JSON text is cut at every pair of positions: the code
 * decoded at each point is a prefix of the whole code (never half a
 * character), and at the end it is the whole code, escapes, \uXXXX and
 * surrogate pairs split anywhere included. Then the decoder inside the
 * OpenAI codec: the sink sees the code grow before the call is whole. */
#include <criterion/criterion.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/llm_argcode.h"
#include "terp/llm_provider.h"
#include "terp/sanitize.h"
#include "terp/sse.h"

/* Feeds json in three pieces cut at a <= b; checks every step. */
static void
feed3(const char *json, const char *want, size_t a, size_t b, int done)
{
	size_t len = strlen(json), cuts[3] = { a, b, len }, at = 0, n;
	struct llm_argcode d;
	const char *s;

	llm_argcode_init(&d, 1 << 16);
	for (int i = 0; i < 3; i++) {
		llm_argcode_feed(&d, json + at, cuts[i] - at);
		at = cuts[i];
		s = llm_argcode_text(&d, &n);
		cr_assert_eq(utf8_complete_prefix(s, n), n);
		cr_assert(n <= strlen(want) && memcmp(s, want, n) == 0,
		    "%s cut at %zu,%zu: \"%.*s\" is no prefix of \"%s\"", json, a, b,
		    (int)n, s, want);
	}
	s = llm_argcode_text(&d, &n);
	cr_assert(n == strlen(want) && memcmp(s, want, n) == 0,
	    "%s cut at %zu,%zu: \"%.*s\", not \"%s\"", json, a, b, (int)n, s, want);
	cr_assert_eq(llm_argcode_done(&d), done, "%s: done", json);
	llm_argcode_free(&d);
}

static void
every_cut(const char *json, const char *want, int done)
{
	size_t len = strlen(json);

	for (size_t a = 0; a <= len; a++)
		for (size_t b = a; b <= len; b++)
			feed3(json, want, a, b, done);
}

Test(argcode, plain_escapes_and_raw_utf8)
{
	every_cut("{\"code\": \"print(\\\"caf\xc3\xa9\\\")\\n\\tx = 'a\\\\b'\\/\\r\"}",
	    "print(\"caf\xc3\xa9\")\n\tx = 'a\\b'/\r", 1);
}

Test(argcode, unicode_escapes_and_surrogate_pairs)
{
	/* é, €, then 😀 as a surrogate pair */
	every_cut("{\"code\":\"\\u00e9\\u20AC\\ud83d\\ude00!\"}",
	    "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80!", 1);
}

Test(argcode, broken_surrogates_become_replacement_characters)
{
	every_cut("{\"code\":\"a\\ud800b\\udc00c\\ud83dx\\u12G4\"}",
	    "a\xef\xbf\xbd" "b\xef\xbf\xbd" "c\xef\xbf\xbdx\xef\xbf\xbdG4", 1);
	/* a high half followed by another escape, not \u */
	every_cut("{\"code\":\"\\ud83d\\n\"}", "\xef\xbf\xbd\n", 1);
}

Test(argcode, other_members_are_skipped)
{
	every_cut("{\"codes\": \"no\", \"x\": {\"code\": \"no\", \"a\": [1, \"}\\\"]\", {}]},"
	    " \"n\": -3.5e2, \"t\": true, \"\\u0063ode\": \"no\", \"code\": \"yes\","
	    " \"code\": \"again\"}", "yes", 1);
}

Test(argcode, not_the_code_or_not_an_object)
{
	every_cut("{\"code\": 5}", "", 0);
	every_cut("[\"code\", \"x\"]", "", 0);
	every_cut("{\"cmd\": \"x\"}", "", 0);
	every_cut("{\"code\": \"unfinished \\u00", "unfinished ", 0);
}

Test(argcode, bounded_and_reset)
{
	struct llm_argcode d;
	size_t n;
	const char *s;

	llm_argcode_init(&d, 4);
	cr_assert_eq(llm_argcode_feed(&d, "{\"code\":\"abcdefgh\"}", 19), 1);
	s = llm_argcode_text(&d, &n);
	cr_assert(n <= 4 && memcmp(s, "abcd", n) == 0);
	cr_assert_eq(llm_argcode_feed(&d, "more", 4), 0);
	llm_argcode_reset(&d);
	llm_argcode_feed(&d, "{\"code\":\"xy\"}", 13);
	s = llm_argcode_text(&d, &n);
	cr_assert(n == 2 && memcmp(s, "xy", 2) == 0);
	cr_assert(llm_argcode_done(&d));
	llm_argcode_free(&d);
}

/* ---------------------------------------------------------- in the codec */

struct seen {
	struct buf	 log;	/* "code:<n>:<text>|" and "call:<args>|" */
};

static void
s_text(void *arg, const char *s, size_t n)
{
	(void)arg; (void)s; (void)n;
}

static void
s_call(void *arg, const char *id, const char *name, const char *args)
{
	struct seen *r = arg;
	(void)id; (void)name;
	buf_printf(&r->log, "call:%s|", args);
}

static void
s_usage(void *arg, const struct usage *u)
{
	(void)arg; (void)u;
}

static void
s_code(void *arg, int call, const char *code, size_t n)
{
	struct seen *r = arg;
	buf_printf(&r->log, "code:%d:%.*s|", call, (int)n, code);
}

static const struct llm_sink sink = { s_text, s_call, s_usage, NULL, NULL, s_code };

struct feed {
	struct llm_dec	*dec;
};

static int
on_ev(void *arg, const struct sse_event *ev)
{
	struct feed *f = arg;
	llm_dec_event(f->dec, ev->type, ev->data, ev->len);
	return 0;
}

#define CH(x) "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\"," \
    "\"choices\":[{\"index\":0,\"delta\":" x "}]}\n\n"

Test(argcode, openai_codec_shows_the_code_before_the_call)
{
	const char *s =
	    CH("{\"tool_calls\":[{\"index\":0,\"id\":\"call_A\",\"type\":\"function\","
	       "\"function\":{\"name\":\"python_exec\",\"arguments\":\"\"}}]}")
	    CH("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"code\\\": \\\"x = 1\"}}]}")
	    CH("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\\n\\\\u00\"}}]}")
	    CH("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"e9\\\"}\"}}]}")
	    "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
	    "data: [DONE]\n\n";
	struct seen r;
	struct feed f;
	struct sse *p;

	buf_init(&r.log, 1 << 16);
	f.dec = llm_dec_new(&llm_openai_codec, &sink, &r);
	p = sse_new(1 << 16, 1 << 20, on_ev, &f);
	sse_feed(p, s, strlen(s));
	sse_finish(p);
	sse_free(p);
	cr_assert_str_eq(buf_str(&r.log),
	    "code:0:x = 1|code:0:x = 1\n|code:0:x = 1\n\xc3\xa9|"
	    "call:{\"code\": \"x = 1\\n\\u00e9\"}|");
	llm_dec_free(f.dec);
	buf_free(&r.log);
}
