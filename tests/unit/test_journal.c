/* Unit tests of the journal: events written and read back equal, torn
 * and corrupt lines, crash repair, listing, deletion, fingerprints. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "terp/buf.h"
#include "terp/digest.h"
#include "terp/journal.h"
#include "terp/kernel.h"
#include "terp/resume.h"
#include "terp/store.h"
#include "terp/util.h"

static char *
tmpdir(void)
{
	char *d = xstrdup("/tmp/terp-journal-XXXXXX");
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

static void
emit(struct journal *j, enum event_type t, const struct cell *c,
    const char *text, size_t len)
{
	struct event ev = { .type = t, .cell = c, .text = text, .len = len };
	journal_event(j, &ev);
}

/* The journal the notebook tells its changes, as the session runner
 * makes it: jcreate and jreopen attach it, jclose detaches it. */
static struct journal *observed;

static void
observe(void *arg, const struct nb_change *ch)
{
	(void)arg;
	if (observed != NULL)
		journal_change(observed, ch);
}

static struct journal *
jcreate(const char *dir, const char *id, const struct journal_info *info,
    struct notebook *nb, char **err)
{
	struct journal *j = journal_create(dir, id, info, nb, err);

	if (j != NULL) {
		observed = j;
		notebook_observe(nb, observe, NULL);
	}
	return j;
}

static struct journal *
jreopen(const char *dir, const char *id, struct notebook *nb,
    const struct journal_meta *m, char **err)
{
	struct journal *j = journal_reopen(dir, id, nb, m, err);

	if (j != NULL) {
		observed = j;
		notebook_observe(nb, observe, NULL);
	}
	return j;
}

static void
jclose(struct journal *j)
{
	if (observed == j)
		observed = NULL;
	journal_close(j);
}

static void
result(struct notebook *nb, struct cell *c, enum cell_status st)
{
	struct cell_result r = { .status = st };
	notebook_cell_result(nb, c->n, &r);
}

/* The model's reply: one python_exec call of code, no text. */
static void
call_reply(struct notebook *nb, const char *id, const char *code)
{
	cJSON *calls = cJSON_CreateArray(), *c, *args;
	char *a;

	c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "id", id);
	cJSON_AddStringToObject(c, "name", "python_exec");
	args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "code", code);
	a = cJSON_PrintUnformatted(args);
	cJSON_AddStringToObject(c, "arguments", a);
	free(a);
	cJSON_Delete(args);
	cJSON_AddItemToArray(calls, c);
	notebook_add_reply(nb, NULL, calls);
}

static void
out(struct notebook *nb, struct cell *c, int s, const char *p, size_t n)
{
	notebook_cell_output(nb, c->n, s, p, n);
}

/* Plays one question the way the agent does: question, request, text,
 * tool call, cell with output, result, artifact, usage, answer. */
static void
play_question(struct journal *j, struct notebook *nb, const char *q,
    const char *artifact_path)
{
	struct usage u = { .input_tokens = 120, .output_tokens = 30, .cached_tokens = 7 };
	struct cell *c;
	static const char bin[] = "bin\xff\x00zero";
	struct cell_result r = { .status = CELL_OK, .value = "42",
	    .duration_ms = 12 };

	notebook_add_question(nb, q, NULL);
	emit(j, EV_QUESTION, NULL, q, strlen(q));
	notebook_add_sent(nb, "POST /v1/chat", "{\"req\":1}", 9);
	emit(j, EV_REQUEST, NULL, "POST /v1/chat", 9);
	emit(j, EV_TEXT, NULL, "Let me ", 7);
	emit(j, EV_TEXT, NULL, "compute.", 8);
	call_reply(nb, "call_1", "print(6*7)\n6*7");
	emit(j, EV_TOOL_CALL, NULL, "print(6*7)\n6*7", 14);
	c = notebook_add_cell(nb, CELL_BY_MODEL, "print(6*7)\n6*7", "call_1");
	emit(j, EV_CELL_START, c, NULL, 0);
	out(nb, c, 0, "42\n", 3);
	out(nb, c, 1, bin, sizeof bin - 1);
	out(nb, c, 0, "caf\xc3\xa9\n", 6);
	notebook_cell_result(nb, c->n, &r);
	emit(j, EV_RESULT, c, NULL, 0);
	notebook_add_artifact(nb, c->n, "plot.png", artifact_path, 1234);
	notebook_add_tool_result(nb, "call_1", "42\ncaf\xc3\xa9\n", 0);
	notebook_add_usage(nb, &u);
	notebook_add_reply(nb, "The answer is **42**.", NULL);
	emit(j, EV_ANSWER, NULL, "The answer is **42**.", 21);
	emit(j, EV_IDLE, NULL, NULL, 0);
}

static void
assert_cells_equal(const struct cell *a, const struct cell *b)
{
	cr_assert_eq(a->n, b->n);
	cr_assert_eq(a->author, b->author);
	cr_assert_str_eq(a->code, b->code);
	if (a->tool_call_id)
		cr_assert_str_eq(a->tool_call_id, b->tool_call_id);
	else
		cr_assert_null(b->tool_call_id);
	cr_assert_eq(a->status, b->status, "cell %d: %d vs %d", a->n,
	    a->status, b->status);
	for (int s = 0; s < 2; s++) {
		size_t la, lb;
		char *x = cell_output(a, s, &la), *y = cell_output(b, s, &lb);
		cr_assert_eq(la, lb, "cell %d stream %d: %zu vs %zu", a->n, s,
		    la, lb);
		cr_assert(memcmp(x, y, la) == 0, "cell %d stream %d differs",
		    a->n, s);
		cr_assert_eq(a->out[s].total, b->out[s].total);
		cr_assert_eq(outcap_dropped(&a->out[s]),
		    outcap_dropped(&b->out[s]));
		free(x);
		free(y);
	}
#define SAME(f) do { if (a->f) cr_assert_str_eq(a->f, b->f); \
	else cr_assert_null(b->f); } while (0)
	SAME(value);
	SAME(ename);
	SAME(evalue);
	SAME(traceback);
	SAME(reason);
#undef SAME
	cr_assert_eq(a->state_lost, b->state_lost);
	cr_assert_eq(a->duration_ms, b->duration_ms);
	cr_assert_eq(a->nartifacts, b->nartifacts);
}

static void
assert_notebooks_equal(const struct notebook *a, const struct notebook *b)
{
	cr_assert_eq(notebook_ncells(a), notebook_ncells(b));
	for (int i = 1; i <= notebook_ncells(a); i++)
		assert_cells_equal(notebook_cell(a, i), notebook_cell(b, i));
	cr_assert_eq(notebook_nartifacts(a), notebook_nartifacts(b));
	for (int i = 0; i < notebook_nartifacts(a); i++) {
		const struct artifact *x = notebook_artifact(a, i);
		const struct artifact *y = notebook_artifact(b, i);
		cr_assert_eq(x->cell, y->cell);
		cr_assert_str_eq(x->name, y->name);
		cr_assert_str_eq(x->path, y->path);
		cr_assert_eq(x->bytes, y->bytes);
	}
	cr_assert(cJSON_Compare(notebook_messages(a), notebook_messages(b), 1),
	    "messages differ");
	cr_assert_eq(notebook_nfiles(a), notebook_nfiles(b));
	for (int i = 0; i < notebook_nfiles(a); i++) {
		cr_assert_str_eq(notebook_file(a, i)->path, notebook_file(b, i)->path);
		cr_assert_eq(notebook_file(a, i)->size, notebook_file(b, i)->size);
	}
	cr_assert_eq(notebook_nquestions(a), notebook_nquestions(b));
	for (int i = 0; i < notebook_nquestions(a); i++) {
		const struct question *x = notebook_question(a, i);
		const struct question *y = notebook_question(b, i);
		cr_assert_eq(x->msg, y->msg);
		cr_assert_str_eq(x->text, y->text);
		if (x->notes)
			cr_assert_str_eq(x->notes, y->notes);
		else
			cr_assert_null(y->notes);
	}
	cr_assert_eq(notebook_usage(a)->input_tokens,
	    notebook_usage(b)->input_tokens);
	cr_assert_eq(notebook_usage(a)->output_tokens,
	    notebook_usage(b)->output_tokens);
	cr_assert_eq(notebook_usage(a)->cached_tokens,
	    notebook_usage(b)->cached_tokens);
	cr_assert_eq(notebook_nsent(a), notebook_nsent(b));
	for (int i = 0; i < notebook_nsent(a); i++) {
		const char *wa, *wb;
		size_t la, lb;
		const char *x = notebook_sent(a, i, &wa, &la);
		const char *y = notebook_sent(b, i, &wb, &lb);
		cr_assert_str_eq(wa, wb);
		cr_assert_eq(la, lb);
		cr_assert_eq(x == NULL, y == NULL, "request %d kept in one only", i);
		cr_assert(x == NULL || memcmp(x, y, la) == 0);
	}
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

static char *
slurp(const char *path, size_t *len)
{
	char *s = read_file(path, 1u << 30, len);
	cr_assert_not_null(s, "%s: %s", path, strerror(errno));
	return s;
}

static void
spit(const char *path, const char *s, size_t len)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	cr_assert(fd >= 0);
	cr_assert_eq(write_all(fd, s, len), 0);
	close(fd);
}

