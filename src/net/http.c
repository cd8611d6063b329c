/* http: libcurl multi interface inside terp's loop. curl tells us which
 * sockets to watch (socket_cb) and when to wake it (timer_cb); the loop
 * calls back into curl_multi_socket_action. Transfers end in finish(),
 * which is only ever called outside curl's own callbacks. */
#include "terp/http.h"

#include <assert.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "terp/buf.h"
#include "terp/util.h"

#define HDR_MAX		512	/* bytes kept of one interesting header */
/* curl's upload buffer: under main.c's mmap threshold (64 KiB) with room
 * for malloc's header (setopt_once). */
#define HTTP_UPLOAD_BUFFER	(64 * 1024 - 256)

struct http {
	struct loop		*loop;
	CURLM			*multi;
	uint64_t		 timer;		/* curl's wake-up, 0 if none */
	int			 depth;		/* > 0 while inside curl */
	struct http_xfer	*xfers;		/* live transfers */
	/* An easy handle of a finished plain POST, kept with the options
	 * every such request shares (setopt_once) so the next one sets only
	 * its own: curl_easy_init and a dozen setopts per model call
	 * were a tenth of terp's time per agent turn. NULL if none. */
	CURL			*spare;
	int			 out_fd;	/* curl waits to write it; -1 */
};

enum { H_CTYPE, H_RETRY, H_RETRY_MS, H_SHOULD, H_REQID, H_LOCATION, H_N };

struct http_xfer {
	struct http		*h;
	struct http_xfer	*next;
	CURL			*easy;
	struct curl_slist	*hdrs;
	curl_mime		*mime;
	int			 part_fd;	/* an upload's file (borrowed) */
	int			 plain;		/* a POST of body with setopt_once's
						 * options only: its handle can go
						 * back to h->spare */
	uint64_t		 part_size, part_off;
	struct http_cbs		 cbs;
	void			*arg;
	long			 status;
	long			 idle_ms;
	int64_t			 last_ms;	/* last byte received */
	uint64_t		 idle_timer;
	int			 cancelled;	/* silent; freed when curl is out */
	int			 added;		/* in the multi handle */
	int			 idle_fired;
	int			 errbody_full;
	struct buf		 errbody;
	char			*hv[H_N];
	char			 errbuf[CURL_ERROR_SIZE];
};

static const char *const hnames[H_N] = {
	"content-type", "retry-after", "retry-after-ms", "x-should-retry",
	"x-request-id", "location",
};

static void process(struct http *h);

static void
unlink_xfer(struct http_xfer *x)
{
	struct http_xfer **pp;

	for (pp = &x->h->xfers; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == x) {
			*pp = x->next;
			break;
		}
	}
}

static void
free_xfer(struct http_xfer *x)
{
	loop_timer_cancel(x->h->loop, x->idle_timer);
	if (x->added)
		curl_multi_remove_handle(x->h->multi, x->easy);
	if (x->plain && x->h->spare == NULL) {
		/* Nothing of x's stays reachable from the kept handle: its
		 * pointers to x and x's header list are cleared here, the
		 * body and URL are set again before it is used. */
		curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, NULL);
		curl_easy_setopt(x->easy, CURLOPT_ERRORBUFFER, NULL);
		curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, NULL);
		curl_easy_setopt(x->easy, CURLOPT_HEADERDATA, NULL);
		curl_easy_setopt(x->easy, CURLOPT_PRIVATE, NULL);
		curl_easy_setopt(x->easy, CURLOPT_POSTFIELDS, NULL);
		curl_easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)-1);
		x->h->spare = x->easy;
	} else
		curl_easy_cleanup(x->easy);
	curl_mime_free(x->mime);	/* after the handle that used it */
	curl_slist_free_all(x->hdrs);
	buf_free(&x->errbody);
	for (int i = 0; i < H_N; i++)
		free(x->hv[i]);
	unlink_xfer(x);
	free(x);
}

