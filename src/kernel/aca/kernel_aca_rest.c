/* kernel_aca_rest: the session pool's requests (see kernel_aca_rest.h):
 * one in flight, its token from kernel_aca_token.c, a 429 retried after
 * the pool's Retry-After (retry_after.c) or a doubling backoff, a 401
 * retried once with a fresh token, every failure one line with the fix. */
#include "terp/kernel_aca_rest.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "terp/buf.h"
#include "terp/json_text.h"
#include "terp/kernel_aca_parse.h"
#include "terp/retry_after.h"
#include "terp/util.h"

#define ERR_BODY_MAX	(64 * 1024)	/* kept of an error answer */

/* The one request in flight. */
struct rq {
	enum aca_rq_kind kind;
	int		 active;
	char		*url;
	int		 get;
	char		*body;
	size_t		 body_len;
	int		 has_part;
	struct http_part part;
	int64_t		 idle_ms;
	int		 tries;		/* 429s so far */
	int		 auth_retried;
	int		 waiting_token;
	struct buf	 resp;		/* a 2xx body (not for downloads) */
	int		 too_big;
	struct http_xfer *x;
	uint64_t	 retry_timer;
};

struct aca_rest {
	struct loop		*loop;
	struct http		*http;
	const struct aca_opts	*o;
	struct aca_token	*tok;
	struct aca_rest_cbs	 cb;
	void			*arg;
	struct rq		 rq;
};

static void rq_fail(struct aca_rest *a, const char *err);
static void rq_send(struct aca_rest *a);

void
aca_rest_clear(struct aca_rest *a)
{
	struct rq *r = &a->rq;

	if (r->x != NULL)
		http_cancel(r->x);
	loop_timer_cancel(a->loop, r->retry_timer);
	free(r->url);
	if (r->body != NULL)
		free(r->body);
	buf_free(&r->resp);
	memset(r, 0, sizeof *r);
}

/* The token command ended: the request that waited for it goes on. */
static void
tok_done(void *arg, char *err)
{
	struct aca_rest *a = arg;

	if (a->rq.active && a->rq.waiting_token) {
		a->rq.waiting_token = 0;
		if (err != NULL)
			rq_fail(a, err);
		else
			rq_send(a);
	}
	free(err);
}

/* The pool's own account of an error, cut and made safe to show. */
static char *
pool_says(const char *body, size_t len)
{
	cJSON *j;
	const char *m = NULL, *c = NULL;
	char *out = NULL, *both;

	if (body == NULL || len == 0)
		return NULL;
	j = cJSON_ParseWithLength(body, len);
	if (cJSON_IsObject(j)) {
		cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
		if (!cJSON_IsObject(e))
			e = j;
		m = json_str(e, "message");
		c = json_str(e, "code");
		if (m == NULL)
			m = json_str(j, "message");
	}
	if (m != NULL || c != NULL) {
		both = xasprintf("%s%s%s", c ? c : "", c && m ? ": " : "", m ? m : "");
		out = aca_redact_line(both, strlen(both), NULL);
		free(both);
	}
	cJSON_Delete(j);
	if (out != NULL && *out == '\0') {
		free(out);
		out = NULL;
	}
	return out;
}

