/* kernel_aca_opts: the session pool backend's options and what can be
 * checked of them without the network (see kernel_aca_opts.h). */
#include "terp/kernel_aca_opts.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "terp/sanitize.h"
#include "terp/util.h"

static int
valid_id_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c != '\0' && strchr("|-&^%$#(){}[];<>", c) != NULL);
}

int
aca_identifier_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 4 || n > 128)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!valid_id_char((unsigned char)s[i]))
			return 0;
	return 1;
}

int
aca_api_shape(const char *v, enum aca_shape *s)
{
	static const char *const props[] = { "2024-02-02-preview" };
	static const char *const execs[] = { "2024-10-02-preview",
	    "2025-02-02-preview", "2025-10-02-preview" };

	for (size_t i = 0; i < sizeof props / sizeof *props; i++)
		if (strcmp(v, props[i]) == 0) {
			*s = ACA_SHAPE_PROPERTIES;
			return 0;
		}
	for (size_t i = 0; i < sizeof execs / sizeof *execs; i++)
		if (strcmp(v, execs[i]) == 0) {
			*s = ACA_SHAPE_EXECUTIONS;
			return 0;
		}
	return -1;
}

static int
loopback_host(const char *h)
{
	return strcmp(h, "127.0.0.1") == 0 || strcmp(h, "localhost") == 0 ||
	    strcmp(h, "[::1]") == 0 || strcmp(h, "::1") == 0;
}

void
aca_opts_default(struct aca_opts *o)
{
	memset(o, 0, sizeof *o);
	o->out_dir = "out";
	o->token_lifetime_ms = 10 * 60 * 1000;
	o->token_timeout_ms = 60000;
	o->timeout_ms = 220000;
	o->grace_ms = 30000;
	o->upload_max = 128ULL << 20;
	o->response_max = 32ULL << 20;
	o->artifact_max = 64ULL << 20;
	o->artifacts_per_cell = 64;
	o->artifacts_per_session = 1000;
	o->artifact_bytes = 1ULL << 30;
	o->max_retries = 4;
	o->retry_max_ms = 60000;
}

int
aca_check_opts(const struct aca_opts *o, char **err)
{
	CURLU *u;
	char *scheme = NULL, *host = NULL, *user = NULL, *query = NULL, *frag = NULL;
	enum aca_shape s;
	int rc = -1;

	if (o->endpoint == NULL || *o->endpoint == '\0') {
		*err = xstrdup("no session pool endpoint (the pool's management endpoint, "
		    "from az containerapp sessionpool show --query "
		    "properties.poolManagementEndpoint)");
		return -1;
	}
	if (o->api_version != NULL && aca_api_shape(o->api_version, &s) < 0) {
		char *v = sanitize_str(o->api_version, strnlen(o->api_version, 64), 0);
		*err = xasprintf("unsupported session pool api-version %s (terp speaks "
		    "2024-02-02-preview, 2024-10-02-preview, 2025-02-02-preview and "
		    "2025-10-02-preview)", v);
		free(v);
		return -1;
	}
	if ((o->token_cmd == NULL || *o->token_cmd == '\0') &&
	    (o->token_env == NULL || *o->token_env == '\0')) {
		*err = xstrdup("no token source for the session pool: set a token command "
		    "(e.g. az account get-access-token --resource <audience> --query "
		    "accessToken -o tsv) or an environment variable");
		return -1;
	}
	if (o->identifier != NULL && !aca_identifier_ok(o->identifier)) {
		*err = xstrdup("the saved session identifier is not valid (4 to 128 letters, "
		    "digits or |-&^%$#(){}[];<>)");
		return -1;
	}
	u = curl_url();
	if (u == NULL)
		fatal("curl_url failed");
	if (curl_url_set(u, CURLUPART_URL, o->endpoint, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		*err = xstrdup("the session pool endpoint is not a URL (expected "
		    "https://<region>.<pool service>/subscriptions/.../sessionPools/<name>)");
		goto out;
	}
	(void)curl_url_get(u, CURLUPART_USER, &user, 0);
	(void)curl_url_get(u, CURLUPART_QUERY, &query, 0);
	(void)curl_url_get(u, CURLUPART_FRAGMENT, &frag, 0);
	if (user != NULL) {
		*err = xstrdup("the session pool endpoint must not hold credentials");
		goto out;
	}
	if (query != NULL || frag != NULL) {
		*err = xstrdup("the session pool endpoint must not have a query or fragment "
		    "(terp adds api-version and identifier itself)");
		goto out;
	}
	if (strcasecmp(scheme, "https") != 0 &&
	    !(strcasecmp(scheme, "http") == 0 && loopback_host(host))) {
		*err = xstrdup("the session pool endpoint must use https (the token would "
		    "cross the network in clear)");
		goto out;
	}
	rc = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(user);
	curl_free(query);
	curl_free(frag);
	curl_url_cleanup(u);
	return rc;
}
