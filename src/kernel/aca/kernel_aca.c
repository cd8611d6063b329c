/* kernel_aca: cells in an Azure Container Apps session pool over its
 * REST API (PROTOCOLS.md §7), through http.c inside terp's loop.
 *
 * One job runs at a time: connecting (token, marker check, uploads), a
 * cell (marker check, re-uploads after a recycle, execution, listing,
 * downloads) or a staged upload. A job is a chain of requests; at most
 * one request is in flight (struct rq) and each ends in one handler.
 * Jobs wait in a queue in the order they were asked for.
 *
 * The token never leaves this file except in the Authorization header
 * that http.c hands to curl: no message is built from it, and the token
 * command's stderr is redacted before it is shown. The identifier is
 * only ever in request URLs, which no message quotes. */
#include "terp/kernel_aca.h"

#include <assert.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "terp/buf.h"
#include "terp/json_text.h"
#include "terp/kernel_sink.h"
#include "terp/retry_after.h"
#include "terp/digest.h"
#include "terp/http.h"
#include "terp/kernel_frame.h"
#include "terp/sanitize.h"
#include "terp/util.h"

#define TOKEN_OUT_MAX	(64 * 1024)	/* read of the token command's stdout */
#define TOKEN_ERR_MAX	4096		/* kept of its stderr */
#define TOKEN_MAX	16384		/* bytes of a token */
#define TOKEN_MARGIN_S	300		/* refreshed this long before expiry */
#define TOKEN_MIN_S	60		/* a fresh token is kept at least this long */
#define JWT_PART_MAX	8192		/* a JWT's payload, base64url */
#define VALUE_MAX	(64 * 1024)	/* a result value's text */
#define LIST_BODY_MAX	(4u << 20)	/* a files listing */
#define LIST_MAX	1000		/* files of a listing looked at */
#define ERR_BODY_MAX	(64 * 1024)	/* kept of an error answer */
#define REQ_IDLE_MS	60000		/* silence before a non-execution request fails */
#define NOTES_MAX	(16 * 1024)	/* notes kept for the next cell */
#define REMOTE_NAME_MAX	255
#define CODE_MAX	(64u << 20)

/* The marker: set in the session's namespace by every check; a session
 * without it is not the one terp talked to before. One statement that
 * prints, so that it leaves no display value (IPython's `_`). */
#define MARKER_CODE "print('terp-marker:' + ('kept' if globals().get(" \
	"'_terp_marker') == 'terp-1' else 'new')); globals()['_terp_marker'] = 'terp-1'"

#define MSG_RECYCLED "restarted: the pool recycled the remote session (idle past " \
	"its cooldown, or its kernel restarted), so its state (variables, imports, " \
	"files in " ACA_DATA_DIR ") was lost; data files are uploaded again"
#define MSG_NO_STREAM "terp: output arrives when the cell ends (remote sessions " \
	"do not stream)\n"

enum shape { SHAPE_PROPERTIES, SHAPE_EXECUTIONS };
enum job { JOB_NONE, JOB_CONNECT, JOB_CELL, JOB_UPLOAD };
enum rq_kind { RQ_EXEC, RQ_UPLOAD, RQ_LIST, RQ_DOWNLOAD };

struct rq_end {
	long		 status;	/* HTTP status, 0 without an answer */
	int		 timed_out;	/* no answer in time (ours) */
	const char	*err;		/* one line when it failed, else NULL */
};

struct aca;
typedef void (*rq_fin)(struct aca *a, const struct rq_end *e);

/* The one request in flight. */
struct rq {
	enum rq_kind	 kind;
	int		 active;
	char		*url;
	int		 get;
	char		*body;
	size_t		 body_len;
	int		 has_part;
	struct http_part part;
	int64_t		 idle_ms;
	rq_fin		 fin;
	int		 tries;		/* 429s so far */
	int		 auth_retried;
	int		 waiting_token;
	struct buf	 resp;		/* a 2xx body (not for downloads) */
	int		 too_big;
	struct http_xfer *x;
	uint64_t	 retry_timer;
};

/* A data file: kept open for the session, so that a re-upload after a
 * recycle sends the same file. */
struct dfile {
	char		*host;
	char		*name;		/* in /mnt/data */
	int		 fd;
	uint64_t	 size;
	int		 uploaded;	/* 1 done, -1 failed, 0 to do */
};

struct op {
	int		 cell;		/* 1: a cell, 0: an upload */
	int		 n;
	char		*code;
	int		 file;
	struct op	*next;
};

struct seen {
	char		*name;
	uint64_t	 size;
	char		*mtime;
};

struct crun {
	int		 n;
	char		*code;
	int64_t		 start_us, exec_us;
	int		 lost;		/* its check found the state gone */
	int		 exec_sent;	/* the execution request went out */
	int		 have_exec;	/* the execution answered */
	enum cell_status status;
	char		*value, *ename, *evalue, *traceback, *reason;
	struct aca_file	*cand;		/* files to download */
	int		 ncand, next;
	int		 grew;		/* a download passed its listed size */
};

struct tokjob {
	pid_t		 pid;
	int		 out, err, pidfd;
	struct buf	 obuf, ebuf;
	uint64_t	 timer, poll;
	int		 out_eof, err_eof, overflow, timed_out, reaped;
	int		 wstatus;
};

struct aca {
	struct loop	*loop;
	struct http	*http;
	struct aca_opts	 o;
	struct kernel_cbs cb;
	void		*arg;
	enum kernel_state state;
	enum shape	 shape;
	char		*endpoint;	/* without a trailing '/' */
	char		 id[129];
	int		 known;		/* the identifier had our marker once */
	int		 kept;		/* the last check found our marker */
	int		 connected;
	int		 told_no_stream;
	char		*stopped_why;
	unsigned	 gen;		/* bumped when a job is torn down */
	int		 quiet;		/* > 0 in a teardown: cells only queue */
	/* the token */
	char		*token;
	int64_t		 tok_refresh;	/* unix s: fetch again from then on */
	int64_t		 tok_exp;
	int		 tok_once;	/* a fresh token already due: use it once */
	char		 tok_aud[128];
	struct tokjob	*tj;
	/* files */
	struct dfile	*files;
	int		 nfiles;
	struct seen	*seen;
	int		 nseen;
	struct kernel_sink *sink;	/* artifacts into out_dir */
	struct buf	 notes;		/* for the next cell's stderr */
	/* jobs */
	struct op	*queue;
	enum job	 job;
	int		 up_file;	/* the file being uploaded */
	int		 up_only;	/* the upload job's file */
	struct crun	 cr;
	struct rq	 rq;
};

static void advance(struct aca *a);
static void rq_send(struct aca *a);
static void after_uploads(struct aca *a);
static void finish_cell(struct aca *a);
static void next_download(struct aca *a);
static void fin_upload(struct aca *a, const struct rq_end *e);
static void fin_exec(struct aca *a, const struct rq_end *e);
static void resume_queue(struct aca *a);

/* ------------------------------------------------------------ small helpers */

static int64_t
wall(const struct aca *a)
{
	return a->o.wallclock ? a->o.wallclock() : (int64_t)time(NULL);
}

static int
valid_id_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c != '\0' && strchr("|-&^%$#(){}[];<>", c) != NULL);
}

static int
valid_identifier(const char *s)
{
	size_t n = strlen(s);

	if (n < 4 || n > 128)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!valid_id_char((unsigned char)s[i]))
			return 0;
	return 1;
}

/* A random version 4 UUID: unguessable, so that nobody else reaches the
 * session (the docs call the identifier sensitive). */
static int
random_uuid(char out[37])
{
	unsigned char r[16];
	size_t got = 0;

	while (got < sizeof r) {
		ssize_t n = getrandom(r + got, sizeof r - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)n;
	}
	r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
	r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
	    "%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5], r[6],
	    r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14], r[15]);
	return 0;
}

static void
pct(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~') {
			buf_addc(b, (char)c);
		} else {
			buf_addc(b, '%');
			buf_addc(b, hex[c >> 4]);
			buf_addc(b, hex[c & 15]);
		}
	}
}

/* endpoint/path?api-version=V&identifier=ID[&path=/mnt/data]; path is
 * already percent-encoded where it holds a file name. */
static char *
make_url(const struct aca *a, const char *path, int with_dir)
{
	struct buf b;

	buf_init(&b, SIZE_MAX / 2);
	buf_printf(&b, "%s/%s?api-version=", a->endpoint, path);
	pct(&b, a->o.api_version);
	buf_adds(&b, "&identifier=");
	pct(&b, a->id);
	if (with_dir) {
		buf_adds(&b, "&path=");
		pct(&b, ACA_DATA_DIR);
	}
	return buf_take(&b);
}

