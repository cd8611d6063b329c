/* pyenv_trust: checking what an interpreter's paths lead through
 * against pyenv.h's trust rule. Private to src/sandbox. */
#ifndef TERP_PYENV_TRUST_H
#define TERP_PYENV_TRUST_H

#include <stddef.h>
#include <sys/types.h>

#include "terp/pyenv.h"

/* One resolution's state: who terp runs as, the directories already
 * found trusted, the symlinks met while record is set, and the refusal
 * (err, a new string, set by the first check that fails: the caller
 * takes it). Zero it, set me and mygid; pyenv_walk_done frees ok and
 * met (not err). */
struct pyenv_walk {
	uid_t			 me;
	gid_t			 mygid;
	char			**ok;
	size_t			 nok;
	struct pyenv_link	*met;
	size_t			 nmet;
	int			 record;
	char			*err;
};

/* Checks one real path (no symlinks in it); ancestor: a directory on
 * the way, where a sticky bit excuses world-writability. what: the path
 * it leads to, named in the message when different. 0, or -1 with
 * c->err. */
int pyenv_trust_one(struct pyenv_walk *c, const char *real, int ancestor,
    const char *what);
/* Every directory above real (as ancestors), then real itself. */
int pyenv_trust_tree(struct pyenv_walk *c, const char *real);
/* A prefix's bin and lib directories, which walks only pass through: a
 * stranger could add a bin/pip that PATH finds first. */
int pyenv_trust_inner(struct pyenv_walk *c, const char *prefix);
/* Resolves the absolute path like realpath(3) into *real (new string),
 * checking every real directory it looks into (as an ancestor) and,
 * when c->record, remembering every symlink met with its target. A
 * missing component: -1 with errno ENOENT and *missing the absolute
 * name that is missing (new string); a refusal: -1 with c->err. */
int pyenv_walk(struct pyenv_walk *c, const char *path, char **real, char **missing);
void pyenv_walk_done(struct pyenv_walk *c);

#endif