Test(journal, events_read_back_equal)
{
	char *dir = tmpdir(), *err = NULL, *path;
	char *data = write_data(dir, "sales.csv", "month,revenue\n1,10\n");
	struct journal_info info = { "openai", "gpt-test" };
	struct datafile f;
	struct notebook *nb = notebook_new(), *nb2 = notebook_new();
	struct journal_meta m;
	struct journal *j;
	struct cell *c;

	j = jcreate(dir, NULL, &info, nb, &err);
	cr_assert_not_null(j, "%s", err);
	cr_assert_eq(datafile_fingerprint(data, &f, &err), 0, "%s", err);
	f.sandbox = xstrdup("/workspace/data/sales.csv");
	notebook_add_file(nb, &f);
	datafile_free(&f);
	play_question(j, nb, "What is 6*7?", "/tmp/out/plot.png");
	/* a hand-run cell that raises */
	c = notebook_add_cell(nb, CELL_BY_USER, "1/0", NULL);
	{
		struct cell_result r = { .status = CELL_ERROR,
		    .ename = "ZeroDivisionError", .evalue = "division by zero",
		    .traceback = "Traceback (most recent call last):\n"
		    "ZeroDivisionError: division by zero\n", .state_lost = 1 };
		notebook_cell_result(nb, c->n, &r);
	}
	cr_assert_null(journal_failed(j));
	path = store_journal_path(dir, journal_id(j));
	jclose(j);

	cr_assert_eq(journal_load(path, nb2, &m, &err), 0, "%s", err);
	assert_notebooks_equal(nb, nb2);
	cr_assert_eq(m.skipped, 0);
	cr_assert_eq(m.torn, 0);
	cr_assert_eq(m.nquestions, 1);
	cr_assert_str_eq(m.first_question, "What is 6*7?");
	cr_assert_str_eq(m.provider, "openai");
	cr_assert_str_eq(m.model, "gpt-test");
	cr_assert_eq(notebook_nfiles(nb2), 1);
	cr_assert_eq(notebook_file(nb2, 0)->size, 19);
	cr_assert(strncmp(notebook_file(nb2, 0)->fingerprint, "sha256:", 7) == 0);
	cr_assert_eq(datafile_check(notebook_file(nb2, 0), NULL), 0);
	/* where that sandbox had it is no use to the next one */
	cr_assert_null(notebook_file(nb2, 0)->sandbox);
	cr_assert_eq(strlen(m.id), strlen("20261129-153012-ab12"));
	journal_meta_free(&m);
	notebook_free(nb);
	notebook_free(nb2);
	free(path);
	free(data);
	rm_rf(dir);
	free(dir);
}

Test(journal, large_output_stored_once_as_head_and_tail)
{
	char *dir = tmpdir(), *err = NULL, *path;
	struct notebook *nb = notebook_new(), *nb2 = notebook_new();
	struct journal_meta m;
	struct journal *j = jcreate(dir, NULL, NULL, nb, &err);
	struct cell *c;
	char chunk[8192];
	struct stat st;
	int nchunks = 128;	/* 1 MiB through a 256 KiB + 64 KiB capture */

	cr_assert_not_null(j, "%s", err);
	c = notebook_add_cell(nb, CELL_BY_USER, "for i in range(10**6): print(i)",
	    NULL);
	for (int i = 0; i < nchunks; i++) {
		memset(chunk, 'a' + i % 26, sizeof chunk);
		chunk[sizeof chunk - 1] = '\n';
		out(nb, c, 0, chunk, sizeof chunk);
	}
	result(nb, c, CELL_OK);
	path = store_journal_path(dir, journal_id(j));
	jclose(j);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_lt(st.st_size, CELL_OUT_HEAD + CELL_OUT_TAIL + 16384,
	    "journal is %lld bytes", (long long)st.st_size);
	cr_assert_eq(journal_load(path, nb2, &m, &err), 0, "%s", err);
	assert_notebooks_equal(nb, nb2);
	cr_assert_eq(outcap_dropped(&notebook_cell(nb2, 1)->out[0]),
	    (uint64_t)nchunks * sizeof chunk - CELL_OUT_HEAD - CELL_OUT_TAIL);
	journal_meta_free(&m);
	notebook_free(nb);
	notebook_free(nb2);
	free(path);
	rm_rf(dir);
	free(dir);
}

Test(journal, torn_last_line_ignored_and_cut_on_resume)
{
	char *dir = tmpdir(), *err = NULL, *path, *s;
	struct notebook *nb = notebook_new(), *nb2 = notebook_new(), *nb3;
	struct journal_meta m;
	struct journal *j = jcreate(dir, NULL, NULL, nb, &err);
	char *id;
	size_t len;
	int fd;
	static const char torn[] = "{\"t\":\"result\",\"c\":1,\"sta";

	cr_assert_not_null(j, "%s", err);
	play_question(j, nb, "first?", "/tmp/p.png");
	id = xstrdup(journal_id(j));
	path = store_journal_path(dir, id);
	jclose(j);
	fd = open(path, O_WRONLY | O_APPEND);
	cr_assert_eq(write_all(fd, torn, sizeof torn - 1), 0);
	close(fd);

	cr_assert_eq(journal_load(path, nb2, &m, &err), 0, "%s", err);
	cr_assert_eq(m.torn, 1);
	cr_assert_eq(m.skipped, 0);
	assert_notebooks_equal(nb, nb2);

	/* resume: the torn bytes are cut, new lines append cleanly */
	j = jreopen(dir, id, nb2, &m, &err);
	journal_meta_free(&m);
	cr_assert_not_null(j, "%s", err);
	s = slurp(path, &len);
	cr_assert_eq(s[len - 1], '\n');
	cr_assert_null(strstr(s, "\"sta\n"));
	free(s);
	play_question(j, nb2, "second?", "/tmp/q.png");
	jclose(j);
	nb3 = notebook_new();
	cr_assert_eq(journal_load(path, nb3, &m, &err), 0, "%s", err);
	cr_assert_eq(m.torn, 0);
	cr_assert_eq(m.skipped, 0);
	cr_assert_eq(m.nquestions, 2);
	cr_assert_eq(m.nresumed, 1);
	assert_notebooks_equal(nb2, nb3);
	cr_assert_eq(notebook_ncells(nb3), 2);
	journal_meta_free(&m);
	notebook_free(nb);
	notebook_free(nb2);
	notebook_free(nb3);
	free(path);
	free(id);
	rm_rf(dir);
	free(dir);
}

