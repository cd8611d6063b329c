/* aca_harness: runs terp's session pool backend (src/kernel/aca/kernel_aca.c) alone,
 * in terp's own loop, for tests/integration/test_aca.py against
 * tests/fake_aca.py. Prints every callback as one JSON line on stdout
 * (harness_print.h, keyed by "type": {"type":"result",...})
 * and answers to commands. Commands on stdin, one per line:
 *   run N CODE_JSON      queue cell N (CODE_JSON: a JSON string)
 *   stage PATH           -> {"type":"staged","path":P} or {"type":"error"}
 *   interrupt | restart | start | stop REASON
 *   advance SECONDS      move the token clock forward
 *   wait                 -> {"type":"idle"} once nothing runs or waits
 *   state                -> {"type":"status","state":S,"busy":B}
 *   note                 -> {"type":"note","text":T}
 *   quit                 (EOF too) -> {"type":"bye"}
 * Usage:
 *   aca_harness --endpoint URL [--api-version V] [--token-cmd CMD]
 *     [--token-env NAME] [--audience A] [--out DIR] [--data FILE]...
 *     [--identifier-file PATH] [--timeout-ms N] [--grace-ms N]
 *     [--upload-max N] [--response-max N] [--artifact-max N]
 *     [--per-cell N] [--per-session N] [--artifact-bytes N]
 *     [--retries N] [--retry-max-ms N] [--token-timeout-ms N]
 *     [--token-lifetime-ms N] [--no-start]
 * --identifier-file is the journal's part: read at start when it holds
 * an identifier (a resume), written (0600) after every state report. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness_print.h"
#include "terp/kernel_aca.h"
#include "terp/loop.h"
#include "terp/util.h"

struct harness {
	struct loop	*l;
	struct aca	*a;
	const char	*idfile;
	int		 waiting;
	char		 line[1 << 16];
	size_t		 len;
};

static int64_t clock_offset;

static int64_t
test_clock(void)
{
	return (int64_t)time(NULL) + clock_offset;
}

static void
save_id(struct harness *h)
{
	int fd;
	const char *id = aca_identifier(h->a);

	if (h->idfile == NULL)
		return;
	fd = open(h->idfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || write_all(fd, id, strlen(id)) < 0)
		fatal("cannot write %s", h->idfile);
	close(fd);
}

/* The state line, then the identifier the journal would keep. */
static void
on_state(void *arg, const struct kernel_status *ks)
{
	harness_on_state(arg, ks);
	save_id(arg);
}

static void
check_idle(struct harness *h)
{
	enum kernel_state st = aca_state(h->a);

	if (h->waiting && !aca_busy(h->a) && st != KERNEL_STARTING && st != KERNEL_BUSY) {
		h->waiting = 0;
		harness_reply("idle", NULL, NULL);
	}
}

static void
command(struct harness *h, char *line)
{
	char *err = NULL, *arg = strchr(line, ' ');

	if (arg != NULL)
		*arg++ = '\0';
	if (strcmp(line, "run") == 0 && arg != NULL) {
		char *code = strchr(arg, ' ');
		cJSON *j;
		int n = atoi(arg);
		if (code == NULL || (j = cJSON_Parse(code + 1)) == NULL || !cJSON_IsString(j)) {
			harness_reply("error", "msg", "run N CODE_JSON");
			return;
		}
		if (aca_run(h->a, n, j->valuestring, &err) < 0) {
			harness_reply("error", "msg", err);
			free(err);
		} else {
			harness_reply("queued", NULL, NULL);
		}
		cJSON_Delete(j);
	} else if (strcmp(line, "stage") == 0 && arg != NULL) {
		char *p = aca_stage(h->a, arg, &err);
		if (p == NULL) {
			harness_reply("error", "msg", err);
			free(err);
		} else {
			harness_reply("staged", "path", p);
			free(p);
		}
	} else if (strcmp(line, "interrupt") == 0) {
		aca_interrupt(h->a);
		harness_reply("ok", NULL, NULL);
	} else if (strcmp(line, "restart") == 0) {
		if (aca_restart(h->a, &err) < 0) {
			harness_reply("error", "msg", err);
			free(err);
		} else {
			harness_reply("ok", NULL, NULL);
		}
	} else if (strcmp(line, "start") == 0) {
		if (aca_start(h->a, &err) < 0) {
			harness_reply("error", "msg", err);
			free(err);
		} else {
			harness_reply("ok", NULL, NULL);
		}
	} else if (strcmp(line, "stop") == 0) {
		aca_stop(h->a, arg);
		harness_reply("ok", NULL, NULL);
	} else if (strcmp(line, "advance") == 0 && arg != NULL) {
		clock_offset += atoll(arg);
		harness_reply("ok", NULL, NULL);
	} else if (strcmp(line, "wait") == 0) {
		h->waiting = 1;
	} else if (strcmp(line, "state") == 0) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "type", "status");
		cJSON_AddStringToObject(o, "state", kernel_state_name(aca_state(h->a)));
		cJSON_AddNumberToObject(o, "busy", aca_busy(h->a));
		harness_emit(o);
	} else if (strcmp(line, "note") == 0) {
		harness_reply("note", "text", aca_note());
	} else if (strcmp(line, "quit") == 0) {
		loop_stop(h->l);
	} else {
		harness_reply("error", "msg", "unknown command");
	}
}

