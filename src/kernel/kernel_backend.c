/* kernel_backend: the registry that matches a --sandbox spec to a
 * backend's table (kernel_backend.h), the local sandbox's included.
 * Parses --sandbox, finds a remote's token (from the environment or a
 * command; it is held here for the session's life and handed to the
 * backend, never shown, never journaled), and adapts each remote
 * backend's calls to struct kernel_ops. */
#include "terp/kernel_backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "terp/kernel_aca.h"
#include "terp/kernel_jupyter.h"
#include "terp/kernel_local.h"
#include "terp/kernel_ssh.h"
#include "terp/sanitize.h"
#include "terp/util.h"

#define TOKEN_MAX	(16u << 10)	/* a token command's output */
#define JUPYTER_TOKEN_ENV	"JUPYTER_TOKEN"
#define ACA_TOKEN_ENV		"TERP_ACA_TOKEN"

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

/* The output of sh -c cmd, first line, or NULL with *err. It runs
 * once, from kernel_new, which every frontend calls (through
 * session_new) before its loop runs and before the TUI takes the
 * screen: nothing is frozen while it runs, and the command (an `az`
 * or a secret store) may talk to the user's terminal. A Jupyter token
 * does not expire; a pool's does, so kernel_aca.c runs its command
 * itself, in a child the loop polls, and caches the token until it
 * expires. */
static char *
token_from_cmd(const char *cmd, char **err)
{
	FILE *fp = popen(cmd, "r");
	char *buf;
	size_t n;
	int st;

	if (fp == NULL) {
		*err = xasprintf("cannot run the token command: %s", strerror(errno));
		return NULL;
	}
	buf = xmalloc(TOKEN_MAX + 1);
	n = fread(buf, 1, TOKEN_MAX, fp);
	buf[n] = '\0';
	st = pclose(fp);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		explicit_bzero(buf, n);
		free(buf);
		if (st != -1 && WIFEXITED(st))
			*err = xasprintf("the token command (--sandbox-token-cmd) failed "
			    "with exit status %d (it is run with sh -c; its output is not "
			    "shown)", WEXITSTATUS(st));
		else
			*err = xstrdup("the token command (--sandbox-token-cmd) failed (it "
			    "is run with sh -c; its output is not shown)");
		return NULL;
	}
	buf[strcspn(buf, "\r\n")] = '\0';
	if (buf[0] == '\0') {
		free(buf);
		*err = xstrdup("the token command (--sandbox-token-cmd) printed no token");
		return NULL;
	}
	return buf;
}

