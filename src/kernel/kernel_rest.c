/* kernel_rest: one REST call of a remote backend (see kernel_rest.h). */
#include "terp/kernel_rest.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "terp/retry_after.h"

void
krest_init(struct krest *c, struct loop *l, struct http *h, const struct krest_cbs *cb,
    void *ctx)
{
	memset(c, 0, sizeof *c);
	c->loop = l;
	c->http = h;
	c->cb = cb;
	c->ctx = ctx;
}

static int
on_bytes(void *arg, const char *p, size_t n)
{
	struct krest *c = arg;

	if (c->raw)
		return c->cb->bytes(c->ctx, p, n);
	if (buf_add(&c->body, p, n) < 0) {
		c->over = 1;
		return 1;
	}
	return 0;
}

static void
on_retry(struct loop *l, void *arg)
{
	struct krest *c = arg;
	(void)l;

	c->retry_timer = 0;
	c->cb->again(c->ctx);
}

int64_t
krest_backoff_ms(const struct http_result *r, int tries, int64_t max_ms, int64_t now)
{
	int64_t ms = retry_after_ms(r->retry_after_ms, r->retry_after, now);

	if (ms < 0)
		ms = 1000LL << (tries - 1);
	if (ms > max_ms)
		ms = max_ms;
	return ms;
}

static void
on_done(void *arg, const struct http_result *r)
{
	struct krest *c = arg;

	c->x = NULL;
	if (r->status == 429 && c->cb->again != NULL && c->tries < c->max_retries) {
		int64_t ms;

		c->tries++;
		ms = krest_backoff_ms(r, c->tries, c->retry_max_ms, (int64_t)time(NULL));
		buf_reset(&c->body);
		c->over = 0;
		c->retry_timer = loop_timer_add(c->loop, ms, on_retry, c);
		if (c->cb->retrying != NULL)
			c->cb->retrying(c->ctx, ms);
		return;
	}
	c->cb->done(c->ctx, c, r);
}

int
krest_send(struct krest *c, const struct krest_req *q, char **err)
{
	static const struct http_cbs cbs = { on_bytes, on_done };
	const char *hdrs[4];
	struct http_req req;
	int nh = 0;

	krest_cancel(c);
	buf_free(&c->body);
	buf_init(&c->body, q->max);
	c->over = 0;
	c->raw = q->raw;
	if (q->auth != NULL)
		hdrs[nh++] = q->auth;
	if (q->body != NULL && q->part == NULL)
		hdrs[nh++] = "Content-Type: application/json";
	if (!q->raw)
		hdrs[nh++] = "Accept: application/json";
	hdrs[nh] = NULL;
	memset(&req, 0, sizeof req);
	req.method = q->method;
	req.url = q->url;
	req.headers = hdrs;
	req.body = q->body;
	req.body_len = q->body ? strlen(q->body) : 0;
	req.part = q->part;
	req.connect_timeout_ms = q->connect_timeout_ms;
	req.idle_timeout_ms = q->idle_timeout_ms;
	req.max_error_body = q->max_error_body;
	req.ca_file = q->ca_file;
	c->x = http_post(c->http, &req, &cbs, c, err);
	return c->x != NULL ? 0 : -1;
}

void
krest_cancel(struct krest *c)
{
	if (c->x != NULL)
		http_cancel(c->x);
	c->x = NULL;
	loop_timer_cancel(c->loop, c->retry_timer);
	c->retry_timer = 0;
}

void
krest_clear(struct krest *c)
{
	krest_cancel(c);
	buf_free(&c->body);
	c->over = 0;
	c->tries = 0;
}

int
krest_ok(const struct http_result *r)
{
	return r->curl_code == 0 && r->status >= 200 && r->status < 300;
}

cJSON *
krest_json(const struct krest *c)
{
	if (c->over)
		return NULL;
	return cJSON_ParseWithLength(buf_str(&c->body), c->body.len);
}
