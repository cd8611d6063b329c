/* Unit tests for the SSE parser: the same stream split at every byte
 * position (and byte by byte) must give the same events. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/sse.h"

static int
record(void *arg, const struct sse_event *ev)
{
	struct buf *b = arg;

	buf_printf(b, "[%s|%s|", ev->type, ev->id);
	buf_add(b, ev->data, ev->len);
	buf_adds(b, "]");
	cr_assert_eq(strlen(ev->data), ev->len, "data is NUL-terminated");
	return 0;
}

/* Parses s fed in pieces: cut after `at` bytes, or byte by byte when
 * at < 0. Returns the recorded events (caller frees). */
static char *
parse(const char *s, size_t len, long at, int *rc)
{
	struct buf out;
	struct sse *p;
	int r = 0;

	buf_init(&out, 1 << 20);
	p = sse_new(1024, 4096, record, &out);
	if (at < 0) {
		for (size_t i = 0; i < len && r == 0; i++)
			r = sse_feed(p, s + i, 1);
	} else {
		r = sse_feed(p, s, (size_t)at);
		if (r == 0)
			r = sse_feed(p, s + at, len - (size_t)at);
	}
	if (r == 0)
		r = sse_finish(p);
	if (rc != NULL)
		*rc = r;
	sse_free(p);
	return buf_take(&out);
}

static void
check_all_splits(const char *s, const char *want)
{
	size_t len = strlen(s);

	for (long at = -1; at <= (long)len; at++) {
		int rc;
		char *got = parse(s, len, at, &rc);
		cr_assert_eq(rc, 0, "split at %ld", at);
		cr_assert_str_eq(got, want, "split at %ld", at);
		free(got);
	}
}

Test(sse, openai_stream_every_split)
{
	check_all_splits(
	    "data: {\"a\":1}\n\n"
	    "data: {\"b\":\"\xc3\xa9\"}\n\n"
	    "data: [DONE]\n\n",
	    "[message||{\"a\":1}][message||{\"b\":\"\xc3\xa9\"}][message||[DONE]]");
}

Test(sse, line_ends_cr_lf_crlf_mixed)
{
	check_all_splits(
	    "event: a\r\ndata: 1\r\n\r\n"
	    "event: b\rdata: 2\r\r"
	    "event: c\ndata: 3\n\n"
	    "data: 4\r\n\n",
	    "[a||1][b||2][c||3][message||4]");
}

Test(sse, multiline_data_comments_id_retry)
{
	struct buf out;
	struct sse *p;

	check_all_splits(
	    ": keep-alive\n"
	    ":\n"
	    "id: 7\n"
	    "retry: 1500\n"
	    "data:first\n"
	    "data:  second\n"
	    "data\n"
	    "unknown: x\n"
	    "\n",
	    "[message|7|first\n second\n]");
	buf_init(&out, 4096);
	p = sse_new(64, 64, record, &out);
	cr_assert_eq(sse_feed(p, "retry: 1500\nretry: x1\n\n", 23), 0);
	cr_assert_eq(sse_retry(p), 1500);
	sse_free(p);
	buf_free(&out);
}

Test(sse, empty_data_event_and_event_reset)
{
	/* An event with no data dispatches nothing and forgets its type. */
	check_all_splits("event: ping\n\ndata: x\n\n", "[message||x]");
}

Test(sse, bom_stripped_once)
{
	check_all_splits("\xef\xbb\xbf" "data: a\n\n\xef\xbb\xbf" "data: b\n\n",
	    "[message||a]");	/* the second BOM makes an unknown field */
}

Test(sse, partial_bom_is_data)
{
	/* A stream starting like a BOM but not one keeps its bytes. */
	check_all_splits("\xef\xbb" "x: 1\ndata: y\n\n", "[message||y]");
}

Test(sse, eof_flushes_pending_event)
{
	check_all_splits("data: {\"x\":1}\n\ndata: [DONE]", "[message||{\"x\":1}][message||[DONE]]");
	check_all_splits("data: [DONE]\n", "[message||[DONE]]");
}

Test(sse, anthropic_named_events)
{
	check_all_splits(
	    "event: message_start\ndata: {\"type\":\"message_start\"}\n\n"
	    "event: ping\ndata: {\"type\": \"ping\"}\n\n"
	    "event: error\ndata: {\"type\":\"error\"}\n\n",
	    "[message_start||{\"type\":\"message_start\"}]"
	    "[ping||{\"type\": \"ping\"}][error||{\"type\":\"error\"}]");
}

Test(sse, llama_error_field)
{
	check_all_splits("error: {\"code\":400}\n\ndata: [DONE]\n\n",
	    "[error||{\"code\":400}][message||[DONE]]");
}

Test(sse, line_too_long_fails)
{
	struct buf out;
	struct sse *p;
	char big[200];

	memset(big, 'a', sizeof big);
	buf_init(&out, 4096);
	p = sse_new(64, 1024, record, &out);
	cr_assert_eq(sse_feed(p, "data: ", 6), 0);
	cr_assert_eq(sse_feed(p, big, sizeof big), -1);
	cr_assert_str_eq(sse_error(p), "SSE line too long");
	cr_assert_eq(sse_feed(p, "\n\n", 2), -1, "stays failed");
	cr_assert_eq(sse_finish(p), -1);
	cr_assert_eq(out.len, 0);
	sse_free(p);
	buf_free(&out);
}

Test(sse, event_too_big_fails)
{
	struct buf out;
	struct sse *p;
	int r = 0;

	buf_init(&out, 4096);
	p = sse_new(64, 100, record, &out);
	for (int i = 0; i < 20 && r == 0; i++)
		r = sse_feed(p, "data: 0123456789\n", 17);
	cr_assert_eq(r, -1);
	cr_assert_str_eq(sse_error(p), "SSE event too big");
	sse_free(p);
	buf_free(&out);
}

static int
stop_at_second(void *arg, const struct sse_event *ev)
{
	int *n = arg;
	(void)ev;
	return ++*n == 2 ? 42 : 0;
}

Test(sse, callback_stops_parsing)
{
	int n = 0;
	struct sse *p = sse_new(64, 64, stop_at_second, &n);

	cr_assert_eq(sse_feed(p, "data: 1\n\ndata: 2\n\ndata: 3\n\n", 27), 42);
	cr_assert_eq(n, 2);
	sse_free(p);
}

static int
record_raw(void *arg, const struct sse_event *ev)
{
	struct buf *b = arg;

	buf_printf(b, "[%s|", ev->type);
	buf_add(b, ev->data, ev->len);
	buf_adds(b, "]");
	return 0;
}

Test(sse, error_field_with_nul_byte)
{
	/* Found by the fuzzer: the value of an error: field holding a NUL
	 * was copied with strndup and read past its end. */
	static const char s[] = "error:\xf7" "a\0a\n";
	struct buf out;
	struct sse *p;

	buf_init(&out, 4096);
	p = sse_new(64, 64, record_raw, &out);
	cr_assert_eq(sse_feed(p, s, sizeof s - 1), 0);
	cr_assert_eq(out.len, 12);
	cr_assert(memcmp(out.data, "[error|\xf7" "a\0a]", 12) == 0);
	sse_free(p);
	buf_free(&out);
}
