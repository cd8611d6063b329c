/* Unit tests of resume preparation, the --list text, the replay queue
 * and the idle timers. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "terp/idle.h"
#include "terp/datafile.h"
#include "terp/journal.h"
#include "terp/kernel.h"
#include "terp/loop.h"
#include "terp/replay.h"
#include "terp/resume.h"
#include "terp/util.h"

static char *
tmpdir(void)
{
	char *d = xstrdup("/tmp/terp-resume-XXXXXX");
	cr_assert_not_null(mkdtemp(d));
	return d;
}

static void
rm_rf(const char *d)
{
	char *cmd = xasprintf("rm -rf '%s'", d);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
}

static char *
write_data(const char *dir, const char *name, const char *text)
{
	char *p = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	return p;
}

static void
observe(void *arg, const struct nb_change *ch)
{
	journal_change(arg, ch);
}

/* A session over two data files with one question and one cell. */
static char *
session(const char *dir, const char *a, const char *b)
{
	const char *files[] = { a, b };
	struct journal_info info = { "demo", "m" };
	struct notebook *nb = notebook_new();
	char *err = NULL, *id;
	struct journal *j = journal_create(dir, NULL, &info, nb, &err);
	struct cell_result ok = { .status = CELL_OK };

	cr_assert_not_null(j, "%s", err);
	notebook_observe(nb, observe, j);
	for (int i = 0; i < 2; i++) {	/* staged, as the agent records them */
		struct datafile f;
		cr_assert_eq(datafile_fingerprint(files[i], &f, &err), 0, "%s", err);
		f.sandbox = xasprintf("/workspace/data/f%d", i);
		notebook_add_file(nb, &f);
		datafile_free(&f);
	}
	notebook_add_question(nb, "Which month had the highest revenue per "
	    "dollar of marketing spend, per channel?\nSecond line.", NULL);
	notebook_add_cell(nb, CELL_BY_USER, "df = 1", NULL);
	notebook_cell_result(nb, 1, &ok);
	notebook_observe(nb, NULL, NULL);
	id = xstrdup(journal_id(j));
	journal_close(j);
	notebook_free(nb);
	return id;
}

Test(resume, prepare_warns_about_changed_and_vanished_files)
{
	char *dir = tmpdir(), *err = NULL;
	char *a = write_data(dir, "a.csv", "x\n1\n");
	char *b = write_data(dir, "b.csv", "y\n2\n");
	char *id = session(dir, a, b);
	struct resume r;

	free(write_data(dir, "a.csv", "x\n9\n"));
	cr_assert_eq(unlink(b), 0);
	cr_assert_eq(resume_prepare(dir, NULL, &r, &err), 0, "%s", err);
	cr_assert_str_eq(r.id, id);
	cr_assert_eq(notebook_ncells(r.nb), 1);
	cr_assert_eq(notebook_nfiles(r.nb), 2);
	cr_assert(strstr(notebook_file(r.nb, 0)->path, "/a.csv") != NULL);
	cr_assert_null(notebook_file(r.nb, 0)->sandbox, "that sandbox is gone");
	cr_assert_eq(r.file_state[0], 1);	/* changed: staged again */
	cr_assert_eq(r.file_state[1], 2);	/* gone: not staged */
	cr_assert_not_null(r.warnings);
	cr_assert_not_null(strstr(r.warnings, "a.csv changed"), "%s", r.warnings);
	cr_assert_not_null(strstr(r.warnings, "b.csv is gone"), "%s", r.warnings);
	cr_assert_not_null(strstr(r.model_note, "resumed in a new Python sandbox"));
	cr_assert_not_null(strstr(r.model_note, "a.csv changed"));
	resume_free(&r);

	cr_assert_eq(resume_prepare(dir, "20000101-000000-0000", &r, &err), -1);
	free(err);
	err = NULL;
	resume_free(&r);
	cr_assert_eq(resume_prepare(dir, "../x", &r, &err), -1);
	free(err);
	resume_free(&r);
	free(a);
	free(b);
	free(id);
	rm_rf(dir);
	free(dir);
}