int
kernel_backend_check(const struct kernel_opts *o, char **err)
{
	int kind = kernel_backend_kind(o->sandbox, err);

	if (kind < 0)
		return -1;
	if (kind == KERNEL_ACA) {
		struct aca_opts ao;
		aca_opts_default(&ao);
		ao.endpoint = o->sandbox + 4;
		ao.token_cmd = o->sandbox_token_cmd;
		ao.token_env = o->sandbox_token_env ? o->sandbox_token_env : ACA_TOKEN_ENV;
		if (ao.token_cmd == NULL && getenv(ao.token_env) == NULL) {
			*err = xasprintf("no token for the session pool: set %s, or "
			    "sandbox_token_cmd in the config (e.g. az account get-access-token "
			    "--resource <audience> --query accessToken -o tsv)", ao.token_env);
			return -1;
		}
		return aca_check_opts(&ao, err);
	}
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

/* ------------------------------------------------------------ jupyter */

static const struct kernel_ops failed_ops;

static void j_free(void *b) { jupyter_free(b); }
static int j_start(void *b, char **err) { return jupyter_start(b, err); }

static void j_stop(void *b, const char *r) { jupyter_stop(b, r); }
static int j_run(void *b, int n, const char *c, char **err) { return jupyter_run(b, n, c, err); }
static void j_interrupt(void *b) { jupyter_interrupt(b); }
static int j_reset(void *b, char **err) { return jupyter_reset(b, err); }
static int j_restart(void *b, char **err) { return jupyter_restart(b, err); }
static char *j_stage(void *b, const char *p, char **err) { return jupyter_stage(b, p, err); }
static enum kernel_state j_state(const void *b) { return jupyter_state(b); }
static int j_busy(const void *b) { return jupyter_busy(b); }

/* "FOLDER/KERNELID": the session folder without its "terp-" (what
 * jupyter_opts.session takes) and the kernel; neither has a '/'. */
static char *
j_session(const void *b)
{
	const char *dir = jupyter_session_dir(b), *id = jupyter_kernel_id(b);

	if (dir == NULL || id == NULL || strncmp(dir, "terp-", 5) != 0)
		return NULL;
	return xasprintf("%s/%s", dir + 5, id);
}

static const struct kernel_ops jupyter_ops = {
	.free = j_free, .start = j_start, .stop = j_stop, .run = j_run,
	.interrupt = j_interrupt, .reset = j_reset, .restart = j_restart,
	.stage = j_stage, .state = j_state, .busy = j_busy, .session = j_session,
};

#define JUPYTER_NOTE \
	"The Python session runs on a Jupyter server, not in /workspace: the working " \
	"directory is the session's folder there, data files are under data/ (the paths " \
	"above), and charts and other files go to out/ (e.g. plt.savefig('out/chart.png')): " \
	"files there that are new or changed after a cell are copied to the user's output " \
	"folder."

static void
jupyter_build(struct loop *l, const struct kernel_opts *o, struct kernel_backend *kb)
{
	struct jupyter_opts *jo = xcalloc(1, sizeof *jo);
	char *err = NULL;

	jupyter_opts_default(jo);
	jo->url = o->sandbox;		/* the "jupyter+" prefix is accepted */
	if (o->sandbox_token_cmd != NULL) {
		if ((kb->token = token_from_cmd(o->sandbox_token_cmd, &err)) == NULL) {
			/* every call says so, in one line, from start on */
			free(jo);
			kb->ops = &failed_ops;
			kb->b = err;
			return;
		}
	} else {
		const char *v = getenv(o->sandbox_token_env ? o->sandbox_token_env :
		    JUPYTER_TOKEN_ENV);
		kb->token = v ? xstrdup(v) : NULL;
	}
	jo->token = kb->token;
	jo->kernel_name = o->jupyter_kernel;
	if (o->sandbox_session != NULL) {
		/* a resumed session: its folder and kernel (j_session's form;
		 * jupyter_start checks both) */
		const char *ss = o->sandbox_session, *slash = strchr(ss, '/');
		size_t nf = slash ? (size_t)(slash - ss) : 0;
		/* a malformed one (a damaged journal) is a new kernel */
		if (slash != NULL && nf > 0 && nf <= 64 && strspn(ss, "abcdefghijklmnopq"
		    "rstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == nf &&
		    slash[1] != '\0' && strlen(slash + 1) <= 128 &&
		    strspn(slash + 1, "0123456789abcdefABCDEF-") == strlen(slash + 1)) {
			kb->jsession = xstrndup(o->sandbox_session,
			    (size_t)(slash - o->sandbox_session));
			kb->jkernel = xstrdup(slash + 1);
			jo->session = kb->jsession;
			jo->kernel_id = kb->jkernel;
		}
	}
	jo->out_dir = o->out_dir;
	jo->data_files = o->data_files;
	jo->ndata = o->ndata;
	jo->timeout_ms = o->timeout_ms;
	if (o->grace_ms > 0)
		jo->grace_ms = o->grace_ms;
	jo->artifact_max = o->artifact_max;
	jo->artifacts_per_cell = o->artifacts_per_cell;
	jo->artifacts_per_session = o->artifacts_per_session;
	jo->artifact_bytes = o->artifact_bytes;
	kb->ops = &jupyter_ops;
	kb->b = jupyter_new(l, jo, &kb->inner, kb);
	kb->isolation = jupyter_isolation(kb->b);
	kb->note = JUPYTER_NOTE;
	kb->files_note = "files in the session's folder on the server are kept";
	kb->opts = jo;
}

/* ------------------------------------------------------------ aca */

static void a_free(void *b) { aca_free(b); }
static int a_start(void *b, char **err) { return aca_start(b, err); }
static void a_stop(void *b, const char *r) { aca_stop(b, r); }
static int a_run(void *b, int n, const char *c, char **err) { return aca_run(b, n, c, err); }
static void a_interrupt(void *b) { aca_interrupt(b); }
static int
a_reset(void *b, char **err)
{
	(void)b;
	*err = xstrdup("a session pool has no reset: restart gives a fresh session");
	return -1;
}
static int a_restart(void *b, char **err) { return aca_restart(b, err); }
static char *a_stage(void *b, const char *p, char **err) { return aca_stage(b, p, err); }
static enum kernel_state a_state(const void *b) { return aca_state(b); }
static int a_busy(const void *b) { return aca_busy(b); }

static char *
a_session(const void *b)
{
	const char *id = aca_identifier(b);

	return id != NULL && *id != '\0' ? xstrdup(id) : NULL;
}

static const struct kernel_ops aca_ops = {
	.free = a_free, .start = a_start, .stop = a_stop, .run = a_run,
	.interrupt = a_interrupt, .reset = a_reset, .restart = a_restart,
	.stage = a_stage, .state = a_state, .busy = a_busy, .session = a_session,
};

#define ACA_ISOLATION \
	"The code runs in the session pool's sandbox (a Hyper-V isolated container " \
	"per session, managed by Azure); terp's local sandbox does not apply there."

static void
aca_build(struct loop *l, const struct kernel_opts *o, struct kernel_backend *kb)
{
	struct aca_opts *ao = xcalloc(1, sizeof *ao);

	aca_opts_default(ao);
	ao->endpoint = o->sandbox + 4;
	ao->token_cmd = o->sandbox_token_cmd;
	ao->token_env = o->sandbox_token_env ? o->sandbox_token_env : ACA_TOKEN_ENV;
	ao->identifier = o->sandbox_session;
	ao->out_dir = o->out_dir;
	ao->data_files = o->data_files;
	ao->ndata = o->ndata;
	if (o->timeout_ms > 0 && o->timeout_ms < ao->timeout_ms)
		ao->timeout_ms = o->timeout_ms;
	ao->artifact_max = o->artifact_max;
	ao->artifacts_per_cell = o->artifacts_per_cell;
	ao->artifacts_per_session = o->artifacts_per_session;
	ao->artifact_bytes = o->artifact_bytes;
	kb->ops = &aca_ops;
	kb->b = aca_new(l, ao, &kb->inner, kb);
	kb->isolation = ACA_ISOLATION;
	kb->note = aca_note();
	kb->opts = ao;
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
	case KERNEL_JUPYTER: jupyter_build(l, o, kb); break;
	case KERNEL_ACA: aca_build(l, o, kb); break;
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