/* Reports the end of x and frees it. Never called from inside curl. */
static void
finish(struct http_xfer *x, CURLcode code)
{
	struct http_result r;
	char msg[CURL_ERROR_SIZE + 64];

	if (x->cancelled) {
		free_xfer(x);
		return;
	}
	memset(&r, 0, sizeof r);
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &x->status);
	r.status = x->status;
	/* A non-2xx body cut at its bound is still a complete answer. */
	if (code == CURLE_WRITE_ERROR && x->errbody_full)
		code = CURLE_OK;
	if (x->idle_fired) {
		code = CURLE_OPERATION_TIMEDOUT;
		snprintf(msg, sizeof msg, "no data from the server for %ld s",
		    x->idle_ms / 1000);
		r.error = msg;
		r.timed_out = 1;
	} else if (code != CURLE_OK) {
		snprintf(msg, sizeof msg, "%s",
		    x->errbuf[0] ? x->errbuf : curl_easy_strerror(code));
		r.error = msg;
		r.timed_out = code == CURLE_OPERATION_TIMEDOUT;
	}
	r.curl_code = (int)code;
	if (x->status < 200 || x->status >= 300) {
		r.body = buf_str(&x->errbody);
		r.body_len = x->errbody.len;
	}
	r.content_type = x->hv[H_CTYPE];
	r.retry_after = x->hv[H_RETRY];
	r.retry_after_ms = x->hv[H_RETRY_MS];
	r.should_retry = x->hv[H_SHOULD];
	r.request_id = x->hv[H_REQID];
	r.location = x->hv[H_LOCATION];
	/* Out of the multi handle first: done may start a new transfer. */
	curl_multi_remove_handle(x->h->multi, x->easy);
	x->added = 0;
	loop_timer_cancel(x->h->loop, x->idle_timer);
	x->idle_timer = 0;
	x->cancelled = 1;	/* no second report */
	if (x->cbs.done != NULL)
		x->cbs.done(x->arg, &r);
	free_xfer(x);
}

static size_t
write_cb(char *p, size_t size, size_t nmemb, void *arg)
{
	struct http_xfer *x = arg;
	size_t n = size * nmemb;

	if (x->cancelled)
		return 0;
	x->last_ms = now_ms();
	if (x->status == 0)
		curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &x->status);
	if (x->status >= 200 && x->status < 300) {
		if (x->cbs.body != NULL && x->cbs.body(x->arg, p, n) != 0)
			return 0;
		return n;
	}
	if (buf_add(&x->errbody, p, n) < 0) {
		/* Keep what fits (it always does) and stop reading: an
		 * error body past its bound says nothing more. */
		size_t room = x->errbody.max - x->errbody.len;
		int r = buf_add(&x->errbody, p, room);
		assert(r == 0);
		(void)r;
		x->errbody_full = 1;
		return 0;
	}
	return n;
}

/* An upload's bytes, read at their offset (curl may rewind through
 * seek_cb). Bytes going out count as activity for the idle timer. */
static size_t
part_read_cb(char *p, size_t size, size_t nitems, void *arg)
{
	struct http_xfer *x = arg;
	size_t want = size * nitems;
	ssize_t n;

	if (x->cancelled)
		return CURL_READFUNC_ABORT;
	if (x->part_off >= x->part_size)
		return 0;
	if (want > x->part_size - x->part_off)
		want = (size_t)(x->part_size - x->part_off);
	do
		n = pread(x->part_fd, p, want, (off_t)x->part_off);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return CURL_READFUNC_ABORT;	/* an error, or the file shrank */
	x->part_off += (uint64_t)n;
	x->last_ms = now_ms();
	return (size_t)n;
}

static int
part_seek_cb(void *arg, curl_off_t off, int origin)
{
	struct http_xfer *x = arg;

	if (origin != SEEK_SET || off < 0 || (uint64_t)off > x->part_size)
		return CURL_SEEKFUNC_FAIL;
	x->part_off = (uint64_t)off;
	return CURL_SEEKFUNC_OK;
}

