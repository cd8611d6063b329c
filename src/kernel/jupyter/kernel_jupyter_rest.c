/* kernel_jupyter_rest: the Jupyter server's REST calls (see
 * kernel_jupyter_rest.h). */
#include "terp/kernel_jupyter_rest.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/util.h"

static void
free_req(struct jreq *q)
{
	struct jreq **pp;

	for (pp = &q->r->reqs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	}
	krest_clear(&q->k);
	free(q->s);
	free(q);
}

static void
on_rest_done(void *arg, struct krest *k, const struct http_result *r)
{
	struct jreq *q = arg;
	struct jrest *j = q->r;

	(void)k;
	/* done may abandon every request (jrest_cancel): this one is
	 * left for us to free. */
	j->dispatching = q;
	q->done(q->ctx, q, r);
	j->dispatching = NULL;
	free_req(q);
}

struct jreq *
jrest_call(struct jrest *j, const char *method, const char *path, const char *body,
    size_t max, jreq_done done)
{
	return jrest_call_for(j, j->owner, method, path, body, max, done);
}

struct jreq *
jrest_call_for(struct jrest *j, void *ctx, const char *method, const char *path,
    const char *body, size_t max, jreq_done done)
{
	static const struct krest_cbs cbs = { .done = on_rest_done };
	struct krest_req req;
	struct jreq *q;
	char *url, *err = NULL;
	int rc;

	q = xcalloc(1, sizeof *q);
	q->r = j;
	q->ctx = ctx;
	q->done = done;
	q->i = j->gen;	/* an answer for an abandoned sequence is ignored */
	krest_init(&q->k, j->loop, j->http, &cbs, q);
	url = xasprintf("%s%s", j->base, path);
	memset(&req, 0, sizeof req);
	req.method = method;
	req.url = url;
	req.auth = j->auth;
	req.body = body;
	req.max = max;
	req.connect_timeout_ms = j->connect_timeout_ms;
	req.max_error_body = 16384;
	req.ca_file = j->ca_file;
	q->next = j->reqs;
	j->reqs = q;
	rc = krest_send(&q->k, &req, &err);
	free(url);
	if (rc < 0) {
		/* Only a malformed URL gets here; checked at start. */
		struct http_result r;
		memset(&r, 0, sizeof r);
		r.curl_code = 3;
		r.error = err;
		j->dispatching = q;
		done(ctx, q, &r);
		j->dispatching = NULL;
		free_req(q);
		free(err);
		return NULL;
	}
	return q;
}

void
jrest_cancel(struct jrest *j)
{
	struct jreq **pp = &j->reqs, *q;

	while ((q = *pp) != NULL) {
		if (q == j->dispatching) {
			pp = &q->next;
			continue;
		}
		free_req(q);
	}
}

/* 1 when r is the server refusing our credentials. */
static int
auth_refused(const struct http_result *r)
{
	return r->status == 401 || r->status == 403 ||
	    ((r->status == 301 || r->status == 302 || r->status == 303 || r->status == 307) &&
	    r->location != NULL && strstr(r->location, "login") != NULL);
}

char *
jrest_problem(const struct jrest *j, const struct http_result *r, const char *what)
{
	if (r->curl_code != 0 && r->status == 0)
		return xasprintf("cannot reach the Jupyter server at %s: %s", j->where,
		    r->error ? r->error : "no answer");
	if (auth_refused(r))
		return xstrdup("the Jupyter server refused the token: check JUPYTER_TOKEN (or --sandbox-token-env, --sandbox-token-cmd)");
	if (r->status >= 300 && r->status < 400)
		return xasprintf("the Jupyter server at %s redirected %s (HTTP %ld): is the URL's base path right?",
		    j->where, what, r->status);
	if (r->status < 200 || r->status >= 300)
		return xasprintf("the Jupyter server answered %s with HTTP %ld", what, r->status);
	if (r->curl_code != 0)
		return xasprintf("%s failed: %s", what, r->error ? r->error : "transfer error");
	return NULL;
}

char *
jrest_path(const char *prefix, const char *path, const char *query)
{
	struct buf b;
	const char *p = path, *e;

	buf_init(&b, 1u << 20);
	buf_adds(&b, prefix);
	while (p != NULL && *p != '\0') {
		char *esc;
		e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		esc = curl_easy_escape(NULL, p, (int)n);
		if (esc == NULL)
			fatal("out of memory (curl_easy_escape)");
		buf_adds(&b, esc);
		curl_free(esc);
		if (e == NULL)
			break;
		buf_addc(&b, '/');
		p = e + 1;
	}
	if (query != NULL)
		buf_adds(&b, query);
	return buf_take(&b);
}

void
jrest_free(struct jrest *j)
{
	jrest_cancel(j);
	http_free(j->http);
	free(j->base);
	free(j->where);
	free(j->auth);
	j->http = NULL;
	j->base = j->where = j->auth = NULL;
}
