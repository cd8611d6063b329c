/* pyenv_probe: what the interpreter pyenv chose has installed: its
 * version and the common data packages, asked once per change (a stat
 * stamp of the binary and its site directories) and cached, so the
 * model is told what it can import; the system prompt's sentence and
 * the status bar's label from the answer. */
#ifndef TERP_PYENV_PROBE_H
#define TERP_PYENV_PROBE_H

#include <stddef.h>

struct pyenv;

#define PYENV_NPKGS		11	/* see pyenv_pkg_name */
#define PYENV_PROBE_MAX		(64 * 1024)	/* bytes of probe output */
#define PYENV_PROBE_TIMEOUT_MS	5000

/* The import name of common data package i < PYENV_NPKGS: pandas,
 * numpy, polars, pyarrow, duckdb, scipy, sklearn, statsmodels,
 * matplotlib, seaborn, openpyxl. */
const char *pyenv_pkg_name(size_t i);

struct pyenv_probe {
	char	version[32];		/* "3.11.2" */
	struct {
		int	present;	/* importlib.util.find_spec found it */
		char	version[32];	/* "" when the metadata had none */
	} pkg[PYENV_NPKGS];
	int	from_cache;
};

/* Runs argv (argv[0] is the interpreter, as the sandbox sees it) with an
 * empty stdin, and returns its stdout (at most max bytes) in *out, a new
 * NUL-terminated string, length *outlen. Returns 0 when the program ran
 * and exited 0, else -1 with one line in *err. Integration routes this
 * through the sandbox; pyenv_run_direct is the host default. */
typedef int (*pyenv_runner)(void *ctx, char *const argv[], size_t max,
    char **out, size_t *outlen, char **err);

/* The default runner: forks and execs argv on the host, in /, with only
 * PATH and LANG in its environment, every other fd closed, and a time
 * cap of *(const int *)ctx milliseconds (ctx NULL: 5 s), after which its
 * process group is killed. */
int pyenv_run_direct(void *ctx, char *const argv[], size_t max, char **out,
    size_t *outlen, char **err);

/* The probe program, run as `<exec> -I -S -c <script>`. -I: no PYTHON*
 * variables, no user site, no cwd on sys.path. -S: no site module, so
 * no .pth file and no sitecustomize of the environment runs; the script
 * puts the site-packages directories on sys.path itself (the venv's,
 * and the base's when include-system-site-packages) and asks
 * importlib.util.find_spec, which finds a top-level module without
 * importing it. So probing on the host executes nothing from the
 * user's site-packages. Prints one JSON object. */
const char *pyenv_probe_script(void);

/* Parses the probe's output (untrusted when it ran in the sandbox: only
 * known packages, versions of at most 31 printable characters from a
 * small set). Returns 0, or -1 with *err. */
int pyenv_probe_parse(const char *text, size_t len, struct pyenv_probe *out,
    char **err);

/* The probe with its cache: when cache_dir holds an answer for this
 * interpreter whose stamps (the stat of every path in pe->watch: the
 * binary, pyvenv.cfg, the site-packages directories) still match, uses
 * it without running anything; otherwise runs the probe through run
 * (NULL: pyenv_run_direct with ctx) and stores the answer (a cache that
 * cannot be written is not an error). cache_dir NULL: no cache. Returns
 * 0, or -1 with one line in *err. */
int pyenv_probe(const struct pyenv *pe, const char *cache_dir, pyenv_runner run,
    void *ctx, struct pyenv_probe *out, char **err);

/* $XDG_CACHE_HOME/terp/pyenv (else $HOME/.cache/terp/pyenv) from envp
 * (NULL: environ). A new string, or NULL when neither is absolute. */
char *pyenv_cache_dir(const char *const *envp);

/* 1 when matplotlib is there (charts work). */
int pyenv_probe_charts(const struct pyenv_probe *p);

/* The system prompt's sentence: "Python 3.11.2 with pandas 1.5.3, numpy
 * 1.24.2, matplotlib 3.6.3; not installed: polars, pyarrow. ...", with
 * a note that charts are unavailable when matplotlib is missing. New
 * string. */
char *pyenv_prompt_line(const struct pyenv_probe *p);

/* For the status bar and --version: "Python 3.11.2 (virtualenv
 * /home/u/proj/.venv)". p may be NULL (the version is then X.Y). New
 * string. */
char *pyenv_label(const struct pyenv *pe, const struct pyenv_probe *p);

#endif
