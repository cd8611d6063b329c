/* resume: the session listing (store's folders, each journal's head)
 * and its text, and the preparation of a resumed session (journal ->
 * notebook, data files re-checked, notes). */
#include "terp/resume.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "terp/buf.h"
#include "terp/datafile.h"
#include "terp/kernel_ssh.h"
#include "terp/sanitize.h"
#include "terp/store.h"
#include "terp/util.h"

int
resume_list(const char *sessions_dir, struct journal_meta **out, int *n,
    char **err)
{
	struct store_entry *l;
	int nl;

	*out = NULL;
	*n = 0;
	if (store_list(sessions_dir, &l, &nl, err) < 0)
		return -1;
	if (nl > 0)
		*out = xcalloc((size_t)nl, sizeof **out);
	for (int i = 0; i < nl; i++) {
		char *path = store_journal_path(sessions_dir, l[i].id), *e = NULL;

		if (journal_read_meta(path, &(*out)[*n], &e) < 0 ||
		    resume_meta_empty(&(*out)[*n])) {
			free(e);
			journal_meta_free(&(*out)[*n]);
		} else {
			(*n)++;
		}
		free(path);
	}
	store_list_free(l, nl);
	return 0;
}

int
resume_meta_empty(const struct journal_meta *m)
{
	return m->ncells == 0 && m->nreplies == 0;
}

/* Edit distance between a and b (ids: at most 64 bytes each). */
static int
distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int row[66];

	if (la > 64 || lb > 64)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int diag = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

/* How far given is from id, or from as much of id's start (a
 * mistyped prefix). */
static int
near(const char *given, const char *id)
{
	char head[65];
	size_t n = strlen(given);

	if (n >= strlen(id) || n >= sizeof head)
		return distance(given, id);
	memcpy(head, id, n);
	head[n] = '\0';
	return distance(given, head);
}

/* ", a, b, c" (the first max of ids, then how many more). */
static void
name_ids(struct buf *b, const char **ids, int n, int max)
{
	for (int i = 0; i < n && i < max; i++)
		buf_printf(b, "%s%s", i ? ", " : "", ids[i]);
	if (n > max)
		buf_printf(b, " and %d more", n - max);
}

char *
resume_find_id(const char *sessions_dir, const char *given, char **err)
{
	struct journal_meta *l;
	const char **hits;
	char *path, *id = NULL;
	int n, nhits = 0;
	struct buf b;

	if ((path = store_journal_path(sessions_dir, given)) == NULL) {
		*err = xasprintf("not a session id: '%s' (terp --list shows them)",
		    given);
		return NULL;
	}
	if (access(path, F_OK) == 0) {
		free(path);
		return xstrdup(given);
	}
	free(path);
	if (resume_list(sessions_dir, &l, &n, err) < 0)
		return NULL;
	hits = xcalloc((size_t)n + 1, sizeof *hits);
	for (int i = 0; i < n; i++)
		if (strncmp(l[i].id, given, strlen(given)) == 0)
			hits[nhits++] = l[i].id;
	buf_init(&b, 1 << 16);
	if (nhits == 1) {
		id = xstrdup(hits[0]);
	} else if (nhits > 1) {
		buf_printf(&b, "session id %s is ambiguous: ", given);
		name_ids(&b, hits, nhits, 3);
		buf_adds(&b, " start with it");
	} else {
		/* the closest ids, nearest first (a typo is a few edits) */
		int limit = (int)strlen(given) / 5 + 1;
		buf_printf(&b, "no session %s", given);
		for (int d = 0; d <= limit && nhits < 3; d++)
			for (int i = 0; i < n && nhits < 3; i++)
				if (near(given, l[i].id) == d)
					hits[nhits++] = l[i].id;
		if (nhits > 0) {
			buf_adds(&b, "; did you mean ");
			name_ids(&b, hits, nhits, 3);
			buf_adds(&b, "?");
		}
		buf_adds(&b, " (terp --list shows them)");
	}
	if (id == NULL)
		*err = buf_take(&b);
	buf_free(&b);
	free(hits);
	resume_list_free(l, n);
	return id;
}

