/* jupyter_harness: src/kernel/jupyter/kernel_jupyter.c alone, for tests/integration/
 * test_jupyter.py and bench/jupyter_backend.py. Reads commands from
 * stdin, one JSON object a line:
 *   {"op":"run","n":1,"code":"..."}  {"op":"interrupt"}  {"op":"restart"}
 *   {"op":"reset"}  {"op":"stage","path":"..."}  {"op":"stop","reason":"..."}
 *   {"op":"start"}  {"op":"info"}  {"op":"quit"}
 * and prints every callback as a JSON line on stdout (harness_print.h,
 * keyed by "ev": {"ev":"result",...}).
 * Options: --url U --token T (else $JUPYTER_TOKEN) --kernel NAME --out DIR
 * --data FILE... --timeout MS --grace MS --max-msg BYTES --artifact-max BYTES
 * --connect-timeout MS --session S --kernel-id ID --ca FILE --keep-kernel */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness_print.h"
#include "terp/kernel_jupyter.h"
#include "terp/util.h"

static struct loop *L;
static struct jupyter *J;
static char inbuf[1 << 20];
static size_t inlen;

static void
say_error(const char *op, char *err)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "ev", "error");
	cJSON_AddStringToObject(o, "op", op);
	harness_add_opt(o, "msg", err);
	harness_emit(o);
	free(err);
}

static void
command(const char *line, size_t n)
{
	cJSON *c = cJSON_ParseWithLength(line, n);
	const char *op = c ? cJSON_GetStringValue(cJSON_GetObjectItem(c, "op")) : NULL;
	char *err = NULL;

	if (op == NULL) {
		say_error("?", xstrdup("not a command"));
	} else if (strcmp(op, "run") == 0) {
		const char *code = cJSON_GetStringValue(cJSON_GetObjectItem(c, "code"));
		int cell = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(c, "n"));
		if (jupyter_run(J, cell, code ? code : "", &err) < 0)
			say_error(op, err);
	} else if (strcmp(op, "interrupt") == 0) {
		jupyter_interrupt(J);
	} else if (strcmp(op, "restart") == 0) {
		if (jupyter_restart(J, &err) < 0)
			say_error(op, err);
	} else if (strcmp(op, "reset") == 0) {
		if (jupyter_reset(J, &err) < 0)
			say_error(op, err);
	} else if (strcmp(op, "start") == 0) {
		if (jupyter_start(J, &err) < 0)
			say_error(op, err);
	} else if (strcmp(op, "stage") == 0) {
		const char *p = cJSON_GetStringValue(cJSON_GetObjectItem(c, "path"));
		char *seen = jupyter_stage(J, p ? p : "", &err);
		if (seen == NULL) {
			say_error(op, err);
		} else {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "ev", "staged");
			cJSON_AddStringToObject(o, "path", seen);
			harness_emit(o);
			free(seen);
		}
	} else if (strcmp(op, "stop") == 0) {
		const char *r = cJSON_GetStringValue(cJSON_GetObjectItem(c, "reason"));
		jupyter_stop(J, r);
	} else if (strcmp(op, "info") == 0) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "ev", "info");
		harness_add_opt(o, "kernel_id", jupyter_kernel_id(J));
		harness_add_opt(o, "session", jupyter_session_dir(J));
		harness_add_opt(o, "where", jupyter_where(J));
		cJSON_AddStringToObject(o, "state", kernel_state_name(jupyter_state(J)));
		cJSON_AddBoolToObject(o, "busy", jupyter_busy(J));
		harness_emit(o);
	} else if (strcmp(op, "quit") == 0) {
		loop_stop(L);
	} else {
		say_error(op, xstrdup("unknown op"));
	}
	cJSON_Delete(c);
}

static void
on_stdin(struct loop *l, int fd, int revents, void *arg)
{
	ssize_t r;
	char *nl;
	(void)arg;
	(void)revents;

	r = read(fd, inbuf + inlen, sizeof inbuf - inlen);
	if (r <= 0) {
		loop_unwatch(l, fd);
		loop_stop(l);
		return;
	}
	inlen += (size_t)r;
	while ((nl = memchr(inbuf, '\n', inlen)) != NULL) {
		size_t n = (size_t)(nl - inbuf);
		command(inbuf, n);
		memmove(inbuf, nl + 1, inlen - n - 1);
		inlen -= n + 1;
	}
	if (inlen == sizeof inbuf) {
		fprintf(stderr, "jupyter_harness: a command line over 1 MiB\n");
		exit(2);
	}
}

int
main(int argc, char **argv)
{
	static const struct kernel_cbs cbs = { .output = harness_on_output,
	    .result = harness_on_result, .artifact = harness_on_artifact,
	    .state = harness_on_state };
	struct jupyter_opts o;
	const char *data[64];
	int nd = 0;
	char *err = NULL;
	cJSON *ev;

	harness_print_tag("ev");
	jupyter_opts_default(&o);
	o.token = getenv("JUPYTER_TOKEN");
	o.out_dir = "out";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--keep-kernel") == 0) {
			o.keep_kernel = 1;
			continue;
		}
		if (v == NULL) {
			fprintf(stderr, "jupyter_harness: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (strcmp(a, "--url") == 0)
			o.url = v;
		else if (strcmp(a, "--token") == 0)
			o.token = v;
		else if (strcmp(a, "--kernel") == 0)
			o.kernel_name = v;
		else if (strcmp(a, "--out") == 0)
			o.out_dir = v;
		else if (strcmp(a, "--data") == 0 && nd < 64)
			data[nd++] = v;
		else if (strcmp(a, "--timeout") == 0)
			o.timeout_ms = atoll(v);
		else if (strcmp(a, "--grace") == 0)
			o.grace_ms = atoll(v);
		else if (strcmp(a, "--max-msg") == 0)
			o.max_msg = strtoull(v, NULL, 10);
		else if (strcmp(a, "--artifact-max") == 0)
			o.artifact_max = strtoull(v, NULL, 10);
		else if (strcmp(a, "--connect-timeout") == 0)
			o.connect_timeout_ms = atol(v);
		else if (strcmp(a, "--session") == 0)
			o.session = v;
		else if (strcmp(a, "--kernel-id") == 0)
			o.kernel_id = v;
		else if (strcmp(a, "--ca") == 0)
			o.ca_file = v;
		else {
			fprintf(stderr, "jupyter_harness: unknown option %s\n", a);
			return 2;
		}
	}
	o.data_files = data;
	o.ndata = nd;
	L = loop_new();
	J = jupyter_new(L, &o, &cbs, NULL);
	ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "ev", "isolation");
	cJSON_AddStringToObject(ev, "text", jupyter_isolation(J));
	harness_emit(ev);
	if (jupyter_start(J, &err) < 0) {
		say_error("start", err);
		jupyter_free(J);
		loop_free(L);
		return 1;
	}
	loop_watch(L, 0, POLLIN, on_stdin, NULL);
	loop_run(L);
	jupyter_free(J);
	loop_free(L);
	return 0;
}
