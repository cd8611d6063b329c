/* A fake core for developing the TUI before the real agent exists: it
 * implements agent.h with timers that stream a scripted answer, a cell
 * with output and an artifact. Development harness only (tests/). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "terp/agent.h"
#include "terp/buf.h"
#include "terp/context.h"
#include "terp/llm.h"
#include "terp/session.h"
#include "terp/tui.h"
#include "terp/util.h"

struct agent {
	struct loop	*l;
	struct notebook	*nb;
	event_fn	 emit;
	void		*arg;
	int		 busy, step, lines, flood;
	struct cell	*c;
	uint64_t	 timer;
	char		*q;
	struct usage	 tot;
};

static void
ev(struct agent *a, enum event_type t, const char *text, struct cell *c)
{
	struct event e = { .type = t, .text = text, .len = text ? strlen(text) : 0,
		.cell = c };
	if (t == EV_USAGE) {
		e.total = &a->tot;
		e.usage = &a->tot;
	}
	a->emit(a->arg, &e);
}

static void tick(struct loop *l, void *arg);

static void
later(struct agent *a, int ms)
{
	a->timer = loop_timer_add(a->l, ms, tick, a);
}

static void
finish_cell(struct agent *a, enum cell_status st)
{
	a->c->status = st;
	a->c->duration_ms = now_ms() - a->c->started_ms;
	ev(a, EV_RESULT, NULL, a->c);
}

static void
tick(struct loop *l, void *arg)
{
	struct agent *a = arg;
	static const char *words[] = { "Let ", "me ", "load ", "the ", "data ",
		"and ", "look.", NULL };
	(void)l;
	a->timer = 0;
	if (a->step < 7) {
		ev(a, EV_TEXT, words[a->step++], NULL);
		later(a, 40);
		return;
	}
	if (a->step == 7) {
		const char *code = strstr(a->q, "long loop") ?
		    "import time\nx = 42\nwhile True:\n    print('tick')\n    time.sleep(0.1)" :
		    strstr(a->q, "flood") ? "for i in range(10**6):\n    print(i)" :
		    "import pandas as pd\ndf = pd.read_csv('/workspace/data/sales.csv')\nprint(df.head())\ndf.revenue.sum()";
		a->c = notebook_add_cell(a->nb, CELL_BY_MODEL, code, "call_1");
		a->c->status = CELL_RUNNING;
		a->c->started_ms = now_ms();
		a->lines = 0;
		a->flood = strstr(a->q, "flood") != NULL;
		ev(a, EV_CELL_START, NULL, a->c);
		a->step = strstr(a->q, "long loop") ? 20 : 8;
		later(a, 50);
		return;
	}
	if (a->step == 8 && strstr(a->q, "flood the proxy")) {
		/* refused egress attempts to distinct hosts, 500 a tick, as
		 * the kernel's proxy reports them: 20,000, or until cancelled
		 * with "forever" (issue 22: the notebook froze under these) */
		if (a->lines < 20000 || strstr(a->q, "forever")) {
			for (int i = 0; i < 500; i++, a->lines++) {
				struct net_attempt na = { .cell = a->c->n,
				    .id = (uint64_t)a->lines + 1, .verdict = NETLOG_REFUSED,
				    .method = "CONNECT", .port = 443, .code = "not-allowed",
				    .reason = "not allowed" };
				snprintf(na.host, sizeof na.host, "h%d.flood.invalid",
				    a->lines % 1000000);
				na.time_ms = (int64_t)time(NULL) * 1000;
				struct event e = { .type = EV_NET, .cell = a->c,
				    .net = notebook_add_net(a->nb, &na) };
				a->emit(a->arg, &e);
			}
			later(a, 5);
			return;
		}
		finish_cell(a, CELL_OK);
		a->step = 9;
		later(a, 50);
		return;
	}
	if (a->step == 8) {
		/* "flood ... forever" pours until cancelled (keys must be
		 * handled meanwhile); "flood" stops at a million lines. */
		if (a->flood && (a->lines < 1000000 || strstr(a->q, "forever"))) {
			if (a->lines >= 10000000)
				a->lines = 0;	/* at most 8 digits: the lines fit b */
			char b[200000];
			size_t n = 0;
			for (int i = 0; i < 20000; i++)
				n += (size_t)snprintf(b + n, sizeof b - n, "%d\n", a->lines++);
			outcap_add(&a->c->out[0], b, n);
			ev(a, EV_STDOUT, b, a->c);
			later(a, 5);
			return;
		}
		if (!a->flood) {
			const char *o = "  month channel  revenue\n0  2023-01  online  1200.5\n1  2023-01  retail   980.0\n";
			/* "print N lines": a cell printing N numbered lines */
			const char *pl = strstr(a->q, "print ");
			int nl = pl ? atoi(pl + 6) : 0;
			char *many = NULL;
			if (nl > 0 && nl < 100000) {
				struct buf mb;
				buf_init(&mb, 1 << 20);
				for (int i = 1; i <= nl; i++)
					buf_printf(&mb, "output line %d\n", i);
				many = buf_take(&mb);
				o = many;
			}
			outcap_add(&a->c->out[0], o, strlen(o));
			ev(a, EV_STDOUT, o, a->c);
			free(many);
			/* "mixed streams": stderr between two pieces of stdout */
			if (strstr(a->q, "mixed streams")) {
				static const char *const mix[][2] = {
					{ "1", "UserWarning: the first warning\n" },
					{ "0", "between the warnings\n" },
					{ "1", "UserWarning: the second warning\n" },
					{ "0", "after the warnings\n" },
				};
				for (size_t i = 0; i < sizeof mix / sizeof mix[0]; i++) {
					int e = mix[i][0][0] == '1';
					outcap_add(&a->c->out[e], mix[i][1], strlen(mix[i][1]));
					ev(a, e ? EV_STDERR : EV_STDOUT, mix[i][1], a->c);
				}
			}
			a->c->value = xstrdup("np.float64(2180.5)");
			const char *png = getenv("FAKE_PNG");
			struct stat st;
			if (png && stat(png, &st) == 0) {
				const struct artifact *art = notebook_add_artifact(a->nb,
				    a->c->n, "revenue.png", png, (uint64_t)st.st_size);
				a->c->nartifacts++;
				struct event e = { .type = EV_ARTIFACT, .cell = a->c,
					.artifact = art };
				a->emit(a->arg, &e);
			}
			/* a second artifact whose name the "sandbox" chose
			 * (hostile in the tests), copied on the host to
			 * FAKE_ART_PATH */
			const char *hn = getenv("FAKE_ART_NAME");
			const char *hp = getenv("FAKE_ART_PATH");
			if (hn && hp && stat(hp, &st) == 0) {
				const struct artifact *art = notebook_add_artifact(a->nb,
				    a->c->n, hn, hp, (uint64_t)st.st_size);
				a->c->nartifacts++;
				struct event e = { .type = EV_ARTIFACT, .cell = a->c,
					.artifact = art };
				a->emit(a->arg, &e);
			}
			/* "download": two egress attempts, one allowed, one
			 * refused, as the kernel's proxy reports them */
			if (strstr(a->q, "download")) {
				struct net_attempt na[2] = {
					{ .cell = a->c->n, .id = 1, .verdict = NETLOG_ALLOWED,
					  .method = "CONNECT", .host = "index.example.invalid",
					  .port = 443, .code = "done", .reason = "done",
					  .up = 3000, .down = 2202010 },
					{ .cell = a->c->n, .id = 2, .verdict = NETLOG_REFUSED,
					  .method = "CONNECT", .host = "evil.example.invalid",
					  .port = 443, .code = "not-allowed",
					  .reason = "not allowed" },
				};
				for (int i = 0; i < 2; i++) {
					na[i].time_ms = (int64_t)time(NULL) * 1000;
					struct event e = { .type = EV_NET, .cell = a->c,
						.net = notebook_add_net(a->nb, &na[i]) };
					a->emit(a->arg, &e);
				}
			}
		}
		finish_cell(a, CELL_OK);
		a->step = 9;
		later(a, 50);
		return;
	}
	if (a->step == 9) {
		if (strstr(a->q, "long answer"))
			ev(a, EV_TEXT, "## Revenue per channel\n\n"
			    "The **online** channel had the highest revenue in "
			    "every month of the year, ahead of retail and the "
			    "partner shops, and its lead grew in the second half.\n\n"
			    "| channel | revenue | share |\n|---|---|---|\n"
			    "| online | 1200.5 | 55% |\n| retail | 980.0 | 45% |\n\n"
			    "That is the end of the answer.\n", NULL);
		else
		ev(a, EV_TEXT, "The **online** channel had the highest revenue: "
		    "`1200.5` in 2023-01.\n\n| channel | revenue |\n|---|---|\n| online | 1200.5 |\n", NULL);
		a->tot.input_tokens += 1234;
		a->tot.output_tokens += 321;
		ev(a, EV_USAGE, NULL, NULL);
		ev(a, EV_ANSWER, "The online channel.", NULL);
		a->busy = 0;
		ev(a, EV_IDLE, NULL, NULL);
		return;
	}
	if (a->step == 20) {	/* a long cell: ticks until cancelled */
		/* or until the file FAKE_GO names appears (a test says go) */
		const char *go = getenv("FAKE_GO");
		struct stat st;
		if (go && stat(go, &st) == 0) {
			finish_cell(a, CELL_OK);
			a->step = 9;
			later(a, 50);
			return;
		}
		outcap_add(&a->c->out[0], "tick\n", 5);
		ev(a, EV_STDOUT, "tick\n", a->c);
		later(a, 100);
	}
}