void
resume_list_free(struct journal_meta *list, int n)
{
	for (int i = 0; i < n; i++)
		journal_meta_free(&list[i]);
	free(list);
}

static void
fmt_time(char *b, size_t len, int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (t <= 0 || localtime_r(&tt, &tm) == NULL)
		snprintf(b, len, "-");
	else
		strftime(b, len, "%Y-%m-%d %H:%M", &tm);
}

/* The first line of s, sanitized, cut to max bytes on a UTF-8 boundary. */
static char *
summary(const char *s, size_t max)
{
	size_t n = strcspn(s, "\n");
	char *clean = sanitize_str(s, n, SANITIZE_EXPAND_TABS), *out;
	size_t len = strlen(clean);

	if (len <= max)
		return clean;
	while (max > 0 && ((unsigned char)clean[max] & 0xC0) == 0x80)
		max--;
	while (max > 0 && clean[max - 1] == ' ')
		max--;
	out = xasprintf("%.*s...", (int)max, clean);
	free(clean);
	return out;
}

char *
resume_list_text(const struct journal_meta *l, int n)
{
	struct buf b;

	buf_init(&b, (size_t)-1);
	if (n > 0)
		buf_printf(&b, "%-20s  %-16s  %-16s  %3s  %-20s  %s\n", "ID",
		    "STARTED", "LAST ACTIVE", "QS", "DATA", "FIRST QUESTION");
	for (int i = 0; i < n; i++) {
		char started[32], last[32], *data, *q;
		const char *base = "-";

		fmt_time(started, sizeof started, l[i].started);
		fmt_time(last, sizeof last, l[i].last_active);
		if (l[i].nfiles > 0) {
			base = strrchr(l[i].files[0].path, '/');
			base = base ? base + 1 : l[i].files[0].path;
		}
		data = l[i].nfiles > 1 ? xasprintf("%s +%d", base, l[i].nfiles - 1)
		    : xstrdup(base);
		q = summary(l[i].first_question ? l[i].first_question : "", 60);
		buf_printf(&b, "%-20s  %-16s  %-16s  %3d  %-20.20s  %s\n",
		    l[i].id, started, last, l[i].nquestions, data, q);
		free(data);
		free(q);
	}
	return buf_take(&b);
}

/* The first line of the model's note on a resume: in a new sandbox,
 * or reaching the same remote session again. */
#define NOTE_NEW "Note: this session was resumed in a new Python sandbox. " \
	"The variables and imports of the earlier cells are gone until they " \
	"are re-created (the user can replay the cells that succeeded); the " \
	"data files are staged again.\n"
#define NOTE_REMOTE "Note: this session was resumed; terp reaches the same " \
	"remote Python session again, so the variables and imports of the " \
	"earlier cells are still there unless a note says that its state was " \
	"lost; the data files are staged again.\n"

/* Whether path is HOST:/path on the ssh host the session ran on (it
 * was staged there in place): nothing here to check it against. */
static int
on_ssh_host(const struct journal_meta *m, const char *path)
{
	return m->remote_sandbox != NULL && strncmp(m->remote_sandbox, "ssh://", 6) == 0 &&
	    kernel_ssh_remote_path(path) && access(path, F_OK) != 0;
}

