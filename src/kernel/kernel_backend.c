/* kernel_backend: the registry that matches a --sandbox spec to a
 * backend's table (kernel_backend.h), the local sandbox's included.
 * Parses --sandbox, names each backend's builder and nothing else of it
 * (each backend folder fills its own table: local/, ssh/, jupyter/
 * kernel_jupyter_ops.c, aca/kernel_aca_ops.c), and passes a remote's
 * state reports on from the loop. */
#include "terp/kernel_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/kernel_aca_ops.h"
#include "terp/kernel_jupyter_ops.h"
#include "terp/kernel_local.h"
#include "terp/kernel_ssh.h"
#include "terp/sanitize.h"
#include "terp/util.h"

#define FORMS "--sandbox takes local, ssh://[user@]host[:port], " \
	"jupyter+http[s]://host[:port][/base] or aca:<pool management endpoint>"

int
kernel_backend_kind(const char *spec, char **err)
{
	if (spec == NULL || *spec == '\0' || strcmp(spec, "local") == 0)
		return KERNEL_LOCAL;
	if (strncmp(spec, "ssh://", 6) == 0 && spec[6] != '\0' && spec[6] != '/')
		return KERNEL_SSH;
	if ((strncmp(spec, "jupyter+http://", 15) == 0 && spec[15] != '\0') ||
	    (strncmp(spec, "jupyter+https://", 16) == 0 && spec[16] != '\0'))
		return KERNEL_JUPYTER;
	if (strncmp(spec, "aca:", 4) == 0 && spec[4] != '\0')
		return KERNEL_ACA;
	{
		char *s = sanitize_str(spec, strnlen(spec, 200), 0);
		*err = xasprintf("unknown sandbox %s: " FORMS, s);
		free(s);
	}
	return -1;
}

/* The remote's name for a status line: the spec without its scheme,
 * path, query or user, cut to 80 bytes and cleaned. */
static char *
where_of(int kind, const char *spec)
{
	const char *p = spec, *end;
	char *host, *clean, *w;

	if ((p = strstr(spec, "://")) != NULL)
		p += 3;
	else
		p = spec + 4;		/* aca: */
	if (kind == KERNEL_ACA) {
		/* The pool's name is the last part of its endpoint. */
		const char *q = strstr(p, "://");
		const char *name;
		size_t n;
		q = q ? q + 3 : p;
		n = strcspn(q, "?#");
		while (n > 0 && q[n - 1] == '/')
			n--;
		name = q + n;
		while (name > q && name[-1] != '/')
			name--;
		clean = sanitize_str(name, (size_t)(q + n - name) > 80 ? 80 :
		    (size_t)(q + n - name), 0);
		w = xasprintf("aca pool %s", *clean ? clean : "?");
		free(clean);
		return w;
	}
	{	/* never a user name or password (user:pw@host) */
		const char *at = strchr(p, '@');
		if (at != NULL && at < p + strcspn(p, "/?#"))
			p = at + 1;
	}
	end = p + strcspn(p, "/?#");
	host = xstrndup(p, (size_t)(end - p) > 80 ? 80 : (size_t)(end - p));
	clean = sanitize_str(host, strlen(host), 0);
	w = xasprintf("%s %s", kind == KERNEL_SSH ? "ssh" : "jupyter", clean);
	free(host);
	free(clean);
	return w;
}

int
kernel_backend_check(const struct kernel_opts *o, char **err)
{
	int kind = kernel_backend_kind(o->sandbox, err);

	if (kind < 0)
		return -1;
	if (kind == KERNEL_ACA)
		return kernel_aca_check(o, err);
	if (kind == KERNEL_SSH)
		return kernel_ssh_check(o->sandbox, err);
	return 0;
}

/* ------------------------------------------------------------ callbacks */

static void
on_deferred(struct loop *l, void *arg)
{
	struct kernel_backend *kb = arg;
	int n = kb->ndeferred;

	(void)l;
	kb->defer_timer = 0;
	kb->ndeferred = 0;
	for (int i = 0; i < n; i++) {
		struct kernel_status ks = { .state = kb->deferred[i].st,
		    .msg = kb->deferred[i].msg ? kb->deferred[i].msg : "",
		    .restarted = kb->deferred[i].restarted,
		    .state_lost = kb->deferred[i].state_lost };
		kb->outer.state(kb->outer_arg, &ks);
		free(kb->deferred[i].msg);
	}
}

static void
cb_state(void *arg, const struct kernel_status *ks)
{
	enum kernel_state st = ks->state;

	struct kernel_backend *kb = arg;

	/* Only a death inside start waits for the loop (a frontend that
	 * stops the loop on it must do so from inside the loop); the other
	 * states pass at once, as the local kernel's do (a "restarted" told
	 * during start reaches the model with the question that caused it). */
	if ((!kb->in_start || st != KERNEL_DEAD) && kb->ndeferred == 0) {
		kb->outer.state(kb->outer_arg, ks);
		return;
	}
	if (kb->ndeferred == (int)(sizeof kb->deferred / sizeof kb->deferred[0])) {
		/* keep the latest: the first ones were steps on the way */
		free(kb->deferred[1].msg);
		memmove(&kb->deferred[1], &kb->deferred[2],
		    (size_t)(kb->ndeferred - 2) * sizeof kb->deferred[0]);
		kb->ndeferred--;
	}
	kb->deferred[kb->ndeferred].st = st;
	kb->deferred[kb->ndeferred].msg = ks->msg ? xstrdup(ks->msg) : NULL;
	kb->deferred[kb->ndeferred].restarted = ks->restarted;
	kb->deferred[kb->ndeferred].state_lost = ks->state_lost;
	kb->ndeferred++;
	if (kb->defer_timer == 0)
		kb->defer_timer = loop_timer_add(kb->loop, 0, on_deferred, kb);
}

