/* llm_demo: the backend of the demo provider. It replays a recorded
 * analysis (a JSON script, examples/demo.json, read once when the
 * backend opens) through the real agent loop and the real sandbox: for
 * each request it finds the user's last question in the script and
 * returns the next recorded reply, streamed in small pieces from loop
 * timers like a real model. No network.
 *
 * Script: {"delay_ms": N, "chunk": BYTES, "unknown": TEXT,
 *          "questions": [{"question": S, "keywords": [S...],
 *                         "replies": [{"text": S, "code": S} ...]}]}
 * A reply has text, code (one python_exec call) or both; "tool_calls":
 * [{"code": S}...] gives several calls. The k-th reply answers the k-th
 * request after the question (k = assistant messages since it). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/llm_provider.h"
#include "terp/json_text.h"
#include "terp/sanitize.h"
#include "terp/util.h"

#define SCRIPT_MAX	(1024 * 1024)

struct llm_demo {
	struct loop		*loop;
	cJSON			*script;
	int			 delay_ms;
	size_t			 chunk;
	/* the reply being streamed */
	const struct llm_cbs	*cbs;
	void			*arg;
	int			 active;
	uint64_t		 timer;
	char			*text;
	size_t			 pos, len;
	const cJSON		*reply;		/* borrowed from script */
	int			 qi, k;
};

static const char fallback_unknown[] =
    "This is terp's demo: it only knows its recorded questions. To ask "
    "your own, configure a real model (see terp(1)).";

static void *
demo_open(struct loop *l, const struct llm_config *cfg,
    const struct llm_codec *codec, char **err)
{
	struct llm_demo *d;
	char *text;
	size_t len;
	cJSON *j, *v;
	(void)codec;

	if (cfg->demo_script == NULL) {
		*err = xstrdup("demo: no script (demo_script)");
		return NULL;
	}
	text = read_file(cfg->demo_script, SCRIPT_MAX, &len);
	if (text == NULL) {
		*err = xasprintf("demo: cannot read %s", cfg->demo_script);
		return NULL;
	}
	j = cJSON_ParseWithLength(text, len);
	free(text);
	if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "questions"))) {
		cJSON_Delete(j);
		*err = xasprintf("demo: %s is not a demo script", cfg->demo_script);
		return NULL;
	}
	d = xcalloc(1, sizeof *d);
	d->loop = l;
	d->script = j;
	v = cJSON_GetObjectItemCaseSensitive(j, "delay_ms");
	d->delay_ms = cJSON_IsNumber(v) && v->valueint >= 0 ? v->valueint : 15;
	v = cJSON_GetObjectItemCaseSensitive(j, "chunk");
	d->chunk = cJSON_IsNumber(v) && v->valueint > 0 ? (size_t)v->valueint : 12;
	return d;
}

static void
demo_cancel(void *p)
{
	struct llm_demo *d = p;

	loop_timer_cancel(d->loop, d->timer);
	d->timer = 0;
	d->active = 0;
	free(d->text);
	d->text = NULL;
}

static void
demo_close(void *p)
{
	struct llm_demo *d = p;

	demo_cancel(d);
	cJSON_Delete(d->script);
	free(d);
}

/* Lower-case letters and digits only, words kept apart by one space. */
static char *
normalize(const char *s)
{
	char *out = xmalloc(strlen(s) + 1), *w = out;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (isalnum(c))
			*w++ = (char)tolower(c);
		else if (w > out && w[-1] != ' ')
			*w++ = ' ';
	}
	while (w > out && w[-1] == ' ')
		w--;
	*w = '\0';
	return out;
}

