/* llm_http: the backend of every provider reached over HTTP. One
 * request is one or more attempts: each posts the codec's encoding
 * through http.c, splits the streamed body into events with sse.c and
 * feeds them to a decoder (llm_decode.c with the codec's reader). A
 * failure before any output was shown is retried with exponential
 * backoff and jitter, honouring Retry-After; after output, or when it
 * cannot help, it is reported as a typed llm_error. */
#include <curl/curl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "terp/http.h"
#include "terp/llm_cache.h"
#include "terp/llm_provider.h"
#include "terp/retry_after.h"
#include "terp/sse.h"
#include "terp/util.h"

#define SSE_LINE_MAX	(8 * 1024 * 1024)
#define SSE_EVENT_MAX	(8 * 1024 * 1024)
#define ERROR_BODY_MAX	(64 * 1024)
#define RETRY_AFTER_CAP	120000	/* ms; a longer wait gives up */
#define BACKOFF_BASE	500
#define BACKOFF_MAX	8000

struct hb;

/* One attempt at a request: its transfer, parser and decoder. */
struct attempt {
	struct hb		*b;
	struct http_xfer	*x;
	struct sse		*sse;
	struct llm_dec		*dec;
	int			 in_feed;	/* inside sse_feed */
	int			 dead;		/* cancelled while in_feed */
	int			 too_big;	/* sse.c refused a line or event */
	int			 first;		/* the body's first non-blank byte, 0
						 * before it: '<' is an HTML page */
};

struct hb {
	struct loop			*loop;
	struct http			*http;
	const struct llm_config		*cfg;	/* borrowed from llm.c */
	const struct llm_codec		*codec;
	const struct llm_codec		*cur;	/* this request's (codec->pick) */
	struct llm_sink			 sink;
	const struct llm_cbs		*out;
	void				*arg;
	int				 busy;
	struct llm_wire			 wire;
	struct attempt			*a;
	int				 retries;	/* taken so far */
	int				 delivered;	/* the caller saw output */
	int				 sent;
	uint64_t			 timer;		/* start or retry */
	/* A server that cannot be reached: its retries are told once, and
	 * the final failure says what to check (llm_unreachable_hint). */
	int				 net_told;
	uint64_t			 taken;	/* the tag of the last body
						 * handed on (take_body), 0 */
};

void
llm_wire_free(struct llm_wire *w)
{
	free(w->url);
	for (char **h = w->headers; h != NULL && *h != NULL; h++)
		free(*h);
	free(w->headers);
	if (!w->body_kept)	/* the next body's storage */
		llm_cache_body_give_tagged(w->body, w->body_info.id);
	free(w->what);
	memset(w, 0, sizeof *w);
}

void
llm_wire_header(struct llm_wire *w, const char *fmt, ...)
{
	va_list ap;
	size_t n = 0;
	char *s;

	va_start(ap, fmt);
	s = xvasprintf(fmt, ap);
	va_end(ap);
	while (w->headers != NULL && w->headers[n] != NULL)
		n++;
	w->headers = xrealloc(w->headers, (n + 2) * sizeof *w->headers);
	w->headers[n] = s;
	w->headers[n + 1] = NULL;
}

/* ------------------------------------------------------------ policy */

static int
retryable_status(long status)
{
	switch (status) {
	case 408: case 409: case 429: case 500: case 502: case 503: case 504:
	case 529:
		return 1;
	}
	return 0;
}

static int
transport_retryable(int code)
{
	switch (code) {
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_COULDNT_RESOLVE_HOST:
		return 0;
	}
	return 1;
}

/* A TLS handshake the two ends cannot agree on (no common protocol
 * version or cipher) fails the same way every time; a reset in the
 * middle of one (also CURLE_SSL_CONNECT_ERROR) may not. curl says which
 * only in its message, OpenSSL's alert names. */
static int
tls_mismatch(int code, const char *msg)
{
	static const char *const words[] = {
		"protocol version", "unsupported protocol",
		"no protocols available", "wrong version number",
		"handshake failure", "no shared cipher",
		"version too low", "unsupported_protocol", "legacy sigalg",
	};

	if (code != CURLE_SSL_CONNECT_ERROR || msg == NULL)
		return 0;
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		if (strcasestr(msg, words[i]) != NULL)
			return 1;
	return 0;
}