struct agent *
agent_new(struct loop *l, struct notebook *nb, const struct kernel_opts *kopts,
    struct llm *llm, const struct agent_opts *opts, event_fn emit, void *arg)
{
	(void)kopts; (void)llm; (void)opts;
	struct agent *a = xcalloc(1, sizeof *a);
	a->l = l;
	a->nb = nb;
	a->emit = emit;
	a->arg = arg;
	return a;
}

void
agent_free(struct agent *a)
{
	if (a->timer)
		loop_timer_cancel(a->l, a->timer);
	free(a->q);
	free(a);
}

int
agent_ask(struct agent *a, const char *q, char **err)
{
	if (a->busy) {
		*err = xstrdup("busy");
		return -1;
	}
	free(a->q);
	a->q = xstrdup(q);
	a->busy = 1;
	a->step = 0;
	ev(a, EV_QUESTION, q, NULL);
	ev(a, EV_REQUEST, "request", NULL);
	notebook_add_sent(a->nb, "openai chat request", "{\"messages\":[]}", 15);
	later(a, 200);
	return 0;
}

int
agent_run_cell(struct agent *a, const char *code, char **err)
{
	if (a->busy) {
		*err = xstrdup("busy");
		return -1;
	}
	struct cell *c = notebook_add_cell(a->nb, CELL_BY_USER, code, NULL);
	c->started_ms = now_ms();
	ev(a, EV_CELL_START, NULL, c);
	char *o = xasprintf("ran %zu bytes of code\n", strlen(code));
	outcap_add(&c->out[0], o, strlen(o));
	ev(a, EV_STDOUT, o, c);
	free(o);
	c->status = CELL_OK;
	c->duration_ms = 3;
	ev(a, EV_RESULT, NULL, c);
	ev(a, EV_IDLE, NULL, NULL);
	return c->n;
}

