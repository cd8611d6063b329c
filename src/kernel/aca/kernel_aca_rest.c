/* kernel_aca_rest: the session pool's requests (see kernel_aca_rest.h):
 * one in flight as a kernel_rest.h call, its token from
 * kernel_aca_token.c, a 429 waited out by kernel_rest (the pool's
 * Retry-After or a doubling backoff) and sent again with the token of
 * the moment, a 401 retried once with a fresh token, every failure one
 * line with the fix. */
#include "terp/kernel_aca_rest.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/json_text.h"
#include "terp/kernel_aca_parse.h"
#include "terp/kernel_rest.h"
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
	int		 auth_retried;
	int		 waiting_token;
	/* The call: k.body a 2xx answer (not for downloads), k.over past
	 * its bound, k.tries the 429s waited out. */
	struct krest	 k;
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

	krest_clear(&r->k);
	free(r->url);
	if (r->body != NULL)
		free(r->body);
	r->url = r->body = NULL;
	r->kind = 0;
	r->active = r->get = r->has_part = r->auth_retried = r->waiting_token = 0;
	r->body_len = 0;
	memset(&r->part, 0, sizeof r->part);
	r->idle_ms = 0;
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
		if (a->rq.k.over) {
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
		    "after %d tries; wait a minute and try again", a->rq.k.tries);
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
rq_bytes(void *arg, const char *p, size_t n)
{
	struct aca_rest *a = arg;

	return a->cb.download(a->arg, p, n);
}

static void
rq_retrying(void *arg, int64_t ms)
{
	struct aca_rest *a = arg;
	char *msg = xasprintf("the session pool is busy (429); trying again in %.0f s",
	    (double)ms / 1000.0);

	a->cb.retrying(a->arg, msg);
	free(msg);
}

static void
rq_again(void *arg)
{
	rq_send(arg);
}

static void
rq_done(void *arg, struct krest *k, const struct http_result *hr)
{
	struct aca_rest *a = arg;
	struct rq *r = &a->rq;
	struct aca_rq_end e = { .status = hr->status };
	char *err = NULL;

	if (hr->status == 401 && a->o->token_cmd != NULL && !r->auth_retried) {
		/* Revoked or expired early: one fresh token, one more try. */
		r->auth_retried = 1;
		aca_token_forget(a->tok);
		buf_reset(&k->body);
		rq_send(a);
		return;
	}
	if (!krest_ok(hr)) {
		e.timed_out = hr->timed_out && !k->over;
		err = rq_error(a, hr);
	}
	e.err = err;
	e.body = k->body.data ? k->body.data : "";
	e.len = k->body.len;
	r->active = 0;
	a->cb.done(a->arg, &e);
	free(err);
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
	struct krest_req req;
	char *auth, *err = NULL;
	const char *tok;
	int rc;

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
	memset(&req, 0, sizeof req);
	req.method = r->get ? "GET" : NULL;
	req.url = r->url;
	req.auth = auth;
	req.body = r->body;
	req.part = r->has_part ? &r->part : NULL;
	req.raw = r->kind == ACA_RQ_DOWNLOAD;
	req.max = r->kind == ACA_RQ_LIST ? ACA_LIST_BODY_MAX : a->o->response_max;
	req.max_error_body = ERR_BODY_MAX;
	req.connect_timeout_ms = a->o->connect_timeout_ms;
	req.idle_timeout_ms = r->idle_ms;
	rc = krest_send(&r->k, &req, &err);
	explicit_bzero(auth, strlen(auth));
	free(auth);
	if (rc < 0) {
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
	rq_send(a);
}

struct aca_rest *
aca_rest_new(struct loop *l, const struct aca_opts *o, const struct aca_rest_cbs *cbs,
    void *arg)
{
	static const struct krest_cbs kcb = { rq_done, rq_bytes, rq_retrying, rq_again };
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
	krest_init(&a->rq.k, l, a->http, &kcb, a);
	a->rq.k.max_retries = o->max_retries;
	a->rq.k.retry_max_ms = o->retry_max_ms;
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