static size_t
header_cb(char *p, size_t size, size_t nmemb, void *arg)
{
	struct http_xfer *x = arg;
	size_t n = size * nmemb, nl;
	const char *colon, *v, *e;

	if (x->cancelled)
		return 0;
	x->last_ms = now_ms();
	if (n >= 5 && strncmp(p, "HTTP/", 5) == 0) {
		/* A new response (after a 100 or a redirect): start over. */
		for (int i = 0; i < H_N; i++) {
			free(x->hv[i]);
			x->hv[i] = NULL;
		}
		x->status = 0;
		return n;
	}
	colon = memchr(p, ':', n);
	if (colon == NULL)
		return n;
	nl = (size_t)(colon - p);
	v = colon + 1;
	e = p + n;
	while (v < e && (*v == ' ' || *v == '\t'))
		v++;
	while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ' ||
	    e[-1] == '\t'))
		e--;
	for (int i = 0; i < H_N; i++) {
		int match = strlen(hnames[i]) == nl &&
		    strncasecmp(p, hnames[i], nl) == 0;
		if (i == H_REQID && !match)
			match = (nl == 10 && strncasecmp(p, "request-id", nl) == 0) ||
			    (nl == 15 && strncasecmp(p, "apim-request-id", nl) == 0);
		if (match) {
			size_t vl = (size_t)(e - v);
			free(x->hv[i]);
			x->hv[i] = xstrndup(v, vl < HDR_MAX ? vl : HDR_MAX);
		}
	}
	return n;
}

static void
on_idle(struct loop *l, void *arg)
{
	struct http_xfer *x = arg;
	int64_t quiet = now_ms() - x->last_ms;

	x->idle_timer = 0;
	if (quiet < x->idle_ms) {
		x->idle_timer = loop_timer_add(l, x->idle_ms - quiet, on_idle, x);
		return;
	}
	x->idle_fired = 1;
	finish(x, CURLE_OPERATION_TIMEDOUT);
}

int
http_curl_select(int revents)
{
	int flags = 0;

	if (revents & (POLLIN | POLLHUP))
		flags |= CURL_CSELECT_IN;
	if (revents & POLLOUT)
		flags |= CURL_CSELECT_OUT;
	if (revents & (POLLERR | POLLNVAL))
		flags |= CURL_CSELECT_ERR;
	return flags;
}

int
http_poll_events(int what)
{
	int ev = 0;

	if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
		ev |= POLLIN;
	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		ev |= POLLOUT;
	return ev;
}

/* What the live transfers have sent of their bodies so far. */
static curl_off_t
uploaded(const struct http *h)
{
	curl_off_t sum = 0, n;

	for (const struct http_xfer *x = h->xfers; x != NULL; x = x->next)
		if (x->added && !x->cancelled &&
		    curl_easy_getinfo(x->easy, CURLINFO_SIZE_UPLOAD_T, &n) == CURLE_OK)
			sum += n;
	return sum;
}

/* Upload calls into curl at most per turn of the loop: 4 MB */
#define UPLOAD_CALLS	64

static void
on_fd(struct loop *l, int fd, int revents, void *arg)
{
	struct http *h = arg;
	int running;
	curl_off_t sent = revents == POLLOUT ? uploaded(h) : 0;
	(void)l;

	h->depth++;
	curl_multi_socket_action(h->multi, fd, http_curl_select(revents), &running);
	/* curl sends one upload buffer per call: a request body of the
	 * whole conversation (1 MB at 3,000 questions) was 16 turns of the
	 * loop, each a poll of every descriptor. While a call sent a whole
	 * buffer and curl still waits to write, the socket takes more: call
	 * again. Only writing: no callback of ours runs, none ends here
	 * (a failed send leaves the socket, out_fd, or sends nothing). */
	for (int i = 1; revents == POLLOUT && i < UPLOAD_CALLS && h->out_fd == fd; i++) {
		curl_off_t now = uploaded(h);
		if (now - sent < HTTP_UPLOAD_BUFFER)
			break;
		sent = now;
		curl_multi_socket_action(h->multi, fd, CURL_CSELECT_OUT, &running);
	}
	h->depth--;
	process(h);
}

