/* The session runner with the real loop, agent and kernel (Python run
 * without the sandbox, so these need no bwrap): --idle-timeout stops
 * the sandbox and the next question or cell starts a new one, telling
 * the user and the model; --max-session ends a long cell; a journal
 * that cannot be created is a warning, not a failure. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/agent.h"
#include "terp/buf.h"
#include "terp/journal.h"
#include "terp/kernel.h"
#include "terp/llm.h"
#include "terp/loop.h"
#include "terp/notebook.h"
#include "terp/session.h"
#include "terp/util.h"

enum after_stop { ASK, RUN_CELL, NOTHING };

struct t {
	char		 dir[64];
	char		*sessions, *sdir, *out, *script;
	struct loop	*loop;
	struct notebook	*nb;
	struct kernel_opts kopts;
	struct llm_config cfg;
	struct agent	*agent;
	struct session	*session;
	struct buf	 log;		/* "type: text" per event */
	enum after_stop	 after;
	int		 started, stops, errors, timed_out;
	enum error_kind	 error_kind;
	int		 ran_second;
};

static void
on_event(void *arg, const struct event *ev)
{
	struct t *t = arg;
	char *err = NULL;

	if (ev->type == EV_KERNEL || ev->type == EV_NOTICE || ev->type == EV_ERROR)
		buf_printf(&t->log, "%d/%d: %s\n", ev->type, (int)ev->kstate,
		    ev->text ? ev->text : "");
	else if (ev->type == EV_CELL_START || ev->type == EV_RESULT)
		buf_printf(&t->log, "%s [%d]\n", ev->type == EV_CELL_START ?
		    "cell" : "result", ev->cell->n);
	switch (ev->type) {
	case EV_KERNEL:
		if ((ev->kstate == KERNEL_LOADING || ev->kstate == KERNEL_READY) &&
		    !t->started) {
			t->started = 1;
			cr_assert_gt(agent_run_cell(t->agent, "x = 41", &err), 0);
		} else if (ev->kstate == KERNEL_STOPPED) {
			t->stops++;
			if (t->after == ASK) {
				cr_assert_eq(agent_ask(t->agent, "q", &err), 0, "%s", err);
			} else if (t->after == RUN_CELL) {
				t->ran_second = 1;
				cr_assert_gt(agent_run_cell(t->agent, "print(x + 1)", &err), 0);
			}
		}
		break;
	case EV_ANSWER:
		loop_stop(t->loop);
		break;
	case EV_ERROR:
		t->errors++;
		t->error_kind = ev->error;
		break;
	case EV_IDLE:
		if (t->ran_second && !agent_busy(t->agent))
			loop_stop(t->loop);
		break;
	default:
		break;
	}
}

static void
on_deadline(struct loop *l, void *arg)
{
	struct t *t = arg;

	t->timed_out = 1;
	loop_stop(l);
}

static void
t_setup(struct t *t, enum after_stop after, int64_t idle_ms, int64_t max_ms,
    const char *sessions_dir)
{
	struct session_opts so;
	char *warn = NULL, *err = NULL;
	FILE *fp;

	memset(t, 0, sizeof *t);
	setenv("TERP_NO_PRELOAD", "1", 1);
	strcpy(t->dir, "/tmp/terp-session-XXXXXX");
	cr_assert_not_null(mkdtemp(t->dir));
	t->sessions = sessions_dir ? xstrdup(sessions_dir) : xasprintf("%s/sessions", t->dir);
	t->sdir = xasprintf("%s/sessions/t1", t->dir);
	t->out = xasprintf("%s/out", t->dir);
	t->script = xasprintf("%s/demo.json", t->dir);
	fp = fopen(t->script, "w");
	cr_assert_not_null(fp);
	fputs("{\"delay_ms\": 1, \"chunk\": 64, \"questions\": [{\"question\": \"q\", "
	    "\"keywords\": [\"q\"], \"replies\": [{\"text\": \"ok\"}]}]}", fp);
	fclose(fp);
	buf_init(&t->log, 1 << 20);
	t->after = after;
	kernel_opts_default(&t->kopts);
	t->kopts.no_sandbox = 1;
	t->kopts.session_dir = t->sdir;
	t->kopts.out_dir = t->out;
	t->cfg.provider = xstrdup("demo");
	t->cfg.model = xstrdup("recorded");
	t->cfg.demo_script = xstrdup(t->script);
	memset(&so, 0, sizeof so);
	so.sessions_dir = t->sessions;
	so.id = "t1";
	so.idle_ms = idle_ms;
	so.max_ms = max_ms;
	so.kopts = &t->kopts;
	so.llm = &t->cfg;
	so.show = on_event;
	so.arg = t;
	/* the session runner as the TUI uses it: no script, the test's
	 * sink drives the agent */
	t->session = session_new(&so, &warn, &err);
	cr_assert_not_null(t->session, "%s", err);
	t->loop = session_loop(t->session);
	t->nb = session_notebook(t->session);
	t->agent = session_agent(t->session);
	if (sessions_dir == NULL)
		cr_assert_null(warn, "%s", warn);
	else
		buf_printf(&t->log, "warn: %s\n", warn ? warn : "(none)");
	free(warn);
	cr_assert_eq(session_start(t->session), 0, "log:\n%s", buf_str(&t->log));
	loop_timer_add(t->loop, 20000, on_deadline, t);
	loop_run(t->loop);
}

