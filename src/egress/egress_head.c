/* egress_head: HTTP/1.1 as the proxy speaks it, a request head read
 * from the sandbox (its request line, and for plain http the headers,
 * rewritten for the upstream) and the proxy's own replies
 * (egress_head.h). Pure: no I/O; every byte parsed is hostile. */
#include "terp/egress.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "terp/buf.h"

#include "egress_head.h"

static const char *
status_text(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 408: return "Request Timeout";
	case 431: return "Request Header Fields Too Large";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Error";
	}
}

int
egress_reply_format(char *out, size_t len, int status, const char *code,
    const char *body)
{
	int n = snprintf(out, len,
	    "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n"
	    "X-Terp-Egress: %s\r\n\r\nterp egress: %s\n",
	    status, status_text(status), strlen(body) + 13, code, body);
	return n < 0 || (size_t)n >= len ? -1 : n;
}

/* Where the head ends (past its empty line), or 0 while incomplete. Bare
 * LF line ends are accepted, as most servers do. */
size_t
egress_head_end(const char *h, size_t from, size_t len)
{
	for (size_t i = from; i < len; i++) {
		if (h[i] != '\n')
			continue;
		if (i + 1 < len && h[i + 1] == '\n')
			return i + 2;
		if (i + 2 < len && h[i + 1] == '\r' && h[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

/* Hop-by-hop and proxy headers are not forwarded; Host is rebuilt from
 * the URL (RFC 9112 3.2.2: a proxy replaces it). */
static int
header_dropped(const char *name, size_t n)
{
	static const char *const drop[] = { "connection", "proxy-connection",
	    "keep-alive", "proxy-authorization", "proxy-authenticate", "te",
	    "trailer", "upgrade", "host", NULL };

	for (int i = 0; drop[i] != NULL; i++)
		if (strlen(drop[i]) == n && strncasecmp(drop[i], name, n) == 0)
			return 1;
	return 0;
}

static int
is_tchar(unsigned char ch)
{
	return isalnum(ch) || strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

/* Builds the origin-form head for the upstream: request line, Host from
 * the URL, the client's end-to-end headers, Connection: close (one
 * request per connection: a second request on a kept-alive connection
 * could name another host, and would go to this one unchecked). */
static int
fwd_build(struct egress_req *q, const char *method, const char *path, size_t plen,
    const char *version, const char *hdr, const char *end, const char **why)
{
	struct buf b;
	const char *p = hdr;

	buf_init(&b, EGRESS_HEAD_MAX + 1024);
	buf_printf(&b, "%s ", method);
	if (plen == 0 || path[0] == '?')
		buf_addc(&b, '/');
	buf_add(&b, path, plen);
	buf_printf(&b, " %s\r\nHost: ", version);
	if (q->hp.kind == EGRESS_HP_ADDR && q->hp.family == AF_INET6)
		buf_printf(&b, "[%s]", q->host);
	else
		buf_adds(&b, q->host);
	if (q->port != 80)
		buf_printf(&b, ":%u", q->port);
	buf_adds(&b, "\r\n");
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *le = eol, *colon;
		size_t n;

		if (eol == NULL)
			eol = le = end;
		if (le > p && le[-1] == '\r')
			le--;
		n = (size_t)(le - p);
		if (n == 0)
			break;
		if (p[0] == ' ' || p[0] == '\t') {
			*why = "folded header line";
			goto bad;
		}
		colon = memchr(p, ':', n);
		if (colon == NULL || colon == p) {
			*why = "header line without a name";
			goto bad;
		}
		for (const char *k = p; k < colon; k++)
			if (!is_tchar((unsigned char)*k)) {
				*why = "bad header name";
				goto bad;
			}
		for (const char *k = colon; k < le; k++)
			if (((unsigned char)*k < 0x20 && *k != '\t') || *k == 0x7f) {
				*why = "control character in a header";
				goto bad;
			}
		if (!header_dropped(p, (size_t)(colon - p))) {
			buf_add(&b, p, n);
			buf_adds(&b, "\r\n");
		}
		p = eol + 1;
	}
	if (buf_adds(&b, "Connection: close\r\n\r\n") < 0) {
		*why = "request head too big";
		goto bad;
	}
	q->fwdlen = b.len;
	q->fwd = buf_take(&b);
	return 0;
bad:
	buf_free(&b);
	return -1;
}

/* Parses the request line (and for plain http the headers) of the head
 * h[0..end). Fills q->method, q->hp, q->host, q->port. */
int
egress_head_parse(char *h, size_t end, struct egress_req *q, const char **why)
{
	char *eol, *le, *sp1, *sp2, *target;
	char version[9];
	size_t tlen, mlen;

	*why = "malformed request line";
	eol = memchr(h, '\n', end);
	le = eol;
	if (le > h && le[-1] == '\r')
		le--;
	sp1 = memchr(h, ' ', (size_t)(le - h));
	if (sp1 == NULL)
		return -1;
	mlen = (size_t)(sp1 - h);
	if (mlen == 0 || mlen >= sizeof q->method)
		return -1;
	for (size_t i = 0; i < mlen; i++)
		if (h[i] < 'A' || h[i] > 'Z')
			return -1;
	memcpy(q->method, h, mlen);
	q->method[mlen] = '\0';
	target = sp1 + 1;
	sp2 = memchr(target, ' ', (size_t)(le - target));
	if (sp2 == NULL || sp2 == target || le - sp2 - 1 != 8)
		return -1;
	memcpy(version, sp2 + 1, 8);
	version[8] = '\0';
	if (strcmp(version, "HTTP/1.1") != 0 && strcmp(version, "HTTP/1.0") != 0)
		return -1;
	tlen = (size_t)(sp2 - target);
	for (size_t i = 0; i < tlen; i++)
		if ((unsigned char)target[i] <= 0x20 || target[i] == 0x7f)
			return -1;
	if (strcmp(q->method, "CONNECT") == 0) {
		q->is_connect = 1;
		if (egress_hp_parse(target, tlen, &q->hp, 0, why) < 0)
			return -1;
		if (q->hp.port == 0) {
			*why = "CONNECT needs host:port";
			return -1;
		}
	} else {
		const char *auth, *rest, *path;
		size_t alen, plen;

		if (tlen >= 8 && strncasecmp(target, "https://", 8) == 0) {
			*why = "https URLs go through CONNECT";
			return -1;
		}
		if (tlen < 7 || strncasecmp(target, "http://", 7) != 0) {
			*why = target[0] == '/' ? "not a proxy request "
			    "(no http:// URL)" : "unsupported URL scheme";
			return -1;
		}
		auth = target + 7;
		rest = auth;
		while (rest < sp2 && *rest != '/' && *rest != '?' && *rest != '#')
			rest++;
		alen = (size_t)(rest - auth);
		if (memchr(auth, '@', alen) != NULL) {
			*why = "credentials in the URL";
			return -1;
		}
		if (egress_hp_parse(auth, alen, &q->hp, 0, why) < 0)
			return -1;
		path = rest;
		plen = (size_t)(sp2 - rest);
		for (size_t i = 0; i < plen; i++)
			if (path[i] == '#')
				plen = i;
		if (q->hp.port == 0)
			q->hp.port = 80;
		q->port = q->hp.port;
		if (q->hp.kind == EGRESS_HP_ADDR)
			egress_hp_text(&q->hp, q->host, sizeof q->host);
		else
			snprintf(q->host, sizeof q->host, "%s", q->hp.name);
		*sp2 = '\0';
		return fwd_build(q, q->method, path, plen, version, eol + 1,
		    h + end, why);
	}
	q->port = q->hp.port;
	if (q->hp.kind == EGRESS_HP_ADDR)
		egress_hp_text(&q->hp, q->host, sizeof q->host);
	else
		snprintf(q->host, sizeof q->host, "%s", q->hp.name);
	return 0;
}