Test(journal, corrupt_middle_line_skipped_with_count)
{
	char *dir = tmpdir(), *err = NULL, *path, *s, *t, *nl;
	struct notebook *nb = notebook_new(), *nb2 = notebook_new();
	struct journal_meta m;
	struct journal *j = jcreate(dir, NULL, NULL, nb, &err);
	size_t len;

	cr_assert_not_null(j, "%s", err);
	play_question(j, nb, "q?", "/tmp/p.png");
	path = store_journal_path(dir, journal_id(j));
	jclose(j);
	s = slurp(path, &len);
	/* after the meta line: a line of garbage and a "turn" line whose
	 * JSON is cut (a usage line would change the totals) */
	nl = strchr(s, '\n');
	t = xasprintf("%.*s\n#garbage{{\n{\"t\":\"turn\",\"n\":\n%s",
	    (int)(nl - s), s, nl + 1);
	spit(path, t, strlen(t));
	cr_assert_eq(journal_load(path, nb2, &m, &err), 0, "%s", err);
	cr_assert_eq(m.skipped, 2);
	cr_assert_eq(m.torn, 0);
	assert_notebooks_equal(nb, nb2);
	journal_meta_free(&m);
	notebook_free(nb);
	notebook_free(nb2);
	free(s);
	free(t);
	free(path);
	rm_rf(dir);
	free(dir);
}

Test(journal, crash_mid_cell_is_repaired)
{
	char *dir = tmpdir(), *err = NULL, *path;
	struct notebook *nb = notebook_new(), *nb2 = notebook_new();
	struct journal_meta m;
	struct journal *j = jcreate(dir, NULL, NULL, nb, &err);
	struct cell *c;
	const cJSON *last;

	cr_assert_not_null(j, "%s", err);
	notebook_add_question(nb, "slow?", NULL);
	emit(j, EV_QUESTION, NULL, "slow?", 5);
	call_reply(nb, "call_9", "import time; time.sleep(99)");
	c = notebook_add_cell(nb, CELL_BY_MODEL, "import time; time.sleep(99)",
	    "call_9");
	out(nb, c, 0, "started\n", 8);
	path = store_journal_path(dir, journal_id(j));
	/* no close: as if killed (the lock goes with the process) */
	cr_assert_eq(journal_load(path, nb2, &m, &err), 0, "%s", err);
	cr_assert_eq(notebook_ncells(nb2), 1);
	c = notebook_cell(nb2, 1);
	cr_assert_eq(c->status, CELL_INTERRUPTED);
	cr_assert_not_null(c->reason);
	cr_assert_eq(c->out[0].total, 8);
	cr_assert_eq(cJSON_GetArraySize(notebook_messages(nb2)), 3);
	last = cJSON_GetArrayItem(notebook_messages(nb2), 2);
	cr_assert_str_eq(cJSON_GetObjectItem(last, "role")->valuestring, "tool");
	cr_assert_str_eq(cJSON_GetObjectItem(last, "tool_call_id")->valuestring,
	    "call_9");
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(last, "is_error")));
	journal_meta_free(&m);
	jclose(j);
	notebook_free(nb);
	notebook_free(nb2);
	free(path);
	rm_rf(dir);
	free(dir);
}

/* A crash mid-cell, then the session resumed and asked again: the
 * repair's result goes in the middle of the conversation, before the
 * next question, which keeps its place. */
Test(journal, crash_mid_cell_then_resumed_is_repaired_in_place)
{
	char *dir = tmpdir(), *err = NULL, *path;
	struct notebook *nb = notebook_new(), *nb2 = notebook_new();
	struct journal_meta m;
	struct journal *j = jcreate(dir, NULL, NULL, nb, &err);
	const cJSON *msgs;

	cr_assert_not_null(j, "%s", err);
	notebook_add_question(nb, "slow?", NULL);
	call_reply(nb, "call_9", "import time; time.sleep(99)");
	notebook_add_cell(nb, CELL_BY_MODEL, "import time; time.sleep(99)",
	    "call_9");
	notebook_add_question(nb, "again?", NULL);
	notebook_add_reply(nb, "Yes.", NULL);
	path = store_journal_path(dir, journal_id(j));
	cr_assert_eq(journal_load(path, nb2, &m, &err), 0, "%s", err);
	msgs = notebook_messages(nb2);
	cr_assert_eq(cJSON_GetArraySize(msgs), 5);
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 2),
	    "tool_call_id")->valuestring, "call_9");
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 3),
	    "content")->valuestring, "again?");
	cr_assert_eq(notebook_question(nb2, 1)->msg, 3);
	cr_assert_str_eq(notebook_question_at(nb2, 3)->text, "again?");
	journal_meta_free(&m);
	jclose(j);
	notebook_free(nb);
	notebook_free(nb2);
	free(path);
	rm_rf(dir);
	free(dir);
}

/* Version 1 wrote a message again when the agent completed it in place
 * (same index): the loader keeps the last one. */
Test(journal, legacy_message_completed_in_place_is_replaced)
{
	char *dir = tmpdir(), *err = NULL, *path = xasprintf("%s/nb.jsonl", dir);
	struct notebook *nb = notebook_new(), *nb2 = notebook_new();
	struct journal_meta m;
	static const char text[] =
	    "{\"t\":\"meta\",\"v\":1,\"id\":\"20260101-000000-abcd\",\"data\":[]}\n"
	    "{\"t\":\"msg\",\"i\":0,\"m\":{\"role\":\"user\",\"content\":\"hi\"}}\n"
	    "{\"t\":\"question\",\"text\":\"hi\"}\n"
	    "{\"t\":\"msg\",\"i\":1,\"m\":{\"role\":\"assistant\",\"content\":\"Hel\"}}\n"
	    "{\"t\":\"turn\",\"n\":1}\n"
	    "{\"t\":\"msg\",\"i\":1,\"m\":{\"role\":\"assistant\",\"content\":\"Hello.\"}}\n"
	    "{\"t\":\"answer\",\"text\":\"Hello.\"}\n";
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	notebook_add_question(nb, "hi", NULL);
	notebook_add_reply(nb, "Hello.", NULL);
	cr_assert_eq(journal_load(path, nb2, &m, &err), 0, "%s", err);
	assert_notebooks_equal(nb, nb2);
	journal_meta_free(&m);
	notebook_free(nb);
	notebook_free(nb2);
	free(path);
	rm_rf(dir);
	free(dir);
}

Test(journal, not_a_journal)
{
	char *dir = tmpdir(), *err = NULL;
	char *p = write_data(dir, "x.jsonl", "{\"t\":\"question\",\"text\":\"q\"}\n");
	struct notebook *nb = notebook_new();
	struct journal_meta m;

	cr_assert_eq(journal_load(p, nb, &m, &err), -1);
	cr_assert_not_null(strstr(err, "no meta line"), "%s", err);
	free(err);
	err = NULL;
	journal_meta_free(&m);
	cr_assert_eq(journal_load("/nonexistent/terp.jsonl", nb, &m, &err), -1);
	free(err);
	journal_meta_free(&m);
	notebook_free(nb);
	free(p);
	rm_rf(dir);
	free(dir);
}

static char *
make_session(const char *dir, const char *q, time_t mtime)
{
	struct notebook *nb = notebook_new();
	char *err = NULL, *id, *path;
	struct journal *j = jcreate(dir, NULL, NULL, nb, &err);
	struct timeval tv[2] = { { mtime, 0 }, { mtime, 0 } };

	cr_assert_not_null(j, "%s", err);
	if (q != NULL) {
		play_question(j, nb, q, "/tmp/p.png");
		notebook_add_question(nb, "again", NULL);
		emit(j, EV_QUESTION, NULL, "again", 5);
	}
	id = xstrdup(journal_id(j));
	jclose(j);
	notebook_free(nb);
	path = store_journal_path(dir, id);
	cr_assert_eq(utimes(path, tv), 0);
	free(path);
	return id;
}

