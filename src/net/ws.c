/* ws: WebSocket client over a connection libcurl makes. Three phases:
 * CONNECTING (a private curl multi handle with CURLOPT_CONNECT_ONLY, its
 * sockets and timer driven by the loop, as in http.c), HANDSHAKE (the
 * HTTP/1.1 upgrade, written and parsed here with bounded buffers) and
 * OPEN (wslay frames the bytes; curl_easy_send/recv carry them, so TLS
 * is curl's). The curl easy handle stays in its multi handle after the
 * connect: removing it would close the connection. */
#include "terp/ws.h"

#include <curl/curl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <wslay/wslay.h>

#include "terp/buf.h"
#include "terp/digest.h"
#include "terp/http.h"
#include "terp/util.h"

#define HS_MAX		(16 * 1024)	/* the server's handshake answer */
#define HS_REQ_MAX	(64 * 1024)	/* ours, headers included */
#define DEF_TIMEOUT_MS	20000
#define DEF_MAX_MSG	(16u << 20)
#define DEF_MAX_QUEUED	(64u << 20)
#define WS_GUID		"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

enum ws_phase { WS_CONNECTING, WS_HANDSHAKE, WS_OPEN };

struct ws {
	struct loop		*loop;
	struct ws_cbs		 cbs;
	void			*arg;
	enum ws_phase		 phase;
	CURLM			*multi;
	CURL			*easy;
	uint64_t		 curl_timer;
	uint64_t		 deadline;	/* connect + handshake */
	int			 fd;		/* ours once connected, else -1 */
	int			 tearing;	/* curl's socket callbacks ignored */
	int			 cfd[4];	/* sockets curl asked us to watch */
	int			 ncfd;
	struct buf		 out;		/* handshake bytes not sent yet */
	struct buf		 in;		/* handshake answer, then leftover */
	size_t			 in_off;	/* leftover bytes served so far */
	char			 accept[29];	/* the Sec-WebSocket-Accept we expect */
	wslay_event_context_ptr	 ctx;
	size_t			 max_msg, max_queued;
	long			 timeout_ms;
	/* The data message being received (frames arrive unbuffered). */
	struct buf		 msg;
	int			 msg_binary, msg_over, frame_ctrl, frame_fin;
	uint64_t		 msg_seen;
	int			 close_code;
	int			 eof;
	char			*io_error;	/* why send/recv failed */
	int			 depth;		/* > 0 inside a dispatch */
	int			 ended;		/* closed fired (or ws_free) */
	int			 freed;		/* destroy once depth is 0 */
	char			 errbuf[CURL_ERROR_SIZE];
	char			*host;		/* for messages */
};

static void destroy(struct ws *w);

/* ------------------------------------------------------------ end */

/* Reports the end once; the ws is destroyed when the dispatch unwinds. */
static void
end(struct ws *w, long status, const char *location, const char *error)
{
	struct ws_end e;

	if (w->ended)
		return;
	w->ended = 1;
	w->freed = 1;
	if (w->fd >= 0)
		loop_unwatch(w->loop, w->fd);
	memset(&e, 0, sizeof e);
	e.http_status = status;
	e.location = location;
	e.close_code = w->close_code;
	e.error = error;
	if (w->cbs.closed != NULL)
		w->cbs.closed(w->arg, &e);
}

static void
endf(struct ws *w, const char *fmt, const char *a)
{
	char *m = xasprintf(fmt, a);
	end(w, 0, NULL, m);
	free(m);
}

static void
leave(struct ws *w)
{
	if (--w->depth == 0 && w->freed)
		destroy(w);
}

/* ------------------------------------------------------------ open phase */

static void update_watch(struct ws *w);
static void on_io(struct loop *l, int fd, int revents, void *arg);

/* Acknowledges at once what was read. Servers that leave Nagle on for
 * their WebSockets (Jupyter Server does: tornado's default) hold a
 * message written right after another until the first is acknowledged,
 * and a delayed ACK makes that 40 ms per cell. Linux resets the flag as
 * it goes, hence after every read. */