static int
shape_of(const char *v, enum shape *s)
{
	static const char *const props[] = { "2024-02-02-preview" };
	static const char *const execs[] = { "2024-10-02-preview",
	    "2025-02-02-preview", "2025-10-02-preview" };

	for (size_t i = 0; i < sizeof props / sizeof *props; i++)
		if (strcmp(v, props[i]) == 0) {
			*s = SHAPE_PROPERTIES;
			return 0;
		}
	for (size_t i = 0; i < sizeof execs / sizeof *execs; i++)
		if (strcmp(v, execs[i]) == 0) {
			*s = SHAPE_EXECUTIONS;
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

/* ------------------------------------------------------------ options */

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
	enum shape s;
	int rc = -1;

	if (o->endpoint == NULL || *o->endpoint == '\0') {
		*err = xstrdup("no session pool endpoint (the pool's management endpoint, "
		    "from az containerapp sessionpool show --query "
		    "properties.poolManagementEndpoint)");
		return -1;
	}
	if (o->api_version != NULL && shape_of(o->api_version, &s) < 0) {
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
	if (o->identifier != NULL && !valid_identifier(o->identifier)) {
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

/* ------------------------------------------------------------ pure parsers */

int
aca_jwt_claims(const char *token, int64_t *exp, char *aud, size_t audlen)
{
	const char *d1, *d2;
	char *b64, *dec;
	size_t n, dl, k = 0;
	cJSON *j, *e, *au;

	*exp = 0;
	if (aud != NULL && audlen > 0)
		aud[0] = '\0';
	if ((d1 = strchr(token, '.')) == NULL || (d2 = strchr(d1 + 1, '.')) == NULL)
		return -1;
	n = (size_t)(d2 - d1 - 1);
	if (n == 0 || n > JWT_PART_MAX || n % 4 == 1)
		return -1;
	b64 = xmalloc(n + 4);
	for (size_t i = 0; i < n; i++) {
		char c = d1[1 + i];
		if (c == '-')
			c = '+';
		else if (c == '_')
			c = '/';
		else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9')))
			break;
		b64[k++] = c;
	}
	if (k != n) {
		free(b64);
		return -1;
	}
	while (k % 4 != 0)
		b64[k++] = '=';
	dec = base64_decode(b64, k, &dl);
	free(b64);
	if (dec == NULL)
		return -1;
	j = cJSON_ParseWithLength(dec, dl);
	free(dec);
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return -1;
	}
	e = cJSON_GetObjectItemCaseSensitive(j, "exp");
	if (cJSON_IsNumber(e) && isfinite(e->valuedouble) && e->valuedouble > 0 &&
	    e->valuedouble < 1e11)
		*exp = (int64_t)e->valuedouble;
	au = cJSON_GetObjectItemCaseSensitive(j, "aud");
	if (cJSON_IsArray(au))
		au = cJSON_GetArrayItem(au, 0);
	if (cJSON_IsString(au) && aud != NULL && audlen > 0) {
		size_t o = 0;
		/* Printable ASCII only: it may be shown in an error line. */
		for (const char *p = au->valuestring; *p && o + 1 < audlen; p++)
			if ((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f)
				aud[o++] = *p;
		aud[o] = '\0';
	}
	cJSON_Delete(j);
	return 0;
}

static int
token_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c != '\0' && strchr("-._~+/=", c) != NULL);
}

char *
aca_token_parse(const char *out, size_t len, int64_t *exp, const char **why)
{
	const char *s = out, *e = out + len;
	char *tok = NULL;
	size_t n;

	*exp = 0;
	while (s < e && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n'))
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
		e--;
	if (s == e) {
		*why = "it printed no token";
		return NULL;
	}
	if (*s == '{') {
		/* az account get-access-token without --query: take the
		 * token and its expiry from the JSON. */
		cJSON *j = cJSON_ParseWithLength(s, (size_t)(e - s));
		cJSON *t, *x;
		if (!cJSON_IsObject(j)) {
			cJSON_Delete(j);
			*why = "it printed something that is neither a token nor JSON";
			return NULL;
		}
		t = cJSON_GetObjectItemCaseSensitive(j, "accessToken");
		if (!cJSON_IsString(t))
			t = cJSON_GetObjectItemCaseSensitive(j, "access_token");
		if (!cJSON_IsString(t)) {
			cJSON_Delete(j);
			*why = "it printed JSON without an accessToken (add --query accessToken -o tsv)";
			return NULL;
		}
		x = cJSON_GetObjectItemCaseSensitive(j, "expires_on");
		if (cJSON_IsNumber(x) && isfinite(x->valuedouble) && x->valuedouble > 0 &&
		    x->valuedouble < 1e11)
			*exp = (int64_t)x->valuedouble;
		else if (cJSON_IsString(x)) {
			char *end;
			long long v = strtoll(x->valuestring, &end, 10);
			if (end != x->valuestring && *end == '\0' && v > 0 && v < 100000000000LL)
				*exp = v;
		}
		tok = xstrdup(t->valuestring);
		/* The JSON held the token: wipe the parsed copy. */
		explicit_bzero(t->valuestring, strlen(t->valuestring));
		cJSON_Delete(j);
	} else {
		tok = xstrndup(s, (size_t)(e - s));
	}
	n = strlen(tok);
	for (size_t i = 0; i < n; i++) {
		if (!token_char((unsigned char)tok[i])) {
			explicit_bzero(tok, n);
			free(tok);
			*why = "its output is not one token (one line of letters, digits and -._~+/=)";
			return NULL;
		}
	}
	if (n < 8 || n > TOKEN_MAX) {
		explicit_bzero(tok, n);
		free(tok);
		*why = n < 8 ? "its output is too short to be a token" :
		    "its output is too long to be a token";
		return NULL;
	}
	if (*exp == 0) {
		int64_t jexp;
		if (aca_jwt_claims(tok, &jexp, NULL, 0) == 0)
			*exp = jexp;
	}
	return tok;
}

static int
redact_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '+' || c == '=' || c == '~';
}

char *
aca_redact_line(const char *err, size_t len, const char *secret)
{
	const char *s = err, *e = err + len, *nl;
	struct buf b;
	char *line, *clean;
	size_t n, cut;

	/* The first line with something on it. */
	for (;;) {
		while (s < e && (*s == ' ' || *s == '\t' || *s == '\r'))
			s++;
		if (s < e && *s == '\n') {
			s++;
			continue;
		}
		break;
	}
	nl = memchr(s, '\n', (size_t)(e - s));
	if (nl != NULL)
		e = nl;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		e--;
	if ((size_t)(e - s) > 1000)
		e = s + 1000;
	line = xstrndup(s, (size_t)(e - s));
	if (secret != NULL && strlen(secret) >= 8) {
		size_t sl = strlen(secret);
		/* Marked, replaced below; the search goes on past each mark
		 * (a secret may hold the mark byte itself). */
		for (char *p = strstr(line, secret); p != NULL; p = strstr(p + sl, secret))
			memset(p, '\x01', sl);
	}
	buf_init(&b, SIZE_MAX / 2);
	n = strlen(line);
	for (size_t i = 0; i < n; ) {
		size_t j = i;
		if (line[i] == '\x01') {
			while (j < n && line[j] == '\x01')
				j++;
			buf_adds(&b, "[redacted]");
			i = j;
			continue;
		}
		/* A JWT ("eyJ" is '{"' in base64url) or a long run of token
		 * characters. */
		if (strncmp(line + i, "eyJ", 3) == 0) {
			while (j < n && (redact_char((unsigned char)line[j]) || line[j] == '.'))
				j++;
			if (j - i >= 16) {
				buf_adds(&b, "[redacted]");
				i = j;
				continue;
			}
			j = i;
		}
		while (j < n && redact_char((unsigned char)line[j]))
			j++;
		if (j - i >= 48) {
			buf_adds(&b, "[redacted]");
			i = j;
			continue;
		}
		if (j == i)
			j = i + 1;
		buf_add(&b, line + i, j - i);
		i = j;
	}
	explicit_bzero(line, n);
	free(line);
	clean = sanitize_str(buf_str(&b), b.len, 0);
	buf_free(&b);
	n = strlen(clean);
	if (n > 200) {
		cut = utf8_complete_prefix(clean, 200);
		clean[cut] = '\0';
	}
	return clean;
}

static int
has_word_ci(const char *s, const char *w)
{
	return s != NULL && strcasestr(s, w) != NULL;
}

static char *
json_value_text(const cJSON *v)
{
	char *s, *out;
	size_t n;

	if (cJSON_IsString(v)) {
		if (v->valuestring[0] == '\0')
			return NULL;
		s = xstrdup(v->valuestring);
	} else if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;
		if (d == floor(d) && fabs(d) < 9007199254740992.0)
			s = xasprintf("%lld", (long long)d);
		else
			s = xasprintf("%.17g", d);
	} else if (cJSON_IsBool(v)) {
		s = xstrdup(cJSON_IsTrue(v) ? "True" : "False");
	} else if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
		s = cJSON_PrintUnformatted(v);
		if (s == NULL)
			return NULL;
		out = xstrdup(s);
		cJSON_free(s);
		s = out;
	} else {
		return NULL;
	}
	n = strlen(s);
	if (n > VALUE_MAX) {
		size_t cut = utf8_complete_prefix(s, VALUE_MAX);
		out = xasprintf("%.*s... (cut at %u KiB)", (int)cut, s, VALUE_MAX / 1024);
		free(s);
		s = out;
	}
	return s;
}

int
aca_exec_parse(const char *body, size_t len, struct aca_exec *e, const char **why)
{
	cJSON *root, *props, *res, *inner, *val, *eo, *ms;
	const char *st, *s;

	memset(e, 0, sizeof *e);
	e->ms = -1;
	e->out = e->err = "";
	root = cJSON_ParseWithLength(body, len);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		*why = "it is not a JSON object";
		return -1;
	}
	e->json = root;
	/* 2024-02-02-preview wraps everything in "properties"; the stable
	 * version is flat; the executions resource nests the outputs in
	 * "result". */
	props = cJSON_GetObjectItemCaseSensitive(root, "properties");
	if (!cJSON_IsObject(props))
		props = root;
	if ((st = json_str(props, "status")) == NULL) {
		*why = "it has no status";
		goto fail;
	}
	if (strcmp(st, "Success") == 0 || strcmp(st, "Succeeded") == 0) {
		e->ok = 1;
	} else if (strcmp(st, "Failure") == 0 || strcmp(st, "Failed") == 0 ||
	    strcmp(st, "Canceled") == 0) {
		e->ok = 0;
	} else if (strcmp(st, "Running") == 0 || strcmp(st, "NotStarted") == 0) {
		*why = "the pool answered as if the execution were asynchronous";
		goto fail;
	} else {
		*why = "its status is unknown";
		goto fail;
	}
	res = cJSON_GetObjectItemCaseSensitive(props, "result");
	inner = props;
	val = res;
	if (cJSON_IsObject(res) && (cJSON_HasObjectItem(res, "stdout") ||
	    cJSON_HasObjectItem(res, "stderr") || cJSON_HasObjectItem(res, "executionResult"))) {
		inner = res;
		val = cJSON_GetObjectItemCaseSensitive(res, "executionResult");
	}
	if ((s = json_str(inner, "stdout")) != NULL)
		e->out = s;
	if ((s = json_str(inner, "stderr")) != NULL)
		e->err = s;
	ms = cJSON_GetObjectItemCaseSensitive(inner, "executionTimeInMilliseconds");
	if (cJSON_IsNumber(ms) && isfinite(ms->valuedouble) && ms->valuedouble >= 0 &&
	    ms->valuedouble < 1e15)
		e->ms = (int64_t)ms->valuedouble;
	if (cJSON_IsObject(val) && (s = json_str(val, "type")) != NULL && strcmp(s, "image") == 0) {
		const char *f = json_str(val, "format");
		e->image = json_str(val, "base64_data");
		/* The format becomes a file extension: letters only. */
		if (f != NULL && strlen(f) <= 8 && strspn(f, "abcdefghijklmnopqrstuvwxyz") == strlen(f) &&
		    *f != '\0')
			e->image_fmt = f;
	} else if (val != NULL) {
		e->value = json_value_text(val);
	}
	eo = cJSON_GetObjectItemCaseSensitive(props, "error");
	if (!cJSON_IsObject(eo))
		eo = cJSON_GetObjectItemCaseSensitive(root, "error");
	if (cJSON_IsObject(eo)) {
		cJSON *in = cJSON_GetObjectItemCaseSensitive(eo, "error");
		if (cJSON_IsObject(in))
			eo = in;
		e->code = json_str(eo, "code");
		e->message = json_str(eo, "message");
	}
	if (!e->ok && (has_word_ci(e->code, "timeout") || has_word_ci(e->message, "timed out") ||
	    has_word_ci(e->message, "timeout") || has_word_ci(e->message, "time limit")))
		e->timed_out = 1;
	return 0;
