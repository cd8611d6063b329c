/* llm: the provider table and what every provider shares: the request
 * state machine over http.c and sse.c, retries with exponential backoff
 * and jitter that honour Retry-After, and one-line error messages. The
 * providers themselves (llm_openai.c, llm_anthropic.c) are pure. */
#include "terp/llm.h"

#include <curl/curl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "terp/buf.h"
#include "terp/http.h"
#include "terp/llm_provider.h"
#include "terp/sanitize.h"
#include "terp/sse.h"
#include "terp/util.h"

#define SSE_LINE_MAX	(8 * 1024 * 1024)
#define SSE_EVENT_MAX	(8 * 1024 * 1024)
#define RETRY_AFTER_CAP	120000	/* ms; a longer wait gives up */
#define BACKOFF_BASE	500
#define BACKOFF_MAX	8000

const char llm_tool_description[] =
    "Run Python code in the notebook's persistent sandboxed Python session "
    "(like a Jupyter kernel: variables, imports and loaded data survive "
    "between calls). Data files are under /workspace/data (read-only); save "
    "charts and files to /workspace/out. Returns stdout, stderr, the value "
    "of the last expression and any traceback. There is no network access.";
const char llm_code_description[] = "The Python code to run.";

static const struct {
	const char			*name;
	const struct llm_provider	*p;	/* NULL: the demo */
} providers[] = {
	{ "openai", &llm_openai_provider },
	{ "azure", &llm_azure_provider },
	{ "anthropic", &llm_anthropic_provider },
	{ "ollama", &llm_ollama_provider },
	{ "demo", NULL },
};

/* One attempt at a request: its transfer, parser and decoder. */
struct attempt {
	struct llm		*m;
	struct http_xfer	*x;
	struct sse		*sse;
	void			*dec;
	int			 in_feed;	/* inside sse_feed */
	int			 dead;		/* cancelled while in_feed */
	int			 ended;		/* the decoder said END */
	int			 failed;	/* the decoder said ERROR */
	char			 carry[4];	/* an incomplete UTF-8 tail */
	size_t			 ncarry;
};

struct llm {
	struct loop			*loop;
	struct http			*http;
	struct llm_config		 cfg;
	const struct llm_provider	*prov;
	struct llm_demo			*demo;
	struct llm_sink			 sink;
	int				 busy;
	struct llm_cbs			 cbs;
	void				*arg;
	struct llm_wire			 wire;
	struct attempt			*a;
	int				 retries;	/* taken so far */
	int				 delivered;	/* the caller saw output */
	int				 sent;
	uint64_t			 timer;		/* start or retry */
	struct llm_cbs			 demo_cbs;
};

/* Helpers shared with the providers. */

void
llm_wire_free(struct llm_wire *w)
{
	free(w->url);
	for (char **h = w->headers; h != NULL && *h != NULL; h++)
		free(*h);
	free(w->headers);
	free(w->body);
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
	if (vasprintf(&s, fmt, ap) < 0)
		fatal("out of memory");
	va_end(ap);
	while (w->headers != NULL && w->headers[n] != NULL)
		n++;
	w->headers = xrealloc(w->headers, (n + 2) * sizeof *w->headers);
	w->headers[n] = s;
	w->headers[n + 1] = NULL;
}

void
llm_one_line(char *s, size_t max)
{
	char *w = s;
	int space = 0;

	for (char *r = s; *r != '\0'; r++) {
		unsigned char c = (unsigned char)*r;
		if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
			space = w != s;
			continue;
		}
		if (c < 0x20 || c == 0x7f)
			continue;
		if (space) {
			*w++ = ' ';
			space = 0;
		}
		*w++ = (char)c;
	}
	*w = '\0';
	if (strlen(s) > max) {
		size_t n = utf8_complete_prefix(s, max - 3);
		memcpy(s + n, "...", 4);
	}
}

