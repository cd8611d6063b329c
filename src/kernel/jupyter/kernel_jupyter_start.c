/* kernel_jupyter_start: from a server URL to a kernel's open WebSocket
 * (see kernel_jupyter_start.h). Every answer is bounded (REST_BODY_MAX,
 * SPECS_BODY_MAX) and type-checked; the kernel id the server gives is
 * used only after it passed a character check, and only in URLs. */
#include "terp/kernel_jupyter_start.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/json_text.h"
#include "terp/kernel_frame.h"
#include "terp/kernel_jupyter_msg.h"
#include "terp/util.h"

#define REST_BODY_MAX	(1u << 20)	/* an ordinary REST answer */
#define SPECS_BODY_MAX	(4u << 20)	/* the list of kernelspecs */
#define SPECS_SHOWN	20
#define FREE_DELETE_MS	3000

void
jstart_init(struct jstart *st, struct loop *l, struct jrest *rest,
    const struct jupyter_opts *o, const struct jstart_cbs *cb, void *arg)
{
	memset(st, 0, sizeof *st);
	st->loop = l;
	st->rest = rest;
	st->o = o;
	st->cb = cb;
	st->arg = arg;
}

static int
session_name_ok(const char *s)
{
	size_t n = strlen(s);
	return n > 0 && n <= 64 && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

int
jstart_configure(struct jstart *st, char **err)
{
	const char *u = st->o->url;
	size_t n;

	if (u == NULL) {
		*err = xstrdup("no Jupyter server URL");
		return -1;
	}
	if (strncmp(u, "jupyter+", 8) == 0)
		u += 8;
	if (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0) {
		*err = xasprintf("not a Jupyter server URL (http:// or https://): %s", u);
		return -1;
	}
	if (strpbrk(u, "?#\r\n \t") != NULL) {
		*err = xasprintf("the Jupyter server URL has a query, fragment or space: %s", u);
		return -1;
	}
	st->rest->base = xstrdup(u);
	n = strlen(st->rest->base);
	while (n > 0 && st->rest->base[n - 1] == '/')
		st->rest->base[--n] = '\0';
	st->rest->where = xasprintf("jupyter %s", strstr(st->rest->base, "://") + 3);
	if (st->o->token != NULL && st->o->token[0] != '\0') {
		if (strpbrk(st->o->token, "\r\n") != NULL) {
			*err = xstrdup("the Jupyter token has a line break");
			return -1;
		}
		st->rest->auth = xasprintf("Authorization: token %s", st->o->token);
	}
	if (st->o->session != NULL) {
		if (!session_name_ok(st->o->session)) {
			*err = xstrdup("the Jupyter session name may only have letters, digits, '_' and '-' (at most 64)");
			return -1;
		}
		st->session = xasprintf("terp-%s", st->o->session);
	} else {
		unsigned char b[6];
		jmsg_random(b, sizeof b);
		st->session = xasprintf("terp-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
		    b[4], b[5]);
	}
	if (st->o->kernel_id != NULL) {
		if (strlen(st->o->kernel_id) > 128 ||
		    strspn(st->o->kernel_id, "0123456789abcdefABCDEF-") != strlen(st->o->kernel_id)) {
			*err = xstrdup("not a Jupyter kernel id");
			return -1;
		}
		st->kernel_id = xstrdup(st->o->kernel_id);
	}
	jmsg_uuid(st->ws_session);
	st->rest->http = http_new(st->loop);
	return 0;
}

/* The server no longer has the kernel: the owner hears of it, then a
 * new kernel. */
static void
kernel_gone(struct jstart *st)
{
	jstart_forget(st);
	st->cb->gone(st->arg);
	jstart_create(st);
}

/* The kernelspecs' names, shown: "python3, ir" (bounded). */
static char *
spec_names(const cJSON *specs)
{
	const cJSON *s;
	struct buf b;
	int n = 0;

	buf_init(&b, 4096);
	cJSON_ArrayForEach(s, specs) {
		char *shown;
		if (s->string == NULL)
			continue;
		if (n == SPECS_SHOWN) {
			buf_adds(&b, ", ...");
			break;
		}
		shown = kframe_display_name(s->string);
		buf_printf(&b, "%s%s", n ? ", " : "", shown);
		free(shown);
		n++;
	}
	return buf_take(&b);
}

static void
on_created(void *arg, struct jreq *q, const struct http_result *r)
{
	struct jstart *st = arg;
	cJSON *doc;
	const char *id;
	char *p;

	if (q->i != st->rest->gen)
		return;
	if ((p = jrest_problem(st->rest, r, "the request to start a kernel")) != NULL || q->k.over) {
		st->cb->dead(st->arg, p ? p : "the Jupyter server's answer to starting a kernel is too long");
		free(p);
		return;
	}
	doc = krest_json(&q->k);
	id = doc ? json_str(doc, "id") : NULL;
	if (id == NULL || strlen(id) > 128 || strspn(id, "0123456789abcdefABCDEF-") != strlen(id)) {
		cJSON_Delete(doc);
		st->cb->dead(st->arg, "the Jupyter server's answer to starting a kernel has no usable kernel id");
		return;
	}
	free(st->kernel_id);
	st->kernel_id = xstrdup(id);
	cJSON_Delete(doc);
	jstart_open_ws(st);
}

void
jstart_create(struct jstart *st)
{
	cJSON *b = cJSON_CreateObject();
	char *body;
	struct jreq *q;

	st->step = JSTART_CREATE;
	st->kernel_dead = 0;
	if (st->o->kernel_name != NULL)
		cJSON_AddStringToObject(b, "name", st->o->kernel_name);
	/* The kernel's working directory: the session folder, so the code
	 * finds data/ and out/ where the local sandbox has them. */
	cJSON_AddStringToObject(b, "path", st->session);
	body = cJSON_PrintUnformatted(b);
	cJSON_Delete(b);
	q = jrest_call_for(st->rest, st, "POST", "/api/kernels", body, REST_BODY_MAX, on_created);
	free(body);
	if (q != NULL)
		q->i = st->rest->gen;
}

static void
on_attach(void *arg, struct jreq *q, const struct http_result *r)
{
	struct jstart *st = arg;
	char *p;

	if (q->i != st->rest->gen)
		return;
	if (r->status == 404) {
		/* Culled, or the server restarted: a new kernel. */
		kernel_gone(st);
		return;
	}
	if ((p = jrest_problem(st->rest, r, "the kernel's status")) != NULL) {
		if (st->reconnecting) {
			char *m = xasprintf("lost the connection to the Jupyter server and could not reconnect: %s", p);
			st->cb->dead(st->arg, m);
			free(m);
		} else {
			st->cb->dead(st->arg, p);
		}
		free(p);
		return;
	}
	jstart_open_ws(st);
}

void
jstart_attach(struct jstart *st)
{
	char *path = jrest_path("/api/kernels/", st->kernel_id, NULL);
	struct jreq *q;

	st->step = JSTART_ATTACH;
	q = jrest_call_for(st->rest, st, "GET", path, NULL, REST_BODY_MAX, on_attach);
	free(path);
	if (q != NULL)
		q->i = st->rest->gen;
}

static void
on_mkdir(void *arg, struct jreq *q, const struct http_result *r)
{
	struct jstart *st = arg;
	char *p, *rel, *path;
	struct jreq *n;
	static const char *const sub[] = { "", "/data", "/out" };

	if (q->i != st->rest->gen)
		return;
	if ((p = jrest_problem(st->rest, r, "creating the session folder")) != NULL) {
		char *m = r->status == 404 || r->status == 405 ?
		    xasprintf("the Jupyter server has no contents API (%s), so terp cannot stage data files or fetch out/ there", p) :
		    xstrdup(p);
		st->cb->dead(st->arg, m);
		free(m);
		free(p);
		return;
	}
	if (q->s != NULL && q->s[0] != '\0' && strcmp(q->s, "/out") == 0) {
		if (st->kernel_id != NULL)
			jstart_attach(st);
		else
			jstart_create(st);
		return;
	}
	{
		int next = strcmp(q->s, "") == 0 ? 1 : 2;
		rel = xasprintf("%s%s", st->session, sub[next]);
		path = jrest_path("/api/contents/", rel, NULL);
		free(rel);
		n = jrest_call_for(st->rest, st, "PUT", path, "{\"type\":\"directory\"}", REST_BODY_MAX, on_mkdir);
		free(path);
		if (n != NULL) {
			n->i = st->rest->gen;
			n->s = xstrdup(sub[next]);
		}
	}
}

/* The probe: GET /api/kernelspecs needs the token (GET /api does not),
 * and says whether the kernel asked for exists. */
static void
on_probe(void *arg, struct jreq *q, const struct http_result *r)
{
	struct jstart *st = arg;
	char *p, *path;
	struct jreq *n;
	cJSON *doc;
	const cJSON *specs;

	if (q->i != st->rest->gen)
		return;
	if ((p = jrest_problem(st->rest, r, "GET /api/kernelspecs")) != NULL) {
		if (r->status == 404) {
			free(p);
			p = xasprintf("%s does not look like a Jupyter server (no /api/kernelspecs): is the URL's base path right?",
			    st->rest->where);
		}
		st->cb->dead(st->arg, p);
		free(p);
		return;
	}
	doc = krest_json(&q->k);
	specs = doc ? json_obj(doc, "kernelspecs") : NULL;
	if (specs == NULL) {
		cJSON_Delete(doc);
		st->cb->dead(st->arg, q->k.over ? "the Jupyter server's list of kernelspecs is over 4 MiB" :
		    "the Jupyter server's list of kernelspecs is malformed");
		return;
	}
	if (st->o->kernel_name != NULL &&
	    cJSON_GetObjectItemCaseSensitive(specs, st->o->kernel_name) == NULL) {
		char *names = spec_names(specs), *want = kframe_display_name(st->o->kernel_name);
		p = *names ? xasprintf("the Jupyter server has no kernel named '%s'; it has: %s", want, names) :
		    xasprintf("the Jupyter server has no kernel named '%s' (and lists no kernelspecs)", want);
		free(names);
		free(want);
		cJSON_Delete(doc);
		st->cb->dead(st->arg, p);
		free(p);
		return;
	}
	cJSON_Delete(doc);
	st->step = JSTART_MKDIR;
	path = jrest_path("/api/contents/", st->session, NULL);
	n = jrest_call_for(st->rest, st, "PUT", path, "{\"type\":\"directory\"}", REST_BODY_MAX, on_mkdir);
	free(path);
	if (n != NULL) {
		n->i = st->rest->gen;
		n->s = xstrdup("");
	}
}

void
jstart_open_ws(struct jstart *st)
{
	struct ws_opts wo;
	const char *hdrs[2] = { st->rest->auth, NULL };
	char *path, *url, *err = NULL;

	st->step = JSTART_WS;
	path = jrest_path("/api/kernels/", st->kernel_id, NULL);
	url = xasprintf("%s%s/channels?session_id=%s", st->rest->base, path, st->ws_session);
	free(path);
	memset(&wo, 0, sizeof wo);
	wo.url = url;
	wo.headers = st->rest->auth ? hdrs : NULL;
	wo.ca_file = st->o->ca_file;
	wo.connect_timeout_ms = st->o->connect_timeout_ms;
	wo.max_msg = (size_t)st->o->max_msg;
	st->ws = ws_open(st->loop, &wo, &st->cb->ws, st->arg, &err);
	free(url);
	if (st->ws == NULL) {
		st->cb->dead(st->arg, err);
		free(err);
	}
}

void
jstart_ws_refused(struct jstart *st, const struct ws_end *e)
{
	struct http_result r;
	char *p;

	if (e->http_status == 404 && !st->reconnecting) {
		st->cb->dead(st->arg, "the Jupyter server has no such kernel any more");
		return;
	}
	if (e->http_status == 404) {
		/* Gone while we reconnected: a new kernel, state lost. */
		kernel_gone(st);
		return;
	}
	memset(&r, 0, sizeof r);
	r.status = e->http_status;
	r.location = e->location;
	p = jrest_problem(st->rest, &r, "the WebSocket upgrade");
	st->cb->dead(st->arg, p);
	free(p);
}

/* Runs the whole sequence: probe, folders, kernel, socket. */
void
jstart_begin(struct jstart *st)
{
	struct jreq *q;

	st->step = JSTART_PROBE;
	q = jrest_call_for(st->rest, st, "GET", "/api/kernelspecs", NULL,
	    SPECS_BODY_MAX, on_probe);
	if (q != NULL)
		q->i = st->rest->gen;
}

void
jstart_drop_ws(struct jstart *st)
{
	if (st->ws != NULL) {
		ws_free(st->ws);
		st->ws = NULL;
	}
}

void
jstart_forget(struct jstart *st)
{
	free(st->kernel_id);
	st->kernel_id = NULL;
}

void
jstart_delete_sync(const struct jstart *st, const char *id)
{
	CURL *e;
	struct curl_slist *h = NULL;
	char *path, *url;

	if (id == NULL || st->rest->base == NULL || st->o->keep_kernel)
		return;
	e = curl_easy_init();
	if (e == NULL)
		return;
	path = jrest_path("/api/kernels/", id, NULL);
	url = xasprintf("%s%s", st->rest->base, path);
	free(path);
	if (st->rest->auth != NULL)
		h = curl_slist_append(h, st->rest->auth);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)FREE_DELETE_MS);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, NULL);
	if (st->o->ca_file != NULL)
		curl_easy_setopt(e, CURLOPT_CAINFO, st->o->ca_file);
	{
		FILE *null = fopen("/dev/null", "w");
		if (null != NULL)
			curl_easy_setopt(e, CURLOPT_WRITEDATA, null);
		(void)curl_easy_perform(e);
		if (null != NULL)
			fclose(null);
	}
	curl_easy_cleanup(e);
	curl_slist_free_all(h);
	free(url);
}


void
jstart_free(struct jstart *st)
{
	jstart_drop_ws(st);
	jstart_forget(st);
	free(st->session);
	st->session = NULL;
}
