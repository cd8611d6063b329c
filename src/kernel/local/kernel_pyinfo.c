/* kernel_pyinfo: the sandbox's Python as the local backend knows it
 * (kernel_pyinfo.h). */
#include "kernel_pyinfo.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "terp/digest.h"
#include "terp/kernel_code.h"
#include "terp/util.h"

static void
probe_set(struct kpyinfo *pi, const struct pyenv_probe *p)
{
	pi->probe = *p;
	pi->have_probe = 1;
	free(pi->line);
	pi->line = pyenv_prompt_line(p);
}

/* A runner that runs nothing: with it pyenv_probe answers from its
 * cache or not at all. The interpreter is probed inside the sandbox
 * (the driver's "ready"), never on the host. */
static int
run_none(void *ctx, char *const argv[], size_t max, char **out, size_t *outlen,
    char **err)
{
	*out = NULL;
	*err = xstrdup("not probed yet");
	return -1;
}

/* A runner that "runs" the probe by handing over the driver's answer. */
static int
run_answer(void *ctx, char *const argv[], size_t max, char **out, size_t *outlen,
    char **err)
{
	const char *text = ctx;
	size_t n = strlen(text);

	if (n > max) {
		*err = xstrdup("its answer to the probe was too long");
		return -1;
	}
	*out = xstrdup(text);
	*outlen = n;
	return 0;
}

void
kpyinfo_cached(struct kpyinfo *pi, const struct kernel_opts *o, const char *driver_sha256)
{
	if (!pi->have_probe && o->pyenv != NULL && o->probe_cache != NULL) {
		struct pyenv_probe p;
		char *err = NULL;
		if (pyenv_probe(o->pyenv, o->probe_cache, run_none, NULL, &p, &err) == 0)
			probe_set(pi, &p);
		free(err);
	}
	if (pi->code_tried || o->no_sandbox)
		return;
	pi->code_tried = 1;
	pi->code_file = kcode_file(o->probe_cache, o->pyenv, driver_sha256);
	if (pi->code_file != NULL)
		pi->code = kcode_load(pi->code_file, &pi->code_len);
}

/* The driver's "probe": what its interpreter has, found before any cell
 * ran and before the session's own site directory joined sys.path.
 * Checked like any frame (pyenv_probe_parse admits only known packages
 * and plain version strings), then cached. */
static void
probe_from_ready(struct kpyinfo *pi, const struct kernel_opts *o, const struct kframe *f)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(f->json, "probe");
	struct pyenv_probe p;
	char *text, *err = NULL;
	int rc;

	if (pi->have_probe || !cJSON_IsObject(j) || (text = cJSON_PrintUnformatted(j)) == NULL)
		return;
	if (o->pyenv != NULL)
		rc = pyenv_probe(o->pyenv, o->probe_cache, run_answer, text, &p, &err);
	else
		rc = pyenv_probe_parse(text, strlen(text), &p, &err);
	if (rc == 0)
		probe_set(pi, &p);
	free(err);
	free(text);
}

/* The driver's code (asked for by TERP_CODE=1, so only when the cache
 * had none): sent before any cell ran, by the interpreter the cache
 * file is named after. Its shape is checked here; the loader checks
 * that it is for the running version. */
static void
code_from_ready(struct kpyinfo *pi, const struct kframe *f)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(f->json, "code");
	size_t n = 0;
	char *blob;

	if (pi->code_file == NULL || pi->code != NULL || !cJSON_IsString(j) ||
	    strlen(j->valuestring) > KCODE_MAX / 3 * 4 + 4)
		return;
	blob = base64_decode(j->valuestring, strlen(j->valuestring), &n);
	if (blob != NULL && kcode_valid(blob, n)) {
		kcode_store(pi->code_file, blob, n);
		pi->code = (unsigned char *)blob;
		pi->code_len = n;
		return;
	}
	free(blob);
}

void
kpyinfo_ready(struct kpyinfo *pi, const struct kernel_opts *o, const struct kframe *f)
{
	probe_from_ready(pi, o, f);
	code_from_ready(pi, f);
}

int
kpyinfo_code_wanted(const struct kpyinfo *pi)
{
	return pi->code_file != NULL && pi->code == NULL;
}

const char *
kpyinfo_line(const struct kpyinfo *pi)
{
	return pi->have_probe ? pi->line : NULL;
}

int
kpyinfo_charts(const struct kpyinfo *pi)
{
	return pi->have_probe ? pyenv_probe_charts(&pi->probe) : -1;
}

char *
kpyinfo_label(const struct kpyinfo *pi, const struct kernel_opts *o)
{
	if (o->pyenv != NULL)
		return pyenv_label(o->pyenv, pi->have_probe ? &pi->probe : NULL);
	if (pi->have_probe)
		return xasprintf("Python %s", pi->probe.version);
	return NULL;
}

void
kpyinfo_free(struct kpyinfo *pi)
{
	free(pi->line);
	free(pi->code_file);
	free(pi->code);
	memset(pi, 0, sizeof *pi);
}