static void
cb_output(void *arg, int cell, int stream, const char *p, size_t n)
{
	struct kernel_backend *kb = arg;
	kb->outer.output(kb->outer_arg, cell, stream, p, n);
}

static void
cb_result(void *arg, int cell, const struct kernel_result *r)
{
	struct kernel_backend *kb = arg;
	kb->outer.result(kb->outer_arg, cell, r);
}

static void
cb_artifact(void *arg, int cell, const char *name, const char *host_path, uint64_t bytes)
{
	struct kernel_backend *kb = arg;
	kb->outer.artifact(kb->outer_arg, cell, name, host_path, bytes);
}

static void
cb_installed(void *arg, int cell, const char *name, const char *version)
{
	struct kernel_backend *kb = arg;
	if (kb->outer.installed)
		kb->outer.installed(kb->outer_arg, cell, name, version);
}

/* ------------------------------------------------------------ failed */

/* A backend that could not be built: every call says why (b is the
 * reason, owned here). */
static void f_free(void *b) { free(b); }
static int f_start(void *b, char **err) { *err = xstrdup(b); return -1; }
static void f_stop(void *b, const char *r) { (void)b; (void)r; }
static int f_run(void *b, int n, const char *c, char **err) { (void)n; (void)c; return f_start(b, err); }
static void f_interrupt(void *b) { (void)b; }
static char *f_stage(void *b, const char *p, char **err) { (void)p; f_start(b, err); return NULL; }
static enum kernel_state f_state(const void *b) { (void)b; return KERNEL_DEAD; }
static int f_busy(const void *b) { (void)b; return 0; }

static const struct kernel_ops failed_ops = {
	.free = f_free, .start = f_start, .stop = f_stop, .run = f_run,
	.interrupt = f_interrupt, .reset = f_start, .restart = f_start,
	.stage = f_stage, .state = f_state, .busy = f_busy, .session = NULL,
};

/* ------------------------------------------------------------ public */

void
kernel_backend_new(struct loop *l, const struct kernel_opts *o,
    const struct kernel_cbs *cbs, void *arg, struct kernel_backend *kb)
{
	char *err = NULL;
	int kind = kernel_backend_kind(o->sandbox, &err);

	memset(kb, 0, sizeof *kb);
	if (kind < 0) {
		kb->where = xstrdup("nowhere");
		kb->ops = &failed_ops;
		kb->b = err;
		return;
	}
	if (kind == KERNEL_LOCAL) {
		/* its callbacks come from the loop already: no deferral */
		kb->where = xstrdup(KERNEL_WHERE_LOCAL);
		kb->files_note = "files under /workspace are kept";
		kb->ops = &kernel_local_ops;
		kb->b = klocal_new(l, o, cbs, arg);
		return;
	}
	kb->where = where_of(kind, o->sandbox);
	kb->loop = l;
	kb->outer = *cbs;
	kb->outer_arg = arg;
	kb->inner.output = cb_output;
	kb->inner.result = cb_result;
	kb->inner.artifact = cb_artifact;
	kb->inner.state = cb_state;
	kb->inner.installed = cb_installed;
	switch (kind) {
	case KERNEL_JUPYTER:
		if (kernel_jupyter_build(l, o, &kb->inner, kb, kb, &err) < 0) {
			/* every call says so, in one line, from start on */
			kb->ops = &failed_ops;
			kb->b = err;
		}
		break;
	case KERNEL_ACA: kernel_aca_build(l, o, &kb->inner, kb, kb); break;
	default: kernel_ssh_build(l, o, &kb->inner, kb, kb); break;
	}
}

int
kernel_backend_start(struct kernel_backend *kb, char **err)
{
	int rc;

	kb->in_start = 1;
	rc = kb->ops->start(kb->b, err);
	kb->in_start = 0;
	return rc;
}

const char *
kernel_backend_session(struct kernel_backend *kb)
{
	char *s;

	if (kb->ops == NULL || kb->ops->session == NULL)
		return NULL;
	s = kb->ops->session(kb->b);
	if (s == NULL)
		return kb->session;	/* between two kernels: the last one */
	if (kb->session != NULL) {
		explicit_bzero(kb->session, strlen(kb->session));
		free(kb->session);
	}
	kb->session = s;
	return s;
}

void
kernel_backend_free(struct kernel_backend *kb)
{
	if (kb->ops != NULL)
		kb->ops->free(kb->b);
	if (kb->defer_timer != 0)
		loop_timer_cancel(kb->loop, kb->defer_timer);
	for (int i = 0; i < kb->ndeferred; i++)
		free(kb->deferred[i].msg);
	free(kb->where);
	free(kb->opts);
	free(kb->jsession);
	free(kb->jkernel);
	if (kb->session != NULL) {
		explicit_bzero(kb->session, strlen(kb->session));
		free(kb->session);
	}
	if (kb->token != NULL) {
		explicit_bzero(kb->token, strlen(kb->token));
		free(kb->token);
	}
	memset(kb, 0, sizeof *kb);
}