static void
on_timer(struct loop *l, void *arg)
{
	struct http *h = arg;
	int running;
	(void)l;

	h->timer = 0;
	h->depth++;
	curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	h->depth--;
	process(h);
}

static int
socket_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct http *h = userp;
	(void)e;
	(void)socketp;

	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		h->out_fd = s;
	else if (h->out_fd == s)
		h->out_fd = -1;
	if (what == CURL_POLL_REMOVE)
		loop_unwatch(h->loop, s);
	else if (http_poll_events(what) != 0)
		loop_watch(h->loop, s, http_poll_events(what), on_fd, h);
	return 0;
}

static int
timer_cb(CURLM *m, long timeout_ms, void *userp)
{
	struct http *h = userp;
	(void)m;

	loop_timer_cancel(h->loop, h->timer);
	h->timer = 0;
	if (timeout_ms >= 0)
		h->timer = loop_timer_add(h->loop, timeout_ms, on_timer, h);
	return 0;
}

/* Runs after every call into curl: reports finished transfers, frees
 * cancelled ones and adds those started from inside a callback. */
static void
process(struct http *h)
{
	CURLMsg *msg;
	int left;
	struct http_xfer *x, *next;

	while ((msg = curl_multi_info_read(h->multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
		finish(x, msg->data.result);
	}
	for (x = h->xfers; x != NULL; x = next) {
		next = x->next;
		if (x->cancelled)
			free_xfer(x);
	}
	for (x = h->xfers; x != NULL; x = x->next) {
		if (!x->added) {
			x->added = 1;
			curl_multi_add_handle(h->multi, x->easy);
		}
	}
}

struct http *
http_new(struct loop *l)
{
	static int inited;
	struct http *h;

	if (!inited) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		inited = 1;
	}
	h = xcalloc(1, sizeof *h);
	h->loop = l;
	h->out_fd = -1;
	h->multi = curl_multi_init();
	if (h->multi == NULL)
		fatal("curl_multi_init failed");
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
	return h;
}

void
http_free(struct http *h)
{
	if (h == NULL)
		return;
	while (h->xfers != NULL)
		free_xfer(h->xfers);
	if (h->spare != NULL)
		curl_easy_cleanup(h->spare);
	curl_multi_cleanup(h->multi);
	loop_timer_cancel(h->loop, h->timer);
	free(h);
}

/* The options every request of this client shares, set once per easy
 * handle (a kept handle keeps them). */
static void
setopt_once(CURL *e)
{
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	/* TLS 1.2 at least: an older server then fails with OpenSSL's
	 * "protocol version" alert, which llm_http reads as final, instead of
	 * a half-made 1.1 handshake's sigalg error. */
	curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 60L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 60L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
	/* The buffer a body goes out through, allocated and freed by curl
	 * for every request: its default 64 KiB sits at main.c's mmap
	 * threshold, which made it a fresh mapping each time (16 page
	 * faults, then an munmap whose TLB flush was 15 % of a long
	 * session's CPU). Just under it, it is one heap chunk, reused. */
	curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, (long)HTTP_UPLOAD_BUFFER);
}

