/* pyenv_probe: what the chosen interpreter has installed, asked once
 * per change and cached (pyenv_probe.h). */
#include "terp/pyenv_probe.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "terp/buf.h"
#include "terp/digest.h"
#include "terp/proc.h"
#include "terp/pyenv.h"
#include "terp/util.h"

#include "pyenv_util.h"

#define CACHE_MAX	(256 * 1024)	/* one cache file */
#define PROBE_FORMAT	3		/* bump when the script's answer changes */

/* Import names, in the order the prompt lists them; the probe script
 * has the same list with each one's distribution name. */
static const char *const pkgs[PYENV_NPKGS] = {
	"pandas", "numpy", "polars", "pyarrow", "duckdb", "scipy", "sklearn",
	"statsmodels", "matplotlib", "seaborn", "openpyxl",
};

const char *
pyenv_pkg_name(size_t i)
{
	return i < PYENV_NPKGS ? pkgs[i] : NULL;
}

/* Runs on Python 3.8 and later. site.py's venv() and getsitepackages
 * rebuilt without addsitedir, which would run .pth files. Versions come
 * from the names of the *.dist-info / *.egg-info entries, first on
 * sys.path wins: importlib.metadata would cost its import (email, re,
 * csv), 70 ms idle and 200 ms on a loaded machine, for the same answer.
 * A spec without an origin is a namespace package: a stray directory
 * named numpy, not numpy. */
static const char probe_script[] =
"import sys, os\n"
"def main():\n"
"    import importlib.util, site, json\n"
"    exe = os.path.abspath(sys.executable)\n"
"    d = os.path.dirname(exe)\n"
"    top = os.path.dirname(d)\n"
"    cfgs = [c for c in (os.path.join(d, 'pyvenv.cfg'),\n"
"                        os.path.join(top, 'pyvenv.cfg')) if os.path.isfile(c)]\n"
"    prefixes = [sys.prefix, sys.exec_prefix]\n"
"    if cfgs:\n"
"        system = 'true'\n"
"        with open(cfgs[0], encoding='utf-8') as f:\n"
"            for line in f:\n"
"                k, eq, v = line.partition('=')\n"
"                if eq and k.strip().lower() == 'include-system-site-packages':\n"
"                    system = v.strip().lower()\n"
"        sys.prefix = sys.exec_prefix = top\n"
"        prefixes = [top] + ([sys.base_prefix] if system == 'true' else [])\n"
"    for p in site.getsitepackages(prefixes):\n"
"        if os.path.isdir(p) and p not in sys.path:\n"
"            sys.path.append(p)\n"
"    dists = {}\n"
"    for p in sys.path:\n"
"        try:\n"
"            names = os.listdir(p)\n"
"        except OSError:\n"
"            continue\n"
"        for e in names:\n"
"            for suf in ('.dist-info', '.egg-info'):\n"
"                if e.endswith(suf):\n"
"                    n, _, v = e[:-len(suf)].partition('-')\n"
"                    n = n.lower().replace('-', '_').replace('.', '_')\n"
"                    dists.setdefault(n, v.split('-')[0])\n"
"    found = {}\n"
"    for mod, dist in PKGS:\n"
"        try:\n"
"            spec = importlib.util.find_spec(mod)\n"
"            ok = spec is not None and spec.origin is not None\n"
"        except Exception:\n"
"            ok = False\n"
"        found[mod] = dists.get(dist, '') if ok else None\n"
"    sys.stdout.write(json.dumps({'terp_pyenv_probe': 1,\n"
"        'version': sys.version.split()[0], 'packages': found}))\n"
"PKGS = [('pandas', 'pandas'), ('numpy', 'numpy'), ('polars', 'polars'),\n"
"        ('pyarrow', 'pyarrow'), ('duckdb', 'duckdb'), ('scipy', 'scipy'),\n"
"        ('sklearn', 'scikit_learn'), ('statsmodels', 'statsmodels'),\n"
"        ('matplotlib', 'matplotlib'), ('seaborn', 'seaborn'),\n"
"        ('openpyxl', 'openpyxl')]\n"
"main()\n";