static void
quickack(struct ws *w)
{
#ifdef TCP_QUICKACK
	int one = 1;

	if (w->fd >= 0)
		(void)setsockopt(w->fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
#else
	(void)w;
#endif
}

static ssize_t
recv_cb(wslay_event_context_ptr ctx, uint8_t *p, size_t len, int flags,
    void *arg)
{
	struct ws *w = arg;
	size_t n = 0;
	CURLcode r;
	(void)flags;

	if (w->in_off < w->in.len) {
		n = w->in.len - w->in_off;
		if (n > len)
			n = len;
		memcpy(p, w->in.data + w->in_off, n);
		w->in_off += n;
		if (w->in_off == w->in.len) {
			buf_free(&w->in);
			w->in_off = 0;
		}
		return (ssize_t)n;
	}
	r = curl_easy_recv(w->easy, p, len, &n);
	if (r == CURLE_AGAIN) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	if (r != CURLE_OK || n == 0) {
		if (r != CURLE_OK && w->io_error == NULL)
			w->io_error = xstrdup(curl_easy_strerror(r));
		w->eof = 1;
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	quickack(w);
	return (ssize_t)n;
}

static ssize_t
send_cb(wslay_event_context_ptr ctx, const uint8_t *p, size_t len, int flags,
    void *arg)
{
	struct ws *w = arg;
	size_t n = 0;
	CURLcode r;
	(void)flags;

	r = curl_easy_send(w->easy, p, len, &n);
	if (r == CURLE_AGAIN) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	if (r != CURLE_OK) {
		if (w->io_error == NULL)
			w->io_error = xstrdup(curl_easy_strerror(r));
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	return (ssize_t)n;
}

static int
genmask_cb(wslay_event_context_ptr ctx, uint8_t *p, size_t len, void *arg)
{
	(void)ctx;
	(void)arg;
	/* The mask only stops caching proxies from being confused; a weak
	 * source would do, but getrandom is there. */
	if (getrandom(p, len, 0) != (ssize_t)len) {
		for (size_t i = 0; i < len; i++)
			p[i] = (uint8_t)(now_us() >> (i * 3));
	}
	return 0;
}

static void
frame_start_cb(wslay_event_context_ptr ctx,
    const struct wslay_event_on_frame_recv_start_arg *a, void *arg)
{
	struct ws *w = arg;
	(void)ctx;

	w->frame_ctrl = wslay_is_ctrl_frame(a->opcode);
	if (w->frame_ctrl)
		return;
	w->frame_fin = a->fin;
	if (a->opcode != WSLAY_CONTINUATION_FRAME) {
		buf_reset(&w->msg);
		w->msg_over = 0;
		w->msg_seen = 0;
		w->msg_binary = a->opcode == WSLAY_BINARY_FRAME;
	}
}

static void
frame_chunk_cb(wslay_event_context_ptr ctx,
    const struct wslay_event_on_frame_recv_chunk_arg *a, void *arg)
{
	struct ws *w = arg;
	(void)ctx;

	if (w->frame_ctrl)
		return;
	w->msg_seen += a->data_length;
	if (w->msg_over)
		return;
	if (buf_add(&w->msg, a->data, a->data_length) < 0) {
		/* Past the bound: the rest is counted, not kept. */
		w->msg_over = 1;
		buf_free(&w->msg);
		buf_init(&w->msg, w->max_msg);
	}
}

static void
frame_end_cb(wslay_event_context_ptr ctx, void *arg)
{
	struct ws *w = arg;
	(void)ctx;

	if (w->frame_ctrl || !w->frame_fin || w->freed)
		return;
	if (w->msg_over) {
		if (w->cbs.dropped != NULL)
			w->cbs.dropped(w->arg, w->msg_seen);
	} else if (w->cbs.message != NULL) {
		w->cbs.message(w->arg, buf_str(&w->msg), w->msg.len, w->msg_binary);
	}
	buf_reset(&w->msg);
	w->msg_over = 0;
	w->msg_seen = 0;
}

static void
msg_cb(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *a,
    void *arg)
{
	struct ws *w = arg;
	(void)ctx;

	if (a->opcode == WSLAY_CONNECTION_CLOSE)
		w->close_code = a->status_code;
}

static void
on_io_open(struct ws *w, int revents)
{
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		if (wslay_event_recv(w->ctx) < 0 && !w->freed) {
			if (w->eof && w->close_code == 0)
				endf(w, "the connection to %s was closed", w->host);
			else if (w->io_error != NULL)
				end(w, 0, NULL, w->io_error);
			else if (w->close_code == 0)
				endf(w, "%s broke the WebSocket protocol", w->host);
		}
		if (w->freed)
			return;
	}
	if (wslay_event_want_write(w->ctx) && wslay_event_send(w->ctx) < 0) {
		end(w, 0, NULL, w->io_error ? w->io_error : "cannot send on the WebSocket");
		return;
	}
	if (!wslay_event_want_read(w->ctx) && !wslay_event_want_write(w->ctx)) {
		char *m;
		if (w->close_code == WSLAY_CODE_MESSAGE_TOO_BIG)
			m = xasprintf("%s closed the connection: a message was too big", w->host);
		else if (w->close_code != 0)
			m = xasprintf("%s closed the connection (code %d)", w->host, w->close_code);
		else
			m = xasprintf("the connection to %s was closed", w->host);
		end(w, 0, NULL, m);
		free(m);
		return;
	}
	update_watch(w);
}

static void
update_watch(struct ws *w)
{
	int ev = 0;

	if (w->freed || w->fd < 0)
		return;
	if (w->phase == WS_OPEN) {
		if (wslay_event_want_read(w->ctx))
			ev |= POLLIN;
		if (wslay_event_want_write(w->ctx))
			ev |= POLLOUT;
	} else if (w->phase == WS_HANDSHAKE) {
		ev = w->out.len > 0 ? POLLOUT : POLLIN;
	}
	loop_watch(w->loop, w->fd, ev, on_io, w);
}

/* ------------------------------------------------------------ handshake */

/* The value of header name in the answer's header block, or NULL; *len
 * gets its length. hdr is NUL-terminated. */
static const char *
header_value(const char *hdr, const char *name, size_t *len)
{
	size_t nl = strlen(name);
	const char *p = strstr(hdr, "\r\n");

	while (p != NULL && p[2] != '\0') {
		const char *line = p + 2, *eol = strstr(line, "\r\n");
		if (eol == NULL)
			break;
		if ((size_t)(eol - line) > nl && strncasecmp(line, name, nl) == 0 &&
		    line[nl] == ':') {
			const char *v = line + nl + 1, *e = eol;
			while (v < e && (*v == ' ' || *v == '\t'))
				v++;
			while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
				e--;
			*len = (size_t)(e - v);
			return v;
		}
		p = eol;
	}
	return NULL;
}

static int
token_in(const char *v, size_t n, const char *tok)
{
	size_t tl = strlen(tok);

	for (size_t i = 0; i + tl <= n; i++) {
		if (strncasecmp(v + i, tok, tl) == 0 &&
		    (i == 0 || v[i - 1] == ',' || v[i - 1] == ' ') &&
		    (i + tl == n || v[i + tl] == ',' || v[i + tl] == ' '))
			return 1;
	}
	return 0;
}

static int start_open(struct ws *w);

/* The answer's header block is in w->in[0..hlen). */
static void
check_answer(struct ws *w, size_t hlen)
{
	char *hdr = xstrndup(w->in.data, hlen);
	const char *v;
	size_t vl;
	long status = 0;
	char *loc = NULL, *m;

	if (strncmp(hdr, "HTTP/1.", 7) == 0 && strlen(hdr) > 12)
		status = strtol(hdr + 9, NULL, 10);
	if (status != 101) {
		if ((v = header_value(hdr, "location", &vl)) != NULL)
			loc = xstrndup(v, vl < 2048 ? vl : 2048);
		if (status <= 0)
			m = xasprintf("%s did not answer the WebSocket upgrade with HTTP", w->host);
		else
			m = xasprintf("%s answered the WebSocket upgrade with HTTP %ld", w->host,
			    status);
		end(w, status > 0 ? status : 0, loc, m);
		free(m);
		free(loc);
		free(hdr);
		return;
	}
	if ((v = header_value(hdr, "upgrade", &vl)) == NULL || !token_in(v, vl, "websocket") ||
	    (v = header_value(hdr, "connection", &vl)) == NULL || !token_in(v, vl, "upgrade")) {
		endf(w, "%s answered the WebSocket upgrade without upgrading", w->host);
		free(hdr);
		return;
	}
	if ((v = header_value(hdr, "sec-websocket-accept", &vl)) == NULL ||
	    vl != strlen(w->accept) || memcmp(v, w->accept, vl) != 0) {
		endf(w, "%s answered the WebSocket upgrade with a wrong Sec-WebSocket-Accept",
		    w->host);
		free(hdr);
		return;
	}
	free(hdr);
	/* What came after the header block is the first frames' bytes. */
	w->in_off = hlen;
	if (w->in_off == w->in.len) {
		buf_free(&w->in);
		w->in_off = 0;
	}
	if (start_open(w) < 0)
		return;
	if (w->cbs.open != NULL)
		w->cbs.open(w->arg);
	if (w->freed)
		return;
	/* Leftover bytes will not make the socket readable: read now. */
	on_io_open(w, w->in.len > 0 ? POLLIN : 0);
}

static void
on_io_handshake(struct ws *w, int revents)
{
	char tmp[4096];
	size_t n;
	CURLcode r;
	const char *e;

	while (w->out.len > 0) {
		r = curl_easy_send(w->easy, w->out.data, w->out.len, &n);
		if (r == CURLE_AGAIN)
			break;
		if (r != CURLE_OK) {
			end(w, 0, NULL, curl_easy_strerror(r));
			return;
		}
		buf_consume(&w->out, n);
	}
	if (w->out.len > 0) {
		update_watch(w);
		return;
	}
	for (;;) {
		r = curl_easy_recv(w->easy, tmp, sizeof tmp, &n);
		if (r == CURLE_AGAIN)
			break;
		if (r != CURLE_OK || n == 0) {
			endf(w, "%s closed the connection during the WebSocket handshake",
			    w->host);
			return;
		}
		if (buf_add(&w->in, tmp, n) < 0) {
			endf(w, "%s sent a WebSocket handshake answer over 16 KiB", w->host);
			return;
		}
		if ((e = strstr(buf_str(&w->in), "\r\n\r\n")) != NULL) {
			check_answer(w, (size_t)(e - w->in.data) + 4);
			return;
		}
	}
	(void)revents;
	update_watch(w);
}

static void
on_io(struct loop *l, int fd, int revents, void *arg)
{
	struct ws *w = arg;
	(void)l;
	(void)fd;

	w->depth++;
	if (!w->freed) {
		if (w->phase == WS_HANDSHAKE)
			on_io_handshake(w, revents);
		else if (w->phase == WS_OPEN)
			on_io_open(w, revents);
	}
	leave(w);
}

static int
start_open(struct ws *w)
{
	static const struct wslay_event_callbacks cb = {
		recv_cb, send_cb, genmask_cb, frame_start_cb, frame_chunk_cb,
		frame_end_cb, msg_cb,
	};

	loop_timer_cancel(w->loop, w->deadline);
	w->deadline = 0;
	if (wslay_event_context_client_init(&w->ctx, &cb, w) != 0)
		fatal("out of memory (wslay)");
	/* Unbuffered: messages are assembled here, under our own bound,
	 * and one past it is skipped instead of ending the connection. */
	wslay_event_config_set_no_buffering(w->ctx, 1);
	wslay_event_config_set_max_recv_msg_length(w->ctx, UINT64_C(1) << 62);
	w->phase = WS_OPEN;
	return 0;
}

/* ------------------------------------------------------------ connect phase */

static void
connected(struct ws *w, CURLcode code)
{
	curl_socket_t s = CURL_SOCKET_BAD;

	loop_timer_cancel(w->loop, w->curl_timer);
	w->curl_timer = 0;
	if (code != CURLE_OK) {
		end(w, 0, NULL, w->errbuf[0] ? w->errbuf : curl_easy_strerror(code));
		return;
	}
	if (curl_easy_getinfo(w->easy, CURLINFO_ACTIVESOCKET, &s) != CURLE_OK ||
	    s == CURL_SOCKET_BAD) {
		endf(w, "no connection to %s", w->host);
		return;
	}
	for (int i = 0; i < w->ncfd; i++)
		loop_unwatch(w->loop, w->cfd[i]);
	w->ncfd = 0;
	w->fd = (int)s;
	w->phase = WS_HANDSHAKE;
	/* From here on the fd is ours: curl's socket callbacks are ignored. */
	loop_watch(w->loop, w->fd, POLLOUT, on_io, w);
	on_io_handshake(w, POLLOUT);
}

static void
curl_check(struct ws *w)
{
	CURLMsg *m;
	int left;

	while (!w->freed && (m = curl_multi_info_read(w->multi, &left)) != NULL) {
		if (m->msg == CURLMSG_DONE && w->phase == WS_CONNECTING)
			connected(w, m->data.result);
	}
}

static void
on_curl_fd(struct loop *l, int fd, int revents, void *arg)
{
	struct ws *w = arg;
	int running;
	(void)l;

	w->depth++;
	curl_multi_socket_action(w->multi, fd, http_curl_select(revents), &running);
	curl_check(w);
	leave(w);
}

static void
on_curl_timer(struct loop *l, void *arg)
{
	struct ws *w = arg;
	int running;
	(void)l;

	w->curl_timer = 0;
	w->depth++;
	curl_multi_socket_action(w->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	curl_check(w);
	leave(w);
}

static int
socket_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct ws *w = userp;
	(void)e;
	(void)socketp;

	if (w->tearing || w->phase != WS_CONNECTING)
		return 0;
	if (what == CURL_POLL_REMOVE) {
		loop_unwatch(w->loop, s);
		for (int i = 0; i < w->ncfd; i++)
			if (w->cfd[i] == (int)s)
				w->cfd[i] = w->cfd[--w->ncfd];
		return 0;
	}
	{
		int known = 0;
		for (int i = 0; i < w->ncfd; i++)
			known |= w->cfd[i] == (int)s;
		if (!known && w->ncfd < 4)
			w->cfd[w->ncfd++] = (int)s;
	}
	loop_watch(w->loop, s, http_poll_events(what), on_curl_fd, w);
	return 0;
}

static int
timer_cb(CURLM *m, long timeout_ms, void *userp)
{
	struct ws *w = userp;
	(void)m;

	if (w->tearing || w->phase != WS_CONNECTING)
		return 0;
	loop_timer_cancel(w->loop, w->curl_timer);
	w->curl_timer = 0;
	if (timeout_ms >= 0)
		w->curl_timer = loop_timer_add(w->loop, timeout_ms, on_curl_timer, w);
	return 0;
}

static void
on_deadline(struct loop *l, void *arg)
{
	struct ws *w = arg;
	char *m;
	(void)l;

	w->deadline = 0;
	w->depth++;
	m = xasprintf("no WebSocket connection to %s after %ld s", w->host,
	    w->timeout_ms / 1000);
	end(w, 0, NULL, m);
	free(m);
	leave(w);
}

/* ------------------------------------------------------------ API */

void
ws_accept_for_key(const char *key, char out[29])
{
	unsigned char md[20];
	char *cat = xasprintf("%s%s", key, WS_GUID), *b64;

	sha1(cat, strlen(cat), md);
	free(cat);
	b64 = base64_encode(md, 20, NULL);
	snprintf(out, 29, "%s", b64);
	free(b64);
}

static int
header_ok(const char *h)
{
	return strchr(h, '\r') == NULL && strchr(h, '\n') == NULL && strchr(h, ':') != NULL;
}

struct ws *
ws_open(struct loop *l, const struct ws_opts *o, const struct ws_cbs *cbs,
    void *arg, char **err)
{
	struct ws *w;
	CURLU *u;
	char *http_url, *host = NULL, *port = NULL, *path = NULL, *query = NULL;
	unsigned char raw[16];
	char *key;
	int tls;

	if (o->url == NULL) {
		*err = xstrdup("no WebSocket URL");
		return NULL;
	}
	if (strncmp(o->url, "ws://", 5) == 0 || strncmp(o->url, "http://", 7) == 0) {
		tls = 0;
	} else if (strncmp(o->url, "wss://", 6) == 0 || strncmp(o->url, "https://", 8) == 0) {
		tls = 1;
	} else {
		*err = xasprintf("not a ws:// or wss:// URL: %s", o->url);
		return NULL;
	}
	for (const char *const *h = o->headers; h != NULL && *h != NULL; h++) {
		if (!header_ok(*h)) {
			*err = xstrdup("a WebSocket header has a line break or no colon");
			return NULL;
		}
	}
	http_url = xasprintf("%s%s", tls ? "https" : "http", strstr(o->url, "://"));
	u = curl_url();
	if (u == NULL)
		fatal("out of memory (curl_url)");
	if (curl_url_set(u, CURLUPART_URL, http_url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		*err = xasprintf("not a usable URL: %s", o->url);
		curl_url_cleanup(u);
		free(http_url);
		return NULL;
	}
	(void)curl_url_get(u, CURLUPART_PORT, &port, 0);
	(void)curl_url_get(u, CURLUPART_PATH, &path, 0);
	(void)curl_url_get(u, CURLUPART_QUERY, &query, 0);
	curl_url_cleanup(u);

	w = xcalloc(1, sizeof *w);
	w->loop = l;
	w->cbs = *cbs;
	w->arg = arg;
	w->fd = -1;
	w->phase = WS_CONNECTING;
	w->max_msg = o->max_msg ? o->max_msg : DEF_MAX_MSG;
	w->max_queued = o->max_queued ? o->max_queued : DEF_MAX_QUEUED;
	w->timeout_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : DEF_TIMEOUT_MS;
	w->host = port ? xasprintf("%s:%s", host, port) : xstrdup(host);
	buf_init(&w->out, HS_REQ_MAX);
	buf_init(&w->in, HS_MAX);
	buf_init(&w->msg, w->max_msg);

	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
		for (size_t i = 0; i < sizeof raw; i++)
			raw[i] = (unsigned char)(now_us() >> (i % 8 * 5));
	}
	key = base64_encode(raw, sizeof raw, NULL);
	ws_accept_for_key(key, w->accept);
	/* No Origin header: servers check it only when it is present. */
	buf_printf(&w->out, "GET %s%s%s HTTP/1.1\r\nHost: %s\r\n"
	    "Upgrade: websocket\r\nConnection: Upgrade\r\n"
	    "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
	    "User-Agent: terp\r\n",
	    path && *path ? path : "/", query ? "?" : "", query ? query : "", w->host, key);
	free(key);
	for (const char *const *h = o->headers; h != NULL && *h != NULL; h++) {
		if (buf_printf(&w->out, "%s\r\n", *h) < 0) {
			*err = xstrdup("the WebSocket headers are too long");
			curl_free(host);
			curl_free(port);
			curl_free(path);
			curl_free(query);
			free(http_url);
			destroy(w);
			return NULL;
		}
	}
	if (buf_adds(&w->out, "\r\n") < 0) {
		*err = xstrdup("the WebSocket headers are too long");
		curl_free(host);
		curl_free(port);
		curl_free(path);
		curl_free(query);
		free(http_url);
		destroy(w);
		return NULL;
	}
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_free(query);

	w->multi = curl_multi_init();
	w->easy = curl_easy_init();
	if (w->multi == NULL || w->easy == NULL)
		fatal("out of memory (curl)");
	curl_multi_setopt(w->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
	curl_multi_setopt(w->multi, CURLMOPT_SOCKETDATA, w);
	curl_multi_setopt(w->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	curl_multi_setopt(w->multi, CURLMOPT_TIMERDATA, w);
	curl_easy_setopt(w->easy, CURLOPT_URL, http_url);
	free(http_url);
	curl_easy_setopt(w->easy, CURLOPT_CONNECT_ONLY, 1L);
	/* Through a proxy the bytes must go in a CONNECT tunnel. */
	curl_easy_setopt(w->easy, CURLOPT_HTTPPROXYTUNNEL, 1L);
	curl_easy_setopt(w->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(w->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(w->easy, CURLOPT_CONNECTTIMEOUT_MS, w->timeout_ms);
	curl_easy_setopt(w->easy, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(w->easy, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(w->easy, CURLOPT_ERRORBUFFER, w->errbuf);
	if (o->ca_file != NULL)
		curl_easy_setopt(w->easy, CURLOPT_CAINFO, o->ca_file);
	w->deadline = loop_timer_add(l, w->timeout_ms, on_deadline, w);
	curl_multi_add_handle(w->multi, w->easy);
	return w;
}

int
ws_send(struct ws *w, const char *p, size_t n, char **err)
{
	struct wslay_event_msg m;

	if (w == NULL || w->freed || w->phase != WS_OPEN ||
	    !wslay_event_get_write_enabled(w->ctx)) {
		*err = xstrdup("the WebSocket is not open");
		return -1;
	}
	if (wslay_event_get_queued_msg_length(w->ctx) + n > w->max_queued) {
		*err = xstrdup("the WebSocket's send queue is full");
		return -1;
	}
	m.opcode = WSLAY_TEXT_FRAME;
	m.msg = (const uint8_t *)p;
	m.msg_length = n;
	if (wslay_event_queue_msg(w->ctx, &m) != 0) {
		*err = xstrdup("cannot queue a WebSocket message");
		return -1;
	}
	/* Sent when the loop next polls (the socket is writable at once):
	 * no I/O here, so no failure has to be reported from inside the
	 * caller's own call. */
	if (w->depth == 0)
		update_watch(w);
	return 0;
}

int
ws_is_open(const struct ws *w)
{
	return w != NULL && !w->freed && w->phase == WS_OPEN;
}

static void
destroy(struct ws *w)
{
	w->tearing = 1;
	for (int i = 0; i < w->ncfd; i++)
		loop_unwatch(w->loop, w->cfd[i]);
	loop_timer_cancel(w->loop, w->deadline);
	loop_timer_cancel(w->loop, w->curl_timer);
	if (w->fd >= 0)
		loop_unwatch(w->loop, w->fd);
	if (w->ctx != NULL)
		wslay_event_context_free(w->ctx);
	if (w->multi != NULL && w->easy != NULL)
		curl_multi_remove_handle(w->multi, w->easy);
	if (w->easy != NULL)
		curl_easy_cleanup(w->easy);
	if (w->multi != NULL)
		curl_multi_cleanup(w->multi);
	buf_free(&w->out);
	buf_free(&w->in);
	buf_free(&w->msg);
	free(w->io_error);
	free(w->host);
	free(w);
}

void
ws_free(struct ws *w)
{
	if (w == NULL)
		return;
	w->ended = 1;
	w->freed = 1;
	if (w->depth == 0)
		destroy(w);
	else if (w->fd >= 0)
		loop_unwatch(w->loop, w->fd);
}
