/* pyenv_shim: python on PATH and pyenv's shims (the pyenv version
 * manager's, not this module's namesake). Private to src/sandbox.
 * envp: the environment searched (PATH, PYENV_VERSION, PYENV_ROOT);
 * cwd: where .python-version is looked for from. */
#ifndef TERP_PYENV_SHIM_H
#define TERP_PYENV_SHIM_H

/* 1 when path is a script that execs through pyenv. */
int pyenv_is_shim(const char *path);

/* The interpreter the pyenv shim shim (named name; what: how to call it
 * in messages) would run: PYENV_VERSION, else .python-version from cwd
 * upwards, else $PYENV_ROOT/version, else system. Sets *system when
 * pyenv would fall through to the system's python; else *found (new)
 * and *why. 0, or -1 with *err when the selected version is not
 * installed. */
int pyenv_shim_resolve(const char *const *envp, const char *cwd, const char *shim,
    const char *name, const char *what, char **found, char **why, int *system,
    char **err);

/* Finds name on PATH as a shell would, but: only absolute entries count
 * (a "." in PATH would pick up whatever is in terp's working directory),
 * a pyenv shim is resolved the way pyenv would (skip_shims: passed
 * over), and other scripts are passed over (the sandbox runs an
 * interpreter, not a wrapper). 0 with *found NULL when there is none;
 * -1 with *err. */
int pyenv_path_search(const char *const *envp, const char *cwd, const char *name,
    int skip_shims, char **found, char **why, char **err);

#endif