int64_t
llm_retry_after_ms(const char *retry_after_ms, const char *retry_after,
    int64_t now)
{
	char *end;
	double v;

	if (retry_after_ms != NULL) {
		v = strtod(retry_after_ms, &end);
		if (end != retry_after_ms && *end == '\0' && v >= 0 && v < 1e12)
			return (int64_t)v;
	}
	if (retry_after != NULL) {
		struct tm tm;
		v = strtod(retry_after, &end);
		if (end != retry_after && *end == '\0' && v >= 0 && v < 1e9)
			return (int64_t)(v * 1000);
		memset(&tm, 0, sizeof tm);
		end = strptime(retry_after, "%a, %d %b %Y %H:%M:%S GMT", &tm);
		if (end != NULL && *end == '\0') {
			int64_t t = (int64_t)timegm(&tm);
			return t > now ? (t - now) * 1000 : 0;
		}
	}
	return -1;
}

static const char *
jstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A code of any JSON type as text (new string), or NULL. */
static char *
jcode(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (cJSON_IsString(v))
		return xstrdup(v->valuestring);
	if (cJSON_IsNumber(v))
		return xasprintf("%ld", (long)v->valuedouble);
	return NULL;
}

char *
llm_error_body_message(const char *body, size_t len, char **type)
{
	cJSON *j = body != NULL && len > 0 ? cJSON_ParseWithLength(body, len) : NULL;
	char *msg = NULL;

	*type = NULL;
	if (cJSON_IsObject(j)) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
		const cJSON *det = cJSON_GetObjectItemCaseSensitive(j, "detail");
		if (cJSON_IsObject(e)) {
			if (jstr(e, "message"))
				msg = xstrdup(jstr(e, "message"));
			*type = jcode(e, "type");
			if (*type == NULL)
				*type = jcode(e, "code");
			else {
				/* insufficient_quota may hide in code. */
				char *c = jcode(e, "code");
				if (c != NULL && strcmp(c, "insufficient_quota") == 0) {
					free(*type);
					*type = c;
				} else
					free(c);
			}
		} else if (cJSON_IsString(e)) {
			msg = xstrdup(e->valuestring);
		} else if (jstr(j, "message")) {
			msg = xstrdup(jstr(j, "message"));	/* flat vLLM */
			*type = jcode(j, "type");
		} else if (cJSON_IsString(det)) {
			msg = xstrdup(det->valuestring);
		} else if (det != NULL) {
			msg = cJSON_PrintUnformatted(det);
		}
	}
	cJSON_Delete(j);
	if (msg == NULL && body != NULL && len > 0) {
		/* Text or HTML from a proxy: its <title>, else the start. */
		const char *t = memmem(body, len, "<title>", 7);
		if (t != NULL) {
			const char *e = memmem(t, len - (size_t)(t - body), "</title>", 8);
			if (e != NULL)
				msg = xstrndup(t + 7, (size_t)(e - t - 7));
		}
		if (msg == NULL)
			msg = xstrndup(body, len < 300 ? len : 300);
	}
	if (msg == NULL)
		msg = xstrdup("no details");
	/* Whitespace to spaces and controls out, then the rest made safe
	 * (invalid UTF-8, C1 controls, bidi overrides). */
	llm_one_line(msg, 300);
	{
		char *clean = sanitize_str(msg, strlen(msg), 0);
		free(msg);
		msg = clean;
	}
	return msg;
}

static const char *
status_name(long status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 413: return "Payload Too Large";
	case 422: return "Unprocessable Entity";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 529: return "Overloaded";
	}
	return "HTTP error";
}