fail:
	aca_exec_free(e);
	return -1;
}

void
aca_exec_free(struct aca_exec *e)
{
	free(e->value);
	cJSON_Delete(e->json);
	memset(e, 0, sizeof *e);
}

static int
usable_name(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= REMOTE_NAME_MAX && strchr(s, '/') == NULL &&
	    strcmp(s, ".") != 0 && strcmp(s, "..") != 0 && kframe_name_problem(s) == NULL;
}

int
aca_files_parse(const char *body, size_t len, int max, struct aca_file **out,
    int *skipped, const char **why)
{
	cJSON *root, *list, *it;
	struct aca_file *f = NULL;
	int n = 0;

	*out = NULL;
	*skipped = 0;
	root = cJSON_ParseWithLength(body, len);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		*why = "it is not a JSON object";
		return -1;
	}
	list = cJSON_GetObjectItemCaseSensitive(root, "value");
	if (!cJSON_IsArray(list)) {
		cJSON_Delete(root);
		*why = "it has no list of files";
		return -1;
	}
	cJSON_ArrayForEach(it, list) {
		const cJSON *p = it, *sz;
		const char *name, *type, *mt;
		int dup = 0;

		if (!cJSON_IsObject(it)) {
			(*skipped)++;
			continue;
		}
		if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(it, "properties")))
			p = cJSON_GetObjectItemCaseSensitive(it, "properties");
		if ((type = json_str(p, "type")) != NULL && strcmp(type, "file") != 0)
			continue;	/* a folder: not an artifact */
		if ((name = json_str(p, "filename")) == NULL)
			name = json_str(p, "name");
		sz = cJSON_GetObjectItemCaseSensitive(p, "size");
		if (sz == NULL)
			sz = cJSON_GetObjectItemCaseSensitive(p, "sizeInBytes");
		if (name == NULL || !usable_name(name) || !cJSON_IsNumber(sz) ||
		    !isfinite(sz->valuedouble) || sz->valuedouble < 0 ||
		    sz->valuedouble > 9007199254740992.0 ||
		    sz->valuedouble != floor(sz->valuedouble) || n >= max) {
			(*skipped)++;
			continue;
		}
		for (int i = 0; i < n && !dup; i++)
			dup = strcmp(f[i].name, name) == 0;
		if (dup) {
			(*skipped)++;
			continue;
		}
		if ((mt = json_str(p, "lastModifiedTime")) == NULL)
			mt = json_str(p, "lastModifiedAt");
		f = xrealloc(f, (size_t)(n + 1) * sizeof *f);
		f[n].name = xstrdup(name);
		f[n].size = (uint64_t)sz->valuedouble;
		f[n].mtime = xstrndup(mt ? mt : "", 64);
		n++;
	}
	cJSON_Delete(root);
	*out = f;
	return n;
}

void
aca_files_free(struct aca_file *f, int n)
{
	for (int i = 0; i < n; i++) {
		free(f[i].name);
		free(f[i].mtime);
	}
	free(f);
}

/* ------------------------------------------------------------ state and notes */

/* The one place state reports leave the module, with the typed
 * restarted/state_lost facts (kernel.h's struct kernel_status). */
static void
report_state(struct aca *a, enum kernel_state st, int restarted, int state_lost,
    const char *msg)
{
	struct kernel_status ks = { .state = st, .restarted = restarted,
	    .state_lost = state_lost, .msg = msg ? msg : kernel_state_name(st) };

	a->state = st;
	if (a->cb.state)
		a->cb.state(a->arg, &ks);
}

static void
emit(struct aca *a, int stream, const char *p, size_t n)
{
	if (n > 0 && a->cb.output != NULL && a->job == JOB_CELL)
		a->cb.output(a->arg, a->cr.n, stream, p, n);
}

/* "terp: ..." on the running cell's stderr, or kept for the next cell. */
static void
note(struct aca *a, const char *fmt, ...)
{
	va_list ap;
	char *body, *line;

	va_start(ap, fmt);
	if (vasprintf(&body, fmt, ap) < 0)
		fatal("out of memory");
	va_end(ap);
	line = xasprintf("terp: %s\n", body);
	free(body);
	if (a->job == JOB_CELL)
		emit(a, 1, line, strlen(line));
	else
		(void)buf_adds(&a->notes, line);	/* dropped when full */
	free(line);
}

/* ------------------------------------------------------------ the token */

static void tok_done(struct aca *a, char *err);

static void
tok_job_free(struct aca *a)
{
	struct tokjob *t = a->tj;

	if (t == NULL)
		return;
	if (t->out >= 0) {
		loop_unwatch(a->loop, t->out);
		close(t->out);
	}
	if (t->err >= 0) {
		loop_unwatch(a->loop, t->err);
		close(t->err);
	}
	if (t->pidfd >= 0) {
		loop_unwatch(a->loop, t->pidfd);
		close(t->pidfd);
	}
	loop_timer_cancel(a->loop, t->timer);
	loop_timer_cancel(a->loop, t->poll);
	if (!t->reaped && t->pid > 0) {
		/* aca_free: nothing may be left behind. SIGKILL cannot be
		 * ignored, so this wait is short. */
		kill(-t->pid, SIGKILL);
		kill(t->pid, SIGKILL);
		while (waitpid(t->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (t->obuf.data != NULL)
		explicit_bzero(t->obuf.data, t->obuf.len);
	buf_free(&t->obuf);
	buf_free(&t->ebuf);
	free(t);
	a->tj = NULL;
}

/* The command has exited and its pipes are closed (or abandoned):
 * take the token or say why not. */
static void
tok_finish(struct aca *a)
{
	struct tokjob *t = a->tj;
	char *err = NULL, *line;
	const char *why;
	int64_t exp;
	char *tok;

	if (t->timed_out) {
		err = xasprintf("the token command did not finish in %lld s; run it in a "
		    "shell to see why", (long long)(a->o.token_timeout_ms / 1000));
	} else if (t->overflow) {
		err = xasprintf("the token command printed more than %d KiB; it should print "
		    "only the token", TOKEN_OUT_MAX / 1024);
	} else if (!WIFEXITED(t->wstatus) || WEXITSTATUS(t->wstatus) != 0) {
		char how[64];
		if (WIFEXITED(t->wstatus))
			snprintf(how, sizeof how, "exit %d", WEXITSTATUS(t->wstatus));
		else
			snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(t->wstatus));
		/* What it printed on stdout may be a token: it names what
		 * to redact from the stderr line and is never shown. */
		buf_addc(&t->obuf, '\0');
		line = aca_redact_line(buf_str(&t->ebuf), t->ebuf.len,
		    t->obuf.len > 1 ? t->obuf.data : NULL);
		if (*line)
			err = xasprintf("the token command failed (%s): %s", how, line);
		else
			err = xasprintf("the token command failed (%s) and said nothing on "
			    "stderr", how);
		free(line);
	} else if ((tok = aca_token_parse(t->obuf.data ? t->obuf.data : "", t->obuf.len,
	    &exp, &why)) == NULL) {
		err = xasprintf("the token command's output is no token: %s", why);
	} else {
		int64_t now = wall(a), life, margin;

		if (a->token != NULL) {
			explicit_bzero(a->token, strlen(a->token));
			free(a->token);
		}
		a->token = tok;
		(void)aca_jwt_claims(tok, &life, a->tok_aud, sizeof a->tok_aud);
		if (exp <= 0)
			exp = now + a->o.token_lifetime_ms / 1000;
		a->tok_exp = exp;
		life = exp - now;
		margin = life / 2 < TOKEN_MARGIN_S ? life / 2 : TOKEN_MARGIN_S;
		a->tok_refresh = exp - (margin > 0 ? margin : 0);
		/* A token that is already due (clocks differ) is used for a
		 * while all the same: the pool decides, a 401 fetches a new
		 * one, and asking the command again at once would give the
		 * same token. */
		if (a->tok_refresh < now + TOKEN_MIN_S)
			a->tok_refresh = now + TOKEN_MIN_S;
		a->tok_once = 1;
	}
	tok_job_free(a);
	tok_done(a, err);
}

static void
tok_maybe_done(struct aca *a)
{
	struct tokjob *t = a->tj;

	if (t->out_eof && t->err_eof && t->reaped)
		tok_finish(a);
}

static int
tok_try_reap(struct aca *a)
{
	struct tokjob *t = a->tj;
	pid_t r;

	do
		r = waitpid(t->pid, &t->wstatus, WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == t->pid || (r < 0 && errno == ECHILD)) {
		t->reaped = 1;
		/* Its own children may still hold the pipes: the group
		 * goes with it. */
		kill(-t->pid, SIGKILL);
		return 1;
	}
	return 0;
}

static void tok_on_poll(struct loop *l, void *arg);

static void
tok_on_pidfd(struct loop *l, int fd, int revents, void *arg)
{
	struct aca *a = arg;
	(void)revents;

	if (!tok_try_reap(a))
		return;
	loop_unwatch(l, fd);
	close(fd);
	a->tj->pidfd = -1;
	tok_maybe_done(a);
}

/* Where there is no pidfd, the exit is looked for every 20 ms. */
static void
tok_on_poll(struct loop *l, void *arg)
{
	struct aca *a = arg;

	a->tj->poll = 0;
	if (!tok_try_reap(a)) {
		a->tj->poll = loop_timer_add(l, 20, tok_on_poll, a);
		return;
	}
	tok_maybe_done(a);
}

static void
tok_watch_exit(struct aca *a)
{
	struct tokjob *t = a->tj;

	if (t->reaped || t->pidfd >= 0 || t->poll != 0)
		return;
	if (tok_try_reap(a)) {
		tok_maybe_done(a);
		return;
	}
	t->pidfd = (int)syscall(SYS_pidfd_open, t->pid, 0);
	if (t->pidfd >= 0) {
		fd_set_cloexec(t->pidfd);
		loop_watch(a->loop, t->pidfd, POLLIN, tok_on_pidfd, a);
	} else {
		t->poll = loop_timer_add(a->loop, 20, tok_on_poll, a);
	}
}

static void
tok_on_pipe(struct loop *l, int fd, int revents, void *arg)
{
	struct aca *a = arg;
	struct tokjob *t = a->tj;
	char b[4096];
	ssize_t n;
	int is_out = fd == t->out;
	(void)revents;

	for (;;) {
		n = read(fd, b, sizeof b);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			loop_unwatch(l, fd);
			close(fd);
			if (is_out) {
				t->out = -1;
				t->out_eof = 1;
			} else {
				t->err = -1;
				t->err_eof = 1;
			}
			if (t->out_eof && t->err_eof)
				tok_watch_exit(a);
			break;
		}
		if (is_out) {
			if (buf_add(&t->obuf, b, (size_t)n) < 0) {
				/* past the bound: it is not printing a token */
				t->overflow = 1;
				kill(-t->pid, SIGKILL);
			}
		} else {
			size_t room = t->ebuf.max - t->ebuf.len;
			(void)buf_add(&t->ebuf, b, (size_t)n < room ? (size_t)n : room);
		}
		explicit_bzero(b, sizeof b);
	}
	explicit_bzero(b, sizeof b);
}

static void
tok_on_timeout(struct loop *l, void *arg)
{
	struct aca *a = arg;
	struct tokjob *t = a->tj;

	t->timer = 0;
	t->timed_out = 1;
	kill(-t->pid, SIGKILL);
	kill(t->pid, SIGKILL);
	/* A grandchild that left the group may keep the pipes open: stop
	 * reading them and wait for the command itself only. */
	if (t->out >= 0) {
		loop_unwatch(l, t->out);
		close(t->out);
		t->out = -1;
	}
	if (t->err >= 0) {
		loop_unwatch(l, t->err);
		close(t->err);
		t->err = -1;
	}
	t->out_eof = t->err_eof = 1;
	tok_watch_exit(a);
}

/* Starts the token command. Returns 0, or -1 with *err. */
static int
tok_spawn(struct aca *a, char **err)
{
	struct tokjob *t;
	int po[2], pe[2], devnull;
	pid_t pid;

	if (pipe2(po, O_CLOEXEC) < 0) {
		*err = xasprintf("cannot run the token command: %s", strerror(errno));
		return -1;
	}
	if (pipe2(pe, O_CLOEXEC) < 0) {
		*err = xasprintf("cannot run the token command: %s", strerror(errno));
		close(po[0]);
		close(po[1]);
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		*err = xasprintf("cannot run the token command: %s", strerror(errno));
		close(po[0]);
		close(po[1]);
		close(pe[0]);
		close(pe[1]);
		return -1;
	}
	if (pid == 0) {
		/* Its own process group, so that a timeout kills whatever
		 * it started (az runs python). */
		setpgid(0, 0);
		loop_signal_reset_child();
		devnull = open("/dev/null", O_RDONLY);
		if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(po[1], 1) < 0 ||
		    dup2(pe[1], 2) < 0)
			_exit(127);
		execl("/bin/sh", "sh", "-c", a->o.token_cmd, (char *)NULL);
		_exit(127);
	}
	setpgid(pid, pid);	/* also here: no race with the kill */
	close(po[1]);
	close(pe[1]);
	t = xcalloc(1, sizeof *t);
	t->pid = pid;
	t->out = po[0];
	t->err = pe[0];
	t->pidfd = -1;
	buf_init(&t->obuf, TOKEN_OUT_MAX);
	buf_init(&t->ebuf, TOKEN_ERR_MAX);
	fd_set_nonblock(t->out);
	fd_set_nonblock(t->err);
	a->tj = t;
	loop_watch(a->loop, t->out, POLLIN, tok_on_pipe, a);
	loop_watch(a->loop, t->err, POLLIN, tok_on_pipe, a);
	if (a->o.token_timeout_ms > 0)
		t->timer = loop_timer_add(a->loop, a->o.token_timeout_ms, tok_on_timeout, a);
	return 0;
}

