/* kernel_rest: the one REST call the remote backends share, against a
 * hostile server on 127.0.0.1 (a thread here that answers each
 * connection with a canned reply): an answer over its bound, an answer
 * that is not JSON, an error status, a 429 with and without Retry-After
 * (waited out, then sent again; past the policy, a plain answer), and
 * the JSON headers sent. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "terp/http.h"
#include "terp/kernel_rest.h"
#include "terp/loop.h"

#define MAXREPLY 8

/* The server: one canned reply per connection, in order; what it was
 * sent is kept (the heads of the requests). */
struct srv {
	int		 fd;
	int		 port;
	const char	*reply[MAXREPLY];
	int		 nreply;
	char		 seen[MAXREPLY][4096];
	int		 served;
	pthread_t	 th;
};

static void
read_request(int c, char *out, size_t max)
{
	size_t n = 0;
	long want = -1;

	while (n + 1 < max) {
		ssize_t r = read(c, out + n, max - 1 - n);
		char *end;
		if (r <= 0)
			break;
		n += (size_t)r;
		out[n] = '\0';
		if ((end = strstr(out, "\r\n\r\n")) != NULL) {
			const char *cl = strcasestr(out, "Content-Length:");
			size_t head = (size_t)(end + 4 - out);
			want = cl != NULL && cl < end ? atol(cl + 15) : 0;
			if (n >= head + (size_t)want)
				break;
		}
	}
	out[n] = '\0';
}

static void *
serve(void *arg)
{
	struct srv *s = arg;

	for (int i = 0; i < s->nreply; i++) {
		int c = accept(s->fd, NULL, NULL);
		const char *r = s->reply[i];
		if (c < 0)
			break;
		read_request(c, s->seen[i], sizeof s->seen[i]);
		while (*r != '\0') {
			ssize_t w = send(c, r, strlen(r), MSG_NOSIGNAL);
			if (w <= 0)
				break;
			r += w;
		}
		s->served++;
		close(c);
	}
	return NULL;
}

static void
srv_start(struct srv *s)
{
	struct sockaddr_in a;
	socklen_t al = sizeof a;
	int one = 1;

	s->fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert(s->fd >= 0);
	setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert(bind(s->fd, (struct sockaddr *)&a, sizeof a) == 0);
	cr_assert(listen(s->fd, 8) == 0);
	cr_assert(getsockname(s->fd, (struct sockaddr *)&a, &al) == 0);
	s->port = ntohs(a.sin_port);
	cr_assert(pthread_create(&s->th, NULL, serve, s) == 0);
}

static void
srv_stop(struct srv *s)
{
	pthread_join(s->th, NULL);
	close(s->fd);
}

/* What the owner heard. */
struct heard {
	int		 done;
	long		 status;
	int		 ok, over, curl_code;
	cJSON		*json;
	char		 err_body[128];
	size_t		 err_len;
	int		 retrying, again;
	int64_t		 waited_ms;
	size_t		 raw_bytes;
	struct krest	*c;
	struct krest_req req;
};

static void
on_done(void *ctx, struct krest *c, const struct http_result *r)
{
	struct heard *h = ctx;

	h->done++;
	h->status = r->status;
	h->curl_code = r->curl_code;
	h->ok = krest_ok(r);
	h->over = c->over;
	h->json = krest_json(c);
	h->err_len = r->body_len;
	if (r->body != NULL)
		snprintf(h->err_body, sizeof h->err_body, "%.*s", (int)r->body_len, r->body);
}

static int
on_bytes(void *ctx, const char *p, size_t n)
{
	struct heard *h = ctx;

	(void)p;
	h->raw_bytes += n;
	return 0;
}

static void
on_retrying(void *ctx, int64_t ms)
{
	struct heard *h = ctx;

	h->retrying++;
	h->waited_ms = ms;
}

static void
on_again(void *ctx)
{
	struct heard *h = ctx;
	char *err = NULL;

	h->again++;
	cr_assert(krest_send(h->c, &h->req, &err) == 0, "%s", err ? err : "");
}

