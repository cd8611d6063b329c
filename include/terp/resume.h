/* resume: what `terp --list` prints and what `terp --resume [ID]`
 * prepares before a frontend starts: the notebook rebuilt from the
 * journal, the data files checked against their fingerprints, and the
 * notes for the user and the model. No printing here. */
#ifndef TERP_RESUME_H
#define TERP_RESUME_H

#include "terp/journal.h"
#include "terp/notebook.h"

/* Lists the sessions under sessions_dir, most recently active first
 * (store_list's order), with what each journal's head says (notebooks
 * are not built; unreadable journals are left out). *out is a new
 * array of *n metas; free it with resume_list_free. A missing
 * sessions_dir is an empty list. Returns 0 or -1 with *err. */
int resume_list(const char *sessions_dir, struct journal_meta **out, int *n,
    char **err);
void resume_list_free(struct journal_meta *list, int n);

/* A session that did nothing: no cell ran and the model never replied
 * (a run that stopped at a wrong key or an unreachable server, a
 * notebook opened and closed). resume_list leaves these out, and main
 * removes such a session's folder when its run ends. */
int resume_meta_empty(const struct journal_meta *m);

/* The session that given names: its exact id, else the one listed
 * session whose id starts with it. Returns a new string, or NULL with
 * *err naming the session and saying why: not an id, ambiguous (the
 * candidates), or none (up to 3 listed ids close to it). */
char *resume_find_id(const char *sessions_dir, const char *given, char **err);

/* The table `terp --list` prints: one line per session, most recent
 * first (id, started, last active, questions, data files, the first
 * question cut to fit). A new string; "" when there are none. */
char *resume_list_text(const struct journal_meta *list, int n);

struct resume {
	char			*id;
	struct notebook		*nb;		/* rebuilt; the caller takes it */
	struct journal_meta	 meta;
	/* Per data file of nb: datafile_check's answer (0 the same, 1
	 * changed, 2 gone: not staged again). */
	int			*file_state;
	char			*warnings;	/* lines for the user, or NULL */
	char			*model_note;	/* for the model's next question */
};

/* Loads session id (NULL: the most recently active one) from
 * sessions_dir into r: the notebook, and the data files that are still
 * there (changed ones too, with a warning; vanished ones only warned
 * about). Returns 0 or -1 with *err; free r with resume_free either
 * way. */
int resume_prepare(const char *sessions_dir, const char *id, struct resume *r,
    char **err);
/* The remote session to reach again (kernel_opts.sandbox_session) when
 * the session is resumed on the sandbox it last ran on (sandbox, the
 * --sandbox spec, equal to the journal's), else NULL. When there is
 * one, r->model_note says the state may still be there (the backend
 * reports it lost when the session is gone), and r->meta.reach_remote
 * is set, so that the journal does not take the state as lost until
 * the backend says so; neither when it is "" (ssh: a new session on
 * the same host, which its backend says). A data file HOST:/path of a
 * session that ran over ssh is staged there in place again, and only
 * there: resumed elsewhere, it is marked gone, with a line added to
 * r->warnings (so they are read after this call) and r->model_note. Owned by r; never
 * shown. */
const char *resume_remote(struct resume *r, const char *sandbox);
/* Frees what r holds, the notebook too unless the caller set r->nb to
 * NULL after taking it. */
void resume_free(struct resume *r);

#endif