int
agent_rerun(struct agent *a, int n, char **err)
{
	struct cell *c = notebook_cell(a->nb, n);
	if (!c) {
		*err = xstrdup("no such cell");
		return -1;
	}
	int m = agent_run_cell(a, c->code, err);
	if (m > 0)
		notebook_cell(a->nb, m)->rerun_of = n;
	return m;
}

void
agent_cancel(struct agent *a)
{
	if (!a->busy)
		return;
	if (a->timer)
		loop_timer_cancel(a->l, a->timer);
	a->timer = 0;
	if (a->c && a->c->status == CELL_RUNNING) {
		const char *tb = "KeyboardInterrupt";
		outcap_add(&a->c->out[1], tb, strlen(tb));
		a->c->ename = xstrdup("KeyboardInterrupt");
		finish_cell(a, CELL_INTERRUPTED);
	} else
		ev(a, EV_NOTICE, "request cancelled", NULL);
	a->busy = 0;
	ev(a, EV_IDLE, NULL, NULL);
}

int agent_busy(const struct agent *a) { return a->busy; }
int agent_input_reply(struct agent *a, int cell, const char *line)
{ (void)a; (void)cell; (void)line; return -1; }
int agent_reset(struct agent *a, char **err) { (void)a; (void)err; return 0; }
/* --ask and `d` (agent.c): not scripted here; the real binary's tests
 * (test_tui_ask.py) cover them */
void agent_set_ask(struct agent *a, int on) { (void)a; (void)on; }
int agent_asks(const struct agent *a) { (void)a; return 0; }
int agent_approve(struct agent *a, enum agent_verdict v, const char *code, char **err) { (void)a; (void)v; (void)code; *err = xstrdup("nothing waits"); return -1; }
int agent_drop_cell(struct agent *a, int n, char **err) { (void)a; (void)n; *err = xstrdup("no cell to drop"); return -1; }
int agent_restart(struct agent *a, char **err) { (void)a; (void)err; return 0; }
char *
agent_load(struct agent *a, const char *path, int told, char **err)
{
	struct stat st;
	(void)told;
	if (stat(path, &st) < 0) {
		*err = xasprintf("cannot read data file %s: No such file", path);
		return NULL;
	}
	const char *b = strrchr(path, '/');
	char *box = xasprintf("/workspace/data/%s", b ? b + 1 : path);
	struct datafile f = { .path = (char *)path, .sandbox = box };
	notebook_add_file(a->nb, &f);
	return box;
}
/* /model switches the fake model's name; agent_llm hands out a token
 * pointer (the TUI only asks it for the names). */