/* One line for a failed request, with the fix. */
static char *
rq_error(struct aca_rest *a, const struct http_result *r)
{
	char *says, *msg, *fix;

	if (r->status == 0 || (r->curl_code != 0 && r->status >= 200 && r->status < 300)) {
		if (a->rq.too_big) {
			char b[32];
			fmt_bytes(b, sizeof b, a->rq.kind == ACA_RQ_LIST ? ACA_LIST_BODY_MAX :
			    a->o->response_max);
			return xasprintf("the session pool's answer is over %s; not read", b);
		}
		if (r->timed_out)
			return xasprintf("the session pool did not answer in %lld s",
			    (long long)(a->rq.idle_ms / 1000));
		return xasprintf("cannot reach the session pool (%s); check the endpoint "
		    "and the network", r->error ? r->error : "no answer");
	}
	says = pool_says(r->body, r->body_len);
	switch (r->status) {
	case 401:
		if (a->o->audience != NULL && *aca_token_audience(a->tok) != '\0' &&
		    strcmp(aca_token_audience(a->tok), a->o->audience) != 0)
			fix = xasprintf("the token is for %s, the pool wants %s",
			    aca_token_audience(a->tok),
			    a->o->audience);
		else if (a->o->audience != NULL)
			fix = xasprintf("get a token for the audience %s (az account "
			    "get-access-token --resource %s)", a->o->audience, a->o->audience);
		else
			fix = xstrdup("get a token for the session pools' audience (the "
			    "--resource of az account get-access-token), and check that it "
			    "has not expired");
		msg = xasprintf("the session pool refused the token (401): %s", fix);
		free(fix);
		break;
	case 403:
		msg = xstrdup("the session pool denied access (403): your identity needs the "
		    "\"Azure ContainerApps Session Executor\" role on the pool");
		break;
	case 404:
		msg = xstrdup("the session pool answered 404: the pool is full (all its "
		    "sessions are allocated) or the endpoint is wrong (az containerapp "
		    "sessionpool show --query properties.poolManagementEndpoint)");
		break;
	case 413:
		msg = xasprintf("the session pool refused the upload (413): the file is over "
		    "its upload limit (%llu MiB)", (unsigned long long)(a->o->upload_max >> 20));
		break;
	case 429:
		msg = xasprintf("the session pool is throttling requests (429) and still was "
		    "after %d tries; wait a minute and try again", a->rq.tries);
		break;
	default:
		if (r->status >= 500)
			msg = xasprintf("the session pool failed (HTTP %ld%s%s); try again later",
			    r->status, says ? ": " : "", says ? says : "");
		else
			msg = xasprintf("the session pool answered HTTP %ld%s%s", r->status,
			    says ? ": " : "", says ? says : "");
		break;
	}
	free(says);
	return msg;
}

static int
rq_body(void *arg, const char *p, size_t n)
{
	struct aca_rest *a = arg;
	struct rq *r = &a->rq;

	if (r->kind == ACA_RQ_DOWNLOAD)
		return a->cb.download(a->arg, p, n);
	if (buf_add(&r->resp, p, n) < 0) {
		r->too_big = 1;
		return 1;
	}
	return 0;
}

static void rq_on_retry(struct loop *l, void *arg);

static void
rq_done(void *arg, const struct http_result *hr)
{
	struct aca_rest *a = arg;
	struct rq *r = &a->rq;
	struct aca_rq_end e = { .status = hr->status };
	char *err = NULL;

	r->x = NULL;
	if (hr->status == 429 && r->tries < a->o->max_retries) {
		int64_t ms = retry_after_ms(hr->retry_after_ms, hr->retry_after,
		    (int64_t)time(NULL));
		char *msg;

		r->tries++;
		if (ms < 0)
			ms = 1000LL << (r->tries - 1);
		if (ms > a->o->retry_max_ms)
			ms = a->o->retry_max_ms;
		buf_reset(&r->resp);
		r->too_big = 0;
		msg = xasprintf("the session pool is busy (429); trying again in %.0f s",
		    (double)ms / 1000.0);
		r->retry_timer = loop_timer_add(a->loop, ms, rq_on_retry, a);
		a->cb.retrying(a->arg, msg);
		free(msg);
		return;
	}
	if (hr->status == 401 && a->o->token_cmd != NULL && !r->auth_retried) {
		/* Revoked or expired early: one fresh token, one more try. */
		r->auth_retried = 1;
		aca_token_forget(a->tok);
		buf_reset(&r->resp);
		rq_send(a);
		return;
	}
	if (hr->curl_code != 0 || hr->status < 200 || hr->status >= 300) {
		e.timed_out = hr->timed_out && !r->too_big;
		err = rq_error(a, hr);
	}
	e.err = err;
	e.body = r->resp.data ? r->resp.data : "";
	e.len = r->resp.len;
	r->active = 0;
	a->cb.done(a->arg, &e);
	free(err);
}