static void
t_teardown(struct t *t)
{
	char *cmd = xasprintf("rm -rf '%s'", t->dir);

	session_free(t->session);
	free(t->cfg.provider);
	free(t->cfg.model);
	free(t->cfg.demo_script);
	buf_free(&t->log);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	free(t->sessions);
	free(t->sdir);
	free(t->out);
	free(t->script);
}

static char *
journal_text(struct t *t)
{
	char *p = xasprintf("%s/t1/notebook.jsonl", t->sessions);
	char *s = read_file(p, 1 << 20, NULL);

	free(p);
	cr_assert_not_null(s);
	return s;
}

Test(session, idle_stop_then_a_question_restarts_and_tells_the_model)
{
	struct t t;
	const cJSON *msgs, *last;
	const char *content;
	char *j;

	t_setup(&t, ASK, 200, 0, NULL);
	cr_assert_not(t.timed_out, "log:\n%s", buf_str(&t.log));
	cr_assert_eq(t.stops, 1);
	cr_assert_not_null(strstr(buf_str(&t.log), "stopped the sandbox after 200 ms idle "
	    "(--idle-timeout)"), "%s", buf_str(&t.log));
	cr_assert_not_null(strstr(buf_str(&t.log), ": restarted the sandbox, which was "
	    "stopped (idle for 200 ms)\n"), "%s", buf_str(&t.log));
	msgs = notebook_messages(t.nb);
	last = cJSON_GetArrayItem(msgs, 0);
	content = cJSON_GetStringValue(cJSON_GetObjectItem(last, "content"));
	{
		static const char note[] = "Note: restarted the sandbox, which was "
		    "stopped (idle for 200 ms). All variables and imports are gone; "
		    "files under /workspace are kept.\nSince your last turn the user "
		    "ran these cells by hand in the same session:\n[1]\n```python\n"
		    "x = 41\n```\nstatus: ok (";
		static const char tail[] = "\nQuestion: q";
		cr_assert_not_null(content);
		cr_assert_eq(strncmp(content, note, sizeof note - 1), 0, "%s", content);
		cr_assert_str_eq(content + strlen(content) - (sizeof tail - 1), tail);
	}
	j = journal_text(&t);
	cr_assert_not_null(strstr(j, "\"kind\":\"idle-stop\",\"text\":\"idle for 200 ms\""));
	free(j);
	t_teardown(&t);
}

Test(session, idle_stop_then_a_cell_runs_in_a_new_sandbox)
{
	struct t t;
	const struct cell *c;

	t_setup(&t, RUN_CELL, 200, 0, NULL);
	cr_assert_not(t.timed_out, "log:\n%s", buf_str(&t.log));
	cr_assert_eq(t.stops, 1);
	cr_assert_eq(notebook_ncells(t.nb), 2);
	c = notebook_cell(t.nb, 2);
	cr_assert_eq(c->status, CELL_ERROR);
	cr_assert_str_eq(c->ename, "NameError");
	cr_assert_not_null(strstr(buf_str(&t.log), "restarted the sandbox"));
	/* the user is told of the new sandbox before the cell that needed
	 * it, not under it */
	{
		const char *log = buf_str(&t.log);
		const char *restart = strstr(log, ": restarted the sandbox, which was "
		    "stopped (idle for 200 ms)\n"), *cell = strstr(log, "cell [2]\n");
		cr_assert(restart && cell && restart < cell, "%s", log);
		cr_assert(strstr(cell, "result [2]\n"), "%s", log);
	}
	t_teardown(&t);
}

Test(session, max_session_ends_a_long_cell)
{
	struct t t;
	int64_t t0 = now_ms();

	/* The first cell is "x = 41"; the idle timer is off, so the
	 * session waits for --max-session alone. */
	t_setup(&t, NOTHING, 0, 400, NULL);
	cr_assert_not(t.timed_out, "log:\n%s", buf_str(&t.log));
	cr_assert_lt(now_ms() - t0, 5000);
	cr_assert_eq(t.errors, 1);
	cr_assert_eq(t.error_kind, ERROR_MAX_SESSION);
	cr_assert_not_null(strstr(buf_str(&t.log), "the session reached its --max-session "
	    "limit of 400 ms; ending it"));
	cr_assert_eq(t.stops, 0);
	t_teardown(&t);
}

Test(session, unwritable_journal_is_a_warning_and_the_run_goes_on)
{
	struct t t;

	t_setup(&t, RUN_CELL, 200, 0, "/dev/null/sessions");
	cr_assert_not(t.timed_out);
	cr_assert_not_null(strstr(buf_str(&t.log), "warn: the session will not be saved: "
	    "cannot create /dev/null/sessions"), "%s", buf_str(&t.log));
	cr_assert_eq(notebook_cell(t.nb, 1)->status, CELL_OK);
	cr_assert_eq(notebook_ncells(t.nb), 2);
	t_teardown(&t);
}
