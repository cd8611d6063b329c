/* pyenv: which Python the sandbox runs, and what it needs. Chooses the
 * interpreter (--python, the config's python =, $VIRTUAL_ENV,
 * $CONDA_PREFIX, python3 on PATH, /usr/bin/python3) without running it,
 * works out what to bind read-only into the sandbox (the environment's
 * own prefix and its base interpreter's, nothing else of $HOME), refuses
 * prefixes other users can write, and probes the interpreter once per
 * change for its version and the common data packages, so the model is
 * told what it can import. Knows nothing of bwrap's argv (sandbox.c
 * turns binds and links into arguments) nor of the config file.
 *
 * Trust rule (pyenv_untrusted): a directory on the way to a prefix, the
 * prefix, its bin, lib, stdlib and site-packages directories, the
 * interpreter and pyvenv.cfg must each be owned by root or by the user
 * running terp, must not be group-writable unless the group is root's
 * or the user's own, and must not be writable by every user (a
 * world-writable ancestor with the sticky bit, like /tmp, is fine: others
 * cannot rename what is ours in it). The same rule holds when terp runs
 * as root: a venv owned by uid 1000 is refused (its owner could change
 * what root's terp runs); git's safe.directory draws the line the same
 * way. The check does not descend into site-packages. */
#ifndef TERP_PYENV_H
#define TERP_PYENV_H

#include <stddef.h>
#include <sys/types.h>

/* Oldest Python the driver supports. */
#define PYENV_MIN_MAJOR	3
#define PYENV_MIN_MINOR	8

enum pyenv_kind {
	PYENV_SYSTEM,		/* prefix under /usr: nothing more to bind */
	PYENV_VENV,		/* a virtualenv (pyvenv.cfg) */
	PYENV_CONDA,		/* a conda environment (conda-meta/) */
	PYENV_STANDALONE	/* a build elsewhere: pyenv, uv, /opt/python */
};

enum pyenv_source {
	PYENV_FROM_CHOICE,	/* --python or python = */
	PYENV_FROM_VIRTUAL_ENV,
	PYENV_FROM_CONDA_PREFIX,
	PYENV_FROM_PATH,	/* python3 on PATH (through a pyenv shim too) */
	PYENV_FROM_DEFAULT	/* /usr/bin/python3 */
};

/* What the caller knows; every field may be NULL. */
struct pyenv_choice {
	const char		*python;	/* --python or python =: a path,
						 * a name on PATH, or an
						 * environment's directory */
	const char		*python_from;	/* how it was given, for the
						 * reason line: "--python" (the
						 * default), "python = in the config" */
	const char *const	*envp;		/* NULL: environ */
	const char		*cwd;		/* NULL: getcwd(); for relative
						 * paths and .python-version */
};

/* A read-only bind. host is the real path to open; sandbox is where it
 * appears. pyenv makes them the same, so shebangs, pyvenv.cfg's home and
 * sys.prefix read the same inside and out. */
struct pyenv_bind {
	char	*host;
	char	*sandbox;
};

/* A symlink met on the way to the interpreter, outside every bind and
 * outside /usr, recreated inside (bwrap --symlink target path) so that
 * the path as spelled (a venv under a symlinked /home, say) resolves. */
struct pyenv_link {
	char	*path;
	char	*target;
};

/* A package manager's configuration inside a bound prefix (pip.conf,
 * pip.ini, .condarc, condarc, .mambarc, condarc.d): it may hold an
 * index's password or a channel token, so the sandbox sees an empty
 * file (dir: an empty read-only folder) over it. pip inside gets the
 * index terp passes, when the user allowed its host and the URL holds
 * no credentials. */
struct pyenv_hide {
	char	*path;
	int	 dir;
};

/* A resolved interpreter. Every string is owned by the struct and freed
 * by pyenv_free. */
struct pyenv {
	enum pyenv_kind		 kind;
	enum pyenv_source	 source;
	char			*exec;		/* argv[0] to exec inside */
	char			*real;		/* the interpreter binary (realpath) */
	char			*prefix;	/* the venv / conda env, else == base */
	char			*base_prefix;	/* where the stdlib is (real path) */
	int			 major, minor;	/* from the stdlib's directory name */
	int			 system_site;	/* venv: include-system-site-packages */
	char			*reason;	/* "using the virtualenv X (VIRTUAL_ENV)" */
	struct pyenv_bind	*binds;		/* read-only, in order */
	size_t			 nbinds;
	struct pyenv_link	*links;
	size_t			 nlinks;
	struct pyenv_hide	*hides;		/* over the binds, in order */
	size_t			 nhides;
	char			**env;		/* "KEY=VALUE" to add to (or replace
						 * in) the sandbox's environment;
						 * NULL-terminated */
	char			**watch;	/* paths whose stat stamps the
						 * probe cache; NULL-terminated */
};

/* Chooses the interpreter and describes it into *out (which the caller
 * frees with pyenv_free, also after a failure). Runs nothing: reads
 * directories, symlinks, pyvenv.cfg and the first bytes of the binary.
 * Returns 0, or -1 with one line in *err (caller frees) that names the
 * path and says how to fix it. */
int pyenv_resolve(const struct pyenv_choice *c, struct pyenv *out, char **err);
void pyenv_free(struct pyenv *pe);

/* When terp runs as root it drops to a per-session uid before bwrap, and
 * that uid reads the binds as "other". The folders above them need not
 * let it through (the launcher binds them by the fd terp opened), but
 * each bind, its bin and the interpreter must be readable by others and
 * the folders from a bind down to the interpreter searchable (the mode
 * bits; ACLs are not read). Returns 0, or -1 with the problem in *err
 * and the chmod that fixes it in *fix (NULL when there is none; the
 * caller frees both). */
int pyenv_check_reach(const struct pyenv *pe, char **err, char **fix);

/* The kind as a word for messages: "virtualenv", "conda environment"... */
const char *pyenv_kind_name(enum pyenv_kind k);

/* pyvenv.cfg as CPython reads it: `key = value` lines, keys compared
 * without case, the first home (getpath.py stops there), the last
 * include-system-site-packages (site.py keeps reading), which is true
 * only when its value is "true" in any case, and true when absent. */
struct pyvenv_cfg {
	char	*home;		/* NULL when absent */
	char	*version;	/* version, else version_info (uv, virtualenv) */
	char	*executable;	/* the base interpreter (3.11+ venvs), or NULL */
	int	 system_site;
};

/* Parses len bytes of text. Returns 0, or -1 when the text holds a NUL
 * (not a pyvenv.cfg). The caller frees with pyenv_cfg_free. */
int pyenv_cfg_parse(const char *text, size_t len, struct pyvenv_cfg *out);
void pyenv_cfg_free(struct pyvenv_cfg *cfg);

enum pyenv_distrust {
	PYENV_TRUSTED = 0,
	PYENV_WORLD_WRITABLE,
	PYENV_GROUP_WRITABLE,
	PYENV_OTHER_OWNER
};

/* The trust rule above, for one file with mode, uid and gid, as seen by
 * user me (primary group mygid). ancestor: a directory on the way to the
 * prefix, where the sticky bit makes world-writable acceptable. Pure. */
enum pyenv_distrust pyenv_untrusted(unsigned mode, uid_t uid, gid_t gid,
    uid_t me, gid_t mygid, int ancestor);

/* The probe of what the chosen interpreter has installed
 * (pyenv_probe.c); included here for pyenv's users, who want both. */
#include "terp/pyenv_probe.h"

#endif
