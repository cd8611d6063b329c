/* http: streaming HTTP requests over libcurl's multi interface, driven by
 * terp's poll loop (loop.h): curl's sockets become loop watches and its
 * timeout a loop timer, so nothing ever blocks. Knows nothing of models
 * or JSON: bytes in, bytes out. */
#ifndef TERP_HTTP_H
#define TERP_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "terp/loop.h"

/* One file sent as a multipart/form-data part (an upload). The bytes are
 * read with pread from offset 0 while the transfer runs, so the fd is
 * borrowed until done and its file must not shrink meanwhile. */
struct http_part {
	const char	*field;		/* the form field, e.g. "file" */
	const char	*filename;	/* the name sent with the part */
	int		 fd;
	uint64_t	 size;		/* bytes sent */
};

struct http_req {
	const char		*method;	/* NULL: "POST"; "GET" and "DELETE" send
						 * no body; others as given, with it */
	const char		*url;
	const char *const	*headers;	/* "Name: value", NULL-terminated */
	const char		*body;		/* copied by http_post, unless: */
	size_t			 body_len;
	int			 body_borrowed;	/* body is not copied: it must stay
						 * unchanged until done fires or
						 * http_cancel returns; a transfer
						 * cancelled from inside a callback of
						 * another transfer of the same client
						 * may still be sent from until curl
						 * returns, so only a client that runs
						 * one transfer at a time borrows */
	long			 connect_timeout_ms;	/* 0: libcurl's default */
	long			 idle_timeout_ms;	/* silent this long fails; 0: never */
	size_t			 max_error_body;	/* kept of a non-2xx body (64 KiB if 0) */
	const struct http_part	*part;		/* a multipart POST instead of body */
	const char		*ca_file;	/* CA bundle for https; NULL: the system's */
};

/* How a transfer ended. Strings are valid during the done call only. */
struct http_result {
	long		 status;	/* HTTP status, 0 when no response came */
	int		 curl_code;	/* CURLcode; 0 when the transfer completed */
	const char	*error;		/* one line when curl_code != 0, else NULL */
	int		 timed_out;	/* connect or idle timeout */
	const char	*body;		/* a non-2xx response's body (bounded) */
	size_t		 body_len;
	/* Response headers of interest (NULL when absent). */
	const char	*content_type;
	const char	*retry_after;
	const char	*retry_after_ms;
	const char	*should_retry;	/* x-should-retry */
	const char	*request_id;	/* x-request-id, request-id, apim-request-id */
	const char	*location;	/* a redirect's target (not followed) */
};

struct http_cbs {
	/* Bytes of a 2xx body as they arrive (non-2xx bodies are kept for
	 * done instead). Return 0 to go on; nonzero aborts the transfer and
	 * done then reports curl_code CURLE_WRITE_ERROR. */
	int	(*body)(void *arg, const char *p, size_t n);
	/* The transfer is over, fine or not; fires exactly once unless the
	 * transfer was cancelled. The transfer is freed after it returns. */
	void	(*done)(void *arg, const struct http_result *r);
};

struct http;
struct http_xfer;

/* A client bound to loop l (borrowed; it must outlive the client). */
struct http *http_new(struct loop *l);
/* Cancels every transfer silently and frees. Not from a callback. */
void http_free(struct http *h);

/* Starts a request: a POST of req->body unless req->method or req->part
 * say otherwise (a GET or DELETE sends no body). Silence counts from the last byte either way (an
 * upload's bytes going out count too). req's strings are copied; cbs,
 * arg and req->part's fd are borrowed until done. Returns the transfer,
 * or NULL with *err (caller frees). */
struct http_xfer *http_post(struct http *h, const struct http_req *req,
    const struct http_cbs *cbs, void *arg, char **err);

/* Aborts a transfer at once; no callback fires for it afterwards and x
 * must not be used again. Safe from inside the transfer's own body
 * callback (the teardown then waits for curl to return). */
void http_cancel(struct http_xfer *x);

/* The two translations between terp's loop and libcurl's multi
 * interface, shared with ws.c (which connects through curl too).
 * http_curl_select: the CURL_CSELECT_* flags for a descriptor's poll
 * revents, to pass to curl_multi_socket_action. */
int http_curl_select(int revents);
/* http_poll_events: the poll events for the CURL_POLL_* value libcurl's
 * socket callback asks for (0 for CURL_POLL_REMOVE). */
int http_poll_events(int what);

#endif