char *
llm_status_message(const struct llm_config *cfg, long status, const char *body,
    size_t len)
{
	char *type = NULL, *msg = llm_error_body_message(body, len, &type), *r;
	const char *prov = cfg->provider ? cfg->provider : "";
	const char *model = cfg->model ? cfg->model : "";

	if (status == 401)
		r = xasprintf("401 Unauthorized: the API key was rejected by %s (%s)",
		    prov, msg);
	else if (status == 404 && strcmp(prov, "azure") == 0)
		r = xasprintf("404 Not Found: no deployment '%s' at that endpoint, "
		    "or a wrong api-version (%s)", model, msg);
	else if (status == 404)
		r = xasprintf("404 Not Found: %s has no model '%s' at that URL (%s)",
		    prov, model, msg);
	else if (status == 429 && type != NULL &&
	    strcmp(type, "insufficient_quota") == 0)
		r = xasprintf("429 Too Many Requests: quota exhausted; check the "
		    "account's plan and billing (%s)", msg);
	else
		r = xasprintf("%ld %s: %s", status, status_name(status), msg);
	free(msg);
	free(type);
	llm_one_line(r, 400);
	return r;
}

/* Retry policy. */

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

/* The request state machine. */

static void start_attempt(struct loop *l, void *arg);

static void
attempt_free(struct attempt *a)
{
	if (a == NULL)
		return;
	if (a->x != NULL)
		http_cancel(a->x);
	sse_free(a->sse);
	if (a->dec != NULL)
		a->m->prov->dec_free(a->dec);
	free(a);
}

/* Detaches the running attempt; frees it unless it is inside its own
 * parser (then the body callback frees it when it returns). */