/* The token from the environment. Returns 0, or -1 with *err. */
static int
tok_from_env(struct aca *a, char **err)
{
	const char *v = getenv(a->o.token_env);
	const char *why;
	char *tok;
	int64_t exp;

	if (v == NULL || *v == '\0') {
		*err = xasprintf("the environment variable %s holds no token for the "
		    "session pool", a->o.token_env);
		return -1;
	}
	if ((tok = aca_token_parse(v, strlen(v), &exp, &why)) == NULL) {
		*err = xasprintf("the environment variable %s holds no token: %s",
		    a->o.token_env, why);
		return -1;
	}
	if (exp > 0 && exp <= wall(a)) {
		explicit_bzero(tok, strlen(tok));
		free(tok);
		*err = xasprintf("the token in %s has expired; get a new one (or configure "
		    "a token command, which terp runs again when needed)", a->o.token_env);
		return -1;
	}
	if (a->token != NULL) {
		explicit_bzero(a->token, strlen(a->token));
		free(a->token);
	}
	a->token = tok;
	(void)aca_jwt_claims(tok, &exp, a->tok_aud, sizeof a->tok_aud);
	a->tok_exp = exp;
	/* Read again at each use: cheap, and it notices expiry. */
	a->tok_refresh = 0;
	a->tok_once = 1;
	return 0;
}

static void
tok_forget(struct aca *a)
{
	if (a->token != NULL) {
		explicit_bzero(a->token, strlen(a->token));
		free(a->token);
		a->token = NULL;
	}
	a->tok_refresh = a->tok_exp = 0;
	a->tok_once = 0;
}

/* ------------------------------------------------------------ requests */

static void rq_fail(struct aca *a, const char *err);

static void
rq_clear(struct aca *a)
{
	struct rq *r = &a->rq;

	if (r->x != NULL)
		http_cancel(r->x);
	loop_timer_cancel(a->loop, r->retry_timer);
	free(r->url);
	if (r->body != NULL)
		free(r->body);
	buf_free(&r->resp);
	memset(r, 0, sizeof *r);
}

static void
tok_done(struct aca *a, char *err)
{
	if (a->rq.active && a->rq.waiting_token) {
		a->rq.waiting_token = 0;
		if (err != NULL)
			rq_fail(a, err);
		else
			rq_send(a);
	}
	free(err);
}

/* The pool's own account of an error, cut and made safe to show. */
static char *
pool_says(const char *body, size_t len)
{
	cJSON *j;
	const char *m = NULL, *c = NULL;
	char *out = NULL, *both;

	if (body == NULL || len == 0)
		return NULL;
	j = cJSON_ParseWithLength(body, len);
	if (cJSON_IsObject(j)) {
		cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
		if (!cJSON_IsObject(e))
			e = j;
		m = json_str(e, "message");
		c = json_str(e, "code");
		if (m == NULL)
			m = json_str(j, "message");
	}
	if (m != NULL || c != NULL) {
		both = xasprintf("%s%s%s", c ? c : "", c && m ? ": " : "", m ? m : "");
		out = aca_redact_line(both, strlen(both), NULL);
		free(both);
	}
	cJSON_Delete(j);
	if (out != NULL && *out == '\0') {
		free(out);
		out = NULL;
	}
	return out;
}

/* One line for a failed request, with the fix. */
static char *
rq_error(struct aca *a, const struct http_result *r)
{
	char *says, *msg, *fix;

	if (r->status == 0 || (r->curl_code != 0 && r->status >= 200 && r->status < 300)) {
		if (a->rq.too_big) {
			char b[32];
			fmt_bytes(b, sizeof b, a->rq.kind == RQ_LIST ? LIST_BODY_MAX : a->o.response_max);
			return xasprintf("the session pool's answer is over %s; not read", b);
		}
		if (r->timed_out)
			return xasprintf("the session pool did not answer in %lld s",
			    (long long)(a->rq.idle_ms / 1000));
		return xasprintf("cannot reach the session pool (%s); check the endpoint "
		    "and the network", r->error ? r->error : "no answer");
	}
	says = pool_says(r->body, r->body_len);
	switch (r->status) {
	case 401:
		if (a->o.audience != NULL && a->tok_aud[0] != '\0' &&
		    strcmp(a->tok_aud, a->o.audience) != 0)
			fix = xasprintf("the token is for %s, the pool wants %s", a->tok_aud,
			    a->o.audience);
		else if (a->o.audience != NULL)
			fix = xasprintf("get a token for the audience %s (az account "
			    "get-access-token --resource %s)", a->o.audience, a->o.audience);
		else
			fix = xstrdup("get a token for the session pools' audience (the "
			    "--resource of az account get-access-token), and check that it "
			    "has not expired");
		msg = xasprintf("the session pool refused the token (401): %s", fix);
		free(fix);
		break;
	case 403:
		msg = xstrdup("the session pool denied access (403): your identity needs the "
		    "\"Azure ContainerApps Session Executor\" role on the pool");
		break;
	case 404:
		msg = xstrdup("the session pool answered 404: the pool is full (all its "
		    "sessions are allocated) or the endpoint is wrong (az containerapp "
		    "sessionpool show --query properties.poolManagementEndpoint)");
		break;
	case 413:
		msg = xasprintf("the session pool refused the upload (413): the file is over "
		    "its upload limit (%llu MiB)", (unsigned long long)(a->o.upload_max >> 20));
		break;
	case 429:
		msg = xasprintf("the session pool is throttling requests (429) and still was "
		    "after %d tries; wait a minute and try again", a->rq.tries);
		break;
	default:
		if (r->status >= 500)
			msg = xasprintf("the session pool failed (HTTP %ld%s%s); try again later",
			    r->status, says ? ": " : "", says ? says : "");
		else
			msg = xasprintf("the session pool answered HTTP %ld%s%s", r->status,
			    says ? ": " : "", says ? says : "");
		break;
	}
	free(says);
	return msg;
}

static int
rq_body(void *arg, const char *p, size_t n)
{
	struct aca *a = arg;
	struct rq *r = &a->rq;

	if (r->kind == RQ_DOWNLOAD) {
		/* The pool's excess is said when the download ends (the sink
		 * reports a write error itself). */
		if (n > kernel_sink_room(a->sink)) {
			a->cr.grew = 1;
			return 1;
		}
		return kernel_sink_write(a->sink, p, n) < 0;
	}
	if (buf_add(&r->resp, p, n) < 0) {
		r->too_big = 1;
		return 1;
	}
	return 0;
}

