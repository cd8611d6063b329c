/* kernel_aca_ops: the session pool backend's table, builder and check
 * (see kernel_aca_ops.h). The pool's token is kernel_aca.c's to fetch
 * and refresh; only where to find it is set here. */
#include "terp/kernel_aca_ops.h"

#include <stdlib.h>
#include <string.h>

#include "terp/kernel_aca.h"
#include "terp/util.h"

#define ACA_TOKEN_ENV		"TERP_ACA_TOKEN"

int
kernel_aca_check(const struct kernel_opts *o, char **err)
{
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

void
kernel_aca_build(struct loop *l, const struct kernel_opts *o,
    const struct kernel_cbs *cbs, void *arg, struct kernel_backend *kb)
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
	kb->b = aca_new(l, ao, cbs, arg);
	kb->isolation = ACA_ISOLATION;
	kb->note = aca_note();
	kb->opts = ao;
}