static void
on_stdin(struct loop *l, int fd, int revents, void *arg)
{
	struct harness *h = arg;
	ssize_t n;
	char *nl;
	(void)revents;

	n = read(fd, h->line + h->len, sizeof h->line - 1 - h->len);
	if (n <= 0) {
		if (n < 0 && errno == EINTR)
			return;
		loop_unwatch(l, fd);
		loop_stop(l);
		return;
	}
	h->len += (size_t)n;
	h->line[h->len] = '\0';
	while ((nl = memchr(h->line, '\n', h->len)) != NULL) {
		size_t k = (size_t)(nl - h->line) + 1;
		*nl = '\0';
		if (nl > h->line)
			command(h, h->line);
		memmove(h->line, h->line + k, h->len - k);
		h->len -= k;
		if (loop_stopped(l))
			return;
	}
	if (h->len == sizeof h->line - 1)
		fatal("command line too long");
}

static char *
read_id(const char *path)
{
	size_t n;
	char *s = read_file(path, 256, &n);

	if (s != NULL && n == 0) {
		free(s);
		return NULL;
	}
	return s;
}

int
main(int argc, char **argv)
{
	struct harness h;
	struct aca_opts o;
	struct kernel_cbs cbs = { .output = harness_on_output,
	    .result = harness_on_result, .artifact = harness_on_artifact,
	    .state = on_state };
	const char *data[16];
	char *saved = NULL, *err = NULL;
	int ndata = 0, start = 1;

	memset(&h, 0, sizeof h);
	aca_opts_default(&o);
	o.wallclock = test_clock;
	for (int i = 1; i < argc; i++) {
		const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(k, "--no-start") == 0) {
			start = 0;
			continue;
		}
		if (v == NULL)
			fatal("%s needs a value", k);
		i++;
		if (strcmp(k, "--endpoint") == 0) o.endpoint = v;
		else if (strcmp(k, "--api-version") == 0) o.api_version = v;
		else if (strcmp(k, "--token-cmd") == 0) o.token_cmd = v;
		else if (strcmp(k, "--token-env") == 0) o.token_env = v;
		else if (strcmp(k, "--audience") == 0) o.audience = v;
		else if (strcmp(k, "--out") == 0) o.out_dir = v;
		else if (strcmp(k, "--data") == 0 && ndata < 16) data[ndata++] = v;
		else if (strcmp(k, "--identifier-file") == 0) h.idfile = v;
		else if (strcmp(k, "--timeout-ms") == 0) o.timeout_ms = atoll(v);
		else if (strcmp(k, "--grace-ms") == 0) o.grace_ms = atoll(v);
		else if (strcmp(k, "--upload-max") == 0) o.upload_max = strtoull(v, NULL, 10);
		else if (strcmp(k, "--response-max") == 0) o.response_max = strtoull(v, NULL, 10);
		else if (strcmp(k, "--artifact-max") == 0) o.artifact_max = strtoull(v, NULL, 10);
		else if (strcmp(k, "--per-cell") == 0) o.artifacts_per_cell = atoi(v);
		else if (strcmp(k, "--per-session") == 0) o.artifacts_per_session = atoi(v);
		else if (strcmp(k, "--artifact-bytes") == 0) o.artifact_bytes = strtoull(v, NULL, 10);
		else if (strcmp(k, "--retries") == 0) o.max_retries = atoi(v);
		else if (strcmp(k, "--retry-max-ms") == 0) o.retry_max_ms = atoll(v);
		else if (strcmp(k, "--token-timeout-ms") == 0) o.token_timeout_ms = atoll(v);
		else if (strcmp(k, "--token-lifetime-ms") == 0) o.token_lifetime_ms = atoll(v);
		else fatal("unknown option %s", k);
	}
	o.data_files = data;
	o.ndata = ndata;
	if (h.idfile != NULL && (saved = read_id(h.idfile)) != NULL)
		o.identifier = saved;
	h.l = loop_new();
	h.a = aca_new(h.l, &o, &cbs, &h);
	save_id(&h);
	if (start && aca_start(h.a, &err) < 0) {
		harness_reply("error", "msg", err);
		free(err);
	}
	loop_watch(h.l, 0, POLLIN, on_stdin, &h);
	while (!loop_stopped(h.l)) {
		check_idle(&h);
		if (loop_run_once(h.l, -1) < 0)
			break;
	}
	aca_free(h.a);
	loop_free(h.l);
	free(saved);
	harness_reply("bye", NULL, NULL);
	return 0;
}
