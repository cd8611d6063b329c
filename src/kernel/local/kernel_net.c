/* kernel_net: the session's egress proxy on the kernel's loop, its
 * socket, the cell attempts belong to, the notes under a cell about
 * refused attempts, and the ledger file test seam (kernel_net.h). */
#include "terp/kernel_net.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "terp/egress.h"
#include "terp/util.h"

#define SOCK_NAME	"egress.sock"

struct kernel_net {
	struct loop		*l;
	struct egress		*e;
	struct kernel_net_cbs	 cb;
	void			*arg;
	int			 started;
	int			 freeing;	/* the ledger only: the kernel is going */
	int			 dirfd;		/* O_PATH of the socket's folder */
	char			*sock;		/* its host path, for bwrap */
	int			 ledger;	/* TERP_EGRESS_LEDGER, or -1 */
	int			 cell;
	/* The cell's notes: how many, and what they were about. */
	int			 nnotes;
	char			 said[KERNEL_NET_NOTES][300];
};

cJSON *
kernel_net_event_json(const struct egress_event *ev)
{
	static const char *const phase[] = { "open", "progress", "end" };
	static const char *const verdict[] = { "allowed", "refused", "failed" };
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "phase", phase[ev->phase]);
	cJSON_AddStringToObject(o, "verdict", verdict[ev->verdict]);
	cJSON_AddNumberToObject(o, "id", (double)ev->id);
	cJSON_AddNumberToObject(o, "time_ms", (double)ev->time_ms);
	cJSON_AddNumberToObject(o, "cell", ev->cell);
	cJSON_AddStringToObject(o, "method", ev->method);
	cJSON_AddStringToObject(o, "host", ev->host);
	cJSON_AddNumberToObject(o, "port", ev->port);
	cJSON_AddStringToObject(o, "addr", ev->addr);
	cJSON_AddStringToObject(o, "code", ev->code);
	cJSON_AddStringToObject(o, "reason", ev->reason);
	cJSON_AddNumberToObject(o, "up", (double)ev->up);
	cJSON_AddNumberToObject(o, "down", (double)ev->down);
	return o;
}

static void
ledger_write(struct kernel_net *n, const struct egress_event *ev)
{
	cJSON *o;
	char *s;

	if (n->ledger < 0)
		return;
	o = kernel_net_event_json(ev);
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (s != NULL) {
		size_t len = strlen(s);
		s[len] = '\n';	/* over the NUL: written with its length */
		(void)write_all(n->ledger, s, len + 1);
	}
	free(s);
}

/* "host:port" as a rule would spell it: the host alone for 80 and 443
 * (a rule without a port allows both), brackets around IPv6. */
static void
rule_for(const struct egress_event *ev, char *out, size_t len)
{
	int v6 = strchr(ev->host, ':') != NULL;

	if (ev->port == 80 || ev->port == 443 || ev->port == 0)
		snprintf(out, len, v6 ? "[%s]" : "%s", ev->host);
	else
		snprintf(out, len, v6 ? "[%s]:%u" : "%s:%u", ev->host, ev->port);
}

/* The note for an attempt that did not get through, or NULL. */
static char *
note_for(const struct egress_event *ev)
{
	char rule[300], where[300];
	const char *c = ev->code;

	if (ev->phase != EGRESS_EV_END)
		return NULL;
	if (*ev->host)
		snprintf(where, sizeof where, strchr(ev->host, ':') ? "[%s]:%u" : "%s:%u",
		    ev->host, ev->port);
	else
		snprintf(where, sizeof where, "?");
	rule_for(ev, rule, sizeof rule);
	if (strcmp(c, "cap") == 0)
		return xasprintf("terp: egress to %s %s: the session's cap on bytes "
		    "sent out (--egress-max) is reached\n", where,
		    ev->verdict == EGRESS_ALLOWED ? "cut" : "refused");
	if (ev->verdict == EGRESS_ALLOWED)
		return NULL;
	if (ev->verdict == EGRESS_FAILED)
		return xasprintf("terp: egress to %s failed: %s\n", where, ev->reason);
	if (strcmp(c, "not-allowed") == 0 || strcmp(c, "port") == 0 ||
	    strcmp(c, "ip-literal") == 0)
		return xasprintf("terp: egress to %s refused: %s; the user can allow "
		    "it with --allow-host %s (or /allow %s in the notebook)\n", where,
		    ev->reason, rule, rule);
	if (strcmp(c, "address") == 0)
		return xasprintf("terp: egress to %s refused: %s (private, loopback "
		    "and metadata addresses are reached only when that address is "
		    "allowed itself)\n", where, ev->reason);
	if (strcmp(c, "denied") == 0)
		return xasprintf("terp: egress to %s refused: denied in this session\n",
		    where);
	return xasprintf("terp: egress refused: %s\n", ev->reason);
}

