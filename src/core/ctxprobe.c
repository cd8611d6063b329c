/* ctxprobe: a local server's context size, asked without blocking
 * (ctxprobe.h). */
#include "ctxprobe.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "terp/util.h"

static void probe_next(struct ctxprobe *p);

static long
jlong(const cJSON *o)
{
	return cJSON_IsNumber(o) && o->valuedouble > 0 && o->valuedouble < 1e9 ?
	    (long)o->valuedouble : 0;
}

/* The probe is over (answered or not): the owner takes its answer. */
static void
probe_finish(struct ctxprobe *p)
{
	p->step = 0;
	if (p->done)
		p->done(p->arg, p);
}

static int
p_body(void *arg, const char *s, size_t n)
{
	struct ctxprobe *p = arg;

	return buf_add(&p->body, s, n) < 0 ? -1 : 0;
}

/* /api/show: {"parameters": "num_ctx 8192\n...", "model_info":
 * {"llama.context_length": 131072, ...}}; /api/ps: {"models": [{"name",
 * "model", "context_length"}]}. */
static void
p_done(void *arg, const struct http_result *r)
{
	struct ctxprobe *p = arg;
	cJSON *j = NULL, *it;

	p->xfer = NULL;
	if (r->curl_code == 0 && r->status / 100 == 2)
		j = cJSON_ParseWithLength(p->body.data ? p->body.data : "", p->body.len);
	buf_reset(&p->body);
	if (j != NULL && p->step == 1) {
		const char *params = cJSON_GetStringValue(cJSON_GetObjectItem(j, "parameters"));
		const char *nc = params ? strstr(params, "num_ctx") : NULL;
		if (nc != NULL) {
			long v = strtol(nc + 7, NULL, 10);
			if (v > 0 && v < 100000000)
				p->num_ctx = v;
		}
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "model_info")) {
			const char *k = it->string;
			size_t kl = k ? strlen(k) : 0;
			if (kl > 15 && strcmp(k + kl - 15, ".context_length") == 0)
				p->model_len = jlong(it);
		}
	} else if (j != NULL && p->step == 2) {
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "models")) {
			const char *n = cJSON_GetStringValue(cJSON_GetObjectItem(it, "name"));
			const char *mo = cJSON_GetStringValue(cJSON_GetObjectItem(it, "model"));
			if ((n && p->model && strcmp(n, p->model) == 0) ||
			    (mo && p->model && strcmp(mo, p->model) == 0)) {
				long v = jlong(cJSON_GetObjectItem(it, "context_length"));
				if (v > 0)
					p->num_ctx = v;
			}
		}
	}
	cJSON_Delete(j);
	if (p->step == 1) {
		p->step = 2;
		probe_next(p);
		return;
	}
	probe_finish(p);
}

static void
probe_next(struct ctxprobe *p)
{
	static const struct http_cbs cbs = { p_body, p_done };
	static const char *const hdrs[] = { "Content-Type: application/json", NULL };
	struct http_req req = { .headers = hdrs, .connect_timeout_ms = 2000,
	    .idle_timeout_ms = 5000 };
	char *url, *body = NULL, *err = NULL;

	if (p->step == 1) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "model", p->model ? p->model : "");
		body = cJSON_PrintUnformatted(o);
		cJSON_Delete(o);
		url = xasprintf("%s/api/show", p->root);
		req.body = body;
		req.body_len = strlen(body);
	} else {
		url = xasprintf("%s/api/ps", p->root);
		req.method = "GET";
	}
	req.url = url;
	p->xfer = http_post(p->http, &req, &cbs, p, &err);
	if (p->xfer == NULL) {
		free(err);
		probe_finish(p);
	}
	free(url);
	free(body);
}

void
ctxprobe_init(struct ctxprobe *p, ctxprobe_done_fn done, void *arg)
{
	memset(p, 0, sizeof *p);
	buf_init(&p->body, CTXPROBE_MAX);
	p->done = done;
	p->arg = arg;
}

void
ctxprobe_free(struct ctxprobe *p)
{
	if (p->http)
		http_free(p->http);
	free(p->root);
	free(p->model);
	buf_free(&p->body);
	memset(p, 0, sizeof *p);
}

int
ctxprobe_start(struct ctxprobe *p, struct loop *l, const char *base_url,
    const char *model)
{
	size_t n;

	if (p->step != 0)
		return -1;
	if (p->http == NULL)
		p->http = http_new(l);
	free(p->root);
	p->root = xstrdup(base_url);
	n = strlen(p->root);
	while (n > 0 && p->root[n - 1] == '/')
		p->root[--n] = '\0';
	if (n >= 3 && strcmp(p->root + n - 3, "/v1") == 0)
		p->root[n - 3] = '\0';
	free(p->model);
	p->model = model ? xstrdup(model) : NULL;
	p->num_ctx = 0;
	p->model_len = 0;
	p->step = 1;
	probe_next(p);
	return p->step ? 0 : -1;
}

int
ctxprobe_busy(const struct ctxprobe *p)
{
	return p->step != 0;
}
