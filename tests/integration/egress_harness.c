/* egress_harness: runs terp's egress proxy (src/egress/egress.c) alone on a Unix
 * socket, in terp's own loop, for tests/integration/test_egress.py and
 * bench/egress.py. Prints one JSON object per line on stdout: "ready",
 * then every ledger event; reads commands on stdin, one per line:
 *   allow SPEC | deny SPEC | tag N | max BYTES | stats | quit
 * EOF on stdin is quit. Usage:
 *   egress_harness --socket PATH [--allow SPEC]... [--max-up BYTES]
 *     [--connect-timeout MS] [--idle-timeout MS] [--max-conns N]
 *     [--progress MS] [--deny-in-callback SPEC] [--socket-uid UID]
 *     [--tcp 1]
 * --tcp 1 also listens on 127.0.0.1 (an ephemeral port, in "ready")
 * through egress_listen_fd.
 * --deny-in-callback calls egress_deny(SPEC) from inside the ledger
 * callback on every event, as a notebook's /deny might. */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness_print.h"
#include "terp/egress.h"
#include "terp/kernel_net.h"
#include "terp/loop.h"
#include "terp/util.h"

struct harness {
	struct loop	*l;
	struct egress	*e;
	const char	*deny_in_cb;
	char		 line[4096];
	size_t		 len;
};

static void
on_event(void *arg, const struct egress_event *ev)
{
	struct harness *h = arg;
	cJSON *o = kernel_net_event_json(ev);

	cJSON_AddStringToObject(o, "type", "event");
	harness_emit(o);
	if (h->deny_in_cb != NULL)
		egress_deny(h->e, h->deny_in_cb, NULL);
}

static void
command(struct harness *h, char *cmd)
{
	char *arg = strchr(cmd, ' '), *err = NULL;
	int r = 0;

	if (arg != NULL)
		*arg++ = '\0';
	if (strcmp(cmd, "quit") == 0) {
		loop_stop(h->l);
		return;
	}
	if (strcmp(cmd, "stats") == 0) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "type", "stats");
		cJSON_AddNumberToObject(o, "up", (double)egress_bytes_up(h->e));
		harness_emit(o);
		return;
	}
	if (arg == NULL) {
		harness_reply("error", "error", "missing argument");
		return;
	}
	if (strcmp(cmd, "allow") == 0)
		r = egress_allow(h->e, arg, &err);
	else if (strcmp(cmd, "deny") == 0)
		r = egress_deny(h->e, arg, &err);
	else if (strcmp(cmd, "tag") == 0)
		egress_set_tag(h->e, atoi(arg));
	else if (strcmp(cmd, "max") == 0)
		egress_set_max_up(h->e, strtoull(arg, NULL, 10));
	else
		err = xasprintf("unknown command %s", cmd);
	if (r < 0 || err != NULL) {
		harness_reply("error", "error", err ? err : "failed");
		free(err);
		return;
	}
	harness_reply("ok", "cmd", cmd);
}

static void
on_stdin(struct loop *l, int fd, int revents, void *arg)
{
	struct harness *h = arg;
	ssize_t n = read(fd, h->line + h->len, sizeof h->line - 1 - h->len);
	char *nl;
	(void)revents;

	if (n <= 0) {
		if (n < 0 && errno == EINTR)
			return;
		loop_unwatch(l, fd);
		loop_stop(l);
		return;
	}
	h->len += (size_t)n;
	h->line[h->len] = '\0';
	while ((nl = strchr(h->line, '\n')) != NULL) {
		*nl = '\0';
		command(h, h->line);
		h->len -= (size_t)(nl + 1 - h->line);
		memmove(h->line, nl + 1, h->len + 1);
	}
	if (h->len == sizeof h->line - 1)
		h->len = 0;	/* an overlong line: dropped */
}

int
main(int argc, char **argv)
{
	static const char *allow[64];
	struct egress_opts o;
	struct egress_cbs cb = { on_event };
	struct harness h;
	char *err = NULL, portbuf[16] = "";
	int na = 0, tcp = 0;

	memset(&o, 0, sizeof o);
	memset(&h, 0, sizeof h);
	o.socket_uid = o.socket_gid = -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (v == NULL) {
			fprintf(stderr, "egress_harness: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (strcmp(a, "--socket") == 0)
			o.socket_path = v;
		else if (strcmp(a, "--allow") == 0 && na < 63)
			allow[na++] = v;
		else if (strcmp(a, "--max-up") == 0)
			o.max_up = strtoull(v, NULL, 10);
		else if (strcmp(a, "--connect-timeout") == 0)
			o.connect_timeout_ms = atoll(v);
		else if (strcmp(a, "--idle-timeout") == 0)
			o.idle_timeout_ms = atoll(v);
		else if (strcmp(a, "--max-conns") == 0)
			o.max_conns = atoi(v);
		else if (strcmp(a, "--progress") == 0)
			o.progress_ms = atoll(v);
		else if (strcmp(a, "--deny-in-callback") == 0)
			h.deny_in_cb = v;
		else if (strcmp(a, "--socket-uid") == 0)
			o.socket_uid = o.socket_gid = atoi(v);
		else if (strcmp(a, "--tcp") == 0)
			tcp = atoi(v);
		else {
			fprintf(stderr, "egress_harness: unknown option %s\n", a);
			return 2;
		}
	}
	allow[na] = NULL;
	o.allow = allow;
	h.l = loop_new();
	h.e = egress_new(h.l, &o, &cb, &h, &err);
	if (h.e == NULL) {
		fprintf(stderr, "egress_harness: %s\n", err);
		free(err);
		loop_free(h.l);
		return 1;
	}
	if (tcp) {
		struct sockaddr_in sa;
		socklen_t sl = sizeof sa;
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		memset(&sa, 0, sizeof sa);
		sa.sin_family = AF_INET;
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
		    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0 ||
		    egress_listen_fd(h.e, fd, &err) < 0) {
			fprintf(stderr, "egress_harness: tcp: %s\n",
			    err ? err : strerror(errno));
			return 1;
		}
		snprintf(portbuf, sizeof portbuf, "%u", ntohs(sa.sin_port));
	}
	fd_set_nonblock(0);
	loop_watch(h.l, 0, POLLIN, on_stdin, &h);
	{
		cJSON *r = cJSON_CreateObject();
		cJSON_AddStringToObject(r, "type", "ready");
		cJSON_AddStringToObject(r, "socket", o.socket_path ? o.socket_path : "");
		cJSON_AddStringToObject(r, "tcp", portbuf);
		harness_emit(r);
	}
	loop_run(h.l);
	egress_free(h.e);
	loop_free(h.l);
	harness_reply("bye", NULL, NULL);
	return 0;
}