static void rq_on_retry(struct loop *l, void *arg);

static void
rq_done(void *arg, const struct http_result *hr)
{
	struct aca *a = arg;
	struct rq *r = &a->rq;
	struct rq_end e = { .status = hr->status };
	char *err = NULL;

	r->x = NULL;
	if (hr->status == 429 && r->tries < a->o.max_retries) {
		int64_t ms = retry_after_ms(hr->retry_after_ms, hr->retry_after,
		    (int64_t)time(NULL));
		char *msg;

		r->tries++;
		if (ms < 0)
			ms = 1000LL << (r->tries - 1);
		if (ms > a->o.retry_max_ms)
			ms = a->o.retry_max_ms;
		buf_reset(&r->resp);
		r->too_big = 0;
		msg = xasprintf("the session pool is busy (429); trying again in %.0f s",
		    (double)ms / 1000.0);
		r->retry_timer = loop_timer_add(a->loop, ms, rq_on_retry, a);
		report_state(a, a->state, 0, 0, msg);
		free(msg);
		return;
	}
	if (hr->status == 401 && a->o.token_cmd != NULL && !r->auth_retried) {
		/* Revoked or expired early: one fresh token, one more try. */
		r->auth_retried = 1;
		tok_forget(a);
		buf_reset(&r->resp);
		rq_send(a);
		return;
	}
	if (hr->curl_code != 0 || hr->status < 200 || hr->status >= 300) {
		e.timed_out = hr->timed_out && !r->too_big;
		err = rq_error(a, hr);
	}
	e.err = err;
	r->active = 0;
	r->fin(a, &e);
	free(err);
}

static void
rq_on_retry(struct loop *l, void *arg)
{
	struct aca *a = arg;
	(void)l;

	a->rq.retry_timer = 0;
	rq_send(a);
}

static void
rq_fail(struct aca *a, const char *err)
{
	struct rq_end e = { .err = err };

	a->rq.active = 0;
	a->rq.fin(a, &e);
}

/* Sends a->rq (again): with a token, or after getting one. */
static void
rq_send(struct aca *a)
{
	struct rq *r = &a->rq;
	struct http_req req;
	static const struct http_cbs cbs = { rq_body, rq_done };
	const char *hdrs[4];
	char *auth, *err = NULL;
	int nh = 0;

	if (a->token == NULL || (wall(a) >= a->tok_refresh && !a->tok_once)) {
		if (a->o.token_cmd != NULL && *a->o.token_cmd != '\0') {
			r->waiting_token = 1;
			if (a->tj == NULL && tok_spawn(a, &err) < 0) {
				r->waiting_token = 0;
				rq_fail(a, err);
				free(err);
			}
			return;
		}
		if (tok_from_env(a, &err) < 0) {
			rq_fail(a, err);
			free(err);
			return;
		}
	}
	a->tok_once = 0;
	auth = xasprintf("Authorization: Bearer %s", a->token);
	hdrs[nh++] = auth;
	if (!r->get && !r->has_part)
		hdrs[nh++] = "Content-Type: application/json";
	if (r->kind != RQ_DOWNLOAD)
		hdrs[nh++] = "Accept: application/json";
	hdrs[nh] = NULL;
	memset(&req, 0, sizeof req);
	req.url = r->url;
	req.headers = hdrs;
	req.body = r->body;
	req.body_len = r->body_len;
	req.connect_timeout_ms = a->o.connect_timeout_ms;
	req.idle_timeout_ms = r->idle_ms;
	req.max_error_body = ERR_BODY_MAX;
	req.method = r->get ? "GET" : NULL;
	req.part = r->has_part ? &r->part : NULL;
	r->x = http_post(a->http, &req, &cbs, a, &err);
	explicit_bzero(auth, strlen(auth));
	free(auth);
	if (r->x == NULL) {
		rq_fail(a, err);
		free(err);
		return;
	}
	if (r->fin == fin_exec)
		a->cr.exec_sent = 1;
}

/* Starts a request; fin gets its end. url and body are taken (body may
 * be NULL); part (may be NULL) is copied, its strings and fd borrowed. */
static void
rq_start(struct aca *a, enum rq_kind kind, char *url, char *body,
    const struct http_part *part, int64_t idle_ms, rq_fin fin)
{
	struct rq *r = &a->rq;

	rq_clear(a);
	if (part != NULL) {
		r->has_part = 1;
		r->part = *part;
	}
	r->active = 1;
	r->kind = kind;
	r->url = url;
	r->body = body;
	r->body_len = body ? strlen(body) : 0;
	r->get = kind == RQ_LIST || kind == RQ_DOWNLOAD;
	r->idle_ms = idle_ms;
	r->fin = fin;
	buf_init(&r->resp, kind == RQ_LIST ? LIST_BODY_MAX : a->o.response_max);
	rq_send(a);
}

/* ------------------------------------------------------------ artifacts */

/* The sink's lines, for the cell they name while it runs (a rename note
 * after a teardown has no cell to go to). */
static void
sink_note(void *arg, int cell, const char *line)
{
	struct aca *a = arg;

	if (a->job == JOB_CELL && a->cr.n == cell)
		emit(a, 1, line, strlen(line));
}

static void
sink_copied(void *arg, int cell, const char *name, const char *host_path, uint64_t bytes)
{
	struct aca *a = arg;

	if (a->cb.artifact != NULL)
		a->cb.artifact(a->arg, cell, name, host_path, bytes);
}

/* An image the execution returned as its value. Returns -1 when the
 * job was torn down meanwhile. */
static int
image_result(struct aca *a, const char *b64, const char *fmt)
{
	unsigned g = a->gen;
	char *name, *data;
	size_t n, blen = strlen(b64);

	name = xasprintf("result-%d.%s", a->cr.n, fmt ? fmt : "png");
	if (blen / 4 * 3 > a->o.artifact_max + 3) {
		char *why = kernel_sink_refusal(a->sink, KF_TOO_LARGE, blen / 4 * 3);
		kernel_sink_report(a->sink, name, why);
		free(why);
		free(name);
		return 0;
	}
	data = base64_decode(b64, blen, &n);
	if (data == NULL) {
		kernel_sink_report(a->sink, name, "the pool sent an image that is not base64");
		free(name);
		return 0;
	}
	(void)kernel_sink_put(a->sink, "", name, data, n);
	free(data);
	free(name);
	return a->gen == g ? 0 : -1;
}

/* ------------------------------------------------------------ files */

static void
seen_clear(struct aca *a)
{
	for (int i = 0; i < a->nseen; i++) {
		free(a->seen[i].name);
		free(a->seen[i].mtime);
	}
	free(a->seen);
	a->seen = NULL;
	a->nseen = 0;
}

static int
is_staged(const struct aca *a, const char *name)
{
	for (int i = 0; i < a->nfiles; i++)
		if (strcmp(a->files[i].name, name) == 0)
			return 1;
	return 0;
}

/* Takes the listing as the new baseline; returns the files that are new
 * or changed since the last one (data files aside). */
static int
seen_update(struct aca *a, struct aca_file *f, int n, struct aca_file **cand)
{
	int nc = 0;

	*cand = NULL;
	for (int i = 0; i < n; i++) {
		int same = 0;
		if (is_staged(a, f[i].name))
			continue;
		for (int j = 0; j < a->nseen && !same; j++)
			same = strcmp(a->seen[j].name, f[i].name) == 0 &&
			    a->seen[j].size == f[i].size && strcmp(a->seen[j].mtime, f[i].mtime) == 0;
		if (same)
			continue;
		*cand = xrealloc(*cand, (size_t)(nc + 1) * sizeof **cand);
		(*cand)[nc].name = xstrdup(f[i].name);
		(*cand)[nc].mtime = xstrdup(f[i].mtime);
		(*cand)[nc].size = f[i].size;
		nc++;
	}
	seen_clear(a);
	a->seen = xcalloc((size_t)(n > 0 ? n : 1), sizeof *a->seen);
	for (int i = 0; i < n; i++) {
		a->seen[i].name = f[i].name;
		a->seen[i].mtime = f[i].mtime;
		a->seen[i].size = f[i].size;
		f[i].name = f[i].mtime = NULL;
	}
	a->nseen = n;
	return nc;
}

/* A name for /mnt/data the pool takes: letters, digits, non-ASCII
 * text, and - _ space . @ $ & = ; , # % ^ ( ); the rest as '_'. */
static char *
remote_name(const char *host)
{
	const char *base = strrchr(host, '/');
	char *clean, *s;
	size_t n;

	base = base ? base + 1 : host;
	clean = sanitize_str(base, strlen(base), 0);
	for (s = clean; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x80 && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("-_ .@$&=;,#%^()", c) != NULL))
			*s = '_';
	}
	if (clean[0] == '.' || clean[0] == '\0') {
		s = xasprintf("data%s", clean);
		free(clean);
		clean = s;
	}
	n = strlen(clean);
	if (n > 200)
		clean[utf8_complete_prefix(clean, 200)] = '\0';
	return clean;
}

static void
upload_start(struct aca *a, int i)
{
	struct dfile *f = &a->files[i];
	struct http_part part = { .field = "file", .filename = f->name, .fd = f->fd,
	    .size = f->size };

	a->up_file = i;
	rq_start(a, RQ_UPLOAD, a->shape == SHAPE_PROPERTIES ?
	    make_url(a, "files/upload", 0) : make_url(a, "files", 1), NULL, &part,
	    REQ_IDLE_MS, fin_upload);
}

/* Starts the next upload that is due; 0 when none is. */
static int
next_upload(struct aca *a)
{
	for (int i = 0; i < a->nfiles; i++) {
		if (a->files[i].uploaded == 0 && a->files[i].fd >= 0) {
			upload_start(a, i);
			return 1;
		}
	}
	return 0;
}

static void
fin_upload(struct aca *a, const struct rq_end *e)
{
	struct dfile *f = &a->files[a->up_file];

	if (e->err != NULL) {
		char *shown = kframe_display_name(f->name);
		f->uploaded = -1;
		if (e->status == 413)
			note(a, "the data file %s was not uploaded: it is over the session "
			    "pool's upload limit (%llu MiB)", shown,
			    (unsigned long long)(a->o.upload_max >> 20));
		else
			note(a, "the data file %s was not uploaded: %s", shown, e->err);
		free(shown);
	} else {
		f->uploaded = 1;
	}
	if (a->job == JOB_UPLOAD) {
		a->job = JOB_NONE;
		advance(a);
		return;
	}
	if (!next_upload(a))
		after_uploads(a);
}

