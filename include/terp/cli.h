/* cli: the parsed command line, shared by main and the frontends that
 * run a whole session (exec, headless). */
#ifndef TERP_CLI_H
#define TERP_CLI_H

#include "terp/agent.h"
#include "terp/kernel.h"
#include "terp/llm.h"

enum cli_mode { CLI_TUI, CLI_PROMPT, CLI_EXEC };

struct cli {
	enum cli_mode		 mode;
	const char		*prompt;	/* -p */
	const char		**cells;	/* exec -c, in order */
	int			 ncells;
	int			 stop_on_error;
	int			 json;
	const char		*theme;
	struct kernel_opts	 kopts;
	struct agent_opts	 aopts;
	struct llm_config	 llm;
	char			*session_id;
	char			*session_dir;
};

/* Runs `terp exec`: cells in order in one session. Returns the exit
 * status (0 ok, 1 raised, 3 timeout/interrupted, 4 crashed or no
 * sandbox). */
int exec_run(struct cli *c);
/* Runs `terp -p`: one question, headless. Returns 0 answered, 1 failed,
 * 5 turn cap, 130 interrupted. */
int headless_run(struct cli *c);

#endif
