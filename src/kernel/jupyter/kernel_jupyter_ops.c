/* kernel_jupyter_ops: the Jupyter backend's table and builder (see
 * kernel_jupyter_ops.h). The token is held in kb for the session's
 * life and handed to the backend, never shown, never journaled. */
#include "terp/kernel_jupyter_ops.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/kernel_jupyter.h"
#include "terp/secret.h"
#include "terp/util.h"

#define TOKEN_MAX	(16u << 10)	/* a token command's output */
#define JUPYTER_TOKEN_ENV	"JUPYTER_TOKEN"

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
	char *tok;
	int code;

	switch (secret_from_cmd(cmd, TOKEN_MAX, 0, &tok, &code)) {
	case SECRET_OK:
		return tok;
	case SECRET_NO_RUN:
		*err = xasprintf("cannot run the token command: %s", strerror(errno));
		break;
	case SECRET_FAILED:
		if (code >= 0)
			*err = xasprintf("the token command (--sandbox-token-cmd) failed "
			    "with exit status %d (it is run with sh -c; its output is not "
			    "shown)", code);
		else
			*err = xstrdup("the token command (--sandbox-token-cmd) failed (it "
			    "is run with sh -c; its output is not shown)");
		break;
	case SECRET_EMPTY:
		*err = xstrdup("the token command (--sandbox-token-cmd) printed no token");
		break;
	}
	return NULL;
}


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

int
kernel_jupyter_build(struct loop *l, const struct kernel_opts *o,
    const struct kernel_cbs *cbs, void *arg, struct kernel_backend *kb, char **err)
{
	struct jupyter_opts *jo = xcalloc(1, sizeof *jo);

	jupyter_opts_default(jo);
	jo->url = o->sandbox;		/* the "jupyter+" prefix is accepted */
	if (o->sandbox_token_cmd != NULL) {
		if ((kb->token = token_from_cmd(o->sandbox_token_cmd, err)) == NULL) {
			free(jo);
			return -1;
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
	kb->b = jupyter_new(l, jo, cbs, arg);
	kb->isolation = jupyter_isolation(kb->b);
	kb->note = JUPYTER_NOTE;
	kb->files_note = "files in the session's folder on the server are kept";
	kb->opts = jo;
	return 0;
}
