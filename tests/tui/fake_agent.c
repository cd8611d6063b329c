/* A fake core for the TUI's tests: it implements the calls of
 * session.h the TUI makes (its one door to the core) with timers that
 * stream a scripted answer, a cell with output and an artifact; there
 * is no agent, kernel, model or journal behind it. Development harness
 * only (tests/). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "terp/buf.h"
#include "terp/context.h"
#include "terp/llm.h"
#include "terp/session.h"
#include "terp/tui.h"
#include "terp/util.h"

/* The fake session: the TUI holds it as its struct session. */
struct session {
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
ev(struct session *s, enum event_type t, const char *text, struct cell *c)
{
	struct event e = { .type = t, .text = text, .len = text ? strlen(text) : 0,
		.cell = c };
	if (t == EV_USAGE) {
		e.total = &s->tot;
		e.usage = &s->tot;
	}
	s->emit(s->arg, &e);
}

static void tick(struct loop *l, void *arg);

static void
later(struct session *s, int ms)
{
	s->timer = loop_timer_add(s->l, ms, tick, s);
}

static void
finish_cell(struct session *s, enum cell_status st)
{
	s->c->status = st;
	s->c->duration_ms = now_ms() - s->c->started_ms;
	ev(s, EV_RESULT, NULL, s->c);
}

static void
tick(struct loop *l, void *arg)
{
	struct session *s = arg;
	static const char *words[] = { "Let ", "me ", "load ", "the ", "data ",
		"and ", "look.", NULL };
	(void)l;
	s->timer = 0;
	if (s->step < 7) {
		ev(s, EV_TEXT, words[s->step++], NULL);
		later(s, 40);
		return;
	}
	if (s->step == 7) {
		const char *code = strstr(s->q, "long loop") ?
		    "import time\nx = 42\nwhile True:\n    print('tick')\n    time.sleep(0.1)" :
		    strstr(s->q, "flood") ? "for i in range(10**6):\n    print(i)" :
		    "import pandas as pd\ndf = pd.read_csv('/workspace/data/sales.csv')\nprint(df.head())\ndf.revenue.sum()";
		s->c = notebook_add_cell(s->nb, CELL_BY_MODEL, code, "call_1");
		s->c->status = CELL_RUNNING;
		s->c->started_ms = now_ms();
		s->lines = 0;
		s->flood = strstr(s->q, "flood") != NULL;
		ev(s, EV_CELL_START, NULL, s->c);
		s->step = strstr(s->q, "long loop") ? 20 : 8;
		later(s, 50);
		return;
	}
	if (s->step == 8 && strstr(s->q, "flood the proxy")) {
		/* refused egress attempts to distinct hosts, 500 a tick, as
		 * the kernel's proxy reports them: 20,000, or until cancelled
		 * with "forever" (issue 22: the notebook froze under these) */
		if (s->lines < 20000 || strstr(s->q, "forever")) {
			for (int i = 0; i < 500; i++, s->lines++) {
				struct net_attempt na = { .cell = s->c->n,
				    .id = (uint64_t)s->lines + 1, .verdict = NETLOG_REFUSED,
				    .method = "CONNECT", .port = 443, .code = "not-allowed",
				    .reason = "not allowed" };
				snprintf(na.host, sizeof na.host, "h%d.flood.invalid",
				    s->lines % 1000000);
				na.time_ms = (int64_t)time(NULL) * 1000;
				struct event e = { .type = EV_NET, .cell = s->c,
				    .net = notebook_add_net(s->nb, &na) };
				s->emit(s->arg, &e);
			}
			later(s, 5);
			return;
		}
		finish_cell(s, CELL_OK);
		s->step = 9;
		later(s, 50);
		return;
	}
	if (s->step == 8) {
		/* "flood ... forever" pours until cancelled (keys must be
		 * handled meanwhile); "flood" stops at a million lines. */
		if (s->flood && (s->lines < 1000000 || strstr(s->q, "forever"))) {
			if (s->lines >= 10000000)
				s->lines = 0;	/* at most 8 digits: the lines fit b */
			char b[200000];
			size_t n = 0;
			for (int i = 0; i < 20000; i++)
				n += (size_t)snprintf(b + n, sizeof b - n, "%d\n", s->lines++);
			outcap_add(&s->c->out[0], b, n);
			ev(s, EV_STDOUT, b, s->c);
			later(s, 5);
			return;
		}
		if (!s->flood) {
			const char *o = "  month channel  revenue\n0  2023-01  online  1200.5\n1  2023-01  retail   980.0\n";
			/* "print N lines": a cell printing N numbered lines */
			const char *pl = strstr(s->q, "print ");
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
			outcap_add(&s->c->out[0], o, strlen(o));
			ev(s, EV_STDOUT, o, s->c);
			free(many);
			/* "mixed streams": stderr between two pieces of stdout */
			if (strstr(s->q, "mixed streams")) {
				static const char *const mix[][2] = {
					{ "1", "UserWarning: the first warning\n" },
					{ "0", "between the warnings\n" },
					{ "1", "UserWarning: the second warning\n" },
					{ "0", "after the warnings\n" },
				};
				for (size_t i = 0; i < sizeof mix / sizeof mix[0]; i++) {
					int e = mix[i][0][0] == '1';
					outcap_add(&s->c->out[e], mix[i][1], strlen(mix[i][1]));
					ev(s, e ? EV_STDERR : EV_STDOUT, mix[i][1], s->c);
				}
			}
			s->c->value = xstrdup("np.float64(2180.5)");
			const char *png = getenv("FAKE_PNG");
			struct stat st;
			if (png && stat(png, &st) == 0) {
				const struct artifact *art = notebook_add_artifact(s->nb,
				    s->c->n, "revenue.png", png, (uint64_t)st.st_size);
				s->c->nartifacts++;
				struct event e = { .type = EV_ARTIFACT, .cell = s->c,
					.artifact = art };
				s->emit(s->arg, &e);
			}
			/* a second artifact whose name the "sandbox" chose
			 * (hostile in the tests), copied on the host to
			 * FAKE_ART_PATH */
			const char *hn = getenv("FAKE_ART_NAME");
			const char *hp = getenv("FAKE_ART_PATH");
			if (hn && hp && stat(hp, &st) == 0) {
				const struct artifact *art = notebook_add_artifact(s->nb,
				    s->c->n, hn, hp, (uint64_t)st.st_size);
				s->c->nartifacts++;
				struct event e = { .type = EV_ARTIFACT, .cell = s->c,
					.artifact = art };
				s->emit(s->arg, &e);
			}
			/* "download": two egress attempts, one allowed, one
			 * refused, as the kernel's proxy reports them */
			if (strstr(s->q, "download")) {
				struct net_attempt na[2] = {
					{ .cell = s->c->n, .id = 1, .verdict = NETLOG_ALLOWED,
					  .method = "CONNECT", .host = "index.example.invalid",
					  .port = 443, .code = "done", .reason = "done",
					  .up = 3000, .down = 2202010 },
					{ .cell = s->c->n, .id = 2, .verdict = NETLOG_REFUSED,
					  .method = "CONNECT", .host = "evil.example.invalid",
					  .port = 443, .code = "not-allowed",
					  .reason = "not allowed" },
				};
				for (int i = 0; i < 2; i++) {
					na[i].time_ms = (int64_t)time(NULL) * 1000;
					struct event e = { .type = EV_NET, .cell = s->c,
						.net = notebook_add_net(s->nb, &na[i]) };
					s->emit(s->arg, &e);
				}
			}
		}
		finish_cell(s, CELL_OK);
		s->step = 9;
		later(s, 50);
		return;
	}
	if (s->step == 9) {
		if (strstr(s->q, "long answer"))
			ev(s, EV_TEXT, "## Revenue per channel\n\n"
			    "The **online** channel had the highest revenue in "
			    "every month of the year, ahead of retail and the "
			    "partner shops, and its lead grew in the second half.\n\n"
			    "| channel | revenue | share |\n|---|---|---|\n"
			    "| online | 1200.5 | 55% |\n| retail | 980.0 | 45% |\n\n"
			    "That is the end of the answer.\n", NULL);
		else
		ev(s, EV_TEXT, "The **online** channel had the highest revenue: "
		    "`1200.5` in 2023-01.\n\n| channel | revenue |\n|---|---|\n| online | 1200.5 |\n", NULL);
		s->tot.input_tokens += 1234;
		s->tot.output_tokens += 321;
		ev(s, EV_USAGE, NULL, NULL);
		ev(s, EV_ANSWER, "The online channel.", NULL);
		s->busy = 0;
		ev(s, EV_IDLE, NULL, NULL);
		return;
	}
	if (s->step == 20) {	/* a long cell: ticks until cancelled */
		/* or until the file FAKE_GO names appears (a test says go) */
		const char *go = getenv("FAKE_GO");
		struct stat st;
		if (go && stat(go, &st) == 0) {
			finish_cell(s, CELL_OK);
			s->step = 9;
			later(s, 50);
			return;
		}
		outcap_add(&s->c->out[0], "tick\n", 5);
		ev(s, EV_STDOUT, "tick\n", s->c);
		later(s, 100);
	}
}

static struct session *
fake_new(struct loop *l, struct notebook *nb, event_fn emit, void *arg)
{
	struct session *s = xcalloc(1, sizeof *s);
	s->l = l;
	s->nb = nb;
	s->emit = emit;
	s->arg = arg;
	return s;
}

static void
fake_free(struct session *s)
{
	if (s->timer)
		loop_timer_cancel(s->l, s->timer);
	free(s->q);
	free(s);
}

int
session_ask(struct session *s, const char *q, char **err)
{
	if (s->busy) {
		*err = xstrdup("busy");
		return -1;
	}
	free(s->q);
	s->q = xstrdup(q);
	s->busy = 1;
	s->step = 0;
	ev(s, EV_QUESTION, q, NULL);
	ev(s, EV_REQUEST, "request", NULL);
	notebook_add_sent(s->nb, "openai chat request", "{\"messages\":[]}", 15);
	later(s, 200);
	return 0;
}

int
session_run_cell(struct session *s, const char *code, char **err)
{
	if (s->busy) {
		*err = xstrdup("busy");
		return -1;
	}
	struct cell *c = notebook_add_cell(s->nb, CELL_BY_USER, code, NULL);
	c->started_ms = now_ms();
	ev(s, EV_CELL_START, NULL, c);
	char *o = xasprintf("ran %zu bytes of code\n", strlen(code));
	outcap_add(&c->out[0], o, strlen(o));
	ev(s, EV_STDOUT, o, c);
	free(o);
	c->status = CELL_OK;
	c->duration_ms = 3;
	ev(s, EV_RESULT, NULL, c);
	ev(s, EV_IDLE, NULL, NULL);
	return c->n;
}

int
session_rerun(struct session *s, int n, char **err)
{
	struct cell *c = notebook_cell(s->nb, n);
	if (!c) {
		*err = xstrdup("no such cell");
		return -1;
	}
	int m = session_run_cell(s, c->code, err);
	if (m > 0)
		notebook_cell(s->nb, m)->rerun_of = n;
	return m;
}

void
session_cancel(struct session *s)
{
	if (!s->busy)
		return;
	if (s->timer)
		loop_timer_cancel(s->l, s->timer);
	s->timer = 0;
	if (s->c && s->c->status == CELL_RUNNING) {
		const char *tb = "KeyboardInterrupt";
		outcap_add(&s->c->out[1], tb, strlen(tb));
		s->c->ename = xstrdup("KeyboardInterrupt");
		finish_cell(s, CELL_INTERRUPTED);
	} else
		ev(s, EV_NOTICE, "request cancelled", NULL);
	s->busy = 0;
	ev(s, EV_IDLE, NULL, NULL);
}

int session_running(const struct session *s) { return s->busy; }
int session_input_reply(struct session *s, int cell, const char *line)
{ (void)s; (void)cell; (void)line; return -1; }
int session_reset(struct session *s, char **err) { (void)s; (void)err; return 0; }
/* --ask and `d` (agent.c): not scripted here; the real binary's tests
 * (test_tui_ask.py) cover them */
void session_set_ask(struct session *s, int on) { (void)s; (void)on; }
int session_asks(const struct session *s) { (void)s; return 0; }
int session_approve(struct session *s, enum session_verdict v, const char *code, char **err) { (void)s; (void)v; (void)code; *err = xstrdup("nothing waits"); return -1; }
int session_drop_cell(struct session *s, int n, char **err) { (void)s; (void)n; *err = xstrdup("no cell to drop"); return -1; }
int session_restart(struct session *s, char **err) { (void)s; (void)err; return 0; }
char *
session_load(struct session *s, const char *path, char **err)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		*err = xasprintf("cannot read data file %s: No such file", path);
		return NULL;
	}
	const char *b = strrchr(path, '/');
	char *box = xasprintf("/workspace/data/%s", b ? b + 1 : path);
	struct datafile f = { .path = (char *)path, .sandbox = box };
	notebook_add_file(s->nb, &f);
	return box;
}
/* /model switches the fake model's name; session_llm hands out a token
 * pointer (the TUI only asks it for the names). */
