/* journal: notebooks that last. An event consumer that appends every
 * notebook change to $XDG_STATE_HOME/terp/sessions/<id>/notebook.jsonl
 * as it happens (one JSON object per line, one write(2) each, fsync at
 * the boundaries that matter), and the loader that rebuilds a notebook
 * from that file after a crash. The file's place, id and lock are
 * store.h's. */
#ifndef TERP_JOURNAL_H
#define TERP_JOURNAL_H

#include <stdint.h>

#include "terp/datafile.h"
#include "terp/event.h"
#include "terp/notebook.h"

/* What a journal says about its session, besides the notebook. */
struct journal_meta {
	char			*id;
	int			 version;	/* of the file's format */
	int64_t			 started;	/* unix seconds */
	int64_t			 last_active;	/* unix seconds (file mtime) */
	char			*provider, *model;	/* may be NULL */
	/* The remote session the notebook ran in last ("remote" lines:
	 * journal_remote), or NULL and NULL. Never shown. */
	char			*remote_sandbox, *remote_session;
	/* Set by the caller (resume_remote) before journal_reopen when the
	 * resume is to reach that remote session again: its state is then
	 * not taken as lost (the backend's kernel line says when it is). */
	int			 reach_remote;
	/* The data files, for a listing (journal_read_meta) only: a
	 * notebook that journal_load builds holds them itself. */
	struct datafile		*files;
	int			 nfiles;
	int			 nquestions;
	char			*first_question;	/* may be NULL */
	/* Cell and model-reply records seen (counted without parsing):
	 * a session with neither did nothing worth keeping (resume.h's
	 * resume_meta_empty). */
	int			 ncells, nreplies;
	int			 nresumed;	/* times the session was resumed */
	/* The cells whose effects made up the Python state that was lost
	 * most recently (a resume, restart or crash): replay re-runs the
	 * ones among them that succeeded. 0 and 0 when none. */
	int			 replay_from, replay_to;
	int			 live_from;	/* first cell of the current state */
	int			 skipped;	/* corrupt lines skipped */
	int			 torn;		/* a cut-short last line ignored */
	/* The loader completed the conversation (a tool call left without
	 * a result): the messages it inserted, by index (ascending), which
	 * journal_reopen writes. */
	int			*repaired;
	int			 nrepaired;
	/* The notebook's /allow and /deny ("note" lines of kind allow and
	 * deny), in order, as "allow SPEC" / "deny SPEC"; NULL-terminated
	 * (kernel_opts.egress_ops), or NULL when there were none. What pip
	 * installed is the notebook's (notebook_package). */
	char			**egress;
	int			 negress;
	/* The last request body read back is the request itself (not a
	 * line standing for one): the next one may be written as what is
	 * new since (journal.c's put_sent). */
	int			 sent_whole;
	/* An answer's text streamed ("stream" lines) with no reply record
	 * after it yet (the loader's, while it reads). */
	char			*streamed;
	size_t			 nstreamed;
};

/* Frees what meta holds (not meta itself) and zeroes it (journal_load.c). */
void journal_meta_free(struct journal_meta *meta);

/* ---- writing (src/core/journal.c) --------------------------------------- */

/* What a new session records in its first line. Strings are borrowed. */
struct journal_info {
	const char	*provider, *model;	/* may be NULL */
};

struct journal;

/* Creates sessions_dir/<id>/notebook.jsonl (a new id when id is NULL;
 * the folder may exist already when id is given) and writes the meta
 * line. The file must not exist yet. nb is borrowed (the journal reads
 * the cells' states from it) and must outlive the journal.
 * Returns the journal, or NULL with *err (caller frees). */
struct journal *journal_create(const char *sessions_dir, const char *id,
    const struct journal_info *info, struct notebook *nb, char **err);
/* Reopens session id for appending after journal_load rebuilt nb and
 * meta from it (resume): cuts a torn last line, takes the session's
 * lock, and records the resume (the Python state is lost there, unless
 * meta->reach_remote: a remote session reached again). meta is read
 * only during the call. Returns NULL with *err when the session
 * is in use by another terp or cannot be opened. */
struct journal *journal_reopen(const char *sessions_dir, const char *id,
    struct notebook *nb, const struct journal_meta *meta, char **err);
/* Flushes, syncs, releases the lock and frees. NULL is a no-op. */
void journal_close(struct journal *j);

