/* store: where sessions live on disk. Each session is a folder
 * sessions_dir/<id>/ holding its journal (notebook.jsonl), whose lock
 * says the session is open in a terp. This module names, locks, lists
 * and deletes those folders; what the journal file says is journal.c's. */
#ifndef TERP_STORE_H
#define TERP_STORE_H

#include <stdint.h>

/* $XDG_STATE_HOME/terp/sessions: a new string the caller frees. */
char *store_sessions_dir(void);
/* A fresh session id, sortable by time: "20261129-153012-ab12" (local
 * time and 16 random bits). A new string. */
char *store_new_id(void);
/* 0 when id is a plain session id (letters, digits, '-', '_', '.'; no
 * '/', not "." or ".."), else -1. */
int store_id_valid(const char *id);
/* Path of a session's journal: a new string. NULL when id is invalid. */
char *store_journal_path(const char *sessions_dir, const char *id);

/* Opens the journal file at path for appending (flags are added to
 * open(2)'s: O_CREAT | O_EXCL for a new one) and takes the lock of
 * session id, held until the descriptor is closed. Returns the
 * descriptor, or -1 with *err (also when another terp holds it). */
int store_open_locked(const char *path, const char *id, int flags,
    char **err);

/* A session folder found by store_list. */
struct store_entry {
	char	*id;
	int64_t	 last_active;	/* unix seconds (the journal's mtime) */
};

/* Lists the folders under sessions_dir that are named by a valid id and
 * hold a journal file, most recently active first (ties: the larger id
 * first). *out is a new array of *n entries; free it with
 * store_list_free. A missing sessions_dir is an empty list. Returns 0
 * or -1 with *err. */
int store_list(const char *sessions_dir, struct store_entry **out, int *n,
    char **err);
void store_list_free(struct store_entry *list, int n);

/* Removes session id's folder recursively, never following a symlink.
 * Refuses invalid ids and sessions in use. Returns 0 or -1 with *err. */
int store_delete(const char *sessions_dir, const char *id, char **err);

#endif
