/* Unit tests for ws.c's pure parts: the handshake's accept value and
 * the refusal of unusable URLs and headers before any connection. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "terp/loop.h"
#include "terp/ws.h"

Test(ws, accept_value_is_rfc6455s)
{
	char out[29];

	/* RFC 6455 §1.3's worked example. */
	ws_accept_for_key("dGhlIHNhbXBsZSBub25jZQ==", out);
	cr_assert_str_eq(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

static void
closed(void *arg, const struct ws_end *e)
{
	(void)arg;
	(void)e;
}

static char *
open_err(const char *url, const char *const *headers)
{
	struct loop *l = loop_new();
	struct ws_cbs cbs = { NULL, NULL, NULL, closed };
	struct ws_opts o = { .url = url, .headers = headers };
	char *err = NULL;
	struct ws *w = ws_open(l, &o, &cbs, NULL, &err);

	cr_assert_null(w, "%s opened", url);
	loop_free(l);
	return err;
}

Test(ws, refuses_bad_urls_and_headers)
{
	const char *inject[] = { "Authorization: token x\r\nX-Evil: 1", NULL };
	const char *nocolon[] = { "Authorization", NULL };
	char *e;

	e = open_err("ftp://127.0.0.1/", NULL);
	cr_assert(strstr(e, "not a ws:// or wss:// URL") != NULL, "%s", e);
	free(e);
	e = open_err("ws://[::1/", NULL);
	cr_assert(strstr(e, "not a usable URL") != NULL, "%s", e);
	free(e);
	e = open_err("ws://127.0.0.1:1/x", inject);
	cr_assert(strstr(e, "line break") != NULL, "%s", e);
	free(e);
	e = open_err("ws://127.0.0.1:1/x", nocolon);
	cr_assert(strstr(e, "line break or no colon") != NULL, "%s", e);
	free(e);
}
