/* kernel_aca_parse: reading what the session pool and the token
 * command send (see kernel_aca_parse.h). No network, no state: every
 * function takes hostile bytes and returns checked values or a static
 * reason. */
#include "terp/kernel_aca_parse.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "terp/digest.h"
#include "terp/json_text.h"
#include "terp/kernel_frame.h"
#include "terp/sanitize.h"
#include "terp/util.h"

#define TOKEN_MAX	16384		/* bytes of a token */
#define JWT_PART_MAX	8192		/* a JWT's payload, base64url */
#define VALUE_MAX	(64 * 1024)	/* a result value's text */
#define REMOTE_NAME_MAX	255

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
