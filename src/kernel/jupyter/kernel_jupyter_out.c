/* kernel_jupyter_out: the files a cell leaves on the Jupyter server (see
 * kernel_jupyter_out.h). */
#include "terp/kernel_jupyter_out.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/json_text.h"
#include "terp/kernel_frame.h"
#include "terp/kernel_jupyter_msg.h"
#include "terp/kernel_seen.h"
#include "terp/util.h"

#define LIST_BODY_MAX	(8u << 20)	/* a listing of out/ */

struct jout {
	struct jrest		*rest;
	struct kernel_sink	*sink;
	struct jout_opts	 o;
	struct jout_cbs		 cb;
	void			*arg;
	struct kernel_seen	 seen;		/* out/'s last listing (names checked) */
	char			*session;	/* the folder being fetched from */
	int			 fetching;
	cJSON			*fetch_list;	/* names still to download */
	int			 fetch_i;
	int			 figs_total;
};

static void fetch_next(struct jout *j);

/* "terp: ..." through the owner's bounded notes. */
static void
note(struct jout *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
note(struct jout *j, const char *fmt, ...)
{
	va_list ap;
	char *m;

	va_start(ap, fmt);
	m = xvasprintf(fmt, ap);
	va_end(ap);
	j->cb.note(j->arg, m);
	free(m);
}

struct jout *
jout_new(struct jrest *rest, struct kernel_sink *sink, const struct jout_opts *o,
    const struct jout_cbs *cbs, void *arg)
{
	struct jout *j = xcalloc(1, sizeof *j);

	j->rest = rest;
	j->sink = sink;
	j->o = *o;
	j->cb = *cbs;
	j->arg = arg;
	return j;
}

void
jout_cancel(struct jout *j)
{
	cJSON_Delete(j->fetch_list);
	j->fetch_list = NULL;
	j->fetch_i = 0;
	j->fetching = 0;
}

void
jout_free(struct jout *j)
{
	if (j == NULL)
		return;
	jout_cancel(j);
	kernel_seen_clear(&j->seen);
	free(j->session);
	free(j);
}

void
jout_image(struct jout *j, int cell, const char *b64)
{
	size_t n;
	char *data, name[64];

	j->figs_total++;
	snprintf(name, sizeof name, "figure-%d-%d.png", cell, j->figs_total);
	data = jmsg_b64_decode(b64, &n);
	if (data == NULL) {
		note(j, "artifact %s not copied: the server sent an image that is not base64", name);
		return;
	}
	if (n < 8 || memcmp(data, "\x89PNG\r\n\x1a\n", 8) != 0) {
		note(j, "artifact %s not copied: the server's image/png is not a PNG", name);
		free(data);
		return;
	}
	(void)kernel_sink_put(j->sink, "", name, data, n);
	free(data);
}

static void
fetch_end(struct jout *j)
{
	cJSON_Delete(j->fetch_list);
	j->fetch_list = NULL;
	j->fetch_i = 0;
	j->fetching = 0;
	j->cb.ended(j->arg);
}

static void
on_file(void *arg, struct jreq *q, const struct http_result *r)
{
	struct jout *j = arg;
	cJSON *doc;
	const char *fmt, *content;
	char *p, *data;
	size_t n;

	if (!j->fetching || !j->cb.live(j->arg) || q->i != j->rest->gen)
		return;
	if (q->k.over) {
		char b[32];
		fmt_bytes(b, sizeof b, j->o.artifact_max);
		note(j, "artifact out/%s not copied: too large (the limit is %s)", q->s, b);
		fetch_next(j);
		return;
	}
	if ((p = jrest_problem(j->rest, r, "a file download")) != NULL) {
		note(j, "artifact out/%s not copied: %s", q->s, p);
		free(p);
		fetch_next(j);
		return;
	}
	doc = krest_json(&q->k);
	if (doc == NULL || (content = json_str(doc, "content")) == NULL ||
	    (fmt = json_str(doc, "format")) == NULL) {
		note(j, "artifact out/%s not copied: the server's answer is not a file model", q->s);
		cJSON_Delete(doc);
		fetch_next(j);
		return;
	}
	if (strcmp(fmt, "base64") == 0) {
		data = jmsg_b64_decode(content, &n);
	} else if (strcmp(fmt, "text") == 0) {
		data = xstrdup(content);
		n = strlen(content);
	} else {
		data = NULL;
	}
	if (data == NULL) {
		note(j, "artifact out/%s not copied: the server sent data that is not base64", q->s);
	} else {
		(void)kernel_sink_put(j->sink, "out/", q->s, data, n);
		free(data);
	}
	cJSON_Delete(doc);
	fetch_next(j);
}

static void
fetch_next(struct jout *j)
{
	const cJSON *name;
	char *rel, *path;
	struct jreq *q;

	if (j->fetch_list == NULL || j->fetch_i >= cJSON_GetArraySize(j->fetch_list)) {
		fetch_end(j);
		return;
	}
	name = cJSON_GetArrayItem(j->fetch_list, j->fetch_i++);
	rel = xasprintf("%s/out/%s", j->session, name->valuestring);
	path = jrest_path("/api/contents/", rel, "?type=file&format=base64&content=1");
	free(rel);
	q = jrest_call_for(j->rest, j, "GET", path, NULL, (size_t)(j->o.artifact_max / 3 * 4 + 65536), on_file);
	free(path);
	if (q != NULL) {
		q->i = j->rest->gen;
		q->s = xstrdup(name->valuestring);
	}
}

/* Parses a listing of out/ and queues the new or changed files. */
static void
on_listing(void *arg, struct jreq *q, const struct http_result *r)
{
	struct jout *j = arg;
	cJSON *doc;
	const cJSON *list, *e;
	char *p;
	int looked = 0, more = 0;

	if (!j->fetching || !j->cb.live(j->arg) || q->i != j->rest->gen)
		return;
	if (q->k.over) {
		note(j, "the listing of out/ is over %u MiB; files not fetched", LIST_BODY_MAX >> 20);
		fetch_end(j);
		return;
	}
	if ((p = jrest_problem(j->rest, r, "the listing of out/")) != NULL) {
		if (r->status != 404)	/* no out/ (removed by the code): nothing to fetch */
			note(j, "files in out/ not fetched: %s", p);
		free(p);
		fetch_end(j);
		return;
	}
	doc = krest_json(&q->k);
	list = doc ? cJSON_GetObjectItemCaseSensitive(doc, "content") : NULL;
	if (!cJSON_IsArray(list)) {
		note(j, "files in out/ not fetched: the server's listing is malformed");
		cJSON_Delete(doc);
		fetch_end(j);
		return;
	}
	j->fetch_list = cJSON_CreateArray();
	cJSON_ArrayForEach(e, list) {
		const char *name, *type, *mtime;
		const cJSON *sz;
		uint64_t size;
		char *shown;

		if (looked >= j->o.out_files_max) {
			more = 1;
			break;
		}
		looked++;
		if (!cJSON_IsObject(e) || (name = json_str(e, "name")) == NULL ||
		    (type = json_str(e, "type")) == NULL)
			continue;
		if (strcmp(type, "file") != 0)
			continue;	/* folders and notebooks are not artifacts */
		shown = kframe_display_name(name);
		if (kframe_name_problem(name) != NULL || strchr(name, '/') != NULL ||
		    strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
			note(j, "artifact %s not copied: the server gave a name that is not a plain file name",
			    shown);
			free(shown);
			continue;
		}
		sz = cJSON_GetObjectItemCaseSensitive(e, "size");
		mtime = json_str(e, "last_modified");
		size = cJSON_IsNumber(sz) && sz->valuedouble >= 0 && sz->valuedouble < 9e15 ?
		    (uint64_t)sz->valuedouble : KERNEL_SEEN_SIZE_UNKNOWN;
		/* Not pruned after: a file seen once and listed again alike
		 * is not new (a listing may stop at out_files_max). */
		if (!kernel_seen_changed(&j->seen, name, size, mtime)) {
			free(shown);
			continue;	/* unchanged since the last look */
		}
		if (size != KERNEL_SEEN_SIZE_UNKNOWN && size > j->o.artifact_max) {
			char *why = kernel_sink_refusal(j->sink, KF_TOO_LARGE, size);
			note(j, "artifact %s not copied: %s", shown, why);
			free(why);
			free(shown);
			continue;
		}
		free(shown);
		cJSON_AddItemToArray(j->fetch_list, cJSON_CreateString(name));
	}
	if (more)
		note(j, "out/ has more than %d entries; the rest were not looked at",
		    j->o.out_files_max);
	cJSON_Delete(doc);
	j->fetch_i = 0;
	fetch_next(j);
}

void
jout_fetch(struct jout *j, const char *session)
{
	char *rel = xasprintf("%s/out", session);
	char *path = jrest_path("/api/contents/", rel, "?content=1");
	struct jreq *q;

	free(rel);
	free(j->session);
	j->session = xstrdup(session);
	j->fetching = 1;
	q = jrest_call_for(j->rest, j, "GET", path, NULL, LIST_BODY_MAX, on_listing);
	free(path);
	if (q != NULL)
		q->i = j->rest->gen;
}