static const struct krest_cbs cbs = { on_done, on_bytes, on_retrying, on_again };

/* Runs one call against replies; h gets what the owner heard. */
static void
run(struct srv *s, struct heard *h, const char *body, int raw, size_t max, int retries)
{
	struct loop *l = loop_new();
	struct http *hc = http_new(l);
	struct krest c;
	char url[64], *err = NULL;

	srv_start(s);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/api/x", s->port);
	krest_init(&c, l, hc, &cbs, h);
	c.max_retries = retries;
	c.retry_max_ms = 50;
	h->c = &c;
	memset(&h->req, 0, sizeof h->req);
	h->req.method = body ? NULL : "GET";
	h->req.url = url;
	h->req.auth = "Authorization: token t0k";
	h->req.body = body;
	h->req.raw = raw;
	h->req.max = max;
	h->req.max_error_body = 64;
	h->req.connect_timeout_ms = 5000;
	h->req.idle_timeout_ms = 5000;
	cr_assert(krest_send(&c, &h->req, &err) == 0, "%s", err ? err : "");
	for (int i = 0; i < 2000 && h->done == 0; i++)
		loop_run_once(l, 10);
	cr_assert_eq(h->done, 1, "the call did not end");
	krest_clear(&c);
	http_free(hc);
	loop_free(l);
	srv_stop(s);
}

#define OK_HEAD "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/json\r\n"

Test(kernel_rest, json_answer_and_headers)
{
	struct srv s = { .reply = { OK_HEAD "Content-Length: 8\r\n\r\n{\"a\":17}" }, .nreply = 1 };
	struct heard h = { 0 };

	run(&s, &h, "{\"q\":1}", 0, 1024, 0);
	cr_assert(h.ok);
	cr_assert_not_null(h.json);
	cr_assert_eq(cJSON_GetObjectItem(h.json, "a")->valueint, 17);
	cJSON_Delete(h.json);
	cr_assert(strstr(s.seen[0], "POST /api/x ") == s.seen[0], "%s", s.seen[0]);
	cr_assert(strcasestr(s.seen[0], "Accept: application/json") != NULL, "%s", s.seen[0]);
	cr_assert(strcasestr(s.seen[0], "Content-Type: application/json") != NULL, "%s", s.seen[0]);
	cr_assert(strcasestr(s.seen[0], "Authorization: token t0k") != NULL, "%s", s.seen[0]);
	cr_assert(strstr(s.seen[0], "{\"q\":1}") != NULL, "%s", s.seen[0]);
}

Test(kernel_rest, oversize_answer_stops_unread)
{
	static char reply[16384];
	struct srv s = { .nreply = 1 };
	struct heard h = { 0 };
	size_t n;

	n = (size_t)snprintf(reply, sizeof reply, OK_HEAD "Content-Length: 10000\r\n\r\n[");
	memset(reply + n, '1', 9999);
	reply[n + 9999] = '\0';
	s.reply[0] = reply;
	run(&s, &h, NULL, 0, 1000, 0);
	cr_assert(h.over, "a 10 kB answer passed a 1000-byte bound");
	cr_assert_not(h.ok);
	cr_assert_null(h.json);
	cr_assert(strcasestr(s.seen[0], "Content-Type") == NULL, "a GET said Content-Type");
}

Test(kernel_rest, non_json_answer)
{
	struct srv s = { .reply = { OK_HEAD "Content-Length: 15\r\n\r\n<html>no</html>" },
	    .nreply = 1 };
	struct heard h = { 0 };

	run(&s, &h, NULL, 0, 1024, 0);
	cr_assert(h.ok);
	cr_assert_not(h.over);
	cr_assert_null(h.json, "HTML parsed as JSON");
}

