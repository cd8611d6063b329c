/* pyenv_util: the helpers pyenv's files share (resolution, trust,
 * shims, the probe). Private to src/sandbox. Paths are absolute and
 * normalized unless a comment says otherwise; new strings are the
 * caller's to free. */
#ifndef TERP_PYENV_UTIL_H
#define TERP_PYENV_UTIL_H

#include <stddef.h>

#define PYENV_CFG_MAX	(64 * 1024)	/* pyvenv.cfg, .python-version */

/* p is dir itself or lies below it. */
int pyenv_path_under(const char *p, const char *dir);
/* A new string: a and b joined with one slash. */
char *pyenv_path_join(const char *a, const char *b);
/* A new string: the directory part of p ("/" for a top-level name). */
char *pyenv_dirname(const char *p);
/* The last component of p (inside p). */
const char *pyenv_basename(const char *p);
/* p made absolute (against cwd) and normalized lexically, as Python's
 * os.path.abspath does. New string, or NULL past PATH_MAX. */
char *pyenv_normalize(const char *p, const char *cwd);
int pyenv_is_dir(const char *p);
int pyenv_is_file(const char *p);
int pyenv_is_exec(const char *p);	/* a regular file with an x bit */
/* pyenv_read_small's flags. PYENV_RS_NOFOLLOW: not through a symlink;
 * PYENV_RS_OWN: only a file of ours that no one else may write (terp's
 * own caches, as the driver cache is checked). */
enum { PYENV_RS_NOFOLLOW = 1, PYENV_RS_OWN = 2 };
/* At most max bytes of a regular file, never through a FIFO or a
 * device. New NUL-terminated buffer, or NULL with errno set. */
char *pyenv_read_small(const char *path, size_t max, size_t *len, int flags);
/* "3.11.2" -> 3, 11: 1, or 0 when v is not such a version. */
int pyenv_text_version(const char *v, int *major, int *minor);

#endif