Test(journal, list_sorted_by_last_activity)
{
	char *dir = tmpdir(), *err = NULL;
	char *old = make_session(dir, "Which month?", 1000000000);
	char *recent = make_session(dir, "Plot it", 2000000000);
	char *empty = make_session(dir, NULL, 1500000000);
	struct journal_meta *l;
	int n;
	char *junk = xasprintf("%s/not-a-session", dir);

	cr_assert_eq(mkdir(junk, 0700), 0);	/* no journal: not listed */
	cr_assert_eq(resume_list(dir, &l, &n, &err), 0, "%s", err);
	/* a session without a cell or a reply is not listed either */
	cr_assert_eq(n, 2);
	cr_assert_str_eq(l[0].id, recent);
	cr_assert_str_eq(l[1].id, old);
	cr_assert_eq(l[0].nquestions, 2);
	cr_assert_str_eq(l[0].first_question, "Plot it");
	cr_assert_eq(l[0].last_active, 2000000000);
	cr_assert(l[0].ncells > 0 && l[0].nreplies > 0);
	cr_assert_str_eq(l[1].first_question, "Which month?");
	resume_list_free(l, n);
	{
		struct journal_meta m;
		char *path = store_journal_path(dir, empty);
		cr_assert_eq(journal_read_meta(path, &m, &err), 0, "%s", err);
		cr_assert_eq(m.ncells, 0);
		cr_assert_eq(m.nreplies, 0);
		cr_assert(resume_meta_empty(&m));
		journal_meta_free(&m);
		free(path);
	}

	cr_assert_eq(resume_list("/nonexistent/terp", &l, &n, &err), 0);
	cr_assert_eq(n, 0);
	free(old);
	free(recent);
	free(empty);
	free(junk);
	rm_rf(dir);
	free(dir);
}

Test(journal, delete_refuses_bad_ids_and_never_follows_links)
{
	char *dir = tmpdir(), *outside = tmpdir(), *err = NULL;
	char *id = make_session(dir, "q", 1000000000);
	char *keep = write_data(outside, "keep.txt", "precious");
	char *sdir = xasprintf("%s/%s", dir, id);
	char *link = xasprintf("%s/workspace", sdir);
	char *deep = xasprintf("%s/a/b/c", sdir);
	char *ro = xasprintf("%s/a", sdir);
	struct stat st;
	const char *bad[] = { "", ".", "..", "../x", "a/b", "/etc", ".hidden",
	    "x..y" };

	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		cr_assert_eq(store_delete(dir, bad[i], &err), -1, "%s", bad[i]);
		free(err);
		err = NULL;
	}
	cr_assert_eq(store_delete(dir, "20200101-000000-0000", &err), -1);
	free(err);
	err = NULL;
	cr_assert_eq(symlink(outside, link), 0);
	cr_assert_eq(mkdir_p(deep, 0700), 0);
	free(write_data(deep, "f", "x"));
	cr_assert_eq(chmod(ro, 0500), 0);	/* read-only folder inside */
	cr_assert_eq(store_delete(dir, id, &err), 0, "%s", err);
	cr_assert_eq(lstat(sdir, &st), -1);
	cr_assert_eq(stat(keep, &st), 0, "the link was followed");
	free(id);
	free(keep);
	free(sdir);
	free(link);
	free(deep);
	free(ro);
	rm_rf(dir);
	rm_rf(outside);
	free(dir);
	free(outside);
}

Test(journal, delete_and_reopen_refuse_a_session_in_use)
{
	char *dir = tmpdir(), *err = NULL;
	struct notebook *nb = notebook_new();
	struct journal *j = jcreate(dir, NULL, NULL, nb, &err), *j2;

	cr_assert_not_null(j, "%s", err);
	cr_assert_eq(store_delete(dir, journal_id(j), &err), -1);
	cr_assert_not_null(strstr(err, "another terp"), "%s", err);
	free(err);
	err = NULL;
	{
		struct journal_meta m = { .live_from = 1 };
		j2 = jreopen(dir, journal_id(j), nb, &m, &err);
	}
	cr_assert_null(j2);
	cr_assert_not_null(strstr(err, "another terp"), "%s", err);
	free(err);
	jclose(j);
	notebook_free(nb);
	rm_rf(dir);
	free(dir);
}

Test(journal, ids)
{
	char *a = store_new_id();
	cr_assert_eq(store_id_valid(a), 0);
	cr_assert_eq(strlen(a), 20);
	cr_assert_eq(a[8], '-');
	cr_assert_eq(a[15], '-');
	cr_assert_eq(store_id_valid("20261129-153012-ab12"), 0);
	cr_assert_eq(store_id_valid("a/b"), -1);
	cr_assert_eq(store_id_valid(".."), -1);
	cr_assert_null(store_journal_path("/x", "../y"));
	free(a);
}

Test(journal, fingerprint_detects_change_and_loss)
{
	char *dir = tmpdir(), *err = NULL, *why = NULL;
	char *p = write_data(dir, "d.csv", "a,b\n1,2\n");
	struct datafile f;

	cr_assert_eq(datafile_fingerprint(p, &f, &err), 0, "%s", err);
	{
		struct sha256 h;
		unsigned char d[32];
		char hex[65], *want;
		sha256_init(&h);
		sha256_add(&h, "a,b\n1,2\n", 8);
		sha256_done(&h, d);
		sha256_hex(d, hex);
		want = xasprintf("sha256:%s", hex);
		cr_assert_str_eq(f.fingerprint, want);
		free(want);
	}
	cr_assert_eq(f.size, 8);
	cr_assert_eq(f.path[0], '/');
	cr_assert_eq(datafile_check(&f, &why), 0);
	free(write_data(dir, "d.csv", "a,b\n1,3\n"));	/* same size */
	cr_assert_eq(datafile_check(&f, &why), 1);
	cr_assert_not_null(strstr(why, "changed"), "%s", why);
	free(why);
	free(write_data(dir, "d.csv", "a,b\n1,3,4\n"));
	cr_assert_eq(datafile_check(&f, &why), 1);
	cr_assert_not_null(strstr(why, "bytes"), "%s", why);
	free(why);
	cr_assert_eq(unlink(p), 0);
	cr_assert_eq(datafile_check(&f, &why), 2);
	cr_assert_not_null(strstr(why, "gone"), "%s", why);
	free(why);
	datafile_free(&f);
	free(p);
	rm_rf(dir);
	free(dir);
}

Test(digest, sha256_vectors)
{
	struct sha256 s;
	unsigned char d[32];
	char hex[65];
	char million[1000];

	sha256_init(&s);
	sha256_add(&s, "abc", 3);
	sha256_done(&s, d);
	sha256_hex(d, hex);
	cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223"
	    "b00361a396177a9cb410ff61f20015ad");
	sha256_init(&s);
	sha256_done(&s, d);
	sha256_hex(d, hex);
	cr_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb924"
	    "27ae41e4649b934ca495991b7852b855");
	/* a million 'a' fed in uneven pieces */
	memset(million, 'a', sizeof million);
	sha256_init(&s);
	for (int i = 0; i < 1000; i++)
		sha256_add(&s, million, i % 2 ? 999 : 1000);
	sha256_add(&s, million, 500);
	sha256_done(&s, d);
	sha256_hex(d, hex);
	cr_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67"
	    "f1809a48a497200e046d39ccc7112cd0");
}

Test(digest, base64_round_trip)
{
	static const char *plain[] = { "", "f", "fo", "foo", "foob", "fooba",
	    "foobar" };
	static const char *enc[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==",
	    "Zm9vYmE=", "Zm9vYmFy" };
	unsigned char all[256];
	size_t n;
	char *e, *d;

	for (int i = 0; i < 7; i++) {
		e = base64_encode(plain[i], strlen(plain[i]), &n);
		cr_assert_str_eq(e, enc[i]);
		d = base64_decode(e, n, &n);
		cr_assert_str_eq(d, plain[i]);
		free(e);
		free(d);
	}
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	e = base64_encode(all, sizeof all, NULL);
	d = base64_decode(e, strlen(e), &n);
	cr_assert_eq(n, 256);
	cr_assert(memcmp(d, all, 256) == 0);
	free(e);
	free(d);
	cr_assert_null(base64_decode("ab$d", 4, &n));
}