Test(kernel_rest, error_status_body_bounded)
{
	static char reply[8192];
	struct srv s = { .nreply = 1 };
	struct heard h = { 0 };
	size_t n;

	n = (size_t)snprintf(reply, sizeof reply,
	    "HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\nContent-Length: 4000\r\n\r\n");
	memset(reply + n, 'x', 4000);
	reply[n + 4000] = '\0';
	s.reply[0] = reply;
	run(&s, &h, NULL, 0, 1024, 3);
	cr_assert_not(h.ok);
	cr_assert_eq(h.status, 502);
	cr_assert_eq(h.retrying, 0, "a 502 was retried");
	cr_assert(h.err_len <= 64, "error body of %zu bytes kept (bound 64)", h.err_len);
	cr_assert_null(h.json);
}

Test(kernel_rest, retry_after_waited_then_sent_again)
{
	struct srv s = { .reply = {
		"HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\nRetry-After: 0\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
		OK_HEAD "Content-Length: 7\r\n\r\n{\"b\":2}" },
	    .nreply = 3 };
	struct heard h = { 0 };

	run(&s, &h, "{}", 0, 1024, 5);
	cr_assert_eq(h.retrying, 2);
	cr_assert_eq(h.again, 2);
	cr_assert_eq(s.served, 3);
	/* the second 429 had no Retry-After: 2 s doubling, capped at 50 ms */
	cr_assert_eq(h.waited_ms, 50);
	cr_assert(h.ok);
	cr_assert_not_null(h.json);
	cr_assert_eq(cJSON_GetObjectItem(h.json, "b")->valueint, 2);
	cJSON_Delete(h.json);
}

Test(kernel_rest, too_many_429s_are_the_answer)
{
	const char *r429 = "HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\n"
	    "Retry-After: 0\r\nContent-Length: 4\r\n\r\nslow";
	struct srv s = { .reply = { r429, r429 }, .nreply = 2 };
	struct heard h = { 0 };

	run(&s, &h, "{}", 0, 1024, 1);
	cr_assert_eq(h.retrying, 1);
	cr_assert_eq(h.status, 429);
	cr_assert_not(h.ok);
	cr_assert_str_eq(h.err_body, "slow");
}

Test(kernel_rest, no_retry_policy_429_is_plain)
{
	struct srv s = { .reply = { "HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\n"
	    "Retry-After: 0\r\nContent-Length: 0\r\n\r\n" }, .nreply = 1 };
	struct heard h = { 0 };

	run(&s, &h, NULL, 0, 1024, 0);
	cr_assert_eq(h.retrying, 0);
	cr_assert_eq(h.status, 429);
}

Test(kernel_rest, raw_answer_streamed_without_accept)
{
	static char reply[8192];
	struct srv s = { .nreply = 1 };
	struct heard h = { 0 };
	size_t n;

	n = (size_t)snprintf(reply, sizeof reply,
	    "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5000\r\n\r\n");
	memset(reply + n, 'z', 5000);
	reply[n + 5000] = '\0';
	s.reply[0] = reply;
	run(&s, &h, NULL, 1, 100, 0);
	cr_assert(h.ok);
	cr_assert_eq(h.raw_bytes, 5000, "streamed %zu bytes", h.raw_bytes);
	cr_assert_not(h.over, "a raw answer is not bound by max");
	cr_assert(strcasestr(s.seen[0], "Accept: application/json") == NULL, "%s", s.seen[0]);
}

Test(kernel_rest, backoff)
{
	struct http_result r = { .status = 429 };

	cr_assert_eq(krest_backoff_ms(&r, 1, 60000, 0), 1000);
	cr_assert_eq(krest_backoff_ms(&r, 2, 60000, 0), 2000);
	cr_assert_eq(krest_backoff_ms(&r, 4, 60000, 0), 8000);
	cr_assert_eq(krest_backoff_ms(&r, 10, 60000, 0), 60000);
	r.retry_after = "3";
	cr_assert_eq(krest_backoff_ms(&r, 5, 60000, 0), 3000);
	r.retry_after = "86400";
	cr_assert_eq(krest_backoff_ms(&r, 1, 60000, 0), 60000);
	r.retry_after = "soon";	/* garbage: our own backoff */
	cr_assert_eq(krest_backoff_ms(&r, 1, 60000, 0), 1000);
	r.retry_after_ms = "250";
	cr_assert_eq(krest_backoff_ms(&r, 1, 60000, 0), 250);
}