static void
rq_on_retry(struct loop *l, void *arg)
{
	struct aca_rest *a = arg;
	(void)l;

	a->rq.retry_timer = 0;
	rq_send(a);
}

static void
rq_fail(struct aca_rest *a, const char *err)
{
	struct aca_rq_end e = { .err = err, .body = "" };

	a->rq.active = 0;
	a->cb.done(a->arg, &e);
}

/* Sends a->rq (again): with a token, or after getting one. */
static void
rq_send(struct aca_rest *a)
{
	struct rq *r = &a->rq;
	struct http_req req;
	static const struct http_cbs cbs = { rq_body, rq_done };
	const char *hdrs[4];
	char *auth, *err = NULL;
	const char *tok;
	int nh = 0;

	if ((tok = aca_token_get(a->tok, &err)) == NULL) {
		if (err == NULL) {
			r->waiting_token = 1;	/* tok_done goes on */
			return;
		}
		rq_fail(a, err);
		free(err);
		return;
	}
	auth = xasprintf("Authorization: Bearer %s", tok);
	hdrs[nh++] = auth;
	if (!r->get && !r->has_part)
		hdrs[nh++] = "Content-Type: application/json";
	if (r->kind != ACA_RQ_DOWNLOAD)
		hdrs[nh++] = "Accept: application/json";
	hdrs[nh] = NULL;
	memset(&req, 0, sizeof req);
	req.url = r->url;
	req.headers = hdrs;
	req.body = r->body;
	req.body_len = r->body_len;
	req.connect_timeout_ms = a->o->connect_timeout_ms;
	req.idle_timeout_ms = r->idle_ms;
	req.max_error_body = ERR_BODY_MAX;
	req.method = r->get ? "GET" : NULL;
	req.part = r->has_part ? &r->part : NULL;
	r->x = http_post(a->http, &req, &cbs, a, &err);
	explicit_bzero(auth, strlen(auth));
	free(auth);
	if (r->x == NULL) {
		rq_fail(a, err);
		free(err);
		return;
	}
	if (a->cb.sent != NULL)
		a->cb.sent(a->arg);
}

void
aca_rest_start(struct aca_rest *a, enum aca_rq_kind kind, char *url, char *body,
    const struct http_part *part, int64_t idle_ms)
{
	struct rq *r = &a->rq;

	aca_rest_clear(a);
	if (part != NULL) {
		r->has_part = 1;
		r->part = *part;
	}
	r->active = 1;
	r->kind = kind;
	r->url = url;
	r->body = body;
	r->body_len = body ? strlen(body) : 0;
	r->get = kind == ACA_RQ_LIST || kind == ACA_RQ_DOWNLOAD;
	r->idle_ms = idle_ms;
	buf_init(&r->resp, kind == ACA_RQ_LIST ? ACA_LIST_BODY_MAX : a->o->response_max);
	rq_send(a);
}

struct aca_rest *
aca_rest_new(struct loop *l, const struct aca_opts *o, const struct aca_rest_cbs *cbs,
    void *arg)
{
	struct aca_rest *a = xcalloc(1, sizeof *a);
	struct aca_token_opts to = {
		.cmd = o->token_cmd, .env = o->token_env,
		.lifetime_ms = o->token_lifetime_ms, .timeout_ms = o->token_timeout_ms,
		.wallclock = o->wallclock,
	};

	a->loop = l;
	a->o = o;
	a->cb = *cbs;
	a->arg = arg;
	a->tok = aca_token_new(l, &to, tok_done, a);
	a->http = http_new(l);
	return a;
}

void
aca_rest_free(struct aca_rest *a)
{
	if (a == NULL)
		return;
	aca_rest_clear(a);
	http_free(a->http);
	aca_token_free(a->tok);
	free(a);
}