Test(resume, unchanged_files_no_warnings)
{
	char *dir = tmpdir(), *err = NULL;
	char *a = write_data(dir, "a.csv", "x\n1\n");
	char *b = write_data(dir, "b.csv", "y\n2\n");
	char *id = session(dir, a, b);
	struct resume r;

	cr_assert_eq(resume_prepare(dir, id, &r, &err), 0, "%s", err);
	cr_assert_null(r.warnings);
	cr_assert_eq(notebook_nfiles(r.nb), 2);
	cr_assert_eq(r.file_state[0], 0);
	cr_assert_eq(r.file_state[1], 0);
	resume_free(&r);
	free(a);
	free(b);
	free(id);
	rm_rf(dir);
	free(dir);
}

/* The journal's text, a new string. */
static char *
journal_text(const char *dir, const char *id)
{
	char *path = xasprintf("%s/%s/notebook.jsonl", dir, id);
	char *text = xcalloc(1, 1 << 16);
	FILE *f = fopen(path, "r");

	cr_assert_not_null(f);
	cr_assert_gt((long)fread(text, 1, (1 << 16) - 1, f), 0);
	fclose(f);
	free(path);
	return text;
}

static int
count_of(const char *text, const char *s)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, s)) != NULL; p++)
		n++;
	return n;
}

/* ssh: the journal keeps the host (ssh://user@host: a user name is no
 * password; user:password@ is still never written, nor a token as a
 * URL's user), with "" for the session: a resume goes back to the host
 * without a session to reach there, so the model's note says the
 * sandbox is new. Another host is written again though the session
 * ("") is the same. */
Test(resume, ssh_remote_is_the_host_only)
{
	char *dir = tmpdir(), *err = NULL, *id, *text;
	struct journal_info info = { 0 };
	struct notebook *nb = notebook_new();
	struct journal *j = journal_create(dir, NULL, &info, nb, &err);
	struct resume r;

	cr_assert_not_null(j, "%s", err);
	id = xstrdup(journal_id(j));
	journal_remote(j, "local", "");		/* never elsewhere yet: no line */
	journal_remote(j, "ssh://u:pw@127.0.0.1:2222", "");
	journal_remote(j, "jupyter+http://tok@127.0.0.1:9/b", "f/0a-1");
	journal_remote(j, "ssh://user@127.0.0.1:2222", "");
	journal_remote(j, "ssh://user@127.0.0.1:2222", "");
	journal_close(j);
	notebook_free(nb);
	text = journal_text(dir, id);
	cr_assert(strstr(text, "pw@") == NULL && strstr(text, "tok@") == NULL, "%s", text);
	cr_assert_eq(count_of(text, "\"t\":\"remote\""), 1, "%s", text);
	free(text);

	cr_assert_eq(resume_prepare(dir, id, &r, &err), 0, "%s", err);
	cr_assert_str_eq(r.meta.remote_sandbox, "ssh://user@127.0.0.1:2222");
	cr_assert_str_eq(r.meta.remote_session, "");
	cr_assert_null(resume_remote(&r, "ssh://other.invalid"));
	cr_assert_str_eq(resume_remote(&r, "ssh://user@127.0.0.1:2222"), "");
	cr_assert(strstr(r.model_note, "in a new Python sandbox") != NULL, "%s", r.model_note);
	cr_assert(strstr(r.model_note, "same remote Python session") == NULL);
	j = journal_reopen(dir, id, r.nb, &r.meta, &err);
	cr_assert_not_null(j, "%s", err);
	journal_remote(j, "ssh://user@127.0.0.1:2222", "");	/* known */
	journal_remote(j, "ssh://other.invalid", "");		/* another host */
	journal_remote(j, "local", "");		/* here, after a remote */
	journal_close(j);
	resume_free(&r);
	text = journal_text(dir, id);
	cr_assert_eq(count_of(text, "\"t\":\"remote\""), 3, "%s", text);
	cr_assert(strstr(text, "\"sandbox\":\"ssh://other.invalid\"") != NULL, "%s", text);
	cr_assert(strstr(text, "\"sandbox\":\"local\"") != NULL, "%s", text);
	free(text);
	free(id);
	rm_rf(dir);
	free(dir);
}