/* No server answered at that address: its URL is what to check. */
static int
no_server(int code)
{
	return code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST ||
	    code == CURLE_OPERATION_TIMEDOUT;
}

static int64_t
backoff_ms(int n)
{
	double d = BACKOFF_BASE;
	for (int i = 0; i < n && d < BACKOFF_MAX; i++)
		d *= 2;
	if (d > BACKOFF_MAX)
		d = BACKOFF_MAX;
	return (int64_t)(d * (1.0 - 0.25 * ((double)rand() / RAND_MAX)));
}

/* ------------------------------------------------------------ requests */

static void start_attempt(struct loop *l, void *arg);

static void
attempt_free(struct attempt *a)
{
	if (a == NULL)
		return;
	if (a->x != NULL)
		http_cancel(a->x);
	sse_free(a->sse);
	llm_dec_free(a->dec);
	free(a);
}

/* Detaches the running attempt; frees it unless it is inside its own
 * parser (then the body callback frees it when it returns). */
static void
attempt_drop(struct hb *b)
{
	struct attempt *a = b->a;

	b->a = NULL;
	if (a == NULL)
		return;
	if (a->in_feed) {
		a->dead = 1;
		if (a->x != NULL)
			http_cancel(a->x);	/* deferred by http.c */
		a->x = NULL;
		return;
	}
	attempt_free(a);
}

static void
reset(struct hb *b)
{
	loop_timer_cancel(b->loop, b->timer);
	b->timer = 0;
	attempt_drop(b);
	llm_wire_free(&b->wire);
	b->busy = 0;
}

/* Ends the request with e (its strings are copied first: they may
 * belong to the attempt that reset frees). */
static void
fail(struct hb *b, const struct llm_error *e)
{
	const struct llm_cbs *out = b->out;
	void *arg = b->arg;
	struct llm_error copy = *e;
	char *msg = xstrdup(e->msg);

	copy.msg = msg;
	reset(b);
	out->error(arg, &copy);
	free(msg);
}

static void
fail_with(struct hb *b, enum llm_err kind, long status, int retryable,
    const char *msg)
{
	struct llm_error e = { kind, (int)status, msg, retryable };
	fail(b, &e);
}

static void
succeed(struct hb *b, const char *stop)
{
	const struct llm_cbs *out = b->out;
	void *arg = b->arg;
	char *copy = xstrdup(stop);

	reset(b);
	out->done(arg, copy);
	free(copy);
}