const char *
pyenv_probe_script(void)
{
	return probe_script;
}

/* A version as the prompt may show it: 1 to 31 characters of
 * [0-9A-Za-z.+!_-], nothing the sandbox could use to talk to the model. */
static int
version_ok(const char *v)
{
	size_t n = strlen(v);

	if (n == 0 || n > 31)
		return 0;
	for (const char *s = v; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr(".+!_-", *s))
			return 0;
	return 1;
}

static int
probe_from_json(const cJSON *j, struct pyenv_probe *out, char **err)
{
	const cJSON *tag = cJSON_GetObjectItemCaseSensitive(j, "terp_pyenv_probe");
	const cJSON *ver = cJSON_GetObjectItemCaseSensitive(j, "version");
	const cJSON *pk = cJSON_GetObjectItemCaseSensitive(j, "packages");

	memset(out, 0, sizeof *out);
	if (!cJSON_IsObject(j) || !cJSON_IsNumber(tag) || tag->valuedouble != 1 ||
	    !cJSON_IsString(ver) || !version_ok(ver->valuestring) ||
	    !isdigit((unsigned char)ver->valuestring[0]) || !cJSON_IsObject(pk)) {
		*err = xstrdup("its answer to the probe was not understood");
		return -1;
	}
	snprintf(out->version, sizeof out->version, "%s", ver->valuestring);
	for (size_t i = 0; i < PYENV_NPKGS; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(pk, pkgs[i]);
		if (!cJSON_IsString(v))
			continue;	/* null or absent: not installed */
		out->pkg[i].present = 1;
		if (version_ok(v->valuestring))
			snprintf(out->pkg[i].version, sizeof out->pkg[i].version,
			    "%s", v->valuestring);
	}
	return 0;
}

int
pyenv_probe_parse(const char *text, size_t len, struct pyenv_probe *out,
    char **err)
{
	cJSON *j;
	int rc;

	*err = NULL;
	if (len > PYENV_PROBE_MAX) {
		*err = xstrdup("its answer to the probe was too long");
		return -1;
	}
	j = cJSON_ParseWithLength(text, len);
	if (j == NULL) {
		memset(out, 0, sizeof *out);
		*err = xstrdup("its answer to the probe was not JSON");
		return -1;
	}
	rc = probe_from_json(j, out, err);
	cJSON_Delete(j);
	return rc;
}

/* The last non-empty line of s, cleaned of controls, at most 200 bytes.
 * New string. */
static char *
last_line(const char *s, size_t n)
{
	const char *e = s + n, *b;
	char *r;

	while (e > s && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' '))
		e--;
	b = e;
	while (b > s && b[-1] != '\n')
		b--;
	if (e - b > 200)
		e = b + 200;
	r = xstrndup(b, (size_t)(e - b));
	for (char *p = r; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return r;
}

int
pyenv_run_direct(void *ctx, char *const argv[], size_t max, char **out,
    size_t *outlen, char **err)
{
	static char *const envp[] = { "PATH=/usr/bin:/bin", "LANG=C.UTF-8", NULL };
	/* stderr's tail: the exception is its last line */
	struct proc_opts o = { .envp = envp, .dir = "/", .stdin_fd = -1,
	    .out_max = max, .out_kill = 1, .err = PROC_ERR_TAIL,
	    .err_max = 64 * 1024,
	    .timeout_ms = ctx ? *(const int *)ctx : PYENV_PROBE_TIMEOUT_MS };
	struct proc_result r;
	int rc = -1;

	*out = NULL;
	if (proc_run(argv, &o, &r, err) < 0) {
		proc_result_free(&r);
		return -1;
	}
	if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) {
		if (outlen != NULL)
			*outlen = r.out_len;
		*out = r.out;
		r.out = NULL;
		rc = 0;
	} else {
		char *line = last_line(r.err, r.err_len);
		if (WIFSIGNALED(r.status))
			*err = xasprintf("it was killed by signal %d%s%s",
			    WTERMSIG(r.status), *line ? ": " : "", line);
		else
			*err = xasprintf("it exited with status %d%s%s",
			    WEXITSTATUS(r.status), *line ? ": " : "", line);
		free(line);
	}
	proc_result_free(&r);
	return rc;
}