/* ------------------------------------------------------------ connecting */

/* Every cell of q (a queue taken off a->queue before anything could
 * call back: a result callback may queue new cells, which are not
 * these) ends unrun with st and why. */
static void
fail_queue(struct aca *a, struct op *q, enum cell_status st, const char *why)
{
	struct op *p;

	while ((p = q) != NULL) {
		q = p->next;
		if (p->cell && a->cb.result != NULL) {
			struct kernel_result r;
			char *reason = xasprintf("the cell did not run: %s", why);
			memset(&r, 0, sizeof r);
			r.status = st;
			r.reason = reason;
			a->cb.result(a->arg, p->n, &r);
			free(reason);
		}
		free(p->code);
		free(p);
	}
}

static void
connect_fail(struct aca *a, const char *err)
{
	struct op *q = a->queue;

	a->queue = NULL;
	a->job = JOB_NONE;
	a->connected = 0;
	a->state = KERNEL_DEAD;
	a->quiet++;
	fail_queue(a, q, CELL_CRASHED, err);
	report_state(a, KERNEL_DEAD, 0, 0, err);
	a->quiet--;
	resume_queue(a);
}

static void
connect_done(struct aca *a)
{
	a->job = JOB_NONE;
	a->connected = 1;
	report_state(a, KERNEL_READY, 0, 0, a->kept ? "reconnected to the session pool; "
	    "the remote session kept its state" : "connected to the session pool (output "
	    "arrives when a cell ends)");
	advance(a);
}

static void
fin_baseline(struct aca *a, const struct rq_end *e)
{
	struct aca_file *f, *cand;
	const char *why;
	int n, skipped, nc;

	if (e->err != NULL) {
		note(a, "the files in %s were not listed: %s", ACA_DATA_DIR, e->err);
		connect_done(a);
		return;
	}
	n = aca_files_parse(a->rq.resp.data ? a->rq.resp.data : "", a->rq.resp.len, LIST_MAX,
	    &f, &skipped, &why);
	if (n >= 0) {
		nc = seen_update(a, f, n, &cand);
		aca_files_free(cand, nc);
		aca_files_free(f, n);
	}
	connect_done(a);
}

static void
fin_check(struct aca *a, const struct rq_end *e)
{
	struct aca_exec ex;
	const char *why;
	int kept, lost;

	if (e->err != NULL) {
		if (a->job == JOB_CONNECT) {
			connect_fail(a, e->err);
		} else {
			a->cr.status = e->timed_out ? CELL_TIMEOUT : CELL_CRASHED;
			a->cr.reason = xasprintf("the cell did not run: %s", e->err);
			finish_cell(a);
		}
		return;
	}
	if (aca_exec_parse(a->rq.resp.data ? a->rq.resp.data : "", a->rq.resp.len, &ex, &why) < 0 ||
	    !ex.ok || (strstr(ex.out, "terp-marker:kept") == NULL &&
	    strstr(ex.out, "terp-marker:new") == NULL)) {
		char *msg = xasprintf("the session pool's answer to terp's session check "
		    "is not understood (%s)", ex.json == NULL ? why : "no marker in it");
		if (ex.json != NULL)
			aca_exec_free(&ex);
		if (a->job == JOB_CONNECT) {
			connect_fail(a, msg);
		} else {
			a->cr.status = CELL_CRASHED;
			a->cr.reason = xasprintf("the cell did not run: %s", msg);
			finish_cell(a);
		}
		free(msg);
		return;
	}
	kept = strstr(ex.out, "terp-marker:kept") != NULL;
	a->kept = kept;
	aca_exec_free(&ex);
	lost = !kept && a->known;
	a->known = 1;
	if (!kept) {
		/* A fresh session: nothing of ours is in /mnt/data. */
		seen_clear(a);
		for (int i = 0; i < a->nfiles; i++)
			if (a->files[i].fd >= 0)
				a->files[i].uploaded = 0;
	}
	if (lost) {
		unsigned g = a->gen;
		enum kernel_state back = a->state == KERNEL_BUSY ? KERNEL_BUSY : KERNEL_STARTING;
		if (a->job == JOB_CELL)
			a->cr.lost = 1;
		report_state(a, KERNEL_STARTING, 1, 1, MSG_RECYCLED);
		if (a->gen != g)
			return;
		if (back == KERNEL_BUSY) {
			report_state(a, KERNEL_BUSY, 0, 0, "running in the session pool");
			if (a->gen != g)
				return;
		}
	}
	if (!next_upload(a))
		after_uploads(a);
}

static void
send_check(struct aca *a)
{
	cJSON *b = cJSON_CreateObject(), *p;
	char *body, *url;

	if (a->shape == SHAPE_PROPERTIES) {
		p = cJSON_AddObjectToObject(b, "properties");
		cJSON_AddStringToObject(p, "codeInputType", "inline");
		cJSON_AddStringToObject(p, "executionType", "synchronous");
		cJSON_AddStringToObject(p, "code", MARKER_CODE);
		url = make_url(a, "code/execute", 0);
	} else {
		cJSON_AddStringToObject(b, "codeInputType", "Inline");
		cJSON_AddStringToObject(b, "executionType", "Synchronous");
		cJSON_AddStringToObject(b, "code", MARKER_CODE);
		cJSON_AddNumberToObject(b, "timeoutInSeconds", 60);
		url = make_url(a, "executions", 0);
	}
	body = cJSON_PrintUnformatted(b);
	cJSON_Delete(b);
	/* The pool may still run an abandoned cell ahead of it. */
	rq_start(a, RQ_EXEC, url, xstrdup(body), NULL, a->o.timeout_ms + a->o.grace_ms,
	    fin_check);
	cJSON_free(body);
}

static void
connect_begin(struct aca *a)
{
	unsigned g;
	char *msg;

	a->job = JOB_CONNECT;
	if (a->stopped_why != NULL) {
		msg = xasprintf("reconnecting to the session pool (stopped: %s)", a->stopped_why);
		free(a->stopped_why);
		a->stopped_why = NULL;
	} else {
		msg = xstrdup("connecting to the session pool");
	}
	g = ++a->gen;
	report_state(a, KERNEL_STARTING, 0, 0, msg);
	free(msg);
	if (a->gen == g)
		send_check(a);
}

/* ------------------------------------------------------------ cells */

static void send_exec(struct aca *a);

static void
after_uploads(struct aca *a)
{
	switch (a->job) {
	case JOB_CONNECT:
		if (a->nseen == 0 && a->known) {
			/* A session that kept its state may hold files from
			 * before: they are the baseline, not new. */
			rq_start(a, RQ_LIST, a->shape == SHAPE_PROPERTIES ? make_url(a, "files", 0) :
			    make_url(a, "files", 1), NULL, NULL, REQ_IDLE_MS, fin_baseline);
			return;
		}
		connect_done(a);
		break;
	case JOB_CELL:
		send_exec(a);
		break;
	default:
		a->job = JOB_NONE;
		advance(a);
		break;
	}
}

static void
crun_free(struct crun *c)
{
	free(c->code);
	free(c->value);
	free(c->ename);
	free(c->evalue);
	free(c->traceback);
	free(c->reason);
	aca_files_free(c->cand, c->ncand);
	memset(c, 0, sizeof *c);
}

static void
finish_cell(struct aca *a)
{
	struct kernel_result r;
	struct crun c;
	unsigned g;

	kernel_sink_cell_end(a->sink, NULL);
	rq_clear(a);
	c = a->cr;
	memset(&r, 0, sizeof r);
	r.status = c.status;
	r.duration_us = c.exec_us > 0 ? c.exec_us : now_us() - c.start_us;
	r.duration_ms = r.duration_us / 1000;
	r.value = c.value;
	r.ename = c.ename;
	r.evalue = c.evalue;
	r.traceback = c.traceback;
	r.state_lost = c.lost;
	if (c.lost && c.reason == NULL)
		r.reason = "the pool had recycled the remote session before this cell: its "
		    "state (variables, imports, files) was lost";
	else
		r.reason = c.reason;
	memset(&a->cr, 0, sizeof a->cr);
	a->job = JOB_NONE;
	a->gen++;
	g = a->gen;
	if (a->state == KERNEL_BUSY)
		report_state(a, KERNEL_READY, 0, 0, NULL);
	/* Even when the state callback stopped or restarted the session:
	 * every cell gets its one result. */
	if (a->cb.result != NULL)
		a->cb.result(a->arg, c.n, &r);
	crun_free(&c);
	if (a->gen == g)
		advance(a);
}

static void
fin_download(struct aca *a, const struct rq_end *e)
{
	unsigned g = a->gen;

	if (a->cr.grew) {
		a->cr.grew = 0;
		kernel_sink_abandon(a->sink, "the pool sent more bytes than it listed (still "
		    "being written?)");
	} else if (!kernel_sink_active(a->sink)) {
		;	/* a write failed: said */
	} else if (e->err != NULL) {
		char *why = xasprintf("the download failed: %s", e->err);
		kernel_sink_abandon(a->sink, why);
		free(why);
	} else if (kernel_sink_room(a->sink) != 0) {
		kernel_sink_abandon(a->sink, "it changed while it was copied (still being written?)");
	} else if (kernel_sink_commit(a->sink) == 0 && a->gen != g) {
		return;		/* the job was torn down by a callback */
	}
	next_download(a);
}

static void
next_download(struct aca *a)
{
	struct crun *c = &a->cr;

	while (c->next < c->ncand) {
		struct aca_file *f = &c->cand[c->next++];
		struct buf p;

		if (kernel_sink_begin(a->sink, ACA_DATA_DIR "/", f->name, f->size) < 0)
			continue;
		buf_init(&p, SIZE_MAX / 2);
		if (a->shape == SHAPE_PROPERTIES) {
			buf_adds(&p, "files/content/");
			pct(&p, f->name);
		} else {
			buf_adds(&p, "files/");
			pct(&p, f->name);
			buf_adds(&p, "/content");
		}
		rq_start(a, RQ_DOWNLOAD, make_url(a, buf_str(&p), 0), NULL, NULL, REQ_IDLE_MS,
		    fin_download);
		buf_free(&p);
		return;
	}
	finish_cell(a);
}