static struct cell *
ran(struct journal *j, struct notebook *nb, const char *code,
    enum cell_status st, int state_lost)
{
	struct cell *c = notebook_add_cell(nb, CELL_BY_USER, code, NULL);
	struct cell_result r = { .status = st, .state_lost = state_lost };

	(void)j;
	notebook_cell_result(nb, c->n, &r);
	return c;
}

static void
kernel_ev(struct journal *j, enum kernel_state st)
{
	struct event ev = { .type = EV_KERNEL, .kstate = st,
	    .state_lost = st == KERNEL_STARTING || st == KERNEL_STOPPED };
	journal_event(j, &ev);
}

Test(journal, replay_rebuilds_the_state_lost_last)
{
	char *dir = tmpdir(), *err = NULL, *path, *id;
	struct notebook *nb = notebook_new(), *nb2 = notebook_new();
	struct journal_meta m;
	struct journal *j = jcreate(dir, NULL, NULL, nb, &err);
	int *cells, n;

	cr_assert_not_null(j, "%s", err);
	kernel_ev(j, KERNEL_STARTING);
	ran(j, nb, "a = 1", CELL_OK, 0);			/* 1 */
	ran(j, nb, "import os; os._exit(1)", CELL_CRASHED, 1);	/* 2: lost */
	kernel_ev(j, KERNEL_STARTING);
	ran(j, nb, "import pandas as pd", CELL_OK, 0);		/* 3 */
	ran(j, nb, "df = pd.DataFrame({'x': [1]})", CELL_OK, 0);	/* 4 */
	ran(j, nb, "1/0", CELL_ERROR, 0);			/* 5 */
	ran(j, nb, "df['y'] = 2", CELL_OK, 0);			/* 6 */
	cr_assert_eq(journal_replay_cells(j, &cells), 1);	/* 1 only */
	cr_assert_eq(cells[0], 1);
	free(cells);
	id = xstrdup(journal_id(j));
	path = store_journal_path(dir, id);
	jclose(j);

	cr_assert_eq(journal_load(path, nb2, &m, &err), 0, "%s", err);
	cr_assert_eq(m.live_from, 3);
	j = jreopen(dir, id, nb2, &m, &err);
	cr_assert_not_null(j, "%s", err);
	journal_meta_free(&m);
	n = journal_replay_cells(j, &cells);
	cr_assert_eq(n, 3);
	cr_assert_eq(cells[0], 3);
	cr_assert_eq(cells[1], 4);
	cr_assert_eq(cells[2], 6);
	free(cells);
	/* the fresh sandbox starts: nothing more is lost */
	kernel_ev(j, KERNEL_STARTING);
	cr_assert_eq(journal_replay_cells(j, &cells), 3);
	free(cells);
	/* hand-run cells before the resume were told to no question yet */
	cr_assert_eq(notebook_cell(nb2, 6)->told_model, 0);
	jclose(j);
	notebook_free(nb);
	notebook_free(nb2);
	free(path);
	free(id);
	rm_rf(dir);
	free(dir);
}

/* /py y = 42, /reset, /py print(y) (NameError), /restart: the state
 * the restart lost had nothing in it (every cell failed), so the one to
 * rebuild is still y = 42's, in the journal and once it is read back. */
Test(journal, a_lost_state_where_every_cell_failed_keeps_the_one_before)
{
	char *dir = tmpdir(), *err = NULL, *path, *id;
	struct notebook *nb = notebook_new(), *nb2 = notebook_new();
	struct journal_meta m;
	struct journal *j = jcreate(dir, NULL, NULL, nb, &err);
	int *cells;

	cr_assert_not_null(j, "%s", err);
	kernel_ev(j, KERNEL_STARTING);
	ran(j, nb, "y = 42", CELL_OK, 0);			/* 1 */
	journal_note(j, "reset", NULL);
	ran(j, nb, "print(y)", CELL_ERROR, 0);			/* 2 */
	kernel_ev(j, KERNEL_STARTING);				/* /restart */
	cr_assert_eq(journal_replay_cells(j, &cells), 1);
	cr_assert_eq(cells[0], 1);
	free(cells);
	/* a cell that succeeds after it makes its own state again */
	ran(j, nb, "z = 1", CELL_OK, 0);			/* 3 */
	ran(j, nb, "1/0", CELL_ERROR, 0);			/* 4 */
	kernel_ev(j, KERNEL_STARTING);
	cr_assert_eq(journal_replay_cells(j, &cells), 1);
	cr_assert_eq(cells[0], 3);
	free(cells);
	ran(j, nb, "1/0", CELL_ERROR, 0);			/* 5 */
	kernel_ev(j, KERNEL_STARTING);
	id = xstrdup(journal_id(j));
	path = store_journal_path(dir, id);
	jclose(j);

	cr_assert_eq(journal_load(path, nb2, &m, &err), 0, "%s", err);
	cr_assert_eq(m.replay_from, 3);
	cr_assert_eq(m.replay_to, 4);
	cr_assert_eq(m.live_from, 6);
	journal_meta_free(&m);
	notebook_free(nb);
	notebook_free(nb2);
	free(path);
	free(id);
	rm_rf(dir);
	free(dir);
}

Test(journal, create_with_a_given_id)
{
	char *dir = tmpdir(), *err = NULL, *sdir;
	struct notebook *nb = notebook_new();
	struct journal *j;

	sdir = xasprintf("%s/20260101-120000-beef", dir);
	cr_assert_eq(mkdir(sdir, 0711), 0);	/* main made it already */
	j = jcreate(dir, "20260101-120000-beef", NULL, nb, &err);
	cr_assert_not_null(j, "%s", err);
	cr_assert_str_eq(journal_id(j), "20260101-120000-beef");
	cr_assert_str_eq(journal_dir(j), sdir);
	jclose(j);
	/* the journal exists: a second create must not clobber it */
	cr_assert_null(jcreate(dir, "20260101-120000-beef", NULL, nb,
	    &err));
	free(err);
	err = NULL;
	cr_assert_null(jcreate(dir, "../evil", NULL, nb, &err));
	free(err);
	notebook_free(nb);
	free(sdir);
	rm_rf(dir);
	free(dir);
}

/* Journals written before questions were kept apart from their notes:
 * the user message whole, then a question record with the text. The
 * loader puts each question in with its notes apart, and the message
 * comes out as it was sent. */
Test(journal, legacy_questions_load_apart_from_their_notes)
{
	char *dir = tmpdir(), *err = NULL, *path = xasprintf("%s/nb.jsonl", dir);
	struct notebook *nb = notebook_new();
	struct journal_meta m;
	const struct question *q;
	static const char text[] =
	    "{\"t\":\"meta\",\"v\":1,\"id\":\"20260101-000000-abcd\",\"data\":[]}\n"
	    /* a question that reads like a note, sent without notes */
	    "{\"t\":\"msg\",\"i\":0,\"m\":{\"role\":\"user\",\"content\":"
	    "\"Note: x\\nQuestion: y\"}}\n"
	    "{\"t\":\"question\",\"text\":\"Note: x\\nQuestion: y\"}\n"
	    "{\"t\":\"msg\",\"i\":1,\"m\":{\"role\":\"assistant\",\"content\":\"a\"}}\n"
	    /* notes, then the question */
	    "{\"t\":\"msg\",\"i\":2,\"m\":{\"role\":\"user\",\"content\":"
	    "\"Note: the user restarted.\\n\\nQuestion: and now?\"}}\n"
	    "{\"t\":\"question\",\"text\":\"and now?\"}\n"
	    /* the last line cut before its question record */
	    "{\"t\":\"msg\",\"i\":3,\"m\":{\"role\":\"user\",\"content\":"
	    "\"Since your last turn the user ran cells.\\n\\nQuestion: more?\"}}\n";
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(journal_load(path, nb, &m, &err), 0, "%s", err);
	cr_assert_eq(m.skipped, 0);
	cr_assert_eq(notebook_nquestions(nb), 3);
	q = notebook_question(nb, 0);
	cr_assert_eq(q->msg, 0);
	cr_assert_str_eq(q->text, "Note: x\nQuestion: y");
	cr_assert_null(q->notes);
	q = notebook_question(nb, 1);
	cr_assert_eq(q->msg, 2);
	cr_assert_str_eq(q->text, "and now?");
	cr_assert_str_eq(q->notes, "Note: the user restarted.\n");
	q = notebook_question(nb, 2);
	cr_assert_eq(q->msg, 3);
	cr_assert_str_eq(q->text, "more?");
	cr_assert_str_eq(q->notes, "Since your last turn the user ran cells.\n");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(
	    notebook_messages(nb), 2), "content")),
	    "Note: the user restarted.\n\nQuestion: and now?");
	cr_assert_eq(cJSON_GetArraySize(notebook_messages(nb)), 4);
	journal_meta_free(&m);
	notebook_free(nb);
	rm_rf(dir);
	free(dir);
	free(path);
}

