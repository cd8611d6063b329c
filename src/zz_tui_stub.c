/* zz_tui_stub: weak stand-ins for the core functions the TUI calls, so
 * the tree links before the lead's agent.c and llm.c land on this
 * branch; the real (strong) definitions replace them. Remove this file
 * once they are merged. */
#include "terp/agent.h"
#include "terp/kernel.h"
#include "terp/llm.h"
#include "terp/util.h"

#define WEAK __attribute__((weak))

static int
stub_err(char **err)
{
	if (err)
		*err = xstrdup("not built in yet");
	return -1;
}

WEAK int agent_ask(struct agent *a, const char *q, char **err) { (void)a; (void)q; return stub_err(err); }
WEAK int agent_run_cell(struct agent *a, const char *c, char **err) { (void)a; (void)c; return stub_err(err); }
WEAK int agent_rerun(struct agent *a, int n, char **err) { (void)a; (void)n; return stub_err(err); }
WEAK void agent_cancel(struct agent *a) { (void)a; }
WEAK int agent_busy(const struct agent *a) { (void)a; return 0; }
WEAK int agent_reset(struct agent *a, char **err) { (void)a; return stub_err(err); }
WEAK int agent_restart(struct agent *a, char **err) { (void)a; return stub_err(err); }
WEAK char *agent_load(struct agent *a, const char *p, char **err) { (void)a; (void)p; stub_err(err); return NULL; }
WEAK int agent_set_model(struct agent *a, const char *m, char **err) { (void)a; (void)m; return stub_err(err); }
WEAK struct notebook *agent_notebook(const struct agent *a) { (void)a; return NULL; }
WEAK struct llm *agent_llm(const struct agent *a) { (void)a; return NULL; }
WEAK const char *llm_model(const struct llm *m) { (void)m; return NULL; }
WEAK const char *llm_provider(const struct llm *m) { (void)m; return NULL; }
WEAK char *kernel_data_path(const char *h) { return xstrdup(h); }
