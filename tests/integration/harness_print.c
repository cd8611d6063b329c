/* harness_print: the backend harnesses' JSON lines (see harness_print.h).
 * A test program's helper, linked into each harness beside terp's
 * objects; not part of ./terp. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness_print.h"
#include "terp/notebook.h"
#include "terp/sanitize.h"

static const char *tag = "type";

void
harness_print_tag(const char *key)
{
	tag = key;
}

void
harness_emit(cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);

	fputs(s, stdout);
	fputc('\n', stdout);
	fflush(stdout);
	free(s);
	cJSON_Delete(o);
}

void
harness_add_text(cJSON *o, const char *k, const char *p, size_t n)
{
	char *s;

	if (p == NULL) {
		cJSON_AddNullToObject(o, k);
		return;
	}
	s = sanitize_str(p, n, SANITIZE_UTF8_ONLY);
	cJSON_AddStringToObject(o, k, s);
	free(s);
}

void
harness_add_opt(cJSON *o, const char *k, const char *v)
{
	harness_add_text(o, k, v, v ? strlen(v) : 0);
}

static cJSON *
event(const char *what)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, tag, what);
	return o;
}

void
harness_reply(const char *type, const char *key, const char *val)
{
	cJSON *o = event(type);

	if (key != NULL)
		harness_add_opt(o, key, val);
	harness_emit(o);
}

void
harness_on_output(void *arg, int cell, int stream, const char *p, size_t n)
{
	cJSON *o = event("output");
	(void)arg;

	cJSON_AddNumberToObject(o, "cell", cell);
	cJSON_AddNumberToObject(o, "stream", stream);
	harness_add_text(o, "text", p, n);
	harness_emit(o);
}

void
harness_on_result(void *arg, int cell, const struct kernel_result *r)
{
	cJSON *o = event("result");
	(void)arg;

	cJSON_AddNumberToObject(o, "cell", cell);
	cJSON_AddStringToObject(o, "status", cell_status_name(r->status));
	harness_add_opt(o, "value", r->value);
	harness_add_opt(o, "ename", r->ename);
	harness_add_opt(o, "evalue", r->evalue);
	harness_add_opt(o, "traceback", r->traceback);
	harness_add_opt(o, "reason", r->reason);
	cJSON_AddBoolToObject(o, "state_lost", r->state_lost);
	cJSON_AddNumberToObject(o, "duration_ms", (double)r->duration_ms);
	cJSON_AddNumberToObject(o, "us", (double)r->duration_us);
	harness_emit(o);
}

void
harness_on_artifact(void *arg, int cell, const char *name, const char *path,
    uint64_t bytes)
{
	cJSON *o = event("artifact");
	(void)arg;

	cJSON_AddNumberToObject(o, "cell", cell);
	harness_add_opt(o, "name", name);
	harness_add_opt(o, "path", path);
	cJSON_AddNumberToObject(o, "bytes", (double)bytes);
	harness_emit(o);
}

void
harness_on_state(void *arg, const struct kernel_status *ks)
{
	cJSON *o = event("state");
	(void)arg;

	cJSON_AddStringToObject(o, "state", kernel_state_name(ks->state));
	harness_add_opt(o, "msg", ks->msg);
	if (ks->restarted)
		cJSON_AddTrueToObject(o, "restarted");
	if (ks->state_lost)
		cJSON_AddTrueToObject(o, "state_lost");
	harness_emit(o);
}