static char fake_model[64] = "fake-1";
int
agent_set_model(struct agent *a, const char *m, char **err)
{
	(void)a;
	(void)err;
	snprintf(fake_model, sizeof fake_model, "%s", m);
	return 0;
}
int agent_egress(struct agent *a, int allow, const char *spec, char **err) { (void)a; (void)allow; (void)spec; (void)err; return 0; }
char *agent_python_label(const struct agent *a) { (void)a; return NULL; }
struct notebook *agent_notebook(const struct agent *a) { return a->nb; }
void agent_set_width(struct agent *a, int cols) { (void)a; (void)cols; }
const char *agent_where(const struct agent *a) { (void)a; return "local"; }
const char *agent_isolation(const struct agent *a) { (void)a; return NULL; }
struct llm *agent_llm(const struct agent *a) { return (struct llm *)(void *)(uintptr_t)a; }
const char *llm_model(const struct llm *m) { (void)m; return fake_model; }
const char *llm_suggest(const struct llm *m, int i) { (void)m; (void)i; return NULL; }
/* No model here, so no context window: the commands say so. */
struct context *agent_context(const struct agent *a) { (void)a; return NULL; }
long context_window(const struct context *cx) { (void)cx; return 0; }
const char *context_window_source(const struct context *cx) { (void)cx; return ""; }
long context_reserve(const struct context *cx) { (void)cx; return 0; }
long context_estimate(struct context *cx, const char *s) { (void)cx; (void)s; return 0; }
int context_percent(const struct context *cx) { (void)cx; return -1; }
int context_parts(struct context *cx, const char *s, struct context_part **p) { (void)cx; (void)s; *p = NULL; return 0; }
const char *context_summary(const struct context *cx, int *upto) { (void)cx; *upto = 0; return NULL; }
int context_prepare(struct context *cx, const char *s, int f, void (*then)(void *, const char *), void *arg, char **err) { (void)cx; (void)s; (void)f; (void)then; (void)arg; *err = NULL; return 0; }
const char *llm_provider(const struct llm *m) { (void)m; return "fake"; }
char *
kernel_data_path(const char *host)
{
	const char *b = strrchr(host, '/');
	return xasprintf("/workspace/data/%s", b ? b + 1 : host);
}

/* The harness's session: the TUI's one door to the core, here straight
 * onto the fake agent (no journal, so nothing to replay or time out). */
struct session {
	struct agent	*a;
};
int session_busy(const struct session *s) { (void)s; return 0; }
int session_replay(struct session *s, const char *which, char **err) { (void)s; (void)which; *err = xstrdup("replay needs a saved session"); return -1; }
int session_reset(struct session *s, char **err) { return agent_reset(s->a, err); }
int session_restart(struct session *s, char **err) { return agent_restart(s->a, err); }
char *session_load(struct session *s, const char *p, char **err) { return agent_load(s->a, p, 1, err); }
int session_egress(struct session *s, int allow, const char *spec, char **err) { return agent_egress(s->a, allow, spec, err); }
int session_progress(const struct session *s, int *total) { (void)s; *total = 0; return 0; }
int64_t session_idle_deadline(const struct session *s, int *stopped) { (void)s; if (stopped) *stopped = 0; return 0; }
/* Only the bodies the notebook still keeps: there is no journal. */
char *
session_sent(const struct session *s, int i, size_t *len, char **err)
{
	const char *what, *kept = notebook_sent(s->a->nb, i, &what, len);

	*err = NULL;
	return kept ? xstrndup(kept, *len) : NULL;
}

int
main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	struct loop *l = loop_new();
	struct notebook *nb = notebook_new();
	struct agent *a = agent_new(l, nb, NULL, NULL, NULL, tui_on_event, NULL);
	struct event e = { .type = EV_KERNEL, .kstate = KERNEL_READY, .text = "ready" };
	tui_on_event(NULL, &e);
	struct tui_opts o;
	tui_opts_default(&o);
	struct session fs = { .a = a };
	o.session = &fs;
	o.provider_label = "fake";
	o.history_path = getenv("FAKE_HISTORY");
	o.theme = getenv("FAKE_THEME");
	if (getenv("FAKE_BACKGROUND") != NULL)	/* "light" or "dark" */
		o.background = strcmp(getenv("FAKE_BACKGROUND"), "light") == 0 ?
		    TUI_BG_LIGHT : TUI_BG_DARK;
	char *err = NULL;
	int rc = tui_run(l, a, &o, &err);
	if (rc < 0)
		fprintf(stderr, "terp: %s\n", err);
	agent_free(a);
	notebook_free(nb);
	loop_free(l);
	return rc < 0 ? 1 : 0;
}
