/* A test driver for src/sandbox/pyenv.c, built by `make build/pyenv-harness`
 * from the build objects: resolves the interpreter the way terp would,
 * probes it through a runner that counts its runs, and prints one JSON
 * object, so tests/integration/test_pyenv.py can check every field.
 *
 *   pyenv-harness resolve [--python P] [--from LABEL]
 *   pyenv-harness probe [--python P] [--cache DIR] [--times N]
 *   pyenv-harness run MS ARGV...      (the default runner alone)
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/pyenv.h"
#include "terp/util.h"

static int runs;

static int
counting_runner(void *ctx, char *const argv[], size_t max, char **out,
    size_t *outlen, char **err)
{
	runs++;
	return pyenv_run_direct(ctx, argv, max, out, outlen, err);
}

static const char *
source_word(enum pyenv_source s)
{
	static const char *const w[] = { "choice", "VIRTUAL_ENV", "CONDA_PREFIX",
	    "PATH", "default" };
	return w[s];
}

static const char *
kind_word(enum pyenv_kind k)
{
	static const char *const w[] = { "system", "venv", "conda", "standalone" };
	return w[k];
}

static cJSON *
resolved(const struct pyenv *pe)
{
	cJSON *j = cJSON_CreateObject(), *a;
	char *err = NULL, *fix = NULL;

	cJSON_AddBoolToObject(j, "ok", 1);
	cJSON_AddStringToObject(j, "kind", kind_word(pe->kind));
	cJSON_AddStringToObject(j, "source", source_word(pe->source));
	cJSON_AddStringToObject(j, "exec", pe->exec);
	cJSON_AddStringToObject(j, "real", pe->real);
	cJSON_AddStringToObject(j, "prefix", pe->prefix);
	cJSON_AddStringToObject(j, "base_prefix", pe->base_prefix);
	cJSON_AddNumberToObject(j, "major", pe->major);
	cJSON_AddNumberToObject(j, "minor", pe->minor);
	cJSON_AddBoolToObject(j, "system_site", pe->system_site);
	cJSON_AddStringToObject(j, "reason", pe->reason);
	a = cJSON_AddArrayToObject(j, "binds");
	for (size_t i = 0; i < pe->nbinds; i++) {
		cJSON *b = cJSON_CreateArray();
		cJSON_AddItemToArray(b, cJSON_CreateString(pe->binds[i].host));
		cJSON_AddItemToArray(b, cJSON_CreateString(pe->binds[i].sandbox));
		cJSON_AddItemToArray(a, b);
	}
	a = cJSON_AddArrayToObject(j, "links");
	for (size_t i = 0; i < pe->nlinks; i++) {
		cJSON *b = cJSON_CreateArray();
		cJSON_AddItemToArray(b, cJSON_CreateString(pe->links[i].path));
		cJSON_AddItemToArray(b, cJSON_CreateString(pe->links[i].target));
		cJSON_AddItemToArray(a, b);
	}
	a = cJSON_AddArrayToObject(j, "env");
	for (size_t i = 0; pe->env && pe->env[i]; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(pe->env[i]));
	if (pyenv_check_reach(pe, &err, &fix) < 0) {
		char *line = xasprintf("%s; %s", err, fix ? fix : "");
		cJSON_AddStringToObject(j, "reach", line);
		free(line);
		free(err);
		free(fix);
	} else {
		cJSON_AddNullToObject(j, "reach");
	}
	a = cJSON_AddArrayToObject(j, "watch");
	for (size_t i = 0; pe->watch && pe->watch[i]; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(pe->watch[i]));
	return j;
}

static void
emit(cJSON *j)
{
	char *s = cJSON_PrintUnformatted(j);
	puts(s);
	free(s);
	cJSON_Delete(j);
}

static void
fail(const char *err)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddBoolToObject(j, "ok", 0);
	cJSON_AddStringToObject(j, "error", err);
	emit(j);
}

int
main(int argc, char **argv)
{
	struct pyenv_choice ch = { 0 };
	struct pyenv pe;
	const char *cache = NULL;
	char *err = NULL;
	int times = 1;
	cJSON *j, *probes;

	if (argc >= 3 && strcmp(argv[1], "run") == 0) {
		int ms = atoi(argv[2]);
		char *out = NULL;
		size_t len = 0;
		int rc = pyenv_run_direct(&ms, argv + 3, 1024, &out, &len, &err);
		j = cJSON_CreateObject();
		cJSON_AddBoolToObject(j, "ok", rc == 0);
		if (out)
			cJSON_AddStringToObject(j, "out", out);
		if (err)
			cJSON_AddStringToObject(j, "error", err);
		emit(j);
		free(out);
		free(err);
		return 0;
	}
	if (argc < 2 || (strcmp(argv[1], "resolve") && strcmp(argv[1], "probe"))) {
		fprintf(stderr, "usage: pyenv-harness resolve|probe [--python P] "
		    "[--from LABEL] [--cache DIR] [--times N] | run MS ARGV...\n");
		return 2;
	}
	for (int i = 2; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--python") == 0)
			ch.python = argv[i + 1];
		else if (strcmp(argv[i], "--from") == 0)
			ch.python_from = argv[i + 1];
		else if (strcmp(argv[i], "--cache") == 0)
			cache = argv[i + 1];
		else if (strcmp(argv[i], "--times") == 0)
			times = atoi(argv[i + 1]);
	}
	if (pyenv_resolve(&ch, &pe, &err) < 0) {
		fail(err);
		free(err);
		pyenv_free(&pe);
		return 0;
	}
	j = resolved(&pe);
	if (strcmp(argv[1], "probe") == 0) {
		probes = cJSON_AddArrayToObject(j, "probes");
		for (int t = 0; t < times; t++) {
			struct pyenv_probe p;
			cJSON *o = cJSON_CreateObject(), *pk;
			int before = runs;
			int64_t t0 = now_us();
			if (pyenv_probe(&pe, cache, counting_runner, NULL, &p, &err) < 0) {
				cJSON_AddStringToObject(o, "error", err);
				free(err);
				err = NULL;
			} else {
				char *line = pyenv_prompt_line(&p), *label = pyenv_label(&pe, &p);
				cJSON_AddStringToObject(o, "version", p.version);
				pk = cJSON_AddObjectToObject(o, "packages");
				for (size_t i = 0; i < PYENV_NPKGS; i++)
					if (p.pkg[i].present)
						cJSON_AddStringToObject(pk, pyenv_pkg_name(i), p.pkg[i].version);
					else
						cJSON_AddNullToObject(pk, pyenv_pkg_name(i));
				cJSON_AddBoolToObject(o, "from_cache", p.from_cache);
				cJSON_AddBoolToObject(o, "charts", pyenv_probe_charts(&p));
				cJSON_AddStringToObject(o, "prompt", line);
				cJSON_AddStringToObject(o, "label", label);
				free(line);
				free(label);
			}
			cJSON_AddNumberToObject(o, "runs", runs - before);
			cJSON_AddNumberToObject(o, "us", (double)(now_us() - t0));
			cJSON_AddItemToArray(probes, o);
		}
	}
	emit(j);
	pyenv_free(&pe);
	return 0;
}