static void
note(struct kernel_net *n, const struct egress_event *ev)
{
	char key[300];
	char *line;

	if (n->cb.note == NULL || (line = note_for(ev)) == NULL)
		return;
	snprintf(key, sizeof key, "%s %s %u", ev->code, ev->host, ev->port);
	for (int i = 0; i < n->nnotes && i < KERNEL_NET_NOTES; i++) {
		if (strcmp(n->said[i], key) == 0) {
			free(line);
			return;
		}
	}
	if (n->nnotes < KERNEL_NET_NOTES) {
		snprintf(n->said[n->nnotes], sizeof n->said[0], "%s", key);
		n->cb.note(n->arg, ev->cell, line);
	} else if (n->nnotes == KERNEL_NET_NOTES) {
		n->cb.note(n->arg, ev->cell, "terp: more egress attempts of this cell "
		    "were refused; they are not listed\n");
	}
	n->nnotes++;
	free(line);
}

static void
on_event(void *arg, const struct egress_event *ev)
{
	struct kernel_net *n = arg;

	ledger_write(n, ev);
	if (n->freeing)
		return;
	if (n->cb.event)
		n->cb.event(n->arg, ev->cell, ev);
	note(n, ev);
}

struct kernel_net *
kernel_net_new(struct loop *l, const char *const *allow, uint64_t max_up,
    uint64_t sent_before, const struct kernel_net_cbs *cb, void *arg, char **err)
{
	struct kernel_net *n = xcalloc(1, sizeof *n);
	struct egress_opts o = { 0 };
	struct egress_cbs ecb = { .event = on_event };
	const char *ledger = getenv("TERP_EGRESS_LEDGER");

	n->l = l;
	n->cb = *cb;
	n->arg = arg;
	n->dirfd = -1;
	n->ledger = -1;
	o.allow = allow;
	o.max_up = max_up;
	o.sent_before = sent_before;
	o.socket_uid = o.socket_gid = -1;
	n->e = egress_new(l, &o, &ecb, n, err);
	if (n->e == NULL) {
		free(n);
		return NULL;
	}
	if (ledger != NULL && *ledger == '/')
		n->ledger = open(ledger, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
	return n;
}

int
kernel_net_start(struct kernel_net *n, const char *dir, uid_t uid, char **err)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	mode_t old;
	int fd, rc;

	if (n->started)
		return 0;
	n->dirfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (n->dirfd < 0) {
		*err = xasprintf("egress: cannot open %s: %s", dir, strerror(errno));
		return -1;
	}
	/* Through the folder's fd: sun_path holds 108 bytes, the session's
	 * folder may be longer, and the path cannot be swapped under us. */
	snprintf(sun.sun_path, sizeof sun.sun_path, "/proc/self/fd/%d/" SOCK_NAME, n->dirfd);
	(void)unlinkat(n->dirfd, SOCK_NAME, 0);	/* a crashed run's */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		*err = xasprintf("egress: socket: %s", strerror(errno));
		return -1;
	}
	/* Born 0600 (bind has no mode argument); then the sandbox's uid. */
	old = umask(077);
	rc = bind(fd, (struct sockaddr *)&sun, sizeof sun);
	umask(old);
	if (rc < 0 || fchmodat(n->dirfd, SOCK_NAME, 0600, 0) < 0 ||
	    (uid != 0 && fchownat(n->dirfd, SOCK_NAME, uid, uid, AT_SYMLINK_NOFOLLOW) < 0)) {
		*err = xasprintf("egress: %s/%s: %s", dir, SOCK_NAME, strerror(errno));
		close(fd);
		(void)unlinkat(n->dirfd, SOCK_NAME, 0);
		return -1;
	}
	if (egress_listen_fd(n->e, fd, err) < 0) {
		(void)unlinkat(n->dirfd, SOCK_NAME, 0);
		return -1;
	}
	n->sock = xasprintf("%s/%s", dir, SOCK_NAME);
	n->started = 1;
	return 0;
}

const char *
kernel_net_socket(const struct kernel_net *n)
{
	return n->sock;
}

void
kernel_net_cell(struct kernel_net *n, int cell)
{
	n->cell = cell;
	n->nnotes = 0;
	egress_set_tag(n->e, cell);
}

int
kernel_net_allow(struct kernel_net *n, const char *spec, char **err)
{
	return egress_allow(n->e, spec, err);
}

int
kernel_net_deny(struct kernel_net *n, const char *spec, char **err)
{
	return egress_deny(n->e, spec, err);
}

void
kernel_net_free(struct kernel_net *n)
{
	if (n == NULL)
		return;
	n->freeing = 1;
	egress_free(n->e);
	if (n->started)
		(void)unlinkat(n->dirfd, SOCK_NAME, 0);
	if (n->dirfd >= 0)
		close(n->dirfd);
	if (n->ledger >= 0)
		close(n->ledger);
	free(n->sock);
	free(n);
}