/* A data file HOST:/path of a session that ran over ssh was staged in
 * place there: a resume there stages it again (nothing here to check
 * it against, so no warning); a resume elsewhere does not, and says so
 * to the user and the model. */
Test(resume, a_file_on_the_ssh_host_is_staged_there_only)
{
	char *dir = tmpdir(), *err = NULL, *id;
	struct journal_info info = { 0 };
	struct notebook *nb = notebook_new();
	struct journal *j = journal_create(dir, NULL, &info, nb, &err);
	struct datafile f = { .path = "box.invalid:/srv/x.csv",
	    .sandbox = "/workspace/data/x.csv" };
	struct resume r;

	cr_assert_not_null(j, "%s", err);
	id = xstrdup(journal_id(j));
	notebook_observe(nb, observe, j);
	notebook_add_file(nb, &f);
	notebook_observe(nb, NULL, NULL);
	journal_remote(j, "ssh://box.invalid", "");
	journal_close(j);
	notebook_free(nb);

	cr_assert_eq(resume_prepare(dir, id, &r, &err), 0, "%s", err);
	cr_assert_eq(notebook_nfiles(r.nb), 1);
	cr_assert_null(r.warnings, "%s", r.warnings);
	cr_assert_str_eq(resume_remote(&r, "ssh://box.invalid"), "");
	cr_assert_eq(r.file_state[0], 0);
	cr_assert_null(r.warnings, "%s", r.warnings);
	resume_free(&r);

	cr_assert_eq(resume_prepare(dir, id, &r, &err), 0, "%s", err);
	cr_assert_null(resume_remote(&r, NULL));
	cr_assert_eq(r.file_state[0], 2);
	cr_assert_str_eq(r.warnings, "box.invalid:/srv/x.csv is a file on the ssh host "
	    "the session ran on; it is not staged (resume it there to have it)\n");
	cr_assert(strstr(r.model_note, "Note: the data file box.invalid:/srv/x.csv is on "
	    "the ssh host the session ran on; it is not staged here.\n") != NULL, "%s",
	    r.model_note);
	resume_free(&r);
	free(id);
	rm_rf(dir);
	free(dir);
}

/* The remote session: the last "remote" line counts, written once per
 * change (a reopened journal knows the last one), reached again only
 * on the same sandbox, and the model's note then says the state may be
 * there still. */
Test(resume, remote_session_on_the_same_sandbox_only)
{
	char *dir = tmpdir(), *err = NULL;
	struct journal_info info = { 0 };
	struct notebook *nb = notebook_new();
	struct journal *j = journal_create(dir, NULL, &info, nb, &err);
	char *id, *path, *text;
	struct resume r;
	FILE *f;
	long n;

	cr_assert_not_null(j, "%s", err);
	id = xstrdup(journal_id(j));
	journal_remote(j, "aca:http://127.0.0.1:9/p", "id-one");
	journal_remote(j, "aca:http://127.0.0.1:9/p", "id-one");
	journal_remote(j, "aca:http://127.0.0.1:9/p", NULL);
	journal_remote(j, "aca:http://127.0.0.1:9/p", "id-two");
	/* never a password */
	journal_remote(j, "jupyter+http://u:pw@127.0.0.1:9/b", "f/0a-1");
	journal_close(j);
	notebook_free(nb);

	cr_assert_eq(resume_prepare(dir, id, &r, &err), 0, "%s", err);
	cr_assert_str_eq(r.meta.remote_session, "id-two");
	cr_assert_null(resume_remote(&r, NULL));
	cr_assert_null(resume_remote(&r, "aca:http://127.0.0.1:9/other"));
	cr_assert(strstr(r.model_note, "in a new Python sandbox") != NULL);
	cr_assert_str_eq(resume_remote(&r, "aca:http://127.0.0.1:9/p"), "id-two");
	cr_assert(strstr(r.model_note, "reaches the same remote Python session") != NULL);
	cr_assert(strstr(r.model_note, "new Python sandbox") == NULL);
	j = journal_reopen(dir, id, r.nb, &r.meta, &err);
	cr_assert_not_null(j, "%s", err);
	journal_remote(j, "aca:http://127.0.0.1:9/p", "id-two");
	journal_close(j);
	resume_free(&r);

	path = xasprintf("%s/%s/notebook.jsonl", dir, id);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	text = xcalloc(1, 1 << 16);
	n = (long)fread(text, 1, (1 << 16) - 1, f);
	fclose(f);
	cr_assert_gt(n, 0);
	cr_assert(strstr(text, "pw@") == NULL, "%s", text);
	{
		int count = 0;
		for (char *p = text; (p = strstr(p, "\"t\":\"remote\"")) != NULL; p++)
			count++;
		cr_assert_eq(count, 2, "%s", text);
	}
	free(text);
	free(path);
	free(id);
	rm_rf(dir);
	free(dir);
}