/* Whether the normalized text a holds word w as a whole word. */
static int
has_word(const char *a, const char *w)
{
	size_t n = strlen(w);

	for (const char *p = a; (p = strstr(p, w)) != NULL; p++)
		if ((p == a || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return 1;
	return 0;
}

/* exact: the recorded question appears in what was asked; otherwise
 * every keyword appears in it as a whole word. */
static int
matches(const cJSON *q, const char *asked, int exact)
{
	const cJSON *qs = cJSON_GetObjectItemCaseSensitive(q, "question");
	const cJSON *kw = cJSON_GetObjectItemCaseSensitive(q, "keywords"), *k;
	char *a = normalize(asked), *n;
	int hit = 0, all = cJSON_GetArraySize(kw) > 0;

	if (exact) {
		if (cJSON_IsString(qs)) {
			n = normalize(qs->valuestring);
			hit = *n != '\0' && strstr(a, n) != NULL;
			free(n);
		}
		free(a);
		return hit;
	}
	cJSON_ArrayForEach(k, kw) {
		if (!cJSON_IsString(k))
			continue;
		n = normalize(k->valuestring);
		if (!has_word(a, n))
			all = 0;
		free(n);
	}
	free(a);
	return all;
}

static void step(struct loop *l, void *arg);

static void
finish(struct llm_demo *d)
{
	const cJSON *calls = NULL, *code, *c;
	const struct llm_cbs *cbs = d->cbs;
	void *arg = d->arg;
	int i = 0, any = 0;

	if (d->reply != NULL) {
		calls = cJSON_GetObjectItemCaseSensitive(d->reply, "tool_calls");
		code = cJSON_GetObjectItemCaseSensitive(d->reply, "code");
		if (cJSON_IsString(code)) {
			cJSON *args = cJSON_CreateObject();
			char *s, id[48];
			cJSON_AddStringToObject(args, "code", code->valuestring);
			s = cJSON_PrintUnformatted(args);
			snprintf(id, sizeof id, "demo_%d_%d_%d", d->qi, d->k, i++);
			any = 1;
			cbs->tool_call(arg, id, LLM_TOOL_NAME, s);
			free(s);
			cJSON_Delete(args);
			if (!d->active)
				return;
		}
	}
	cJSON_ArrayForEach(c, (cJSON_IsArray(calls) ? calls : NULL)) {
		const cJSON *cc = cJSON_GetObjectItemCaseSensitive(c, "code");
		cJSON *args = cJSON_CreateObject();
		char *s, id[48];
		cJSON_AddStringToObject(args, "code",
		    cJSON_IsString(cc) ? cc->valuestring : "");
		s = cJSON_PrintUnformatted(args);
		snprintf(id, sizeof id, "demo_%d_%d_%d", d->qi, d->k, i++);
		any = 1;
		cbs->tool_call(arg, id, LLM_TOOL_NAME, s);
		free(s);
		cJSON_Delete(args);
		if (!d->active)
			return;
	}
	d->active = 0;
	free(d->text);
	d->text = NULL;
	cbs->done(arg, any ? "tool_calls" : "stop");
}

static void
step(struct loop *l, void *arg)
{
	struct llm_demo *d = arg;
	size_t n;

	d->timer = 0;
	if (!d->active)
		return;
	if (d->pos >= d->len) {
		finish(d);
		return;
	}
	n = d->len - d->pos < d->chunk ? d->len - d->pos : d->chunk;
	/* Never cut a UTF-8 sequence. */
	if (d->pos + n < d->len) {
		size_t ok = utf8_complete_prefix(d->text + d->pos, n);
		if (ok > 0)
			n = ok;
	}
	d->pos += n;
	d->timer = loop_timer_add(l, d->delay_ms, step, d);
	d->cbs->text(d->arg, d->text + d->pos - n, n);
}

/* Finds the reply to the conversation's last question and streams it
 * from loop timers; cbs is borrowed until done. */
static int
demo_request(void *p, const char *system, const cJSON *messages,
    const struct llm_cbs *cbs, void *arg, char **err)
{
	struct llm_demo *d = p;
	const cJSON *m, *last_user = NULL, *qs, *q, *found = NULL;
	const char *asked = "", *text = NULL;
	int after = 0, i = 0;
	(void)system;
	(void)err;

	demo_cancel(d);
	cJSON_ArrayForEach(m, messages) {
		const char *role = cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(m, "role"));
		if (role == NULL)
			continue;
		if (strcmp(role, "user") == 0) {
			last_user = m;
			after = 0;
		} else if (strcmp(role, "assistant") == 0)
			after++;
	}
	if (last_user != NULL) {
		const char *c = cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(last_user, "content"));
		if (c != NULL)
			asked = c;
	}
	d->cbs = cbs;
	d->arg = arg;
	d->reply = NULL;
	d->qi = -1;
	d->k = after;
	qs = cJSON_GetObjectItemCaseSensitive(d->script, "questions");
	/* An exact question anywhere beats keywords of an earlier one. */
	for (int exact = 1; exact >= 0 && d->qi < 0; exact--) {
		i = 0;
		cJSON_ArrayForEach(q, qs) {
			if (matches(q, asked, exact)) {
				d->qi = i;
				found = q;
				break;
			}
			i++;
		}
	}
	if (found != NULL) {
		const cJSON *replies = cJSON_GetObjectItemCaseSensitive(found, "replies");
		d->reply = cJSON_GetArrayItem(replies, after);
		if (d->reply != NULL)
			text = cJSON_GetStringValue(
			    cJSON_GetObjectItemCaseSensitive(d->reply, "text"));
		else
			text = "That is the end of this recorded answer.";
	} else {
		text = cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(d->script, "unknown"));
		if (text == NULL)
			text = fallback_unknown;
	}
	d->text = xstrdup(text ? text : "");
	d->len = strlen(d->text);
	d->pos = 0;
	d->active = 1;
	d->timer = loop_timer_add(d->loop, d->delay_ms, step, d);
	return 0;
}

static const char *
demo_suggest(void *p, int i)
{
	struct llm_demo *d = p;
	const cJSON *q = cJSON_GetArrayItem(json_arr(d->script, "questions"), i);

	return i < 0 ? NULL : json_str(q, "question");
}

const struct llm_backend llm_demo_backend = {
	demo_open, demo_request, demo_cancel, demo_close, demo_suggest, NULL,
};