/* A long session: the notebook keeps every request's size but only the
 * last NOTEBOOK_SENT_KEEP bodies; the journal has them all, read back
 * for /sent N, also after a resume. */
Test(journal, long_session_keeps_few_request_bodies)
{
	char *dir = tmpdir(), *err = NULL, *body;
	struct notebook *nb = notebook_new(), *nb2 = notebook_new();
	struct journal_meta m;
	struct journal *j;
	const int n = 1000;
	size_t len;
	int kept = 0;

	j = jcreate(dir, NULL, NULL, nb, &err);
	cr_assert_not_null(j, "%s", err);
	for (int i = 0; i < n; i++) {
		char *b = xasprintf("{\"turn\":%d,\"pad\":\"%0400d\"}", i, i);
		notebook_add_sent(nb, "POST /v1/chat", b, strlen(b));
		free(b);
	}
	cr_assert_eq(notebook_nsent(nb), n);
	for (int i = 0; i < n; i++) {
		const char *what;
		const char *b = notebook_sent(nb, i, &what, &len);
		cr_assert_str_eq(what, "POST /v1/chat");
		cr_assert_gt(len, 400, "the size of every request stays");
		kept += b != NULL;
		if (i >= n - NOTEBOOK_SENT_KEEP)
			cr_assert_not_null(b, "request %d: the last ones are kept", i);
	}
	cr_assert_eq(kept, NOTEBOOK_SENT_KEEP);
	body = journal_read_sent(j, 0, &len, &err);
	cr_assert_not_null(body, "%s", err);
	cr_assert_eq(strncmp(body, "{\"turn\":0,", 10), 0, "%s", body);
	cr_assert_eq(len, strlen(body));
	free(body);
	body = journal_read_sent(j, 737, &len, &err);
	cr_assert_not_null(body, "%s", err);
	cr_assert_eq(strncmp(body, "{\"turn\":737,", 12), 0, "%s", body);
	free(body);
	cr_assert_null(journal_read_sent(j, n, &len, &err));
	cr_assert_not_null(strstr(err, "not in the journal"), "%s", err);
	free(err);
	err = NULL;
	body = store_journal_path(dir, journal_id(j));
	jclose(j);
	/* loaded again (a resume): the same bounded notebook */
	cr_assert_eq(journal_load(body, nb2, &m, &err), 0, "%s", err);
	kept = 0;
	for (int i = 0; i < notebook_nsent(nb2); i++)
		kept += notebook_sent(nb2, i, NULL, NULL) != NULL;
	cr_assert_eq(notebook_nsent(nb2), n);
	cr_assert_eq(kept, NOTEBOOK_SENT_KEEP);
	journal_meta_free(&m);
	free(body);
	notebook_free(nb);
	notebook_free(nb2);
	rm_rf(dir);
	free(dir);
}

/* A request body repeats the one before and adds the new turn: the
 * journal writes what is new ("keep" bytes of the one before, then the
 * rest), not the whole conversation every turn, and every body reads
 * back exactly, past 64 KiB too, after a change in the middle (a
 * compaction), after a lost line, and after a resume. */
static char *
grown_body(struct buf *conv, int i, int edited)
{
	buf_printf(conv, "%s{\"role\":\"tool\",\"content\":\"turn %d \\u00e9 %0300d\"}",
	    i ? "," : "", i, i);
	return xasprintf("{\"model\":\"m\",\"messages\":[%s%s],\"stream\":true}",
	    edited ? "{\"role\":\"user\",\"content\":\"summary\"}," : "", buf_str(conv));
}

Test(journal, request_bodies_written_as_what_is_new)
{
	char *dir = tmpdir(), *err = NULL, *path, *body;
	struct notebook *nb = notebook_new(), *nb2 = notebook_new();
	struct journal_meta m;
	struct journal *j;
	struct buf conv;
	const int n = 400;
	char **want = xcalloc(n + 2, sizeof *want);
	size_t len, total = 0;
	struct stat st;

	buf_init(&conv, 1 << 24);
	j = jcreate(dir, NULL, NULL, nb, &err);
	cr_assert_not_null(j, "%s", err);
	for (int i = 0; i < n; i++) {
		/* turn 100: the conversation changes at its start */
		want[i] = grown_body(&conv, i, i >= 100);
		total += strlen(want[i]);
		notebook_add_sent(nb, "openai m", want[i], strlen(want[i]));
	}
	cr_assert_gt(strlen(want[n - 1]), 64 * 1024, "past the old limit");
	path = store_journal_path(dir, journal_id(j));
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_lt((size_t)st.st_size, total / 20, "journal %lld bytes for %zu of requests",
	    (long long)st.st_size, total);
	for (int i = 0; i < n; i += i < 98 || i > n - 4 ? 1 : 7) {
		body = journal_read_sent(j, i, &len, &err);
		cr_assert_not_null(body, "%d: %s", i, err);
		cr_assert_eq(len, strlen(want[i]), "%d", i);
		cr_assert_str_eq(body, want[i], "request %d", i);
		free(body);
	}
	jclose(j);
	cr_assert_eq(journal_load(path, nb2, &m, &err), 0, "%s", err);
	cr_assert_eq(notebook_nsent(nb2), n);
	for (int i = n - NOTEBOOK_SENT_KEEP; i < n; i++)
		cr_assert_str_eq(notebook_sent(nb2, i, NULL, NULL), want[i], "%d", i);
	/* resumed: the next request goes whole, then as deltas again */
	j = jreopen(dir, m.id, nb2, &m, &err);
	cr_assert_not_null(j, "%s", err);
	for (int i = n; i < n + 2; i++) {
		want[i] = grown_body(&conv, i, 1);
		notebook_add_sent(nb2, "openai m", want[i], strlen(want[i]));
	}
	for (int i = n - 1; i < n + 2; i++) {
		body = journal_read_sent(j, i, &len, &err);
		cr_assert_not_null(body, "%d: %s", i, err);
		cr_assert_str_eq(body, want[i], "request %d", i);
		free(body);
	}
	jclose(j);
	journal_meta_free(&m);
	/* a lost line (cut out): what depended on it is not made up */
	{
		char *cmd = xasprintf("sed -i '0,/\"t\":\"sent\".*\"n\":300,/{/\"n\":300,/d}' '%s'",
		    path);
		cr_assert_eq(system(cmd), 0);
		free(cmd);
	}
	notebook_free(nb2);
	nb2 = notebook_new();
	cr_assert_eq(journal_load(path, nb2, &m, &err), 0, "%s", err);
	cr_assert_eq(notebook_nsent(nb2), n + 1);
	for (int i = n + 1 - NOTEBOOK_SENT_KEEP; i < n + 1; i++) {
		const char *b = notebook_sent(nb2, i, NULL, NULL);
		cr_assert_not_null(strstr(b, "not in the journal"), "%d: %.80s", i, b);
	}
	journal_meta_free(&m);
	for (int i = 0; i < n + 2; i++)
		free(want[i]);
	free(want);
	buf_free(&conv);
	free(path);
	notebook_free(nb);
	notebook_free(nb2);
	rm_rf(dir);
	free(dir);
}

