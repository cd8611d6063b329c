/* kernel: the dispatcher (kernel.h). One struct kernel_backend, built by
 * the registry (kernel_backend.c) for whatever --sandbox names, the
 * local sandbox included; every call is its table's. Nothing here knows
 * how a backend runs a cell: a new backend is a new table. */
#include "terp/kernel.h"

#include <stdlib.h>

#include "terp/egress.h"
#include "terp/kernel_backend.h"
#include "terp/kernel_local.h"
#include "terp/util.h"

struct kernel {
	struct kernel_backend	 kb;
};

struct kernel *
kernel_new(struct loop *l, const struct kernel_opts *o, const struct kernel_cbs *cb,
    void *arg)
{
	struct kernel *k = xcalloc(1, sizeof *k);

	kernel_backend_new(l, o, cb, arg, &k->kb);
	return k;
}

void
kernel_free(struct kernel *k)
{
	if (k == NULL)
		return;
	kernel_backend_free(&k->kb);
	free(k);
}

int
kernel_probe(const struct kernel_opts *o, char **err)
{
	if (o->sandbox != NULL && kernel_backend_check(o, err) < 0)
		return -1;
	if (kernel_opts_remote(o))
		return 0;
	return klocal_probe(o, err);
}

int
kernel_opts_remote(const struct kernel_opts *o)
{
	char *err = NULL;
	int kind = kernel_backend_kind(o->sandbox, &err);

	free(err);
	return kind != KERNEL_LOCAL;
}

int
kernel_start(struct kernel *k, char **err)
{
	return kernel_backend_start(&k->kb, err);
}

void
kernel_stop(struct kernel *k, const char *reason)
{
	k->kb.ops->stop(k->kb.b, reason);
}

int
kernel_run(struct kernel *k, int n, const char *code, char **err)
{
	return k->kb.ops->run(k->kb.b, n, code, err);
}

void
kernel_set_input(struct kernel *k, int allow)
{
	if (k->kb.ops->set_input != NULL)
		k->kb.ops->set_input(k->kb.b, allow);
}

void
kernel_set_width(struct kernel *k, int cols)
{
	if (k->kb.ops->set_width != NULL)
		k->kb.ops->set_width(k->kb.b, cols);
}

int
kernel_input_reply(struct kernel *k, int cell, const char *line)
{
	return k->kb.ops->input_reply ? k->kb.ops->input_reply(k->kb.b, cell, line) : -1;
}

void
kernel_interrupt(struct kernel *k)
{
	k->kb.ops->interrupt(k->kb.b);
}

int
kernel_reset(struct kernel *k, char **err)
{
	return k->kb.ops->reset(k->kb.b, err);
}

int
kernel_restart(struct kernel *k, char **err)
{
	return k->kb.ops->restart(k->kb.b, err);
}

char *
kernel_stage(struct kernel *k, const char *host_path, char **err)
{
	return k->kb.ops->stage(k->kb.b, host_path, err);
}

enum kernel_state
kernel_state(const struct kernel *k)
{
	return k->kb.ops->state(k->kb.b);
}

int
kernel_busy(const struct kernel *k)
{
	return k->kb.ops->busy(k->kb.b);
}

const char *
kernel_python_info(const struct kernel *k)
{
	return k->kb.ops->python_info ? k->kb.ops->python_info(k->kb.b) : NULL;
}

int
kernel_python_charts(const struct kernel *k)
{
	return k->kb.ops->python_charts ? k->kb.ops->python_charts(k->kb.b) : -1;
}

char *
kernel_python_label(const struct kernel *k)
{
	return k->kb.ops->python_label ? k->kb.ops->python_label(k->kb.b) : NULL;
}

int
kernel_egress_allow(struct kernel *k, const char *spec, char **err)
{
	if (k->kb.ops->egress_allow == NULL) {
		*err = xasprintf("egress rules are for the local sandbox; the session on "
		    "%s reaches what that machine allows", k->kb.where);
		return -1;
	}
	return k->kb.ops->egress_allow(k->kb.b, spec, err);
}

int
kernel_egress_deny(struct kernel *k, const char *spec, char **err)
{
	if (k->kb.ops->egress_deny == NULL)	/* nothing of ours gets out there */
		return egress_rule_check(spec, err) < 0 ? -1 : 0;
	return k->kb.ops->egress_deny(k->kb.b, spec, err);
}

const char *
kernel_where(const struct kernel *k)
{
	return k->kb.where;
}

const char *
kernel_remote_session(struct kernel *k)
{
	return kernel_backend_session(&k->kb);
}

const char *
kernel_isolation(const struct kernel *k)
{
	return k->kb.isolation;
}

const char *
kernel_files_note(const struct kernel *k)
{
	return k->kb.files_note;
}

const char *
kernel_prompt_note(const struct kernel *k)
{
	return k->kb.note;
}