/* Records a change of the notebook (its observer's, through the
 * session runner): exactly that change, once. Write errors do not stop
 * terp; the first one is kept for journal_failed. */
void journal_change(struct journal *j, const struct nb_change *ch);
/* Records an event that is no notebook change: the session, the
 * sandbox's states, turns, errors, notices; and syncs at a question's
 * edges. */
void journal_event(struct journal *j, const struct event *ev);
/* The idle edge's sync is deferred when the last sync is younger than
 * this: the lines are written at once (a killed terp loses none), they
 * reach the disk at most this much later (power loss). */
#define JOURNAL_SYNC_MS	100
/* With on, the lines are kept in memory until journal_flush, a sync or
 * a line that syncs: one write(2) for a script cell's result and the
 * next cell, not one each. For a session whose frontend batches what it
 * shows too, and calls journal_flush before it shows any of it (what
 * was shown is in the file first). Off writes what was kept. */
void journal_defer(struct journal *j, int on);
/* Writes the lines kept. Returns 0, or -1 (see journal_failed). NULL:
 * a no-op. journal_read_sent reads only what was written. */
int journal_flush(struct journal *j);
/* Writes the lines kept and looks now whether the file was deleted (a
 * write looks at most every 100 ms): for the last word of a session,
 * whose end may come sooner. Returns as journal_flush. */
int journal_flush_check(struct journal *j);
/* Milliseconds until a deferred sync is due (0: now), or -1 when none
 * is wanted; the caller's timer then calls journal_sync_deferred,
 * which syncs what a deferred sync was wanted for. NULL: -1, no-op. */
int64_t journal_sync_due(const struct journal *j);
void journal_sync_deferred(struct journal *j);
/* Records the remote session the Python runs in (sandbox: the
 * --sandbox spec; session: kernel_remote_session's string), so that a
 * resume on the same sandbox reaches it again; once per change, synced.
 * "local" is written only after a remote one (a resume then runs here).
 * NULL for either: nothing is written. The record is never shown. */
void journal_remote(struct journal *j, const char *sandbox, const char *session);
/* Records a line of terp's own (replay, idle stop...). */
void journal_note(struct journal *j, const char *kind, const char *text);

/* The body of the i-th request the journal recorded (0-based, in the
 * order notebook_add_sent got them, the resumed runs' included), read
 * back from the file: a new string in the return value, its length in
 * *len. A body too big to journal comes back as the line that says so.
 * NULL with *err when the journal has no such record. */
char *journal_read_sent(const struct journal *j, int i, size_t *len,
    char **err);

/* The cells to re-run to rebuild the Python state lost most recently
 * (see journal_meta.replay_from): those that succeeded, in order. A new
 * array in *cells (caller frees); returns the count (0: nothing). */
int journal_replay_cells(const struct journal *j, int **cells);

const char *journal_id(const struct journal *j);
/* The session's folder (owned by the journal). */
const char *journal_dir(const struct journal *j);
/* The first write error, or NULL while all is well (owned). A failed
 * write leaves no part of its line in the file (it is cut back to the
 * last whole line), so writing may go on once there is space again. */
const char *journal_failed(const struct journal *j);
/* 1 once when a write worked again after journal_failed said one
 * failed (what came in between is missing from the file); that failure
 * is then forgotten, so a new one is reported by journal_failed. */
int journal_saved_again(struct journal *j);

/* ---- loading (src/core/journal_load.c) ---------------------------------- */

/* Rebuilds nb (empty, from notebook_new) and meta from the journal at
 * path. A last line cut short by a crash is ignored (meta->torn);
 * corrupt lines elsewhere are skipped and counted (meta->skipped).
 * Cells that were running when terp stopped come back interrupted, and
 * tool calls left without a result get one saying so, so the
 * conversation can go on. Returns 0, or -1 with *err when the file
 * cannot be read or has no meta line. meta must be freed by the caller
 * with journal_meta_free, even on error. */
int journal_load(const char *path, struct notebook *nb,
    struct journal_meta *meta, char **err);

/* Reads only what the journal at path says about its session (meta;
 * no notebook is built, and only the lines that feed meta are parsed):
 * for listings. Returns 0 or -1 with *err; meta must be freed with
 * journal_meta_free either way. */
int journal_read_meta(const char *path, struct journal_meta *meta,
    char **err);

#endif