/* A long session's journal loads in time linear in its size: only the
 * bodies the notebook keeps are built, each from the deltas back to the
 * whole one. 6,000 requests each 1 KiB longer than the one before: the
 * journal is 6 MB, the sum of all bodies 18 GB (what the loader used to
 * build and copy, request by request: minutes here, past the timeout).
 * The kept bodies and one read back by /sent are exact; a delta that
 * names the wrong request stands in for its body and what follows. */
Test(journal, long_session_loads_in_time_linear_in_the_journal, .timeout = 60)
{
	const char *id = "20260101-000000-abcd";
	char *dir = tmpdir(), *err = NULL, *path = store_journal_path(dir, id);
	struct notebook *nb = notebook_new();
	struct journal_meta m;
	const int n = 6000, t = 1024;
	char tail[1025], num[16];
	size_t len;
	FILE *f;

	*strrchr(path, '/') = '\0';
	cr_assert_eq(mkdir(path, 0700), 0);
	path[strlen(path)] = '/';
	cr_assert_not_null(f = fopen(path, "w"));
	fprintf(f, "{\"t\":\"meta\",\"v\":2,\"id\":\"20260101-000000-abcd\"}\n");
	for (int i = 0; i < n; i++) {
		/* request i adds t bytes: its number, then letters */
		memset(tail, 'a' + i % 26, t);
		snprintf(num, sizeof num, "(turn %07d)", i % 10000000);
		memcpy(tail, num, 14);
		tail[t] = '\0';
		if (i == 0)
			fprintf(f, "{\"t\":\"sent\",\"what\":\"openai m\",\"len\":%d,"
			    "\"d\":\"%s\"}\n", t, tail);
		else
			fprintf(f, "{\"t\":\"sent\",\"what\":\"openai m\",\"len\":%d,"
			    "\"n\":%d,\"keep\":%d,\"dt\":\"%s\"}\n", (i + 1) * t,
			    i == n - 3 ? i + 1 : i, i * t, tail);
	}
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(journal_load(path, nb, &m, &err), 0, "%s", err);
	cr_assert_eq(notebook_nsent(nb), n, "%d requests, %d lines skipped",
	    notebook_nsent(nb), m.skipped);
	for (int i = 0; i < n; i++) {
		const char *what, *b = notebook_sent(nb, i, &what, &len);
		cr_assert_str_eq(what, "openai m");
		if (i < n - NOTEBOOK_SENT_KEEP) {
			cr_assert_null(b, "request %d: not kept", i);
			cr_assert_eq(len, (size_t)(i + 1) * t, "request %d: its size stays", i);
			continue;
		}
		cr_assert_not_null(b, "request %d: kept", i);
		if (i >= n - 3) {
			cr_assert_not_null(strstr(b, "not in the journal"), "%d: %.80s", i, b);
			continue;
		}
		cr_assert_eq(len, (size_t)(i + 1) * t, "request %d", i);
		for (int k = 0; k <= i; k += 1 + k / 7) {
			char want[16];
			snprintf(want, sizeof want, "(turn %07d)", k % 10000000);
			cr_assert_eq(memcmp(b + (size_t)k * t, want, 14), 0,
			    "request %d, piece %d: %.14s", i, k, b + (size_t)k * t);
			cr_assert_eq(b[(size_t)k * t + t - 1], 'a' + k % 26);
		}
	}
	cr_assert_eq(m.sent_whole, 0, "the last one stands in");
	{
		/* /sent of an old one, from the journal */
		struct journal *j = jreopen(dir, id, nb, &m, &err);
		char *b;

		cr_assert_not_null(j, "%s", err);
		b = journal_read_sent(j, 4321, &len, &err);
		cr_assert_not_null(b, "%s", err);
		cr_assert_eq(len, (size_t)4322 * t);
		cr_assert_eq(memcmp(b + (size_t)4321 * t, "(turn 0004321)", 14), 0);
		cr_assert_eq(memcmp(b + (size_t)17 * t, "(turn 0000017)", 14), 0);
		free(b);
		jclose(j);
	}
	journal_meta_free(&m);
	notebook_free(nb);
	free(path);
	rm_rf(dir);
	free(dir);
}

/* fdatasync counted: this binary's definition is the one the journal
 * calls (the executable's symbol comes first). */
static int syncs;

int
fdatasync(int fd)
{
	syncs++;
	return (int)syscall(SYS_fdatasync, fd);
}

/* A sync where durability needs one: at a question's edges and at the
 * close, each only when something was written since the last one (the
 * close right after an answer syncs nothing new: no second flush on
 * the exit path). */
Test(journal, syncs_only_what_is_new)
{
	char *dir = tmpdir(), *err = NULL;
	struct notebook *nb = notebook_new();
	struct journal *j = jcreate(dir, NULL, NULL, nb, &err);
	int base;

	cr_assert_not_null(j, "%s", err);
	notebook_add_question(nb, "how many?", NULL);
	base = syncs;
	emit(j, EV_TURN, NULL, NULL, 0);
	emit(j, EV_ANSWER, NULL, "42", 2);
	cr_assert_eq(syncs, base + 1, "the answer syncs the turn's lines");
	emit(j, EV_IDLE, NULL, NULL, 0);
	cr_assert_eq(syncs, base + 1, "nothing new since: no sync");
	cr_assert_eq(journal_sync_due(j), -1, "none deferred");
	emit(j, EV_TURN, NULL, NULL, 0);
	emit(j, EV_IDLE, NULL, NULL, 0);
	/* a cell's end right after a sync: deferred, due within the limit */
	cr_assert_eq(syncs, base + 1, "no second sync within %d ms", JOURNAL_SYNC_MS);
	cr_assert(journal_sync_due(j) >= 0 && journal_sync_due(j) <= JOURNAL_SYNC_MS,
	    "due in %lld ms", (long long)journal_sync_due(j));
	journal_sync_deferred(j);
	cr_assert_eq(syncs, base + 2, "a line since: synced when due");
	cr_assert_eq(journal_sync_due(j), -1);
	jclose(j);
	cr_assert_eq(syncs, base + 2, "the close after the idle: nothing new");
	j = NULL;
	notebook_free(nb);
	rm_rf(dir);
	free(dir);
}

/* terp exec's script: a thousand cells ending within a few ms sync
 * once at the first edge and once at the close, not once per cell;
 * every line is written at once all the same. */
Test(journal, a_script_of_cells_syncs_at_most_every_interval)
{
	char *dir = tmpdir(), *err = NULL, *path;
	struct notebook *nb = notebook_new(), *nb2 = notebook_new();
	struct journal_meta m;
	struct journal *j = jcreate(dir, NULL, NULL, nb, &err);
	int base = syncs, n;

	cr_assert_not_null(j, "%s", err);
	for (int i = 1; i <= 1000; i++) {
		struct cell_result r = { .status = CELL_OK };
		n = notebook_add_cell(nb, CELL_BY_USER, "x = 1", NULL)->n;
		notebook_cell_result(nb, n, &r);
		emit(j, EV_IDLE, NULL, NULL, 0);
	}
	cr_assert_leq(syncs - base, 2, "%d syncs for 1,000 cells", syncs - base);
	path = store_journal_path(dir, journal_id(j));
	cr_assert_eq(journal_load(path, nb2, &m, &err), 0, "%s", err);
	cr_assert_eq(notebook_ncells(nb2), 1000, "every cell written before the sync");
	base = syncs;
	jclose(j);
	cr_assert_eq(syncs, base + 1, "the close syncs what is left");
	journal_meta_free(&m);
	free(path);
	notebook_free(nb);
	notebook_free(nb2);
	rm_rf(dir);
	free(dir);
}

/* The egress ledger: an attempt is written once, when it ends (an open
 * one is not), and comes back into the notebook; a "net" line that is
 * not one is skipped and counted. */