char *
pyenv_cache_dir(const char *const *envp)
{
	const char *x = env_lookup(envp, "XDG_CACHE_HOME");
	const char *h = env_lookup(envp, "HOME");

	if (x != NULL && x[0] == '/')
		return pyenv_path_join(x, "terp/pyenv");
	if (h != NULL && h[0] == '/')
		return pyenv_path_join(h, ".cache/terp/pyenv");
	return NULL;
}

/* The stat of everything the answer depends on, as text: equal stamps,
 * same answer. */
static char *
cache_stamp(const struct pyenv *pe)
{
	struct buf b;

	buf_init(&b, CACHE_MAX / 2);
	buf_printf(&b, "format %d\nexec %s\nreal %s\n", PROBE_FORMAT, pe->exec, pe->real);
	for (size_t i = 0; pe->watch && pe->watch[i]; i++) {
		struct stat st;
		if (stat(pe->watch[i], &st) < 0)
			buf_printf(&b, "%s -\n", pe->watch[i]);
		else
			buf_printf(&b, "%s %lld.%09ld %lld %llu:%llu %llu\n", pe->watch[i],
			    (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
			    (long long)st.st_size, (unsigned long long)st.st_dev,
			    (unsigned long long)st.st_ino, (unsigned long long)st.st_nlink);
	}
	return buf_take(&b);
}

static char *
cache_file(const struct pyenv *pe, const char *dir)
{
	struct sha256 s;
	unsigned char d[32];
	char hex[65];

	sha256_init(&s);
	sha256_add(&s, pe->exec, strlen(pe->exec) + 1);
	sha256_add(&s, pe->real, strlen(pe->real));
	sha256_done(&s, d);
	sha256_hex(d, hex);
	hex[32] = '\0';
	return xasprintf("%s/%s.json", dir, hex);
}

static int
cache_load(const char *file, const char *stamp, struct pyenv_probe *out)
{
	size_t len;
	char *text = pyenv_read_small(file, CACHE_MAX, &len,
	    PYENV_RS_NOFOLLOW | PYENV_RS_OWN), *e = NULL;
	cJSON *j, *st;
	int rc = -1;

	if (text == NULL)
		return -1;
	j = cJSON_ParseWithLength(text, len);
	free(text);
	st = cJSON_GetObjectItemCaseSensitive(j, "stamp");
	if (cJSON_IsString(st) && strcmp(st->valuestring, stamp) == 0 &&
	    probe_from_json(cJSON_GetObjectItemCaseSensitive(j, "probe"), out, &e) == 0)
		rc = 0;
	free(e);
	cJSON_Delete(j);
	return rc;
}

/* Writes the answer beside its stamp, atomically; failures are not
 * reported (the next session probes again). */
static void
cache_store(const char *dir, const char *file, const char *stamp,
    const char *answer, size_t len)
{
	cJSON *j = cJSON_CreateObject(), *probe = cJSON_ParseWithLength(answer, len);
	char *text, *tmp;
	int fd;

	if (probe == NULL || mkdir_p(dir, 0700) < 0) {
		cJSON_Delete(probe);
		cJSON_Delete(j);
		return;
	}
	cJSON_AddNumberToObject(j, "terp_pyenv_cache", 1);
	cJSON_AddStringToObject(j, "stamp", stamp);
	cJSON_AddItemToObject(j, "probe", probe);
	text = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	if (text == NULL)
		return;
	tmp = xasprintf("%s.%ld.tmp", file, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		int ok = write_all(fd, text, strlen(text)) == 0;
		ok = close(fd) == 0 && ok;
		if (!ok || rename(tmp, file) < 0)
			unlink(tmp);
	}
	free(tmp);
	free(text);
}

int
pyenv_probe(const struct pyenv *pe, const char *cache_dir, pyenv_runner run,
    void *ctx, struct pyenv_probe *out, char **err)
{
	char *argv[] = { pe->exec, "-I", "-S", "-c", (char *)probe_script, NULL };
	char *stamp = NULL, *file = NULL, *text = NULL, *e = NULL;
	size_t len = 0;
	int major, minor, rc = -1;

	*err = NULL;
	memset(out, 0, sizeof *out);
	if (cache_dir != NULL) {
		stamp = cache_stamp(pe);
		file = cache_file(pe, cache_dir);
		if (cache_load(file, stamp, out) == 0) {
			out->from_cache = 1;
			rc = 0;
			goto out;
		}
	}
	if (run == NULL)
		run = pyenv_run_direct;
	if (run(ctx, argv, PYENV_PROBE_MAX, &text, &len, &e) < 0) {
		*err = xasprintf("%s is not a working Python interpreter: %s",
		    pe->exec, e ? e : "the probe failed");
		goto out;
	}
	if (pyenv_probe_parse(text, len, out, &e) < 0) {
		*err = xasprintf("%s is not a Python interpreter: %s", pe->exec, e);
		goto out;
	}
	if (pyenv_text_version(out->version, &major, &minor) &&
	    (major < PYENV_MIN_MAJOR || (major == PYENV_MIN_MAJOR && minor < PYENV_MIN_MINOR))) {
		*err = xasprintf("%s is Python %s, older than %d.%d, which terp needs: "
		    "pass --python a newer one", pe->exec, out->version,
		    PYENV_MIN_MAJOR, PYENV_MIN_MINOR);
		goto out;
	}
	if (cache_dir != NULL)
		cache_store(cache_dir, file, stamp, text, len);
	rc = 0;
out:
	if (rc < 0)
		memset(out, 0, sizeof *out);
	free(stamp);
	free(file);
	free(text);
	free(e);
	return rc;
}

int
pyenv_probe_charts(const struct pyenv_probe *p)
{
	for (size_t i = 0; i < PYENV_NPKGS; i++)
		if (strcmp(pkgs[i], "matplotlib") == 0)
			return p->pkg[i].present;
	return 0;
}

char *
pyenv_prompt_line(const struct pyenv_probe *p)
{
	struct buf b;
	size_t have = 0, lack = 0;

	buf_init(&b, 4096);
	buf_printf(&b, "Python %s", p->version[0] ? p->version : "3");
	for (size_t i = 0; i < PYENV_NPKGS; i++) {
		if (!p->pkg[i].present)
			continue;
		buf_adds(&b, have++ ? ", " : " with ");
		buf_adds(&b, pkgs[i]);
		if (p->pkg[i].version[0])
			buf_printf(&b, " %s", p->pkg[i].version);
	}
	if (have == 0)
		buf_adds(&b, " with none of the common data packages; use the "
		    "standard library (csv, statistics, json)");
	for (size_t i = 0; i < PYENV_NPKGS; i++) {
		if (p->pkg[i].present)
			continue;
		buf_adds(&b, lack++ ? ", " : "; not installed: ");
		buf_adds(&b, pkgs[i]);
	}
	buf_adds(&b, lack ? " (do not import these)." : ".");
	if (!pyenv_probe_charts(p))
		buf_adds(&b, " Charts are unavailable: matplotlib is not installed, "
		    "so do not plot; show numbers and tables instead.");
	return buf_take(&b);
}

char *
pyenv_label(const struct pyenv *pe, const struct pyenv_probe *p)
{
	char v[40];

	if (p != NULL && p->version[0])
		snprintf(v, sizeof v, "%s", p->version);
	else
		snprintf(v, sizeof v, "%d.%d", pe->major, pe->minor);
	switch (pe->kind) {
	case PYENV_VENV:
	case PYENV_CONDA:
		return xasprintf("Python %s (%s %s)", v, pyenv_kind_name(pe->kind), pe->prefix);
	default:
		return xasprintf("Python %s (%s)", v, pe->real);
	}
}