static void
attempt_drop(struct llm *m)
{
	struct attempt *a = m->a;

	m->a = NULL;
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
reset(struct llm *m)
{
	loop_timer_cancel(m->loop, m->timer);
	m->timer = 0;
	attempt_drop(m);
	llm_wire_free(&m->wire);
	m->busy = 0;
}

static void
fail(struct llm *m, const char *msg)
{
	struct llm_cbs cbs = m->cbs;
	void *arg = m->arg;
	char *copy = xstrdup(msg);

	reset(m);
	if (cbs.error != NULL)
		cbs.error(arg, copy);
	free(copy);
}

static void
succeed(struct llm *m, const char *stop)
{
	struct llm_cbs cbs = m->cbs;
	void *arg = m->arg;
	char *copy = xstrdup(stop ? stop : "stop");

	reset(m);
	if (cbs.done != NULL)
		cbs.done(arg, copy);
	free(copy);
}

static void
notice(struct llm *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
notice(struct llm *m, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		fatal("out of memory");
	va_end(ap);
	if (m->cbs.notice != NULL)
		m->cbs.notice(m->arg, s);
	free(s);
}

/* Schedules another attempt after why, or fails with why when the
 * retries are used up. wait_ms < 0: the backoff decides. */
static void
retry_or_fail(struct llm *m, const char *why, int64_t wait_ms)
{
	attempt_drop(m);
	if (m->retries >= m->cfg.max_retries) {
		char *s = m->retries > 0 ?
		    xasprintf("%s (gave up after %d %s)", why, m->retries,
		    m->retries == 1 ? "retry" : "retries") : xstrdup(why);
		fail(m, s);
		free(s);
		return;
	}
	if (wait_ms > RETRY_AFTER_CAP) {
		char *s = xasprintf("%s; the server asks to wait %.0f s, giving up",
		    why, (double)wait_ms / 1000);
		fail(m, s);
		free(s);
		return;
	}
	if (wait_ms < 0)
		wait_ms = backoff_ms(m->retries);
	m->retries++;
	m->timer = loop_timer_add(m->loop, wait_ms, start_attempt, m);
	/* The notice may cancel the request, which also drops the timer. */
	notice(m, "%s; retrying in %.1f s (%d/%d)", why, (double)wait_ms / 1000,
	    m->retries, m->cfg.max_retries);
}

static void
sink_text(void *arg, const char *s, size_t n)
{
	struct attempt *a = arg;
	struct llm *m = a->m;
	char tmp[256], *p = tmp;
	size_t len = a->ncarry + n, ok;

	if (a->dead || m->a != a)
		return;
	/* Hold back an incomplete UTF-8 sequence for the next delta. */
	if (len > sizeof tmp)
		p = xmalloc(len);
	memcpy(p, a->carry, a->ncarry);
	memcpy(p + a->ncarry, s, n);
	ok = utf8_complete_prefix(p, len);
	if (len - ok > 3)
		ok = len;	/* not a cut sequence: pass it on as is */
	a->ncarry = len - ok;
	memcpy(a->carry, p + ok, a->ncarry);
	if (ok > 0) {
		m->delivered = 1;
		if (m->cbs.text != NULL)
			m->cbs.text(m->arg, p, ok);
	}
	if (p != tmp)
		free(p);
}

static void
flush_carry(struct attempt *a)
{
	struct llm *m = a->m;

	if (a->ncarry > 0 && m->cbs.text != NULL)
		m->cbs.text(m->arg, a->carry, a->ncarry);
	a->ncarry = 0;
}

static void
sink_tool_call(void *arg, const char *id, const char *name, const char *args)
{
	struct attempt *a = arg;
	struct llm *m = a->m;

	if (a->dead || m->a != a)
		return;
	flush_carry(a);
	m->delivered = 1;
	if (m->cbs.tool_call != NULL)
		m->cbs.tool_call(m->arg, id, name, args);
}

static void
sink_usage(void *arg, const struct usage *u)
{
	struct attempt *a = arg;
	struct llm *m = a->m;

	if (a->dead || m->a != a)
		return;
	if (m->cbs.usage != NULL)
		m->cbs.usage(m->arg, u);
}

static int
on_sse(void *arg, const struct sse_event *ev)
{
	struct attempt *a = arg;
	enum llm_dec_status st;

	if (a->ended || a->failed)
		return 1;
	st = a->m->prov->dec_event(a->dec, ev->type, ev->data, ev->len);
	if (a->dead)
		return 1;
	if (st == LLM_DEC_END)
		a->ended = 1;
	else if (st == LLM_DEC_ERROR) {
		a->failed = 1;
		return 1;
	}
	return 0;
}

static int
on_body(void *arg, const char *p, size_t n)
{
	struct attempt *a = arg;
	int r;

	if (a->ended || a->failed)
		return 0;	/* the rest (after [DONE]) does not matter */
	a->in_feed = 1;
	r = sse_feed(a->sse, p, n);
	a->in_feed = 0;
	if (a->dead) {
		a->x = NULL;	/* http.c frees the cancelled transfer */
		attempt_free(a);
		return 1;
	}
	if (r < 0) {
		/* Too big: recorded as a decoder-level failure. */
		a->failed = 2;
		return 1;
	}
	return a->failed ? 1 : 0;
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

static void
on_done(void *arg, const struct http_result *r)
{
	struct attempt *a = arg;
	struct llm *m = a->m;
	const struct llm_provider *p = m->prov;

	a->x = NULL;	/* http.c frees it after this call */
	if (r->status >= 200 && r->status < 300) {
		/* Callbacks below may cancel: guard a as on_body does. */
		a->in_feed = 1;
		if (!a->ended && !a->failed && r->curl_code == 0) {
			/* Clean EOF: flush an event without its blank line. */
			sse_finish(a->sse);
			if (!a->dead && !a->ended && !a->failed) {
				if (p->dec_eof(a->dec) == LLM_DEC_END)
					a->ended = 1;
				else
					a->failed = 1;
			}
		}
		if (!a->dead && a->ended)
			flush_carry(a);
		a->in_feed = 0;
		if (a->dead) {
			attempt_free(a);
			return;
		}
		if (a->ended) {
			succeed(m, p->dec_stop_reason(a->dec));
			return;
		}
		if (a->failed == 2) {
			char *s = xasprintf("the model's stream broke: %s",
			    sse_error(a->sse));
			fail(m, s);
			free(s);
			return;
		}
		if (a->failed) {
			int retry = 0;
			const char *e = p->dec_error(a->dec, &retry);
			char *s = xstrdup(e);
			if (retry && !m->delivered)
				retry_or_fail(m, s, -1);
			else if (m->delivered && strstr(s, "ended before") != NULL) {
				free(s);
				s = xstrdup("the stream was cut midway; the reply "
				    "above is incomplete");
				fail(m, s);
			} else
				fail(m, s);
			free(s);
			return;
		}
		/* The connection died midway. */
		{
			char *s = xasprintf("the stream was cut midway (%s)",
			    r->error ? r->error : "connection closed");
			if (!m->delivered)
				retry_or_fail(m, s, -1);
			else {
				char *t = xasprintf("%s; the reply above is "
				    "incomplete", s);
				fail(m, t);
				free(t);
			}
			free(s);
		}
		return;
	}
	if (r->status == 0) {
		char *s = r->timed_out ? xasprintf("no answer from %s: %s",
		    m->wire.url, r->error) : xasprintf("cannot reach %s: %s",
		    m->wire.url, r->error ? r->error : "unknown error");
		llm_one_line(s, 400);
		if (transport_retryable(r->curl_code))
			retry_or_fail(m, s, -1);
		else
			fail(m, s);
		free(s);
		return;
	}
	{
		char *s = llm_status_message(&m->cfg, r->status, r->body,
		    r->body_len);
		int retry = retryable_status(r->status);
		int64_t wait = llm_retry_after_ms(r->retry_after_ms,
		    r->retry_after, (int64_t)time(NULL));

		if (r->should_retry != NULL)
			retry = strcasecmp(r->should_retry, "true") == 0;
		if (strstr(s, "quota exhausted") != NULL ||
		    (r->body && memmem(r->body, r->body_len,
		    "enforced_spend_limit", 20) != NULL))
			retry = 0;
		if (retry)
			retry_or_fail(m, s, wait);
		else
			fail(m, s);
		free(s);
	}
}

static void
start_attempt(struct loop *l, void *arg)
{
	struct llm *m = arg;
	struct attempt *a;
	struct http_req req;
	static const struct http_cbs hcbs = { on_body, on_done };
	char *err = NULL;
	(void)l;

	m->timer = 0;
	if (!m->sent) {
		m->sent = 1;
		if (m->cbs.sent != NULL)
			m->cbs.sent(m->arg, m->wire.what, m->wire.body,
			    m->wire.body_len);
		if (!m->busy)
			return;	/* cancelled from the callback */
	}
	a = xcalloc(1, sizeof *a);
	a->m = m;
	a->sse = sse_new(SSE_LINE_MAX, SSE_EVENT_MAX, on_sse, a);
	a->dec = m->prov->dec_new(&m->sink, a);
	m->a = a;
	memset(&req, 0, sizeof req);
	req.url = m->wire.url;
	req.headers = (const char *const *)m->wire.headers;
	req.body = m->wire.body;
	req.body_len = m->wire.body_len;
	req.connect_timeout_ms = m->cfg.connect_timeout_ms;
	req.idle_timeout_ms = m->cfg.idle_timeout_ms;
	req.max_error_body = 64 * 1024;
	a->x = http_post(m->http, &req, &hcbs, a, &err);
	if (a->x == NULL) {
		fail(m, err);
		free(err);
	}
}

/* The public interface. */

static void
cfg_copy(struct llm_config *d, const struct llm_config *s)
{
	*d = *s;
	d->provider = s->provider ? xstrdup(s->provider) : NULL;
	d->model = s->model ? xstrdup(s->model) : NULL;
	d->base_url = s->base_url ? xstrdup(s->base_url) : NULL;
	d->api_key = s->api_key ? xstrdup(s->api_key) : NULL;
	d->api_version = s->api_version ? xstrdup(s->api_version) : NULL;
	d->demo_script = s->demo_script ? xstrdup(s->demo_script) : NULL;
}

struct llm *
llm_new(struct loop *l, const struct llm_config *cfg, char **err)
{
	struct llm *m;
	size_t i;

	for (i = 0; i < sizeof providers / sizeof providers[0]; i++)
		if (cfg->provider && strcmp(cfg->provider, providers[i].name) == 0)
			break;
	if (i == sizeof providers / sizeof providers[0]) {
		*err = xasprintf("unknown provider '%s' (use openai, azure, "
		    "anthropic, ollama or demo)",
		    cfg->provider ? cfg->provider : "");
		return NULL;
	}
	m = xcalloc(1, sizeof *m);
	m->loop = l;
	cfg_copy(&m->cfg, cfg);
	if (m->cfg.max_retries < 0)
		m->cfg.max_retries = 0;
	m->prov = providers[i].p;
	if (m->prov == NULL) {
		m->demo = llm_demo_new(l, &m->cfg, err);
		if (m->demo == NULL) {
			llm_free(m);
			return NULL;
		}
	} else
		m->http = http_new(l);
	m->sink.text = sink_text;
	m->sink.tool_call = sink_tool_call;
	m->sink.usage = sink_usage;
	return m;
}

void
llm_free(struct llm *m)
{
	if (m == NULL)
		return;
	llm_cancel(m);
	llm_demo_free(m->demo);
	http_free(m->http);
	llm_config_free(&m->cfg);
	free(m);
}

static void
demo_text(void *arg, const char *s, size_t n)
{
	struct llm *m = arg;
	m->delivered = 1;
	if (m->cbs.text != NULL)
		m->cbs.text(m->arg, s, n);
}

static void
demo_tool_call(void *arg, const char *id, const char *name, const char *args)
{
	struct llm *m = arg;
	m->delivered = 1;
	if (m->cbs.tool_call != NULL)
		m->cbs.tool_call(m->arg, id, name, args);
}

static void
demo_usage(void *arg, const struct usage *u)
{
	struct llm *m = arg;
	if (m->cbs.usage != NULL)
		m->cbs.usage(m->arg, u);
}

static void
demo_notice(void *arg, const char *msg)
{
	struct llm *m = arg;
	if (m->cbs.notice != NULL)
		m->cbs.notice(m->arg, msg);
}

static void
demo_done(void *arg, const char *stop)
{
	struct llm *m = arg;
	succeed(m, stop);
}

static void
demo_error(void *arg, const char *msg)
{
	struct llm *m = arg;
	fail(m, msg);
}

int
llm_request(struct llm *m, const char *system, const cJSON *messages,
    const struct llm_cbs *cbs, void *arg, char **err)
{
	if (m->busy) {
		*err = xstrdup("a model request is already running");
		return -1;
	}
	m->cbs = *cbs;
	m->arg = arg;
	m->retries = 0;
	m->delivered = 0;
	m->sent = 0;
	if (m->demo != NULL) {
		m->busy = 1;
		/* The demo reports through here, so that busy is cleared
		 * before the caller hears the end. */
		memset(&m->demo_cbs, 0, sizeof m->demo_cbs);
		m->demo_cbs.text = demo_text;
		m->demo_cbs.tool_call = demo_tool_call;
		m->demo_cbs.usage = demo_usage;
		m->demo_cbs.notice = demo_notice;
		m->demo_cbs.done = demo_done;
		m->demo_cbs.error = demo_error;
		llm_demo_request(m->demo, messages, &m->demo_cbs, m);
		return 0;
	}
	if (m->prov->prepare(&m->cfg, system, messages, &m->wire, err) < 0) {
		llm_wire_free(&m->wire);
		return -1;
	}
	m->busy = 1;
	/* Callbacks only ever fire from the loop, never from here. */
	m->timer = loop_timer_add(m->loop, 0, start_attempt, m);
	return 0;
}

void
llm_cancel(struct llm *m)
{
	if (!m->busy)
		return;
	if (m->demo != NULL)
		llm_demo_cancel(m->demo);
	reset(m);
}

int
llm_busy(const struct llm *m)
{
	return m->busy;
}

const char *
llm_provider(const struct llm *m)
{
	return m->cfg.provider;
}

const char *
llm_model(const struct llm *m)
{
	return m->cfg.model ? m->cfg.model : "";
}

int
llm_set_model(struct llm *m, const char *model)
{
	if (m->busy || model == NULL || *model == '\0')
		return -1;
	free(m->cfg.model);
	m->cfg.model = xstrdup(model);
	return 0;
}