static void
fin_list(struct aca *a, const struct rq_end *e)
{
	struct aca_file *f;
	const char *why;
	int n, skipped;

	if (e->err != NULL) {
		note(a, "the files in %s were not listed, so none was copied: %s",
		    ACA_DATA_DIR, e->err);
		finish_cell(a);
		return;
	}
	n = aca_files_parse(a->rq.resp.data ? a->rq.resp.data : "", a->rq.resp.len, LIST_MAX,
	    &f, &skipped, &why);
	if (n < 0) {
		note(a, "the pool's list of the files in %s is not understood (%s), so none "
		    "was copied", ACA_DATA_DIR, why);
		finish_cell(a);
		return;
	}
	if (skipped > 0)
		note(a, "%d entries of the pool's list of files were not looked at (unusable "
		    "names or sizes, or past %d files)", skipped, LIST_MAX);
	a->cr.ncand = seen_update(a, f, n, &a->cr.cand);
	aca_files_free(f, n);
	a->cr.next = 0;
	next_download(a);
}

static void
send_list(struct aca *a)
{
	rq_start(a, RQ_LIST, a->shape == SHAPE_PROPERTIES ? make_url(a, "files", 0) :
	    make_url(a, "files", 1), NULL, NULL, REQ_IDLE_MS, fin_list);
}

/* Splits a failed cell's stderr at its traceback: the part before is
 * output, the traceback goes to the result with the exception's name
 * and message from its last line. */
