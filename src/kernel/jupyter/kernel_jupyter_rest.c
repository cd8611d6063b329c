/* kernel_jupyter_rest: the Jupyter server's REST calls (see
 * kernel_jupyter_rest.h). */
#include "terp/kernel_jupyter_rest.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/util.h"

static int
on_rest_body(void *arg, const char *p, size_t n)
{
	struct jreq *q = arg;

	if (buf_add(&q->body, p, n) < 0) {
		q->over = 1;
		return 1;
	}
	return 0;
}

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
	buf_free(&q->body);
	free(q->s);
	free(q);
}

static void
on_rest_done(void *arg, const struct http_result *r)
{
	struct jreq *q = arg;
	struct jrest *j = q->r;

	q->x = NULL;
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
	static const struct http_cbs cbs = { on_rest_body, on_rest_done };
	const char *hdrs[5];
	struct http_req req;
	struct jreq *q;
	char *url, *err = NULL;
	int nh = 0;

	q = xcalloc(1, sizeof *q);
	q->r = j;
	q->ctx = ctx;
	q->done = done;
	q->i = j->gen;	/* an answer for an abandoned sequence is ignored */
	buf_init(&q->body, max);
	if (j->auth != NULL)
		hdrs[nh++] = j->auth;
	hdrs[nh++] = "Accept: application/json";
	if (body != NULL)
		hdrs[nh++] = "Content-Type: application/json";
	hdrs[nh] = NULL;
	url = xasprintf("%s%s", j->base, path);
	memset(&req, 0, sizeof req);
	req.method = method;
	req.url = url;
	req.headers = hdrs;
	req.body = body;
	req.body_len = body ? strlen(body) : 0;
	req.connect_timeout_ms = j->connect_timeout_ms;
	req.max_error_body = 16384;
	req.ca_file = j->ca_file;
	q->next = j->reqs;
	j->reqs = q;
	q->x = http_post(j->http, &req, &cbs, q, &err);
	free(url);
	if (q->x == NULL) {
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
		if (q->x != NULL)
			http_cancel(q->x);
		q->x = NULL;
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