Test(resume, list_text)
{
	char *dir = tmpdir(), *err = NULL, *t;
	char *a = write_data(dir, "sales.csv", "x\n1\n");
	char *id = session(dir, a, a);
	struct journal_meta *l;
	int n;

	cr_assert_eq(resume_list(dir, &l, &n, &err), 0, "%s", err);
	cr_assert_eq(n, 1);
	t = resume_list_text(l, n);
	cr_assert(strncmp(t, "ID ", 3) == 0, "%s", t);
	cr_assert_not_null(strstr(t, id));
	cr_assert_not_null(strstr(t, "sales.csv"));
	cr_assert_not_null(strstr(t, "Which month had the highest revenue per "
	    "dollar of marketing..."), "%s", t);
	cr_assert_null(strstr(t, "Second line"));
	free(t);
	resume_list_free(l, n);
	t = resume_list_text(NULL, 0);
	cr_assert_str_eq(t, "");
	free(t);
	free(a);
	free(id);
	rm_rf(dir);
	free(dir);
}

/* A journal of only its meta line (and an unanswered question): a run
 * that did nothing. */
static void
empty_session(const char *dir, const char *id)
{
	char *d = xasprintf("%s/%s", dir, id), *j;
	FILE *f;

	cr_assert_eq(mkdir_p(d, 0700), 0);
	j = xasprintf("%s/notebook.jsonl", d);
	cr_assert_not_null(f = fopen(j, "w"));
	fprintf(f, "{\"t\":\"meta\",\"v\":2,\"id\":\"%s\",\"started\":1}\n"
	    "{\"t\":\"question\",\"text\":\"q\"}\n", id);
	fclose(f);
	free(j);
	free(d);
}

Test(resume, find_id_by_prefix_and_names_the_near_ones)
{
	char *dir = tmpdir(), *err = NULL, *got;
	char *a = write_data(dir, "a.csv", "x\n1\n");
	char *id = session(dir, a, a), *prefix, *typo;
	struct journal_meta *l;
	int n;

	empty_session(dir, "20000101-000000-0000");
	/* the empty one is not listed, but its exact id still reads it */
	cr_assert_eq(resume_list(dir, &l, &n, &err), 0, "%s", err);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(l[0].id, id);
	resume_list_free(l, n);
	got = resume_find_id(dir, "20000101-000000-0000", &err);
	cr_assert_str_eq(got, "20000101-000000-0000");
	free(got);
	/* a unique start of the id */
	prefix = xstrndup(id, strlen(id) - 3);
	got = resume_find_id(dir, prefix, &err);
	cr_assert_not_null(got, "%s", err);
	cr_assert_str_eq(got, id);
	free(got);
	/* a mistyped one: named, with the listed id close to it */
	typo = xstrdup(id);
	typo[strlen(typo) - 1] = typo[strlen(typo) - 1] == 'z' ? 'y' : 'z';
	cr_assert_null(resume_find_id(dir, typo, &err));
	got = xasprintf("no session %s; did you mean %s? (terp --list shows them)",
	    typo, id);
	cr_assert_str_eq(err, got);
	free(got);
	free(err);
	/* nothing near: no guess */
	cr_assert_null(resume_find_id(dir, "19990909-zzzzzz-qqqq", &err));
	cr_assert_str_eq(err, "no session 19990909-zzzzzz-qqqq (terp --list shows them)");
	free(err);
	cr_assert_null(resume_find_id(dir, "../x", &err));
	cr_assert_not_null(strstr(err, "not a session id"), "%s", err);
	free(err);
	free(typo);
	free(prefix);
	free(a);
	free(id);
	rm_rf(dir);
	free(dir);
}