static char fake_model[64] = "fake-1";
int
session_set_model(struct session *s, const char *m, char **err)
{
	(void)s;
	(void)err;
	snprintf(fake_model, sizeof fake_model, "%s", m);
	return 0;
}
int session_egress(struct session *s, int allow, const char *spec, char **err) { (void)s; (void)allow; (void)spec; (void)err; return 0; }
char *session_python_label(const struct session *s) { (void)s; return NULL; }
struct loop *session_loop(const struct session *s) { return s->l; }
struct notebook *session_notebook(const struct session *s) { return s->nb; }
void session_set_width(struct session *s, int cols) { (void)s; (void)cols; }
struct llm *session_llm(const struct session *s) { return (struct llm *)(void *)(uintptr_t)s; }
const char *llm_model(const struct llm *m) { (void)m; return fake_model; }
const char *llm_suggest(const struct llm *m, int i) { (void)m; (void)i; return NULL; }
/* No model here, so no context window: the commands say so. */
struct context *session_context(const struct session *s) { (void)s; return NULL; }
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

/* No journal, so nothing to replay or time out. */
int session_busy(const struct session *s) { (void)s; return 0; }
int session_replay(struct session *s, const char *which, char **err) { (void)s; (void)which; *err = xstrdup("replay needs a saved session"); return -1; }
int session_progress(const struct session *s, int *total) { (void)s; *total = 0; return 0; }
int64_t session_idle_deadline(const struct session *s, int *stopped) { (void)s; if (stopped) *stopped = 0; return 0; }
/* Only the bodies the notebook still keeps: there is no journal. */
char *
session_sent(const struct session *s, int i, size_t *len, char **err)
{
	const char *what, *kept = notebook_sent(s->nb, i, &what, len);

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
	struct session *s = fake_new(l, nb, tui_on_event, NULL);
	struct event e = { .type = EV_KERNEL, .kstate = KERNEL_READY, .text = "ready" };
	tui_on_event(NULL, &e);
	struct tui_opts o;
	tui_opts_default(&o);
	o.provider_label = "fake";
	o.history_path = getenv("FAKE_HISTORY");
	o.theme = getenv("FAKE_THEME");
	if (getenv("FAKE_BACKGROUND") != NULL)	/* "light" or "dark" */
		o.background = strcmp(getenv("FAKE_BACKGROUND"), "light") == 0 ?
		    TUI_BG_LIGHT : TUI_BG_DARK;
	char *err = NULL;
	int rc = tui_run(s, &o, &err);
	if (rc < 0)
		fprintf(stderr, "terp: %s\n", err);
	fake_free(s);
	notebook_free(nb);
	loop_free(l);
	return rc < 0 ? 1 : 0;
}