struct http_xfer *
http_post(struct http *h, const struct http_req *req,
    const struct http_cbs *cbs, void *arg, char **err)
{
	struct http_xfer *x;

	if (req->url == NULL || strncmp(req->url, "http", 4) != 0) {
		*err = xasprintf("not an http(s) URL: %s",
		    req->url ? req->url : "(none)");
		return NULL;
	}
	x = xcalloc(1, sizeof *x);
	x->h = h;
	x->cbs = *cbs;
	x->arg = arg;
	x->idle_ms = req->idle_timeout_ms;
	x->last_ms = now_ms();
	buf_init(&x->errbody, req->max_error_body ? req->max_error_body : 65536);
	x->plain = (req->method == NULL || strcmp(req->method, "POST") == 0) &&
	    req->part == NULL && req->ca_file == NULL;
	if (x->plain && h->spare != NULL) {
		x->easy = h->spare;
		h->spare = NULL;
	} else {
		x->easy = curl_easy_init();
		if (x->easy == NULL)
			fatal("curl_easy_init failed");
		setopt_once(x->easy);
	}
	for (const char *const *p = req->headers; p != NULL && *p != NULL; p++)
		x->hdrs = curl_slist_append(x->hdrs, *p);
	x->hdrs = curl_slist_append(x->hdrs, "Expect:");
	curl_easy_setopt(x->easy, CURLOPT_URL, req->url);
	/* as the SDKs name themselves: servers and proxies can tell terp */
	curl_easy_setopt(x->easy, CURLOPT_USERAGENT, "terp/" TERP_VERSION);
	if (req->method != NULL && (strcmp(req->method, "GET") == 0 ||
	    strcmp(req->method, "DELETE") == 0)) {
		curl_easy_setopt(x->easy, CURLOPT_HTTPGET, 1L);
	} else if (req->part != NULL) {
		curl_mimepart *mp;

		x->part_fd = req->part->fd;
		x->part_size = req->part->size;
		x->mime = curl_mime_init(x->easy);
		mp = curl_mime_addpart(x->mime);
		curl_mime_name(mp, req->part->field);
		curl_mime_filename(mp, req->part->filename);
		curl_mime_type(mp, "application/octet-stream");
		curl_mime_data_cb(mp, (curl_off_t)x->part_size, part_read_cb,
		    part_seek_cb, NULL, x);
		curl_easy_setopt(x->easy, CURLOPT_MIMEPOST, x->mime);
	} else {
		curl_easy_setopt(x->easy, CURLOPT_POST, 1L);
		curl_easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)req->body_len);
		if (req->body_borrowed)
			curl_easy_setopt(x->easy, CURLOPT_POSTFIELDS,
			    req->body ? req->body : "");
		else
			curl_easy_setopt(x->easy, CURLOPT_COPYPOSTFIELDS,
			    req->body ? req->body : "");
	}
	if (req->method != NULL && strcmp(req->method, "GET") != 0 &&
	    strcmp(req->method, "POST") != 0)
		curl_easy_setopt(x->easy, CURLOPT_CUSTOMREQUEST, req->method);
	if (req->ca_file != NULL)
		curl_easy_setopt(x->easy, CURLOPT_CAINFO, req->ca_file);
	curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, x->hdrs);
	/* 0 is libcurl's default: a kept handle's earlier value goes */
	curl_easy_setopt(x->easy, CURLOPT_CONNECTTIMEOUT_MS,
	    req->connect_timeout_ms > 0 ? req->connect_timeout_ms : 0L);
	curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(x->easy, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(x->easy, CURLOPT_ERRORBUFFER, x->errbuf);
	curl_easy_setopt(x->easy, CURLOPT_PRIVATE, (char *)x);
	x->next = h->xfers;
	h->xfers = x;
	if (h->depth == 0) {
		x->added = 1;
		curl_multi_add_handle(h->multi, x->easy);
	}
	if (x->idle_ms > 0)
		x->idle_timer = loop_timer_add(h->loop, x->idle_ms, on_idle, x);
	return x;
}

void
http_cancel(struct http_xfer *x)
{
	if (x == NULL)
		return;
	x->cancelled = 1;
	loop_timer_cancel(x->h->loop, x->idle_timer);
	x->idle_timer = 0;
	if (x->h->depth == 0)
		free_xfer(x);
	/* else process() frees it once curl has returned */
}