Test(resume, find_id_ambiguous_prefix)
{
	char *dir = tmpdir(), *err = NULL;
	char *a = write_data(dir, "a.csv", "x\n1\n");
	char *id1 = session(dir, a, a), *id2 = session(dir, a, a), *p;
	size_t k = 0;

	while (id1[k] == id2[k])
		k++;
	p = xstrndup(id1, k);
	cr_assert_null(resume_find_id(dir, p, &err));
	cr_assert(strncmp(err, "session id ", 11) == 0, "%s", err);
	cr_assert_not_null(strstr(err, " is ambiguous: "), "%s", err);
	cr_assert_not_null(strstr(err, id1), "%s", err);
	cr_assert_not_null(strstr(err, id2), "%s", err);
	free(err);
	free(p);
	free(a);
	free(id1);
	free(id2);
	rm_rf(dir);
	free(dir);
}

/* A fake core: each run adds a new cell; the test feeds the events. */
struct fake {
	struct notebook	*nb;
	int		 runs[8], nruns;
};

/* What the session does from its loop: starts the due cell, if any. */
static void
start_due(struct replay *r, struct fake *f)
{
	int n = replay_due(r);
	struct cell *c;

	if (n == 0)
		return;
	c = notebook_add_cell(f->nb, CELL_BY_USER, notebook_cell(f->nb, n)->code, NULL);
	f->runs[f->nruns++] = n;
	replay_started(r, c->n);
}

static int
finish(struct replay *r, struct fake *f, enum cell_status st)
{
	struct cell *c = notebook_cell(f->nb, notebook_ncells(f->nb));
	struct event res = { .type = EV_RESULT, .cell = c };
	struct event idle = { .type = EV_IDLE };
	struct cell_result cr = { .status = st };
	int running;

	notebook_cell_result(f->nb, c->n, &cr);
	cr_assert_eq(replay_event(r, &res), 1);
	cr_assert_eq(replay_due(r), 0, "due before the cell is over");
	running = replay_event(r, &idle);
	start_due(r, f);
	return running;
}

Test(replay, runs_in_order_and_stops_at_a_failure)
{
	struct fake f = { .nb = notebook_new() };
	int cells[] = { 1, 3, 4 };
	struct replay *r;
	int failed;

	for (int i = 0; i < 4; i++)
		notebook_add_cell(f.nb, CELL_BY_MODEL, "x", NULL);
	r = replay_new(cells, 3);
	start_due(r, &f);
	cr_assert_eq(f.nruns, 1);
	cr_assert_eq(replay_due(r), 0, "due while the first runs");
	cr_assert_eq(finish(r, &f, CELL_OK), 1);
	cr_assert_eq(f.nruns, 2);
	cr_assert_eq(f.runs[1], 3);
	cr_assert_eq(finish(r, &f, CELL_ERROR), 0);
	cr_assert_eq(f.nruns, 2, "went on after a failure");
	cr_assert_eq(replay_progress(r, &failed), 1);
	cr_assert_eq(failed, 3);
	replay_free(r);

	r = replay_new(cells, 3);
	f.nruns = 0;
	start_due(r, &f);
	cr_assert_eq(finish(r, &f, CELL_OK), 1);
	cr_assert_eq(finish(r, &f, CELL_OK), 1);
	cr_assert_eq(finish(r, &f, CELL_OK), 0);
	cr_assert_eq(f.nruns, 3);
	cr_assert_eq(f.runs[2], 4);
	cr_assert_eq(replay_progress(r, &failed), 3);
	cr_assert_eq(failed, 0);
	replay_free(r);

	/* a refused start ends it, that cell counted as failed */
	r = replay_new(cells, 3);
	replay_started(r, -1);
	cr_assert_eq(replay_due(r), 0);
	cr_assert_eq(replay_progress(r, &failed), 0);
	cr_assert_eq(failed, 1);
	replay_free(r);

	r = replay_new(NULL, 0);
	cr_assert_eq(replay_due(r), 0, "nothing to replay");
	replay_free(r);
	notebook_free(f.nb);
}

