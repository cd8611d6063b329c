/* cli: the parsed command line, shared by main and the frontends that
 * run a whole session (exec, headless). */
#ifndef TERP_CLI_H
#define TERP_CLI_H

#include "terp/agent.h"
#include "terp/kernel.h"
#include "terp/llm.h"
#include "terp/loop.h"
#include "terp/printer.h"
#include "terp/resume.h"

enum cli_mode { CLI_TUI, CLI_PROMPT, CLI_EXEC, CLI_SERVE };

struct cli {
	enum cli_mode		 mode;
	const char		**prompts;	/* -p, asked in order in one session */
	int			 nprompts;
	const char		**cells;	/* exec -c, in order */
	int			 ncells;
	int			 stop_on_error;
	int			 json;
	int			 strict_numbers;	/* --strict-numbers */
	int			 no_input;	/* --no-input: the model's cells may not ask */
	/* --ask or ask = on: each model cell waits for the user (the
	 * notebook); ask_flag: it came as --ask, which -p refuses */
	int			 ask, ask_flag;
	const char		**data_files;	/* as given, in order */
	int			 ndata;
	const char		*theme;
	const char		*images;	/* --images / images =: tui_gfx_parse */
	int			 background;	/* config background: 0 auto,
						 * 1 dark, 2 light (tui_opts) */
	struct kernel_opts	 kopts;
	struct agent_opts	 aopts;
	struct llm_config	 llm;
	char			*session_id;
	char			*session_dir;
	char			*sessions_dir;	/* $XDG_STATE_HOME/terp/sessions */

	/* session management (cli_sessions.c) */
	int			 list;		/* --list; 2: --list --ids */
	const char		*delete_id;	/* --delete ID */
	const char		*export_id;	/* --export ID FILE */
	const char		*export_file;
	int			 resume;	/* --resume [ID] */
	const char		*resume_id;	/* NULL: the latest */
	int			 replay;	/* --replay */
	int			 no_save;	/* --no-save: remove it at the end */
	int64_t			 idle_ms;	/* --idle-timeout (30 min; 0 off) */
	int64_t			 max_ms;	/* --max-session (0: none) */
	struct resume		 res;		/* the resumed session, when resume */
	/* Lines the notebook shows as notices when it starts (what -p and
	 * exec print on stderr before the session: the pip index offered),
	 * newline-separated, or NULL. */
	char			*startup_notes;
};

/* Runs `terp exec`: cells in order in one session. Returns the exit
 * status (0 ok, 1 raised, 3 timeout/interrupted, 4 crashed or no
 * sandbox). */
int exec_run(struct cli *c);
/* --list, --delete ID, --export ID FILE: print to stdout or say why
 * not on stderr. Return the exit status (0, or 1 on failure). */
int cli_sessions_list(struct cli *c);
int cli_sessions_delete(struct cli *c);
int cli_sessions_export(struct cli *c);
/* --resume: loads the session into c->res, prints its warnings, and
 * makes the session id and folder those of the resumed session (its
 * data files are in the notebook; the session adds those given on the
 * command line). Returns 0, or -1 after printing why. */
int cli_sessions_resume(struct cli *c);
/* After a frontend's run: removes the session's folder when the run
 * did nothing (resume_meta_empty; never a resumed session) or when
 * --no-save asked for it (a failure to remove is a warning on stderr).
 * Returns 1 when the session is kept (it can be resumed), else 0. */
int cli_sessions_end(struct cli *c);
/* The session options of c for a frontend's session_new: the
 * session, its options, the model (not for exec) and the signals (not
 * for the TUI); the frontend adds its script and its sink. */
struct session_opts;
void cli_sessions_opts(struct cli *c, struct session_opts *o);

/* `terp -p --strict-numbers`: an answer had a number no cell printed. */
#define HEADLESS_UNTRACED	6

/* Runs `terp -p`: one question, headless. Returns 0 answered, 1 failed,
 * 5 turn cap, 6 an untraced number with --strict-numbers, 7 --max-cost
 * stopped a question (COST_EXIT), 130
 * interrupted. */
int headless_run(struct cli *c);

/* Shared by the headless frontends (frontend.c). */
/* The event writer: JSON lines, or text in the given mode, on stdout and
 * stderr. Sets *fn and *arg; the caller free()s *arg. */
void frontend_sink(int json, enum printer_mode mode, event_fn *fn, void **arg);
/* Makes frontend_sink's JSON writer batch its lines; returns its flush
 * for session_opts.show_flush, or NULL (text: shown at once). */
void (*frontend_batch(int json, void *arg))(void *);

#endif