Test(journal, net_attempts_written_when_they_end_and_read_back)
{
	char *dir = tmpdir(), *err = NULL, *path, *s, *t;
	struct notebook *nb = notebook_new(), *nb2 = notebook_new();
	struct journal_meta m;
	struct journal *j = jcreate(dir, NULL, NULL, nb, &err);
	struct net_attempt a = { .cell = 1, .id = 7, .time_ms = 1795956977467,
	    .verdict = NETLOG_ALLOWED, .open = 1, .method = "CONNECT",
	    .host = "index.example.invalid", .port = 443, .code = "ok", .reason = "ok",
	    .up = 10, .down = 20 };
	struct net_attempt r = { .cell = 1, .id = 8, .time_ms = 1795956977468,
	    .verdict = NETLOG_REFUSED, .method = "GET", .host = "evil.example.invalid",
	    .port = 80, .code = "not-allowed", .reason = "not allowed" };
	const struct net_attempt *v;
	size_t n, len;

	cr_assert_not_null(j, "%s", err);
	play_question(j, nb, "q?", "/tmp/p.png");
	notebook_add_net(nb, &a);	/* open: not written */
	a.open = 0;
	a.up = 1000;
	a.down = 2000000;
	strcpy(a.code, "done");
	notebook_add_net(nb, &a);
	notebook_add_net(nb, &r);
	path = store_journal_path(dir, journal_id(j));
	jclose(j);
	s = slurp(path, &len);
	t = xasprintf("%s{\"t\":\"net\",\"cell\":1,\"verdict\":\"allowed\"}\n", s);
	spit(path, t, strlen(t));
	cr_assert_eq(journal_load(path, nb2, &m, &err), 0, "%s", err);
	cr_assert_eq(m.skipped, 1);
	assert_notebooks_equal(nb, nb2);
	v = notebook_nets(nb2, &n, NULL);
	cr_assert_eq(n, 2);
	cr_assert_eq(v[0].cell, 1);
	cr_assert_eq(v[0].verdict, NETLOG_ALLOWED);
	cr_assert_eq(v[0].open, 0);
	cr_assert_str_eq(v[0].method, "CONNECT");
	cr_assert_str_eq(v[0].host, "index.example.invalid");
	cr_assert_eq(v[0].port, 443);
	cr_assert_str_eq(v[0].code, "done");
	cr_assert_eq(v[0].up, 1000);
	cr_assert_eq(v[0].down, 2000000);
	cr_assert_eq(v[0].time_ms, 1795956977467);
	cr_assert_eq(v[1].verdict, NETLOG_REFUSED);
	cr_assert_str_eq(v[1].reason, "not allowed");
	cr_assert_eq(v[1].port, 80);
	journal_meta_free(&m);
	notebook_free(nb);
	notebook_free(nb2);
	free(s);
	free(t);
	free(path);
	rm_rf(dir);
	free(dir);
}

/* What pip installed: each notebook_add_package is one "installed"
 * line, read back into the notebook in order; a line with a name that
 * is not pip's (it would go into Python code at a replay) is skipped
 * and counted. */
Test(journal, installed_packages_written_and_read_back)
{
	char *dir = tmpdir(), *err = NULL, *path, *s, *t;
	struct notebook *nb = notebook_new(), *nb2 = notebook_new();
	struct journal_meta m;
	struct journal *j = jcreate(dir, NULL, NULL, nb, &err);
	const struct package *p;
	size_t len;

	cr_assert_not_null(j, "%s", err);
	play_question(j, nb, "q?", "/tmp/p.png");
	notebook_add_package(nb, 1, "tinypkg", "1.0");
	notebook_add_package(nb, 1, "tinypkg", "1.1");
	notebook_add_package(nb, 1, "other_pkg", "2.0.post1");
	path = store_journal_path(dir, journal_id(j));
	jclose(j);
	s = slurp(path, &len);
	t = xasprintf("%s{\"t\":\"installed\",\"c\":1,\"name\":\"x\\\")\","
	    "\"version\":\"1\"}\n", s);
	spit(path, t, strlen(t));
	cr_assert_eq(journal_load(path, nb2, &m, &err), 0, "%s", err);
	cr_assert_eq(m.skipped, 1);
	cr_assert_eq(notebook_npackages(nb2), 3);
	p = notebook_package(nb2, 1);
	cr_assert_eq(p->cell, 1);
	cr_assert_str_eq(p->name, "tinypkg");
	cr_assert_str_eq(p->version, "1.1");
	cr_assert_str_eq(notebook_package(nb2, 2)->name, "other_pkg");
	journal_meta_free(&m);
	notebook_free(nb);
	notebook_free(nb2);
	free(s);
	free(t);
	free(path);
	rm_rf(dir);
	free(dir);
}

/* The replay segment of a one-cell session after a reopen (want: how
 * many cells to replay), and again after a load. */
static void
check_replay(const char *dir, const char *id, int reach, int lose, int want)
{
	char *err = NULL, *path = store_journal_path(dir, id);
	struct notebook *nb = notebook_new(), *nb2 = notebook_new();
	struct journal_meta m, m2;
	struct journal *j;
	int *cells = NULL;

	cr_assert_eq(journal_load(path, nb, &m, &err), 0, "%s", err);
	m.reach_remote = reach;
	j = jreopen(dir, id, nb, &m, &err);
	cr_assert_not_null(j, "%s", err);
	if (lose) {
		struct event ev = { .type = EV_KERNEL, .kstate = KERNEL_READY,
		    .restarted = 1, .state_lost = 1, .text = "lost", .len = 4 };
		journal_event(j, &ev);
	}
	cr_assert_eq(journal_replay_cells(j, &cells), want);
	free(cells);
	jclose(j);
	journal_meta_free(&m);
	cr_assert_eq(journal_load(path, nb2, &m2, &err), 0, "%s", err);
	/* one cell: [1] lost, or none */
	cr_assert(m2.replay_from == want && m2.replay_to == want, "%d..%d",
	    m2.replay_from, m2.replay_to);
	journal_meta_free(&m2);
	notebook_free(nb);
	notebook_free(nb2);
	free(path);
}

/* A resume that is to reach its remote session again (journal_meta's
 * reach_remote, from resume_remote) does not take the state as lost:
 * nothing to replay, after the reopen and after a load, until the
 * backend's kernel line says the state was lost. A local resume loses
 * it at once, as before. */
Test(journal, a_remote_resume_loses_the_state_only_when_the_backend_says)
{
	char *dir = tmpdir(), *err = NULL, *id;
	struct notebook *nb = notebook_new();
	struct journal *j = jcreate(dir, NULL, NULL, nb, &err);

	cr_assert_not_null(j, "%s", err);
	id = xstrdup(journal_id(j));
	result(nb, notebook_add_cell(nb, CELL_BY_USER, "x = 1", NULL), CELL_OK);
	jclose(j);
	notebook_free(nb);
	check_replay(dir, id, 1, 0, 0);		/* reached with its state */
	check_replay(dir, id, 1, 0, 0);		/* again: still kept */
	check_replay(dir, id, 1, 1, 1);		/* the backend says it was lost */
	check_replay(dir, id, 0, 0, 1);		/* a local resume */
	free(id);
	rm_rf(dir);
	free(dir);
}

static void
sha1_hex(const void *p, size_t n, char hex[41])
{
	unsigned char d[20];

	sha1(p, n, d);
	for (int i = 0; i < 20; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

/* FIPS 180 examples, plus the lengths where the padding takes a second
 * block (55, 56 and 64 bytes). */
Test(digest, sha1_vectors)
{
	char hex[41], *m = malloc(1000000);

	sha1_hex("", 0, hex);
	cr_assert_str_eq(hex, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
	sha1_hex("abc", 3, hex);
	cr_assert_str_eq(hex, "a9993e364706816aba3e25717850c26c9cd0d89d");
	sha1_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, hex);
	cr_assert_str_eq(hex, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
	memset(m, 'a', 1000000);
	sha1_hex(m, 1000000, hex);
	cr_assert_str_eq(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
	sha1_hex(m, 55, hex);
	cr_assert_str_eq(hex, "c1c8bbdc22796e28c0e15163d20899b65621d65a");
	sha1_hex(m, 64, hex);
	cr_assert_str_eq(hex, "0098ba824b5c16427bd7a1122a5a442a25ec644d");
	free(m);
}
