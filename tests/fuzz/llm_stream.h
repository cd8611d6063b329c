/* The body of the provider stream decoder fuzz targets: included by
 * fuzz_llm_<format>.c after defining CODEC. A stream goes through the
 * real SSE parser into a decoder, as llm_http.c does, then the end of
 * the body. Besides "no crash, no leak, no UB", it checks:
 *  - the outcome does not depend on how the stream is cut into reads
 *    (whole, at a position, byte by byte): same text, tool calls,
 *    usage, stop reason, error kind and message;
 *  - every reply ends (END or ERROR, never MORE after the end of body);
 *  - nothing reaches the sink after the reply ended, usage at most once;
 *  - an error has a kind, a one-line message of bounded size;
 *  - tool calls have an id, a name and arguments within their bound. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/llm_provider.h"
#include "terp/sanitize.h"
#include "terp/sse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct run {
	struct llm_dec	*dec;
	struct buf	 out;		/* everything the sink saw, in order */
	int		 nusage;
};

static void
check_open(struct run *r)
{
	if (r->dec->st != LLM_DEC_MORE)
		abort();	/* output after the reply ended */
}

static void
s_text(void *arg, const char *s, size_t n)
{
	struct run *r = arg;

	check_open(r);
	if (n == 0)
		abort();
	buf_addc(&r->out, 'T');
	buf_add(&r->out, s, n);
	buf_addc(&r->out, 0);
}

static void
s_call(void *arg, const char *id, const char *name, const char *args)
{
	struct run *r = arg;

	check_open(r);
	if (id == NULL || name == NULL || args == NULL || *args == '\0' ||
	    strlen(args) > LLM_DEC_ARGS_MAX)
		abort();
	buf_printf(&r->out, "C%s%c%s%c%s%c", id, 0, name, 0, args, 0);
}

static void
s_usage(void *arg, const struct usage *u)
{
	struct run *r = arg;

	/* Delivered as the reply ends, once. */
	if (++r->nusage > 1)
		abort();
	buf_printf(&r->out, "U%ld,%ld,%ld", u->input_tokens, u->output_tokens,
	    u->cached_tokens);
	buf_addc(&r->out, 0);
}

/* The code shown early: bounded and whole characters, whatever came.
 * Not in r->out: how often it comes depends on the cuts. */
static void
s_code(void *arg, int call, const char *code, size_t n)
{
	struct run *r = arg;

	check_open(r);
	if (call < 0 || call >= LLM_DEC_SLOTS || n > LLM_DEC_ARGS_MAX ||
	    utf8_complete_prefix(code, n) != n)
		abort();
}

static const struct llm_sink sink = { s_text, s_call, s_usage, NULL, NULL, s_code };

static int
on_event(void *arg, const struct sse_event *ev)
{
	struct run *r = arg;

	return llm_dec_event(r->dec, ev->type, ev->data, ev->len) !=
	    LLM_DEC_MORE;
}

/* mode 0: whole; 1: byte by byte; else cut at mode % (len + 1). Returns
 * the outcome as bytes (caller frees). */
static char *
run(const uint8_t *s, size_t len, size_t mode, size_t *olen)
{
	struct run r;
	struct sse *p;
	enum llm_dec_status st;
	int rc = 0;

	memset(&r, 0, sizeof r);
	buf_init(&r.out, 1 << 24);
	r.dec = llm_dec_new(&CODEC, &sink, &r);
	p = sse_new(1 << 16, 1 << 16, on_event, &r);
	if (mode == 0) {
		rc = sse_feed(p, s, len);
	} else if (mode == 1) {
		for (size_t i = 0; i < len && rc == 0; i++)
			rc = sse_feed(p, s + i, 1);
	} else {
		size_t at = mode % (len + 1);
		rc = sse_feed(p, s, at);
		if (rc == 0)
			rc = sse_feed(p, s + at, len - at);
	}
	if (rc == 0)
		rc = sse_finish(p);
	/* As llm_http.c: a line or event past its bound breaks the stream;
	 * else a body that ended before the reply did goes to eof. */
	if (rc < 0) {
		buf_adds(&r.out, "Stoo big");
	} else {
		st = llm_dec_eof(r.dec);
		if (st == LLM_DEC_MORE)
			abort();
		if (st == LLM_DEC_END) {
			const char *stop = llm_dec_stop_reason(r.dec);
			if (stop == NULL || *stop == '\0')
				abort();
			buf_printf(&r.out, "E%s", stop);
		} else {
			const struct llm_error *e = llm_dec_error(r.dec);
			if (e->msg == NULL || *e->msg == '\0' ||
			    strchr(e->msg, '\n') != NULL || strlen(e->msg) > 400 ||
			    e->kind > LLM_ERR_CANCELLED)
				abort();
			buf_printf(&r.out, "X%s|%d|%s", llm_err_name(e->kind),
			    e->retryable, e->msg);
		}
	}
	sse_free(p);
	llm_dec_free(r.dec);
	*olen = r.out.len;
	return buf_take(&r.out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t l0, l1, l2;
	char *a, *b, *c;
	size_t cut = size ? data[0] * 7u + 2 : 2;

	a = run(data, size, 0, &l0);
	b = run(data, size, 1, &l1);
	c = run(data, size, cut, &l2);
	if (l0 != l1 || l0 != l2 || memcmp(a, b, l0) != 0 ||
	    memcmp(a, c, l0) != 0)
		abort();
	free(a);
	free(b);
	free(c);
	return 0;
}
