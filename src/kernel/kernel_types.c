/* kernel_types: the defaults and names every backend shares
 * (kernel_types.h). */
#include "terp/kernel_types.h"

#include <string.h>

#include "terp/workspace.h"

void
kernel_opts_default(struct kernel_opts *o)
{
	memset(o, 0, sizeof *o);
	o->python = "/usr/bin/python3";
	o->out_dir = "out";
	o->memory = 4ULL << 30;
	o->timeout_ms = 120000;
	o->grace_ms = 3000;
	o->nproc = 256;
	o->fsize = 1ULL << 30;
	o->nofile = 1024;
	o->artifact_max = 64ULL << 20;
	o->artifacts_per_cell = 64;
	o->artifacts_per_session = 1000;
	o->artifact_bytes = 1ULL << 30;
	o->disk = 4ULL << 30;
}

const char *
kernel_state_name(enum kernel_state s)
{
	switch (s) {
	case KERNEL_STOPPED: return "stopped";
	case KERNEL_STARTING: return "starting";
	case KERNEL_LOADING: return "loading libraries";
	case KERNEL_READY: return "ready";
	case KERNEL_BUSY: return "running";
	case KERNEL_DEAD: return "dead";
	}
	return "unknown";
}

/* Here, below the dispatcher, so that a backend (ssh) checks a data
 * file without calling up into kernel.c. */
int
kernel_check_data(const char *path, char **err)
{
	return workspace_check_data(path, err);
}