static void
take_error(struct crun *c, const struct aca_exec *ex, const char **pre, size_t *prelen)
{
	const char *tb = NULL, *src = ex->err, *p, *last, *end, *colon;
	const char *mark = "Traceback (most recent call last):";

	*pre = ex->err;
	*prelen = strlen(ex->err);
	for (p = strstr(src, mark); p != NULL; p = strstr(p + 1, mark))
		tb = p;
	if (tb != NULL) {
		*prelen = (size_t)(tb - src);
	} else if (ex->message != NULL && (tb = strstr(ex->message, mark)) != NULL) {
		src = ex->message;
	}
	if (tb == NULL) {
		c->ename = xstrdup(ex->code ? ex->code : "Error");
		c->evalue = xstrdup(ex->message ? ex->message : "the remote cell failed");
		return;
	}
	c->traceback = xstrdup(tb);
	/* The last non-empty line: "Name: message". */
	end = tb + strlen(tb);
	while (end > tb && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
		end--;
	last = end;
	while (last > tb && last[-1] != '\n')
		last--;
	colon = memchr(last, ':', (size_t)(end - last));
	if (colon != NULL && colon > last && (size_t)(colon - last) <= 200 &&
	    strspn(last, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") ==
	    (size_t)(colon - last)) {
		c->ename = xstrndup(last, (size_t)(colon - last));
		p = colon + 1;
		while (p < end && *p == ' ')
			p++;
		c->evalue = xstrndup(p, (size_t)(end - p));
	} else {
		c->ename = xstrndup(last, (size_t)(end - last) > 200 ? 200 : (size_t)(end - last));
		c->evalue = xstrdup("");
	}
}

static void
fin_exec(struct aca *a, const struct rq_end *e)
{
	struct crun *c = &a->cr;
	struct aca_exec ex;
	const char *why, *pre;
	size_t prelen;
	unsigned g = a->gen;
	char lim[32];

	c->exec_us = now_us() - c->start_us;
	snprintf(lim, sizeof lim, "%lld s", (long long)(a->o.timeout_ms / 1000));
	if (e->err != NULL) {
		if (e->timed_out) {
			c->status = CELL_TIMEOUT;
			c->reason = xasprintf("no answer from the session pool in %lld s (its "
			    "execution limit is %s); terp stopped waiting, and the remote cell "
			    "may still run", (long long)((a->o.timeout_ms + a->o.grace_ms) / 1000),
			    lim);
			finish_cell(a);
		} else if (e->status == 408 || e->status == 504) {
			c->status = CELL_TIMEOUT;
			c->reason = xasprintf("the cell ran past the session pool's execution "
			    "limit (%s) and was stopped; split the work into smaller cells", lim);
			send_list(a);
		} else {
			c->status = CELL_CRASHED;
			c->reason = e->status >= 500 ?
			    xasprintf("%s; the cell may or may not have run", e->err) :
			    xasprintf("the cell did not run: %s", e->err);
			finish_cell(a);
		}
		return;
	}
	if (aca_exec_parse(a->rq.resp.data ? a->rq.resp.data : "", a->rq.resp.len, &ex, &why) < 0) {
		c->status = CELL_CRASHED;
		c->reason = xasprintf("the session pool's answer is not understood (%s); the "
		    "cell may have run", why);
		finish_cell(a);
		return;
	}
	c->have_exec = 1;
	pre = ex.err;
	prelen = strlen(ex.err);
	if (ex.timed_out) {
		c->status = CELL_TIMEOUT;
		c->reason = xasprintf("the cell ran past the session pool's execution limit "
		    "(%s) and was stopped; split the work into smaller cells", lim);
	} else if (!ex.ok) {
		c->status = CELL_ERROR;
		take_error(c, &ex, &pre, &prelen);
	} else {
		c->status = CELL_OK;
		if (ex.value != NULL) {
			c->value = ex.value;
			ex.value = NULL;
		}
	}
	emit(a, 0, ex.out, strlen(ex.out));
	if (a->gen != g)
		goto out;
	emit(a, 1, pre, prelen);
	if (a->gen != g)
		goto out;
	if (ex.image != NULL && image_result(a, ex.image, ex.image_fmt) < 0)
		goto out;
	aca_exec_free(&ex);
	send_list(a);
	return;
out:
	aca_exec_free(&ex);
}

static void
send_exec(struct aca *a)
{
	cJSON *b = cJSON_CreateObject(), *p;
	char *body, *url;
	int64_t secs = (a->o.timeout_ms + 999) / 1000;

	if (a->shape == SHAPE_PROPERTIES) {
		p = cJSON_AddObjectToObject(b, "properties");
		cJSON_AddStringToObject(p, "codeInputType", "inline");
		cJSON_AddStringToObject(p, "executionType", "synchronous");
		cJSON_AddStringToObject(p, "code", a->cr.code);
		url = make_url(a, "code/execute", 0);
	} else {
		cJSON_AddStringToObject(b, "codeInputType", "Inline");
		cJSON_AddStringToObject(b, "executionType", "Synchronous");
		cJSON_AddStringToObject(b, "code", a->cr.code);
		cJSON_AddNumberToObject(b, "timeoutInSeconds",
		    (double)(secs < 1 ? 1 : secs > 220 ? 220 : secs));
		url = make_url(a, "executions", 0);
	}
	body = cJSON_PrintUnformatted(b);
	cJSON_Delete(b);
	if (body == NULL)
		fatal("out of memory");
	/* The pool's clock, not the queue's: it starts here. */
	a->cr.start_us = now_us();
	rq_start(a, RQ_EXEC, url, xstrdup(body), NULL, a->o.timeout_ms + a->o.grace_ms,
	    fin_exec);
	cJSON_free(body);
}

static void
cell_begin(struct aca *a, struct op *p)
{
	unsigned g;

	a->job = JOB_CELL;
	memset(&a->cr, 0, sizeof a->cr);
	a->cr.n = p->n;
	a->cr.code = p->code;
	a->cr.start_us = now_us();
	kernel_sink_cell_start(a->sink, p->n);
	free(p);
	a->gen++;
	g = a->gen;
	report_state(a, KERNEL_BUSY, 0, 0, "running in the session pool (output arrives "
	    "when the cell ends)");
	if (a->gen != g)
		return;
	if (!a->told_no_stream) {
		a->told_no_stream = 1;
		emit(a, 1, MSG_NO_STREAM, strlen(MSG_NO_STREAM));
		if (a->gen != g)
			return;
	}
	if (a->notes.len > 0) {
		char *n = buf_take(&a->notes);
		emit(a, 1, n, strlen(n));
		free(n);
		buf_init(&a->notes, NOTES_MAX);
		if (a->gen != g)
			return;
	}
	send_check(a);
}

/* Starts what comes next, when nothing runs. */
static void
advance(struct aca *a)
{
	struct op *p;

	if (a->job != JOB_NONE || a->queue == NULL || a->quiet)
		return;
	if (a->state == KERNEL_STOPPED || a->state == KERNEL_DEAD || !a->connected) {
		if (a->state != KERNEL_STOPPED && a->state != KERNEL_DEAD)
			connect_begin(a);
		return;
	}
	p = a->queue;
	a->queue = p->next;
	if (p->cell) {
		cell_begin(a, p);
		return;
	}
	a->job = JOB_UPLOAD;
	a->up_only = p->file;
	free(p);
	if (a->files[a->up_only].fd < 0 || a->files[a->up_only].uploaded != 0) {
		a->job = JOB_NONE;
		advance(a);
		return;
	}
	upload_start(a, a->up_only);
}

/* ------------------------------------------------------------ the API */

struct aca *
aca_new(struct loop *l, const struct aca_opts *opts, const struct kernel_cbs *cbs,
    void *arg)
{
	struct aca *a = xcalloc(1, sizeof *a);
	size_t n;

	a->loop = l;
	a->o = *opts;
	if (a->o.api_version == NULL)
		a->o.api_version = ACA_API_DEFAULT;
	if (shape_of(a->o.api_version, &a->shape) < 0)
		a->shape = SHAPE_PROPERTIES;	/* aca_start refuses it */
	if (cbs != NULL)
		a->cb = *cbs;
	a->arg = arg;
	a->state = KERNEL_STOPPED;
	{
		struct kframe_caps caps = {
			.size_max = a->o.artifact_max,
			.per_cell = a->o.artifacts_per_cell,
			.per_session = a->o.artifacts_per_session,
			.session_bytes = a->o.artifact_bytes,
		};
		a->sink = kernel_sink_new(a->o.out_dir, &caps, sink_copied, sink_note, a);
	}
	a->endpoint = xstrdup(a->o.endpoint ? a->o.endpoint : "");
	n = strlen(a->endpoint);
	while (n > 0 && a->endpoint[n - 1] == '/')
		a->endpoint[--n] = '\0';
	if (a->o.identifier != NULL && valid_identifier(a->o.identifier)) {
		snprintf(a->id, sizeof a->id, "%s", a->o.identifier);
		a->known = 1;	/* a session to find again */
	} else if (random_uuid(a->id) < 0) {
		a->id[0] = '\0';	/* aca_start says so */
	}
	buf_init(&a->notes, NOTES_MAX);
	a->http = http_new(l);
	return a;
}

static void
queue_free(struct aca *a)
{
	struct op *p;

	while ((p = a->queue) != NULL) {
		a->queue = p->next;
		free(p->code);
		free(p);
	}
}

void
aca_free(struct aca *a)
{
	if (a == NULL)
		return;
	rq_clear(a);
	http_free(a->http);
	tok_job_free(a);
	tok_forget(a);
	kernel_sink_free(a->sink);
	crun_free(&a->cr);
	queue_free(a);
	for (int i = 0; i < a->nfiles; i++) {
		if (a->files[i].fd >= 0)
			close(a->files[i].fd);
		free(a->files[i].host);
		free(a->files[i].name);
	}
	free(a->files);
	seen_clear(a);
	buf_free(&a->notes);
	free(a->stopped_why);
	free(a->endpoint);
	explicit_bzero(a->id, sizeof a->id);
	free(a);
}

/* Checks a data file and records it; the upload is done by a job. */
static char *
stage_file(struct aca *a, const char *host_path, int *idx, char **err)
{
	struct stat st;
	struct dfile *f;
	char *name, *shown;
	int fd, i;

	fd = open(host_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		shown = kframe_display_name(host_path);
		*err = xasprintf("cannot open the data file %s: %s", shown, strerror(errno));
		free(shown);
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		shown = kframe_display_name(host_path);
		*err = xasprintf("the data file %s is not a regular file", shown);
		free(shown);
		close(fd);
		return NULL;
	}
	if ((uint64_t)st.st_size > a->o.upload_max) {
		char x[32], y[32];
		fmt_bytes(x, sizeof x, (uint64_t)st.st_size);
		fmt_bytes(y, sizeof y, a->o.upload_max);
		shown = kframe_display_name(host_path);
		*err = xasprintf("the data file %s is %s, over the session pool's upload "
		    "limit (%s); sample or compress it first", shown, x, y);
		free(shown);
		close(fd);
		return NULL;
	}
	for (i = 0; i < a->nfiles; i++)
		if (strcmp(a->files[i].host, host_path) == 0)
			break;
	if (i == a->nfiles) {
		char *base = remote_name(host_path);
		name = xstrdup(base);
		/* Another file of the same name: name-2.ext and so on. */
		for (int k = 2; is_staged(a, name); k++) {
			const char *dot = strrchr(base, '.');
			size_t stem = dot && dot != base ? (size_t)(dot - base) : strlen(base);
			free(name);
			name = xasprintf("%.*s-%d%s", (int)stem, base, k, base + stem);
		}
		free(base);
		a->files = xrealloc(a->files, (size_t)(a->nfiles + 1) * sizeof *a->files);
		f = &a->files[a->nfiles++];
		f->host = xstrdup(host_path);
		f->name = name;
	} else {
		f = &a->files[i];
		close(f->fd);
	}
	f->fd = fd;
	f->size = (uint64_t)st.st_size;
	f->uploaded = 0;
	*idx = (int)(f - a->files);
	return xasprintf("%s/%s", ACA_DATA_DIR, f->name);
}

int
aca_start(struct aca *a, char **err)
{
	if (a->state != KERNEL_STOPPED && a->state != KERNEL_DEAD) {
		*err = xstrdup("the remote session is connected already");
		return -1;
	}
	if (aca_check_opts(&a->o, err) < 0)
		return -1;
	if (a->id[0] == '\0') {
		*err = xstrdup("cannot make a session identifier: the system's random "
		    "source failed");
		return -1;
	}
	if (kernel_sink_open(a->sink, err) < 0)
		return -1;
	for (int i = 0; i < a->o.ndata; i++) {
		int idx;
		char *p = stage_file(a, a->o.data_files[i], &idx, err);
		if (p == NULL)
			return -1;
		free(p);
	}
	if (a->job != JOB_NONE)
		return 0;	/* a connect is under way */
	a->state = KERNEL_STARTING;
	connect_begin(a);
	return 0;
}

/* Ends the running job with why: a cell ends interrupted. */
static void
teardown(struct aca *a, enum cell_status st, const char *why, int lost)
{
	a->gen++;
	rq_clear(a);
	if (a->job == JOB_CELL) {
		if (!a->cr.have_exec || st != CELL_INTERRUPTED || lost) {
			a->cr.status = st;
			free(a->cr.reason);
			a->cr.reason = xstrdup(why);
		} else {
			note(a, "stopped copying the cell's files (%s)", why);
		}
		if (lost)
			a->cr.lost = 1;
		finish_cell(a);
	} else {
		a->job = JOB_NONE;
	}
}

void
aca_interrupt(struct aca *a)
{
	if (a->job == JOB_CONNECT && aca_busy(a)) {
		/* A connect that hangs (a slow token command, an abandoned
		 * cell still running ahead of the check) holds the cells:
		 * Ctrl-C gives up on it; the next cell connects again. */
		struct op *q = a->queue;

		a->queue = NULL;
		a->quiet++;
		teardown(a, CELL_INTERRUPTED, NULL, 0);
		a->state = KERNEL_STOPPED;
		fail_queue(a, q, CELL_INTERRUPTED, "interrupted (Ctrl-C) while terp was "
		    "connecting to the session pool");
		free(a->stopped_why);
		a->stopped_why = xstrdup("interrupted while connecting");
		report_state(a, KERNEL_STOPPED, 0, 0, a->stopped_why);
		a->quiet--;
		resume_queue(a);
		return;
	}
	if (a->job != JOB_CELL)
		return;
	teardown(a, CELL_INTERRUPTED, a->cr.have_exec ? "Ctrl-C" : a->cr.exec_sent ?
	    "abandoned the wait (Ctrl-C): the remote session has no interrupt, so the "
	    "cell may still run there" : "interrupted (Ctrl-C) before it ran", 0);
}

/* After a teardown: cells queued by its callbacks connect again. */
static void
resume_queue(struct aca *a)
{
	if (a->quiet || a->queue == NULL || a->job != JOB_NONE)
		return;
	if (a->state == KERNEL_STOPPED || a->state == KERNEL_DEAD)
		a->state = KERNEL_STARTING;
	advance(a);
}

void
aca_stop(struct aca *a, const char *reason)
{
	const char *r = reason && *reason ? reason : "by request";
	struct op *q = a->queue;
	char *why;

	if (a->state == KERNEL_STOPPED)
		return;
	why = xasprintf("the session was stopped (%s); the remote cell may still run", r);
	a->queue = NULL;
	a->state = KERNEL_STOPPED;
	a->quiet++;	/* cells the callbacks queue wait for the end */
	teardown(a, CELL_INTERRUPTED, why, 0);
	free(why);
	fail_queue(a, q, CELL_INTERRUPTED, "the session was stopped");
	a->connected = 0;
	free(a->stopped_why);
	a->stopped_why = xstrdup(r);
	report_state(a, KERNEL_STOPPED, 0, 0, a->stopped_why);
	a->quiet--;
	resume_queue(a);
}

int
aca_run(struct aca *a, int n, const char *code, char **err)
{
	struct op *p, **pp;

	if (strlen(code) > CODE_MAX) {
		*err = xasprintf("the cell's code is over %u MiB", CODE_MAX >> 20);
		return -1;
	}
	if (!a->quiet && (a->state == KERNEL_STOPPED || a->state == KERNEL_DEAD)) {
		if (aca_check_opts(&a->o, err) < 0)
			return -1;
		if (!kernel_sink_is_open(a->sink) && aca_start(a, err) < 0)
			return -1;
		if (a->job == JOB_NONE) {
			a->state = KERNEL_STARTING;
			a->connected = 0;
		}
	}
	p = xcalloc(1, sizeof *p);
	p->cell = 1;
	p->n = n;
	p->code = xstrdup(code);
	for (pp = &a->queue; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = p;
	advance(a);
	return 0;
}

int
aca_restart(struct aca *a, char **err)
{
	struct op *q;
	char id[37];
	unsigned g;

	if (random_uuid(id) < 0) {
		*err = xstrdup("cannot make a session identifier: the system's random source "
		    "failed");
		return -1;
	}
	q = a->queue;
	a->queue = NULL;
	a->state = KERNEL_STOPPED;
	a->quiet++;	/* cells the callbacks queue run in the new session */
	teardown(a, CELL_INTERRUPTED, "the session was restarted by request; its state "
	    "was lost (the old remote cell may still run)", 1);
	fail_queue(a, q, CELL_INTERRUPTED, "the session was restarted");
	a->quiet--;
	snprintf(a->id, sizeof a->id, "%s", id);
	a->known = 0;
	a->connected = 0;
	seen_clear(a);
	for (int i = 0; i < a->nfiles; i++)
		if (a->files[i].fd >= 0)
			a->files[i].uploaded = 0;
	free(a->stopped_why);
	a->stopped_why = NULL;
	if (!kernel_sink_is_open(a->sink))
		return aca_start(a, err);
	a->job = JOB_CONNECT;
	g = ++a->gen;
	report_state(a, KERNEL_STARTING, 1, 1, "restarted the session by request: a fresh "
	    "session in the pool, so its state was lost");
	if (a->gen == g)
		send_check(a);
	return 0;
}

char *
aca_stage(struct aca *a, const char *host_path, char **err)
{
	struct op *p, **pp;
	char *path;
	int idx;

	if ((path = stage_file(a, host_path, &idx, err)) == NULL)
		return NULL;
	if (a->state == KERNEL_STOPPED || a->state == KERNEL_DEAD)
		return path;	/* uploaded when it connects */
	/* Queued even while connecting (the connect may be past its
	 * uploads); the job is skipped when the file went up meanwhile. */
	p = xcalloc(1, sizeof *p);
	p->file = idx;
	for (pp = &a->queue; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = p;
	advance(a);
	return path;
}

enum kernel_state
aca_state(const struct aca *a)
{
	return a->state;
}

int
aca_busy(const struct aca *a)
{
	if (a->job == JOB_CELL)
		return 1;
	for (const struct op *p = a->queue; p != NULL; p = p->next)
		if (p->cell)
			return 1;
	return 0;
}

const char *
aca_identifier(const struct aca *a)
{
	return a->id;
}

const char *
aca_note(void)
{
	return "The Python session runs in a remote session pool: data files are in "
	    ACA_DATA_DIR "/; save charts and other files to " ACA_DATA_DIR "/ (e.g. "
	    "plt.savefig('" ACA_DATA_DIR "/chart.png')): files there that are new or "
	    "changed after a cell are copied to the user's output folder. Output appears "
	    "only when a cell ends, and a cell may run for at most 220 s.";
}