int
resume_prepare(const char *sessions_dir, const char *id, struct resume *r,
    char **err)
{
	struct buf warn, note;
	char *path;

	memset(r, 0, sizeof *r);
	if (id == NULL) {
		struct journal_meta *l;
		int n;
		if (resume_list(sessions_dir, &l, &n, err) < 0)
			return -1;
		if (n == 0) {
			*err = xstrdup("there is no session to resume");
			resume_list_free(l, n);
			return -1;
		}
		r->id = xstrdup(l[0].id);
		resume_list_free(l, n);
	} else if ((r->id = resume_find_id(sessions_dir, id, err)) == NULL) {
		return -1;
	}
	if ((path = store_journal_path(sessions_dir, r->id)) == NULL) {
		*err = xasprintf("not a session id: %s", r->id);
		return -1;
	}
	r->nb = notebook_new();
	if (journal_load(path, r->nb, &r->meta, err) < 0) {
		free(path);
		return -1;
	}
	free(path);

	buf_init(&warn, 1 << 20);
	buf_init(&note, 1 << 20);
	if (r->meta.torn)
		buf_adds(&warn, "the journal's last line was cut short (terp "
		    "stopped while writing it); it was ignored\n");
	if (r->meta.skipped > 0)
		buf_printf(&warn, "%d damaged journal line(s) were skipped\n",
		    r->meta.skipped);
	r->file_state = xcalloc((size_t)notebook_nfiles(r->nb) + 1,
	    sizeof *r->file_state);
	for (int i = 0; i < notebook_nfiles(r->nb); i++) {
		char *why = NULL;
		int st;

		if (on_ssh_host(&r->meta, notebook_file(r->nb, i)->path))
			continue;	/* resume_remote: staged there again, or not */
		st = datafile_check(notebook_file(r->nb, i), &why);
		r->file_state[i] = st;
		if (st != 0) {
			buf_printf(&warn, "%s%s\n", why, st == 2 ?
			    "; it is not staged" : "; results may differ");
			buf_printf(&note, "- %s\n", why);
		}
		free(why);
	}
	{
		struct buf m;
		buf_init(&m, 1 << 20);
		buf_adds(&m, NOTE_NEW);
		if (note.len > 0) {
			buf_adds(&m, "Since the session started:\n");
			buf_add(&m, note.data, note.len);
		}
		r->model_note = buf_take(&m);
	}
	buf_free(&note);
	r->warnings = warn.len ? buf_take(&warn) : NULL;
	buf_free(&warn);
	return 0;
}

const char *
resume_remote(struct resume *r, const char *sandbox)
{
	int there = sandbox != NULL && r->meta.remote_sandbox != NULL &&
	    strcmp(sandbox, r->meta.remote_sandbox) == 0;
	char *note;

	/* HOST:/path files are staged in place on that host only */
	for (int i = 0; !there && i < notebook_nfiles(r->nb); i++) {
		const char *path = notebook_file(r->nb, i)->path;
		char *shown;
		if (!on_ssh_host(&r->meta, path) || r->file_state[i] == 2)
			continue;
		r->file_state[i] = 2;
		shown = sanitize_str(path, strnlen(path, 400), 0);
		note = xasprintf("%s%s is a file on the ssh host the session ran on; "
		    "it is not staged (resume it there to have it)\n",
		    r->warnings ? r->warnings : "", shown);
		free(r->warnings);
		r->warnings = note;
		note = xasprintf("%sNote: the data file %s is on the ssh host the session "
		    "ran on; it is not staged here.\n", r->model_note ? r->model_note : "",
		    shown);
		free(r->model_note);
		r->model_note = note;
		free(shown);
	}
	if (sandbox == NULL || r->meta.remote_sandbox == NULL ||
	    r->meta.remote_session == NULL ||
	    strcmp(sandbox, r->meta.remote_sandbox) != 0)
		return NULL;
	/* ssh: nothing to reach there; the note says the sandbox is new */
	if (r->meta.remote_session[0] == '\0')
		return r->meta.remote_session;
	if (r->model_note != NULL &&
	    strncmp(r->model_note, NOTE_NEW, strlen(NOTE_NEW)) == 0) {
		note = xasprintf("%s%s", NOTE_REMOTE, r->model_note + strlen(NOTE_NEW));
		free(r->model_note);
		r->model_note = note;
	}
	r->meta.reach_remote = 1;	/* journal_reopen: the state may be kept */
	return r->meta.remote_session;
}

void
resume_free(struct resume *r)
{
	free(r->id);
	notebook_free(r->nb);
	journal_meta_free(&r->meta);
	free(r->file_state);
	free(r->warnings);
	free(r->model_note);
	memset(r, 0, sizeof *r);
}
