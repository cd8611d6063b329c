/* ws: a WebSocket client (RFC 6455) inside terp's poll loop. libcurl
 * makes the connection (name resolution, proxies, TLS for wss:// with
 * the same certificate checks as the REST calls) and then carries the
 * bytes (CURLOPT_CONNECT_ONLY, curl_easy_send/recv); wslay does the
 * framing; this file does the upgrade handshake and the bounds. Nothing
 * blocks. Knows nothing of Jupyter: messages in, messages out. */
#ifndef TERP_WS_H
#define TERP_WS_H

#include <stddef.h>
#include <stdint.h>

#include "terp/loop.h"

struct ws_opts {
	const char		*url;		/* ws:// or wss:// (http(s):// too) */
	const char *const	*headers;	/* "Name: value", NULL-terminated */
	const char		*ca_file;	/* CA bundle for wss; NULL: the system's */
	long			 connect_timeout_ms;	/* connect + handshake; 0: 20 s */
	size_t			 max_msg;	/* longer messages are skipped; 0: 16 MiB */
	size_t			 max_queued;	/* bytes waiting to be sent; 0: 64 MiB */
};

/* Why a connection ended. Strings are valid during the closed call. */
struct ws_end {
	long		 http_status;	/* the handshake's answer when not 101, else 0 */
	const char	*location;	/* its Location header (a redirect), or NULL */
	int		 close_code;	/* the server's close frame's code, or 0 */
	const char	*error;		/* one line, never NULL */
};

struct ws_cbs {
	/* The handshake succeeded; messages may be sent and will arrive. */
	void	(*open)(void *arg);
	/* One whole message (text: binary == 0). p is valid during the call. */
	void	(*message)(void *arg, const char *p, size_t n, int binary);
	/* A message longer than max_msg was skipped (not kept in memory);
	 * size is the bytes seen before giving up on it (at least max_msg). */
	void	(*dropped)(void *arg, uint64_t size);
	/* The connection is over (failed to open, closed, broken). Fires
	 * exactly once unless ws_free came first; the ws is freed right after
	 * it returns, so the owner forgets its pointer here. */
	void	(*closed)(void *arg, const struct ws_end *e);
};

struct ws;

/* Starts connecting; the strings of o are copied, cbs and arg borrowed.
 * Returns the connection, or NULL with *err (caller frees) when the URL
 * is unusable. Failures after that come through closed. */
struct ws *ws_open(struct loop *l, const struct ws_opts *o,
    const struct ws_cbs *cbs, void *arg, char **err);

/* Queues a text message (sent as the loop gets to it). Returns 0, or -1
 * with *err when the connection is not open or the queue is full. */
int ws_send(struct ws *w, const char *p, size_t n, char **err);

/* 1 once open has fired and until the connection ends. */
int ws_is_open(const struct ws *w);

/* Drops the connection at once (no close handshake, no callback fires
 * afterwards); safe from inside the connection's own callbacks. */
void ws_free(struct ws *w);

/* The Sec-WebSocket-Accept value for key (RFC 6455 §4.2.2): base64 of
 * the SHA-1 of key and the protocol's GUID, into out[29]. Exposed for
 * the unit tests. */
void ws_accept_for_key(const char *key, char out[29]);

#endif