static void
notice(struct hb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
notice(struct hb *b, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = xvasprintf(fmt, ap);
	va_end(ap);
	b->out->notice(b->arg, s);
	free(s);
}

/* Schedules another attempt after e, or fails with e when the retries
 * (at most retry_cap of them) are used up, the failure ending with hint
 * (or NULL). wait_ms < 0: the backoff decides. */
static void
retry_or_fail_hint(struct hb *b, const struct llm_error *e, int64_t wait_ms,
    int retry_cap, const char *hint)
{
	char *why = xstrdup(e->msg), *s;
	struct llm_error last = *e;

	attempt_drop(b);
	if (b->retries >= b->cfg->max_retries || b->retries >= retry_cap) {
		s = b->retries > 0 ? xasprintf("%s (gave up after %d %s)%s%s", why,
		    b->retries, b->retries == 1 ? "retry" : "retries",
		    hint ? "; " : "", hint ? hint : "") :
		    xasprintf("%s%s%s", why, hint ? "; " : "", hint ? hint : "");
		last.msg = s;
		fail(b, &last);
	} else if (wait_ms > RETRY_AFTER_CAP) {
		s = xasprintf("%s; the server asks to wait %.0f s, giving up",
		    why, (double)wait_ms / 1000);
		last.msg = s;
		fail(b, &last);
	} else {
		s = NULL;
		if (wait_ms < 0)
			wait_ms = backoff_ms(b->retries);
		b->retries++;
		b->timer = loop_timer_add(b->loop, wait_ms, start_attempt, b);
		/* The notice may cancel the request, which drops the timer.
		 * An unreachable server's retries are told once: the same line
		 * again says nothing new. */
		if (e->kind != LLM_ERR_NET || e->http_status != 0 || !b->net_told)
			notice(b, "%s; retrying in %.1f s (%d/%d)", why,
			    (double)wait_ms / 1000, b->retries,
			    retry_cap < b->cfg->max_retries ? retry_cap :
			    b->cfg->max_retries);
		if (e->kind == LLM_ERR_NET && e->http_status == 0)
			b->net_told = 1;
	}
	free(s);
	free(why);
}

static void
retry_or_fail(struct hb *b, const struct llm_error *e, int64_t wait_ms)
{
	retry_or_fail_hint(b, e, wait_ms, INT_MAX, NULL);
}

static void
sink_text(void *arg, const char *s, size_t n)
{
	struct attempt *a = arg;
	struct hb *b = a->b;

	if (a->dead || b->a != a)
		return;
	b->delivered = 1;
	b->out->text(b->arg, s, n);
}

static void
sink_tool_call(void *arg, const char *id, const char *name, const char *args)
{
	struct attempt *a = arg;
	struct hb *b = a->b;

	if (a->dead || b->a != a)
		return;
	b->delivered = 1;
	b->out->tool_call(b->arg, id, name, args);
}

static void
sink_reasoning(void *arg, const char *s, size_t n)
{
	struct attempt *a = arg;
	struct hb *b = a->b;

	if (a->dead || b->a != a)
		return;
	b->delivered = 1;	/* shown: a retry would show it twice */
	if (b->out->reasoning != NULL)
		b->out->reasoning(b->arg, s, n);
}

static void
sink_reasoning_item(void *arg, const char *json)
{
	struct attempt *a = arg;
	struct hb *b = a->b;

	if (a->dead || b->a != a)
		return;
	b->delivered = 1;
	if (b->out->reasoning_item != NULL)
		b->out->reasoning_item(b->arg, json);
}

static void
sink_tool_code(void *arg, int call, const char *code, size_t n)
{
	struct attempt *a = arg;
	struct hb *b = a->b;

	/* not "delivered": only shown, so a retry may still start over */
	if (a->dead || b->a != a)
		return;
	if (b->out->tool_code != NULL)
		b->out->tool_code(b->arg, call, code, n);
}

static void
sink_usage(void *arg, const struct usage *u)
{
	struct attempt *a = arg;
	struct hb *b = a->b;

	if (a->dead || b->a != a)
		return;
	b->out->usage(b->arg, u);
}

static int
on_sse(void *arg, const struct sse_event *ev)
{
	struct attempt *a = arg;
	enum llm_dec_status st = llm_dec_event(a->dec, ev->type, ev->data,
	    ev->len);

	/* Stop the parser once the reply is over, one way or another. */
	return a->dead || st != LLM_DEC_MORE;
}

static int
on_body(void *arg, const char *p, size_t n)
{
	struct attempt *a = arg;
	int r;

	if (a->dec->st != LLM_DEC_MORE)
		return 0;	/* the rest (after [DONE]) does not matter */
	for (size_t i = 0; a->first == 0 && i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
			a->first = (unsigned char)p[i];
	a->in_feed = 1;
	r = sse_feed(a->sse, p, n);
	a->in_feed = 0;
	if (a->dead) {
		a->x = NULL;	/* http.c frees the cancelled transfer */
		attempt_free(a);
		return 1;
	}
	if (r < 0) {
		a->too_big = 1;
		return 1;
	}
	return a->dec->st == LLM_DEC_ERROR;
}

/* A 2xx body that is a web page, not a stream of events: a captive
 * portal's or a proxy's login page answers any URL with 200. Asking
 * again brings the same page. */
static int
html_reply(const struct attempt *a, const struct http_result *r)
{
	return a->first == '<' || (r->content_type != NULL &&
	    strncasecmp(r->content_type, "text/html", 9) == 0);
}

/* A 2xx answer is over: the reply ended, failed, or was cut. */
static void
stream_done(struct hb *b, struct attempt *a, const struct http_result *r)
{
	char *s;

	/* Callbacks below may cancel: guard a as on_body does. */
	a->in_feed = 1;
	if (a->dec->st == LLM_DEC_MORE && !a->too_big && r->curl_code == 0) {
		/* Clean EOF: flush an event without its blank line. */
		if (sse_finish(a->sse) < 0)
			a->too_big = 1;
		else if (!a->dead)
			llm_dec_eof(a->dec);
	}
	a->in_feed = 0;
	if (a->dead) {
		attempt_free(a);
		return;
	}
	if (a->dec->st == LLM_DEC_END) {
		succeed(b, llm_dec_stop_reason(a->dec));
		return;
	}
	if (!b->delivered && html_reply(a, r)) {
		s = xasprintf("%s answered with an HTML page, not a model "
		    "reply (a captive portal or a proxy's login page?); "
		    "check the network and the URL", b->wire.url);
		llm_one_line(s, 400);
		fail_with(b, LLM_ERR_BAD_REPLY, r->status, 0, s);
		free(s);
		return;
	}
	if (a->too_big) {
		s = xasprintf("the model's stream broke: %s", sse_error(a->sse));
		fail_with(b, LLM_ERR_BAD_REPLY, r->status, 0, s);
		free(s);
		return;
	}
	if (a->dec->st == LLM_DEC_ERROR) {
		struct llm_error e = *llm_dec_error(a->dec);
		e.http_status = (int)r->status;
		if (e.retryable && !b->delivered)
			retry_or_fail(b, &e, -1);
		else if (b->delivered && e.kind == LLM_ERR_CUT) {
			e.msg = "the stream was cut midway; the reply above "
			    "is incomplete";
			fail(b, &e);
		} else
			fail(b, &e);
		return;
	}
	/* The connection died midway (or went silent too long). */
	s = xasprintf("the stream was cut midway (%s)",
	    r->error ? r->error : "connection closed");
	if (!b->delivered) {
		struct llm_error e = { LLM_ERR_CUT, (int)r->status, s, 1 };
		retry_or_fail(b, &e, -1);
	} else {
		char *t = xasprintf("%s; the reply above is incomplete", s);
		fail_with(b, LLM_ERR_CUT, r->status, 1, t);
		free(t);
	}
	free(s);
}

static void
on_done(void *arg, const struct http_result *r)
{
	struct attempt *a = arg;
	struct hb *b = a->b;
	struct llm_error e;
	char *s, *hint;
	int64_t wait;

	a->x = NULL;	/* http.c frees it after this call */
	if (r->status >= 200 && r->status < 300) {
		stream_done(b, a, r);
		return;
	}
	if (r->status == 0) {
		s = r->timed_out ? xasprintf("no answer from %s: %s",
		    b->wire.url, r->error) : xasprintf("cannot reach %s: %s",
		    b->wire.url, r->error ? r->error : "unknown error");
		llm_one_line(s, 400);
		e = (struct llm_error){ LLM_ERR_NET, 0, s,
		    transport_retryable(r->curl_code) &&
		    !tls_mismatch(r->curl_code, r->error) };
		hint = no_server(r->curl_code) ? llm_unreachable_hint(b->cfg) :
		    tls_mismatch(r->curl_code, r->error) ? xstrdup("the server "
		    "and terp agree on no TLS version or cipher, so asking "
		    "again cannot help") : NULL;
		/* a refused connection is an answer: asked again once, after
		 * the first backoff and without a notice, in case the server
		 * was restarting; the failure is then one line */
		if (r->curl_code == CURLE_COULDNT_CONNECT)
			b->net_told = 1;
		if (e.retryable)
			retry_or_fail_hint(b, &e, -1, r->curl_code ==
			    CURLE_COULDNT_CONNECT ? 1 : INT_MAX, hint);
		else
			retry_or_fail_hint(b, &e, -1, 0, hint);
		free(hint);
		free(s);
		return;
	}
	s = llm_status_message(b->cfg, r->status, r->body, r->body_len);
	e = (struct llm_error){ llm_error_kind(r->status, r->body, r->body_len),
	    (int)r->status, s, retryable_status(r->status) };
	if (r->should_retry != NULL)
		e.retryable = strcasecmp(r->should_retry, "true") == 0;
	if (e.kind == LLM_ERR_QUOTA || e.kind == LLM_ERR_CONTEXT)
		e.retryable = 0;	/* billing, or too long: waiting cannot help */
	wait = retry_after_ms(r->retry_after_ms, r->retry_after,
	    (int64_t)time(NULL));
	if (e.retryable)
		retry_or_fail(b, &e, wait);
	else
		fail(b, &e);
	free(s);
}

static void
start_attempt(struct loop *l, void *arg)
{
	struct hb *b = arg;
	struct attempt *a;
	struct http_req req;
	static const struct http_cbs hcbs = { on_body, on_done };
	char *err = NULL;
	(void)l;

	b->timer = 0;
	if (!b->sent) {
		b->sent = 1;
		b->out->sent(b->arg, b->wire.what, b->wire.body, b->wire.body_len);
		if (!b->busy)
			return;	/* cancelled from the callback */
	}
	a = xcalloc(1, sizeof *a);
	a->b = b;
	a->sse = sse_new(SSE_LINE_MAX, SSE_EVENT_MAX, on_sse, a);
	a->dec = llm_dec_new(b->cur, &b->sink, a);
	b->a = a;
	memset(&req, 0, sizeof req);
	req.url = b->wire.url;
	req.headers = (const char *const *)b->wire.headers;
	req.body = b->wire.body;
	req.body_len = b->wire.body_len;
	/* The wire outlives every attempt: reset drops the attempt first,
	 * and one client runs one transfer at a time (see http.h). */
	req.body_borrowed = 1;
	req.connect_timeout_ms = b->cfg->connect_timeout_ms;
	req.idle_timeout_ms = b->cfg->idle_timeout_ms;
	req.max_error_body = ERROR_BODY_MAX;
	a->x = http_post(b->http, &req, &hcbs, a, &err);
	if (a->x == NULL) {
		fail_with(b, LLM_ERR_NET, 0, 0, err);
		free(err);
	}
}

/* ------------------------------------------------------------ backend */

static void *
hb_open(struct loop *l, const struct llm_config *cfg,
    const struct llm_codec *codec, char **err)
{
	struct hb *b = xcalloc(1, sizeof *b);
	(void)err;

	b->loop = l;
	b->cfg = cfg;
	b->codec = codec;
	b->http = http_new(l);
	b->sink.text = sink_text;
	b->sink.tool_call = sink_tool_call;
	b->sink.usage = sink_usage;
	b->sink.reasoning = sink_reasoning;
	b->sink.reasoning_item = sink_reasoning_item;
	b->sink.tool_code = sink_tool_code;
	return b;
}

static int
hb_request(void *p, const char *system, const cJSON *messages,
    const struct llm_cbs *out, void *arg, char **err)
{
	struct hb *b = p;

	b->cur = b->codec->pick != NULL ? b->codec->pick(b->cfg) : b->codec;
	if (b->cur->prepare(b->cfg, system, messages, &b->wire, err) < 0) {
		llm_wire_free(&b->wire);
		return -1;
	}
	b->out = out;
	b->arg = arg;
	b->retries = 0;
	b->delivered = 0;
	b->net_told = 0;
	b->sent = 0;
	b->busy = 1;
	/* Callbacks only ever fire from the loop, never from here. */
	b->timer = loop_timer_add(b->loop, 0, start_attempt, b);
	return 0;
}

static void
hb_cancel(void *p)
{
	struct hb *b = p;

	if (b->busy)
		reset(b);
}

static void
hb_close(void *p)
{
	struct hb *b = p;

	if (b == NULL)
		return;
	hb_cancel(b);
	http_free(b->http);
	free(b);
}

/* The wire keeps pointing at it: a retry sends it again, and the
 * taker keeps it until the request is over (llm.h). */
static char *
hb_take_body(void *p, size_t *shared, uint64_t *tag)
{
	struct hb *b = p;
	const struct llm_body_info *in = &b->wire.body_info;

	*shared = 0;
	*tag = 0;
	if (b->wire.body == NULL || b->wire.body_kept)
		return NULL;
	b->wire.body_kept = 1;
	/* what it shares with the body built before it counts for the
	 * taker only when that is the one this backend handed on last */
	if (in->ref != 0 && in->ref == b->taken)
		*shared = in->shared;
	*tag = in->id;
	b->taken = in->id;
	return b->wire.body;
}

const struct llm_backend llm_http_backend = {
	hb_open, hb_request, hb_cancel, hb_close, NULL, hb_take_body,
};