struct fired {
	int	timeouts, max;
	int64_t	at;		/* now_ms() of the last IDLE_TIMEOUT */
};

static void
on_fire(void *arg, enum idle_why why)
{
	struct fired *f = arg;
	if (why == IDLE_TIMEOUT) {
		f->timeouts++;
		f->at = now_ms();
	} else
		f->max++;
}

/* Runs the loop for at least ms: every timer due by then has fired. */
static void
run_for(struct loop *l, int64_t ms)
{
	int64_t end = now_ms() + ms;
	while (now_ms() < end)
		loop_run_once(l, end - now_ms());
}

static void
ev(struct idle *i, enum event_type t, int n)
{
	struct event e = { .type = t, .kstate = (enum kernel_state)n };
	idle_event(i, &e);
}

/* Every check is one way round: a timer that should not be armed gets
 * run_for() well past its time (a bug fires it, however loaded the
 * machine), and one that should be armed is awaited, then its moment
 * compared on the clock. Nothing depends on how fast the loop runs. */
Test(idle, fires_only_when_quiet_and_running)
{
	struct loop *l = loop_new();
	struct fired f = { 0, 0, 0 };
	struct idle *i = idle_new(l, 60, 0, on_fire, &f);
	int64_t t0, first, second;

	run_for(l, 100);
	cr_assert_eq(f.timeouts, 0, "fired before the sandbox started");
	ev(i, EV_KERNEL, KERNEL_READY);
	ev(i, EV_QUESTION, 0);
	cr_assert_eq(idle_deadline(i), 0, "armed during a question");
	run_for(l, 100);
	cr_assert_eq(f.timeouts, 0, "fired during a question");
	t0 = now_ms();
	ev(i, EV_IDLE, 0);
	first = idle_deadline(i);
	cr_assert(first >= t0 + 60 && first <= now_ms() + 60,
	    "deadline %lld, armed at %lld", (long long)first, (long long)t0);
	run_for(l, 30);
	ev(i, EV_CELL_START, 0);	/* activity: the clock starts over */
	cr_assert_eq(idle_deadline(i), 0, "armed during a cell");
	ev(i, EV_IDLE, 0);
	second = idle_deadline(i);
	cr_assert_geq(second, first + 30, "the clock did not restart");
	run_for(l, second - now_ms() + 100);
	/* once, and by the new timer: the first one (due at first) was
	 * cancelled, or it would have fired too, or earlier */
	cr_assert_eq(f.timeouts, 1);
	cr_assert_geq(f.at, second - 1, "fired at %lld, before the restarted "
	    "deadline %lld", (long long)f.at, (long long)second);
	cr_assert_eq(idle_deadline(i), 0);
	ev(i, EV_KERNEL, KERNEL_STOPPED);
	run_for(l, 100);
	cr_assert_eq(f.timeouts, 1, "fired again with the sandbox stopped");
	ev(i, EV_KERNEL, KERNEL_READY);
	run_for(l, 100);
	cr_assert_eq(f.timeouts, 2);
	idle_free(i);
	loop_free(l);
}

Test(idle, max_session)
{
	struct loop *l = loop_new();
	struct fired f = { 0, 0, 0 };
	struct idle *i = idle_new(l, 0, 40, on_fire, &f);

	ev(i, EV_KERNEL, KERNEL_READY);
	ev(i, EV_QUESTION, 0);
	run_for(l, 80);
	cr_assert_eq(f.max, 1);
	cr_assert_eq(f.timeouts, 0);
	idle_free(i);
	loop_free(l);
}
