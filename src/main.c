/* main: parses the command line, creates the session folder and hands
 * over to a frontend: the TUI (default), headless (-p) or exec. The only
 * place that exits. */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "terp/cli.h"
#include "terp/config.h"
#include "terp/cost.h"
#include "terp/egress.h"
#include "terp/pipindex.h"
#include "terp/pyenv.h"
#include "terp/kernel_ssh.h"
#include "terp/serve.h"
#include "terp/store.h"
#include "terp/sanitize.h"
#include "terp/util.h"
#include "terp/tui.h"
#include "terp/tui_theme.h"

#define STDIN_MAX (16u << 20)

enum {
	OPT_JSON = 256, OPT_OUT, OPT_MEMORY, OPT_TIMEOUT, OPT_GRACE, OPT_NPROC,
	OPT_FSIZE, OPT_NOFILE, OPT_ARTMAX, OPT_NO_SANDBOX, OPT_NETWORK,
	OPT_PROVIDER, OPT_MODEL, OPT_BASE_URL, OPT_MAX_TURNS, OPT_MAX_RETRIES,
	OPT_TOOL_LIMIT, OPT_CTX_WINDOW, OPT_SYSTEM, OPT_THEME, OPT_IMAGES, OPT_STOP, OPT_VERSION,
	OPT_LIST, OPT_IDS, OPT_DELETE, OPT_EXPORT, OPT_RESUME, OPT_REPLAY, OPT_IDLE,
	OPT_MAX_SESSION, OPT_STRICT_NUMBERS, OPT_MAX_COST, OPT_DISK, OPT_PYTHON, OPT_ALLOW_HOST,
	OPT_EGRESS_MAX, OPT_SANDBOX, OPT_SANDBOX_TOKEN_ENV, OPT_SANDBOX_TOKEN_CMD,
	OPT_JUPYTER_KERNEL, OPT_SSH_COMMAND, OPT_SSH_TERP, OPT_NO_SAVE,
	OPT_REASONING, OPT_SHOW_REASONING, OPT_API,
	OPT_NO_INPUT, OPT_ASK,
};

#define IDLE_DEFAULT_MS	(30 * 60 * 1000)

/* What main keeps for the session's whole life (kernel_opts points at
 * it): the interpreter's choice and its resolution, the allow rules, and
 * the variables passed into the sandbox. */
static struct {
	const char	*python;	/* --python, else the config's */
	const char	*python_from;	/* how it was given, for messages */
	struct pyenv	 pe;
	char		**allow;	/* NULL-terminated */
	size_t		 nallow;
	char		*sandbox_env[4];
	int		 version;	/* --version */
} m;

static void
allow_add(const char *spec)
{
	m.allow = xrealloc(m.allow, (m.nallow + 2) * sizeof *m.allow);
	m.allow[m.nallow++] = xstrdup(spec);
	m.allow[m.nallow] = NULL;
}

/* allow_hosts = a, b c: comma or space separated. */
static void
allow_add_list(const char *list)
{
	char *copy = xstrdup(list), *save = NULL;

	for (char *t = strtok_r(copy, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save))
		allow_add(t);
	free(copy);
}

static const struct option long_opts[] = {
	{ "prompt", required_argument, NULL, 'p' },
	{ "code", required_argument, NULL, 'c' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "strict-numbers", no_argument, NULL, OPT_STRICT_NUMBERS },
	{ "no-input", no_argument, NULL, OPT_NO_INPUT },
	{ "ask", no_argument, NULL, OPT_ASK },
	{ "max-cost", required_argument, NULL, OPT_MAX_COST },
	{ "out", required_argument, NULL, OPT_OUT },
	{ "memory", required_argument, NULL, OPT_MEMORY },
	{ "disk", required_argument, NULL, OPT_DISK },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "grace", required_argument, NULL, OPT_GRACE },
	{ "max-procs", required_argument, NULL, OPT_NPROC },
	{ "max-file-size", required_argument, NULL, OPT_FSIZE },
	{ "max-open-files", required_argument, NULL, OPT_NOFILE },
	{ "max-artifact-size", required_argument, NULL, OPT_ARTMAX },
	{ "no-sandbox", no_argument, NULL, OPT_NO_SANDBOX },
	{ "network", no_argument, NULL, OPT_NETWORK },
	{ "python", required_argument, NULL, OPT_PYTHON },
	{ "allow-host", required_argument, NULL, OPT_ALLOW_HOST },
	{ "egress-max", required_argument, NULL, OPT_EGRESS_MAX },
	{ "sandbox", required_argument, NULL, OPT_SANDBOX },
	{ "sandbox-token-env", required_argument, NULL, OPT_SANDBOX_TOKEN_ENV },
	{ "sandbox-token-cmd", required_argument, NULL, OPT_SANDBOX_TOKEN_CMD },
	{ "jupyter-kernel", required_argument, NULL, OPT_JUPYTER_KERNEL },
	{ "ssh-command", required_argument, NULL, OPT_SSH_COMMAND },
	{ "ssh-terp", required_argument, NULL, OPT_SSH_TERP },
	{ "provider", required_argument, NULL, OPT_PROVIDER },
	{ "model", required_argument, NULL, OPT_MODEL },
	{ "reasoning", required_argument, NULL, OPT_REASONING },
	{ "show-reasoning", no_argument, NULL, OPT_SHOW_REASONING },
	{ "api", required_argument, NULL, OPT_API },
	{ "base-url", required_argument, NULL, OPT_BASE_URL },
	{ "max-turns", required_argument, NULL, OPT_MAX_TURNS },
	{ "max-retries", required_argument, NULL, OPT_MAX_RETRIES },
	{ "tool-output-limit", required_argument, NULL, OPT_TOOL_LIMIT },
	{ "context-window", required_argument, NULL, OPT_CTX_WINDOW },
	{ "system", required_argument, NULL, OPT_SYSTEM },
	{ "theme", required_argument, NULL, OPT_THEME },
	{ "images", required_argument, NULL, OPT_IMAGES },
	{ "stop-on-error", no_argument, NULL, OPT_STOP },
	{ "list", no_argument, NULL, OPT_LIST },
	/* hidden: --list --ids, the ids alone, for the shell completions */
	{ "ids", no_argument, NULL, OPT_IDS },
	{ "delete", required_argument, NULL, OPT_DELETE },
	{ "export", required_argument, NULL, OPT_EXPORT },
	{ "resume", optional_argument, NULL, OPT_RESUME },
	{ "replay", no_argument, NULL, OPT_REPLAY },
	{ "no-save", no_argument, NULL, OPT_NO_SAVE },
	{ "idle-timeout", required_argument, NULL, OPT_IDLE },
	{ "max-session", required_argument, NULL, OPT_MAX_SESSION },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static void
usage(FILE *fp)
{
	fputs(
	    "usage: terp [OPTIONS] [DATA_FILE...]              the terminal notebook\n"
	    "       terp -p QUESTION [OPTIONS] [DATA_FILE...]  answer one question, headless\n"
	    "       terp exec [OPTIONS] [-c CODE]... [DATA_FILE...]  run cells, no model\n"
	    "       terp --list | --delete ID | --export ID FILE   saved sessions\n"
	    "       terp serve [OPTIONS]  one sandbox session over stdin/stdout (for\n"
	    "                           --sandbox ssh://; run by ssh, not by hand)\n"
	    "\n"
	    "  -p, --prompt TEXT        the question (- reads it from stdin); repeat -p to\n"
	    "                           ask follow-ups in the same session\n"
	    "  -c, --code CODE          (exec) a cell; repeat for more; none: stdin is one\n"
	    "                           cell\n"
	    "      --stop-on-error      (exec) stop at the first failing cell\n"
	    "      --json               print JSON lines instead of text\n"
	    "      --out DIR            where artifacts are copied (default ./out)\n"
	    "      --provider NAME      openai, azure, anthropic, ollama or demo\n"
	    "      --model NAME         model (or provider:model); Azure: the deployment\n"
	    "      --base-url URL       the provider's endpoint\n"
	    "      --reasoning LEVEL    off, low, medium or high: how hard the model\n"
	    "                           thinks (default: the provider's default)\n"
	    "      --show-reasoning     (-p) write the model's reasoning to stderr\n"
	    "      --api responses|chat OpenAI/Azure API (default: responses for the\n"
	    "                           o1/o3/o4/gpt-5/codex families, else chat)\n"
	    "      --max-turns N        model calls per question (default 20)\n"
	    "      --strict-numbers     (-p) exit 6 when an answer has a number no cell\n"
	    "                           printed\n"
	    "      --ask                (notebook) each cell of the model waits for you:\n"
	    "                           y runs it, e edits it, n skips it, a stops asking\n"
	    "      --no-input           (notebook) the model's cells may not ask you for\n"
	    "                           input(): it raises at once (yours still ask)\n"
	    "      --max-cost DOLLARS   stop a question that would take the session past it\n"
	    "                           (exit 7; prices: price = lines in the config)\n"
	    "      --max-retries N      retries of a failed model request (default 4)\n"
	    "      --tool-output-limit BYTES  tool result size sent to the model (4096)\n"
	    "      --context-window N   the model's context window in tokens (default: the\n"
	    "                           server's, or terp's table of common models)\n"
	    "      --system FILE        replace the built-in system prompt\n"
	    "      --memory SIZE        sandbox memory limit (default 4G)\n"
	    "      --disk SIZE          disk the session's workspace may use (default 4G)\n"
	    "      --timeout SECS       per-cell time limit (default 120; 0: none)\n"
	    "      --grace SECS         wait after an interrupt before killing (3)\n"
	    "      --max-procs N        processes and threads in the sandbox (256)\n"
	    "      --max-file-size SIZE largest file the code may write (1G)\n"
	    "      --max-open-files N   open files in the sandbox (1024)\n"
	    "      --max-artifact-size SIZE  largest artifact copied out (64M)\n"
	    "      --python PATH        the Python to run (a venv, conda env or interpreter;\n"
	    "                           default: $VIRTUAL_ENV, $CONDA_PREFIX, PATH's python3)\n"
	    "      --allow-host HOST[:PORT]  let the sandbox reach HOST through terp's\n"
	    "                           proxy (repeat; *.DOMAIN, an address; default ports\n"
	    "                           80 and 443); nothing else is reachable\n"
	    "      --egress-max SIZE    bytes the session may send out (default 10M)\n"
	    "      --network            give the sandbox the host's network (off by default)\n"
	    "      --no-sandbox         run Python without isolation (not recommended)\n"
	    "      --sandbox WHERE      where the Python session runs: local (default),\n"
	    "                           ssh://[user@]host[:port], jupyter+http[s]://host\n"
	    "                           [:port][/base] or aca:<pool management endpoint>\n"
	    "      --sandbox-token-env VAR   the remote's token is in VAR (default\n"
	    "                           JUPYTER_TOKEN, TERP_ACA_TOKEN)\n"
	    "      --sandbox-token-cmd CMD   the remote's token is CMD's output\n"
	    "      --jupyter-kernel NAME     the Jupyter kernelspec (default: the server's)\n"
	    "      --ssh-command CMD    the ssh client and options (default ssh)\n"
	    "      --ssh-terp CMD       terp on the ssh host (default terp)\n"
	    "      --theme NAME         TUI colour theme (default, light, mono)\n"
	    "      --images MODE        pictures: auto, kitty, iterm, sixel, blocks, off\n"
	    "  -h, --help               this help\n"
	    "  -V, --version            the version\n"
	    "\n"
	    "Sessions (saved under $XDG_STATE_HOME/terp/sessions):\n"
	    "      --list               list the saved sessions, most recent first\n"
	    "      --delete ID          delete a saved session\n"
	    "      --export ID FILE     write a session to FILE (.ipynb or .md)\n"
	    "      --resume [ID]        continue a session (default: the latest) in a\n"
	    "                           new sandbox; with -p or exec, headless\n"
	    "      --replay             (with --resume) first re-run the cells that\n"
	    "                           succeeded, to rebuild the variables\n"
	    "      --no-save            remove the session when the run ends (a run\n"
	    "                           that ran no cell and got no reply is never kept)\n"
	    "      --idle-timeout DUR   stop an idle sandbox (default 30m; 0: never); it\n"
	    "                           restarts at the next cell, without its variables\n"
	    "      --max-session DUR    end the session after DUR (default: never)\n"
	    "See terp(1) for everything.\n", fp);
}

static void __attribute__((noreturn))
usage_error(const char *fmt, const char *arg)
{
	fputs("terp: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs(" (try terp --help)\n", stderr);
	exit(2);
}

/* The long option nearest to the n bytes typed after "--" (at most 2
 * edits, 1 for what is 5 characters or shorter), or NULL. */
static const char *
nearest_option(const char *typed, size_t n)
{
	const char *best = NULL;
	int bd = 3;

	for (const struct option *o = long_opts; o->name; o++) {
		int d = edit_distance(typed, n, o->name);
		/* short names: one edit, or everything is near something */
		if (d < bd && d <= (n <= 5 ? 1 : 2)) {
			bd = d;
			best = o->name;
		}
	}
	return best;
}

/* getopt's complaint, in one line: the option as typed, without its
 * value. */
static void __attribute__((noreturn))
bad_option(int ch, char **argv)
{
	const char *typed = argv[optind - 1];
	size_t n = strcspn(typed, "=");

	if (ch == ':')
		fprintf(stderr, "terp: %.*s needs a value (try terp --help)\n", (int)n,
		    typed);
	else if (optopt >= 256)
		fprintf(stderr, "terp: %.*s takes no value (try terp --help)\n", (int)n,
		    typed);
	else if (optopt != 0)
		fprintf(stderr, "terp: unknown option -%c (try terp --help)\n", optopt);
	else if (n > 2 && typed[0] == '-' && typed[1] == '-' &&
	    nearest_option(typed + 2, n - 2) != NULL)
		fprintf(stderr, "terp: unknown option %.*s; did you mean --%s? (try terp "
		    "--help)\n", (int)n, typed, nearest_option(typed + 2, n - 2));
	else
		fprintf(stderr, "terp: unknown option %.*s (try terp --help)\n", (int)n,
		    typed);
	exit(2);
}

static uint64_t
opt_size(const char *name, const char *v)
{
	uint64_t n;
	if (parse_size(v, &n) < 0 || n == 0)
		usage_error("invalid size for %s (try 4G, 512M)", name);
	return n;
}

static long
opt_long(const char *name, const char *v, long min)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || *end || end == v || n < min)
		usage_error("invalid number for %s", name);
	return n;
}

/* What goes to the model or the sandbox is JSON text: UTF-8 without
 * NUL. Anything else is refused in one line saying where (a Latin-1
 * file would otherwise be a request body the API cannot parse, and a
 * NUL would cut the text there without a word). */
static void
check_text(const char *what, const char *s, size_t n)
{
	for (size_t i = 0; i < n; ) {
		unsigned cp;
		size_t k;

		if (s[i] == '\0') {
			fprintf(stderr, "terp: %s holds a NUL byte at offset %zu: not "
			    "sent\n", what, i);
			exit(2);
		}
		if ((unsigned char)s[i] < 0x80) {
			i++;
			continue;
		}
		if ((k = utf8_decode(s + i, n - i, &cp)) == 0) {
			fprintf(stderr, "terp: %s is not valid UTF-8 (byte 0x%02x at "
			    "offset %zu; Latin-1? convert it first, e.g. iconv -f "
			    "latin1 -t utf-8)\n", what, (unsigned char)s[i], i);
			exit(2);
		}
		i += k;
	}
}

static char *
read_stdin(const char *what)
{
	size_t len;
	char *s = read_file("/dev/stdin", STDIN_MAX, &len);
	if (s == NULL) {
		fprintf(stderr, "terp: cannot read stdin: %s\n", strerror(errno));
		exit(2);
	}
	check_text(what, s, len);
	return s;
}

/* A dollar amount > 0. */
static double
opt_cost(const char *name, const char *v)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (errno || *end || end == v || !(d > 0) || d > 1e9 ||
	    strspn(v, "0123456789.") != strlen(v))
		usage_error("invalid amount for %s (dollars, e.g. 0.50)", name);
	return d;
}

/* The config's `price = MODEL INPUT OUTPUT [CACHED]` lines (each one
 * counts, unlike other keys), builtin_prices and max_cost. The table
 * lives as long as the process. */
static void
apply_prices(struct cli *c, const struct config *cf)
{
	static struct cost_table *t;
	const char *v;

	t = cost_table_new();
	for (int i = 0; i < cf->n; i++) {
		char *err = NULL;
		if (strcmp(cf->e[i].key, "price") != 0)
			continue;
		if (cost_table_add(t, cf->e[i].value, &err) < 0) {
			fprintf(stderr, "terp: %s:%d: %s\n", cf->path ? cf->path : "config",
			    cf->e[i].line, err);
			exit(2);
		}
	}
	if ((v = config_get(cf, "builtin_prices")))
		cost_table_use_builtin(t, strcmp(v, "on") == 0 || strcmp(v, "true") == 0 ||
		    strcmp(v, "1") == 0 || strcmp(v, "yes") == 0);
	if ((v = config_get(cf, "max_cost")))
		c->aopts.max_cost = opt_cost("max_cost (config)", v);
	c->aopts.prices = t;
}

/* The settings file's non-model keys, applied before the flags so that
 * flags win (llm_config_resolve reads the model's keys itself). */
static void
apply_config(struct cli *c)
{
	struct config cf = { 0 };
	char *err = NULL;
	const char *v;
	int64_t ms;

	if (config_load(&cf, NULL, &err) < 0) {
		fprintf(stderr, "terp: %s\n", err);
		exit(2);
	}
	if ((v = config_get(&cf, "theme")))
		c->theme = xstrdup(v);
	if ((v = config_get(&cf, "images")))
		c->images = xstrdup(v);
	if ((v = config_get(&cf, "background"))) {
		if (strcmp(v, "auto") == 0)
			c->background = 0;
		else if (strcmp(v, "dark") == 0)
			c->background = 1;
		else if (strcmp(v, "light") == 0)
			c->background = 2;
		else
			usage_error("background in the config file is auto, dark "
			    "or light, not '%s'", v);
	}
	if ((v = config_get(&cf, "memory")))
		c->kopts.memory = opt_size("memory (config)", v);
	if ((v = config_get(&cf, "disk")))
		c->kopts.disk = opt_size("disk (config)", v);
	if ((v = config_get(&cf, "timeout"))) {
		if (parse_duration_ms(v, &ms) < 0)
			usage_error("invalid duration for timeout in the config file: %s", v);
		c->kopts.timeout_ms = ms;
	}
	if ((v = config_get(&cf, "max_turns")))
		c->aopts.max_turns = (int)opt_long("max_turns (config)", v, 1);
	if ((v = config_get(&cf, "context_window")))
		c->aopts.context_window = opt_long("context_window (config)", v, 512);
	if ((v = config_get(&cf, "tool_output_limit")))
		c->aopts.tool_output_limit = (size_t)opt_long("tool_output_limit (config)", v, 256);
	/* ask = on: as --ask, in the notebook (-p never asks) */
	if ((v = config_get(&cf, "ask")) && (strcmp(v, "on") == 0 ||
	    strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcmp(v, "yes") == 0))
		c->ask = 1;
	/* model_input = off: as --no-input */
	if ((v = config_get(&cf, "model_input")) && (strcmp(v, "off") == 0 ||
	    strcmp(v, "false") == 0 || strcmp(v, "0") == 0 || strcmp(v, "no") == 0))
		c->no_input = 1;
	if ((v = config_get(&cf, "network")))
		c->kopts.network = strcmp(v, "on") == 0 || strcmp(v, "true") == 0 ||
		    strcmp(v, "1") == 0 || strcmp(v, "yes") == 0;
	if ((v = config_get(&cf, "out")))
		c->kopts.out_dir = xstrdup(v);
	if ((v = config_get(&cf, "python")) && *v) {
		m.python = xstrdup(v);
		m.python_from = "python = in the config";
	}
	if ((v = config_get(&cf, "allow_hosts")))
		allow_add_list(v);
	if ((v = config_get(&cf, "egress_max")))
		c->kopts.egress_max = opt_size("egress_max (config)", v);
	apply_prices(c, &cf);
	if ((v = config_get(&cf, "sandbox")) && *v)
		c->kopts.sandbox = xstrdup(v);
	if ((v = config_get(&cf, "sandbox_token_cmd")) && *v)
		c->kopts.sandbox_token_cmd = xstrdup(v);
	if ((v = config_get(&cf, "sandbox_token_env")) && *v)
		c->kopts.sandbox_token_env = xstrdup(v);
	if ((v = config_get(&cf, "jupyter_kernel")) && *v)
		c->kopts.jupyter_kernel = xstrdup(v);
	if ((v = config_get(&cf, "ssh_terp")) && *v)
		c->kopts.ssh_terp = xstrdup(v);
	if ((v = config_get(&cf, "ssh_command")) && *v)
		c->kopts.ssh_command = xstrdup(v);
	config_free(&cf);
}

/* Whether id names a saved session. */
static int
is_session(const struct cli *c, const char *id)
{
	char *path = store_journal_path(c->sessions_dir, id);
	int yes = path != NULL && access(path, F_OK) == 0;

	free(path);
	return yes;
}

/* A first argument after --resume that is no file but could be an id
 * or its start (ids begin with the date: 20261201-...; no dot, unlike
 * most file names): taken as the session to resume, so that a mistyped
 * one is named as a session, not as a missing data file. */
static int
looks_like_id(const char *s)
{
	return s[0] >= '0' && s[0] <= '9' && strspn(s, "0123456789"
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_") == strlen(s) &&
	    access(s, F_OK) != 0;
}

/* The session options' positional arguments: --export's FILE, and
 * --resume's ID when it is not given as --resume=ID (a first argument
 * that names a saved session is taken as the id, not as a data file). */
static void
parse_sessions(struct cli *c)
{
	if (c->export_id != NULL) {
		if (c->ndata != 1)
			usage_error("%s: give the session id and one file name (.ipynb or .md)",
			    "--export");
		c->export_file = c->data_files[0];
		c->ndata = 0;
		return;
	}
	if (c->list || c->delete_id)
		return;
	if (c->replay && !c->resume)
		usage_error("%s: only with --resume", "--replay");
	if (c->no_save && c->resume)
		usage_error("%s: not with --resume (terp --delete ID removes a session)",
		    "--no-save");
	if (c->resume && c->resume_id == NULL && c->ndata > 0 &&
	    (is_session(c, c->data_files[0]) || looks_like_id(c->data_files[0]))) {
		c->resume_id = c->data_files[0];
		c->data_files++;
		c->ndata--;
	}
}

/* A data file argument that is no file and reads like a question
 * (words, or a question mark at its end). */
static int
is_question(const char *s)
{
	size_t n = strlen(s);

	return access(s, F_OK) != 0 && n > 0 && (strchr(s, ' ') != NULL ||
	    s[n - 1] == '?');
}

/* `terp "what is the mean?" data.csv`: the command that was meant. */
static void __attribute__((noreturn))
question_error(const struct cli *c, int q)
{
	const char *quote = strchr(c->data_files[q], '"') ? "'" : "\"";

	if (c->mode == CLI_PROMPT) {	/* a follow-up is its own -p */
		fprintf(stderr, "terp: there is no file '%s'; did you mean another "
		    "question: `-p %s%s%s`?\n", c->data_files[q], quote, c->data_files[q],
		    quote);
		exit(2);
	}
	fprintf(stderr, "terp: there is no file '%s'; did you mean `terp -p %s%s%s",
	    c->data_files[q], quote, c->data_files[q], quote);
	for (int i = 0; i < c->ndata; i++)
		if (i != q && !is_question(c->data_files[i]))
			fprintf(stderr, " %s", c->data_files[i]);
	fputs("`?\n", stderr);
	exit(2);
}

static void
parse(struct cli *c, int argc, char **argv)
{
	int ch;
	int64_t ms;

	memset(c, 0, sizeof *c);
	kernel_opts_default(&c->kopts);
	agent_opts_default(&c->aopts);
	c->idle_ms = IDLE_DEFAULT_MS;
	c->sessions_dir = store_sessions_dir();
	apply_config(c);
	c->mode = CLI_TUI;
	if (argc > 1 && strcmp(argv[1], "serve") == 0) {
		c->mode = CLI_SERVE;
		argv[1] = argv[0];
		argv++;
		argc--;
	} else if (argc > 1 && strcmp(argv[1], "exec") == 0) {
		c->mode = CLI_EXEC;
		argv[1] = argv[0];
		argv++;
		argc--;
	}
	opterr = 0;	/* bad_option says it in one line */
	while ((ch = getopt_long(argc, argv, ":p:c:hV", long_opts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			if (c->mode == CLI_EXEC)
				usage_error("%s: -p is not for terp exec", "exec");
			c->mode = CLI_PROMPT;
			c->prompts = xrealloc(c->prompts, (size_t)(c->nprompts + 1) * sizeof *c->prompts);
			c->prompts[c->nprompts++] = optarg;
			break;
		case 'c':
			if (c->mode != CLI_EXEC)
				usage_error("%s: -c is for terp exec", "-c");
			c->cells = xrealloc(c->cells, (size_t)(c->ncells + 1) * sizeof *c->cells);
			c->cells[c->ncells++] = optarg;
			break;
		case OPT_STOP: c->stop_on_error = 1; break;
		case OPT_JSON: c->json = 1; break;
		case OPT_STRICT_NUMBERS: c->strict_numbers = 1; break;
		case OPT_NO_INPUT: c->no_input = 1; break;
		case OPT_ASK: c->ask = c->ask_flag = 1; break;
		case OPT_MAX_COST: c->aopts.max_cost = opt_cost("--max-cost", optarg); break;
		case OPT_OUT: c->kopts.out_dir = optarg; break;
		case OPT_MEMORY: c->kopts.memory = opt_size("--memory", optarg); break;
		case OPT_DISK: c->kopts.disk = opt_size("--disk", optarg); break;
		case OPT_TIMEOUT:
			if (parse_duration_ms(optarg, &ms) < 0)
				usage_error("invalid duration for --timeout: %s", optarg);
			c->kopts.timeout_ms = ms;
			break;
		case OPT_GRACE:
			if (parse_duration_ms(optarg, &ms) < 0)
				usage_error("invalid duration for --grace: %s", optarg);
			c->kopts.grace_ms = ms;
			break;
		case OPT_NPROC: c->kopts.nproc = opt_long("--max-procs", optarg, 8); break;
		case OPT_FSIZE: c->kopts.fsize = opt_size("--max-file-size", optarg); break;
		case OPT_NOFILE: c->kopts.nofile = opt_long("--max-open-files", optarg, 64); break;
		case OPT_ARTMAX: c->kopts.artifact_max = opt_size("--max-artifact-size", optarg); break;
		case OPT_NO_SANDBOX: c->kopts.no_sandbox = 1; break;
		case OPT_NETWORK: c->kopts.network = 1; break;
		case OPT_PYTHON:
			m.python = optarg;
			m.python_from = "--python";
			break;
		case OPT_ALLOW_HOST: {
			char *err = NULL;
			if (egress_rule_check(optarg, &err) < 0) {
				fprintf(stderr, "terp: --allow-host %s\n", err);
				exit(2);
			}
			allow_add(optarg);
			break;
		}
		case OPT_EGRESS_MAX: c->kopts.egress_max = opt_size("--egress-max", optarg); break;
		case OPT_SANDBOX: c->kopts.sandbox = optarg; break;
		case OPT_SANDBOX_TOKEN_ENV: c->kopts.sandbox_token_env = optarg; break;
		case OPT_SANDBOX_TOKEN_CMD: c->kopts.sandbox_token_cmd = optarg; break;
		case OPT_JUPYTER_KERNEL: c->kopts.jupyter_kernel = optarg; break;
		case OPT_SSH_COMMAND: c->kopts.ssh_command = optarg; break;
		case OPT_SSH_TERP: c->kopts.ssh_terp = optarg; break;
		case OPT_PROVIDER: c->llm.provider = xstrdup(optarg); break;
		case OPT_MODEL: c->llm.model = xstrdup(optarg); break;
		case OPT_REASONING:
			if ((c->llm.reasoning = llm_reasoning_parse(optarg)) < 0)
				usage_error("invalid --reasoning '%s' (use off, low, "
				    "medium or high)", optarg);
			break;
		case OPT_SHOW_REASONING: c->llm.show_reasoning = 1; break;
		case OPT_API:
			if (strcmp(optarg, "chat") == 0)
				c->llm.api = LLM_API_CHAT;
			else if (strcmp(optarg, "responses") == 0)
				c->llm.api = LLM_API_RESPONSES;
			else
				usage_error("invalid --api '%s' (use responses or "
				    "chat)", optarg);
			break;
		case OPT_BASE_URL: c->llm.base_url = xstrdup(optarg); break;
		case OPT_MAX_TURNS: c->aopts.max_turns = (int)opt_long("--max-turns", optarg, 1); break;
		case OPT_MAX_RETRIES: {
			/* llm_config: 0 means unset, -1 means none */
			long n = opt_long("--max-retries", optarg, 0);
			c->llm.max_retries = n == 0 ? -1 : (int)n;
			break;
		}
		case OPT_CTX_WINDOW:
			c->aopts.context_window = opt_long("--context-window", optarg, 512);
			break;
		case OPT_TOOL_LIMIT:
			c->aopts.tool_output_limit = (size_t)opt_long("--tool-output-limit", optarg, 256);
			break;
		case OPT_SYSTEM: {
			char *s = read_file(optarg, 1 << 20, NULL);
			if (s == NULL) {
				fprintf(stderr, "terp: cannot read --system %s: %s\n", optarg,
				    strerror(errno));
				exit(2);
			}
			c->aopts.system_prompt = s;
			break;
		}
		case OPT_THEME: c->theme = optarg; break;
		case OPT_IMAGES: c->images = optarg; break;
		case OPT_LIST: c->list = 1; break;
		case OPT_IDS: c->list = 2; break;
		case OPT_DELETE: c->delete_id = optarg; break;
		case OPT_EXPORT: c->export_id = optarg; break;
		case OPT_RESUME:
			c->resume = 1;
			c->resume_id = optarg;
			break;
		case OPT_REPLAY: c->replay = 1; break;
		case OPT_NO_SAVE: c->no_save = 1; break;
		case OPT_IDLE:
			if (parse_duration_ms(optarg, &ms) < 0)
				usage_error("invalid duration for --idle-timeout: %s", optarg);
			c->idle_ms = ms;
			break;
		case OPT_MAX_SESSION:
			if (parse_duration_ms(optarg, &ms) < 0)
				usage_error("invalid duration for --max-session: %s", optarg);
			c->max_ms = ms;
			break;
		case 'h': usage(stdout); exit(0);
		case 'V':
		case OPT_VERSION: m.version = 1; break;
		default: bad_option(ch, argv);
		}
	}
	if (m.version)
		return;
	if (c->mode == CLI_SERVE) {
		if (optind < argc)
			usage_error("%s: takes no data files (the terp that connects stages them)",
			    "serve");
		c->kopts.sandbox = NULL;	/* serve is the sandbox */
	}
	if (c->ask_flag && c->mode == CLI_PROMPT)
		usage_error("%s: -p has no terminal to ask on before each cell runs; "
		    "drop it, or open the notebook (terp without -p)", "--ask");
	c->data_files = (const char **)argv + optind;
	c->ndata = argc - optind;
	parse_sessions(c);
	for (size_t i = 0; i < m.nallow; i++) {
		char *err = NULL;
		if (egress_rule_check(m.allow[i], &err) < 0) {
			fprintf(stderr, "terp: allow_hosts in the config: %s\n", err);
			exit(2);
		}
	}
	if (m.nallow > 0 && (c->kopts.network || c->kopts.no_sandbox))
		usage_error("%s: the sandbox's own network is what the proxy guards; "
		    "it has no meaning with --network or --no-sandbox", "--allow-host");
	c->kopts.allow_hosts = (const char *const *)m.allow;
	for (int i = 0; i < c->ndata; i++) {
		char *err = NULL;
		/* host:/path with --sandbox ssh://: a file over there. */
		if (strncmp(c->kopts.sandbox ? c->kopts.sandbox : "", "ssh://", 6) == 0 &&
		    kernel_ssh_remote_path(c->data_files[i]) &&
		    access(c->data_files[i], F_OK) != 0)
			continue;
		if (c->mode != CLI_EXEC && is_question(c->data_files[i]))
			question_error(c, i);
		/* Opened without blocking: a FIFO or a folder is refused here,
		 * in one line, instead of hanging or failing later. */
		if (kernel_check_data(c->data_files[i], &err) < 0) {
			fprintf(stderr, "terp: %s\n", err);
			free(err);
			exit(2);
		}
	}
	for (int i = 0; i < c->nprompts; i++) {
		if (strcmp(c->prompts[i], "-") == 0) {
			char *q = read_stdin("the question on stdin");
			size_t n = strlen(q);
			while (n > 0 && (q[n - 1] == '\n' || q[n - 1] == '\r' ||
			    q[n - 1] == ' ' || q[n - 1] == '\t'))
				q[--n] = '\0';
			c->prompts[i] = q;
		}
		check_text("the question", c->prompts[i], strlen(c->prompts[i]));
		if (c->prompts[i][strspn(c->prompts[i], " \t\r\n")] == '\0')
			usage_error("%s: the question is empty", "-p");
	}
	if (c->mode == CLI_EXEC && c->ncells == 0 && !c->list && !c->delete_id &&
	    !c->export_id) {
		c->cells = xmalloc(sizeof *c->cells);
		c->cells[c->ncells++] = read_stdin("the cell on stdin");
	}
}

/* Resolves the interpreter into m.pe (0), or prints why not (-1). */
static int
resolve_python(void)
{
	struct pyenv_choice ch = { .python = m.python, .python_from = m.python_from };
	char *err = NULL;

	if (pyenv_resolve(&ch, &m.pe, &err) < 0) {
		fprintf(stderr, "terp: %s\n", err);
		free(err);
		return -1;
	}
	return 0;
}

/* Runs nothing: pyenv_probe then answers from its cache or not at all. */
static int
run_none(void *ctx, char *const argv[], size_t max, char **out, size_t *outlen,
    char **err)
{
	*out = NULL;
	*err = xstrdup("not probed");
	return -1;
}

/* terp --version: terp's, and the Python a session would run. Runs
 * nothing: the version comes from the probe's cache, else from the
 * standard library's folder name. */
static int
print_version(void)
{
	char *cache = pyenv_cache_dir(NULL), *label, *err = NULL;
	struct pyenv_choice ch = { .python = m.python, .python_from = m.python_from };
	struct pyenv_probe p;
	int have = 0;

	printf("terp %s\n", TERP_VERSION);
	if (pyenv_resolve(&ch, &m.pe, &err) < 0) {
		printf("python: %s\n", err);
		free(err);
		free(cache);
		return 0;
	}
	if (cache != NULL) {
		have = pyenv_probe(&m.pe, cache, run_none, NULL, &p, &err) == 0;
		free(err);
	}
	label = pyenv_label(&m.pe, have ? &p : NULL);
	printf("%s\n", label);
	/* which machinery runs IPython's syntax (see driver.py) */
	printf("IPython syntax: terp's built-in subset (magics, shell escapes, display) "
	    "in the local and ssh sandboxes; a Jupyter server's kernel runs IPython itself\n");
	free(label);
	free(cache);
	pyenv_free(&m.pe);
	return 0;
}

/* A line for the notebook to show at its start (cli.startup_notes). */
static void
add_startup_note(struct cli *c, const char *line)
{
	char *s = c->startup_notes ? xasprintf("%s%s\n", c->startup_notes, line) :
	    xasprintf("%s\n", line);

	free(c->startup_notes);
	c->startup_notes = s;
}

/* The index the user configured for pip on the host, offered: passed
 * into the sandbox when its host is allowed (and the URL holds no
 * credentials), else the exact flag to add is named. */
static void
offer_pip_index(struct cli *c)
{
	struct pipindex pi;
	char *idx = NULL, *extra = NULL;

	pipindex_find(NULL, m.pe.kind == PYENV_VENV ? m.pe.prefix : NULL, &pi);
	for (size_t i = 0; i < pi.n; i++) {
		char host[256], rule[300], *note;
		unsigned port;
		int cred;

		if (pipindex_url_host(pi.u[i].url, host, sizeof host, &port, &cred) < 0)
			continue;
		if (!egress_rules_cover((const char *const *)m.allow, host, port)) {
			const char *lo = egress_unspecified_loopback(host);
			if (lo != NULL)		/* never suggest 0.0.0.0 */
				snprintf(host, sizeof host, "%s", lo);
			snprintf(rule, sizeof rule, strchr(host, ':') ? "[%s]" : "%s", host);
			if (port != 80 && port != 443)
				snprintf(rule + strlen(rule), sizeof rule - strlen(rule), ":%u", port);
			note = xasprintf("pip's index %s (%s) is not reachable from the "
			    "sandbox; to let pip use it there, add --allow-host %s%s",
			    host, pi.u[i].from, rule, c->mode == CLI_TUI ?
			    " (or /allow it now)" : "");
			if (c->mode != CLI_TUI)
				fprintf(stderr, "terp: %s\n", note);
			else
				add_startup_note(c, note);
			free(note);
			continue;
		}
		if (cred) {
			note = xasprintf("pip's index %s (%s) holds credentials, which never "
			    "enter the sandbox: pip there does not use it", host, pi.u[i].from);
			if (c->mode != CLI_TUI)
				fprintf(stderr, "terp: %s\n", note);
			else
				add_startup_note(c, note);
			free(note);
			continue;
		}
		if (!pi.u[i].extra && idx == NULL) {
			idx = xasprintf("PIP_INDEX_URL=%s", pi.u[i].url);
		} else if (pi.u[i].extra) {
			char *e = extra ? xasprintf("%s %s", extra, pi.u[i].url) :
			    xasprintf("PIP_EXTRA_INDEX_URL=%s", pi.u[i].url);
			free(extra);
			extra = e;
		}
	}
	pipindex_free(&pi);
	if (idx != NULL)
		m.sandbox_env[0] = idx;
	if (extra != NULL)
		m.sandbox_env[idx ? 1 : 0] = extra;
	c->kopts.sandbox_env = (const char *const *)m.sandbox_env;
}

/* The interpreter the session runs: resolved, reachable by the
 * sandbox's uid, named on stderr when it is not the system's. Returns 0,
 * or the exit status: 2 for a --python that names no interpreter, 4
 * (the sandbox cannot run it) when the sandbox's uid cannot read it. */
static int
setup_python(struct cli *c)
{
	char *err = NULL, *fix = NULL;

	if (resolve_python() < 0)
		return 2;
	if (!c->kopts.no_sandbox && geteuid() == 0 &&
	    pyenv_check_reach(&m.pe, &err, &fix) < 0) {
		/* The safe fix first: another interpreter opens nothing of
		 * the host to other users; the chmod does. */
		fprintf(stderr, "terp: %s: --python /usr/bin/python3 runs the system's Python "
		    "instead (python = /usr/bin/python3 in the config file keeps it)%s%s\n",
		    err, fix ? ", or " : "", fix ? fix : "");
		free(err);
		free(fix);
		return 4;
	}
	c->kopts.pyenv = &m.pe;
	c->kopts.python = m.pe.exec;
	c->kopts.probe_cache = pyenv_cache_dir(NULL);
	/* The one line saying which Python runs, when it is not the obvious
	 * one; the notebook's status bar names it (kernel_python_label). */
	if (m.pe.kind != PYENV_SYSTEM && c->mode != CLI_TUI)
		fprintf(stderr, "terp: %s\n", m.pe.reason);
	offer_pip_index(c);
	return 0;
}

static int
make_session(struct cli *c)
{
	if (c->session_id == NULL)	/* a resume has its own */
		c->session_id = store_new_id();
	c->session_dir = xasprintf("%s/%s", c->sessions_dir, c->session_id);
	/* The session folder is private (0700; kernel.c lets the sandbox's
	 * uid through it as root). As root the folders above it let others
	 * search (0711), or the sandbox's folders move to /var/lib/terp. */
	if (mkdir_p(c->sessions_dir, getuid() == 0 ? 0711 : 0700) < 0 ||
	    (mkdir(c->session_dir, 0700) < 0 && errno != EEXIST)) {
		int e = errno;
		char *home = user_home();
		struct stat st;

		if (home != NULL && stat(home, &st) < 0)
			fprintf(stderr, "terp: cannot save the session: the home folder %s does "
			    "not exist (terp does not create it; set XDG_STATE_HOME or HOME)\n", home);
		else
			fprintf(stderr, "terp: cannot create %s: %s\n", c->session_dir, strerror(e));
		free(home);
		return -1;
	}
	c->kopts.session_dir = c->session_dir;
	return 0;
}

static int
check_sandbox(struct cli *c)
{
	char *err = NULL;

	if (kernel_probe(&c->kopts, &err) < 0) {
		fprintf(stderr, "terp: %s\n", err);
		free(err);
		return -1;
	}
	if (kernel_opts_remote(&c->kopts))
		return 0;	/* the remote's isolation is told when connecting */
	if (c->kopts.no_sandbox)
		fprintf(stderr, "terp: warning: --no-sandbox: the code runs without isolation, "
		    "with your user's rights\n");
	if (c->kopts.network && !c->kopts.no_sandbox)
		fprintf(stderr, "terp: warning: --network: the sandbox can reach the network\n");
	return 0;
}

/* The output's last bytes and its close, checked (as cat and jq do): an
 * answer cut by a full disk, or /dev/full as stdout, is one line on
 * stderr and a non-zero status, never exit 0. Returns rc, or 1 for a
 * run that had gone well but whose output was lost. */
static int
finish_stdout(int rc)
{
	int failed = ferror(stdout);

	errno = 0;
	if (fclose(stdout) != 0)
		failed = 1;
	if (!failed)
		return rc;
	fprintf(stderr, "terp: cannot write the output: %s\n",
	    errno != 0 ? strerror(errno) : "write error");
	return rc != 0 ? rc : 1;
}

static int run_main(int argc, char **argv);

int
main(int argc, char **argv)
{
	return finish_stdout(run_main(argc, argv));
}

static int
run_main(int argc, char **argv)
{
	struct cli c;
	char *err = NULL;
	int rc;

	/* A request body is the whole conversation, rebuilt every turn and
	 * a little bigger each time; glibc's mmap threshold, raised to the
	 * size of each body freed, sent them to the heap, where the holes
	 * they left were never returned (840 MB at 3,000 questions). A
	 * fixed threshold keeps them mapped: freed means returned. The
	 * bodies' storage is reused from one request to the next
	 * (llm_cache_body_take, the notebook's kept bodies), so a low one
	 * costs no page faults per request, and keeps the bodies under
	 * 256 KiB (the first 700 questions) out of the heap as well. */
	mallopt(M_MMAP_THRESHOLD, 64 << 10);
	/* With the threshold fixed, so is the heap's trim threshold (128
	 * KiB): curl's upload buffer and a request's other pieces, freed at
	 * its end, left the heap's top free past it, given back, and faulted
	 * in (zeroed) again at the next request, twice a question. Up to
	 * 4 MiB of free top is kept instead; the peak is the same. */
	mallopt(M_TRIM_THRESHOLD, 4 << 20);
	parse(&c, argc, argv);
	if (m.version)
		return print_version();
	/* These need neither a model nor a sandbox. */
	if (c.list)
		return cli_sessions_list(&c);
	if (c.delete_id)
		return cli_sessions_delete(&c);
	if (c.export_id)
		return cli_sessions_export(&c);
	if (c.mode == CLI_SERVE) {
		/* Probed inside: its failure goes to the terp at the other end. */
		if ((rc = setup_python(&c)) != 0)
			return rc;
		return serve_run(&c);
	}
	{
		enum tui_gfx_mode gm;
		if (c.images && tui_gfx_parse(c.images, &gm) < 0) {
			fprintf(stderr, "terp: --images: '%s' is not one of auto, "
			    "kitty, iterm, sixel, blocks, off\n", c.images);
			return 2;
		}
	}
	/* a theme that cannot load: one line, before the screen is taken */
	if (c.mode == CLI_TUI && c.theme && tui_theme_check(c.theme, &err) < 0) {
		fprintf(stderr, "terp: %s\n", err);
		return 2;
	}
	if (c.resume && cli_sessions_resume(&c) < 0)
		return 1;
	if (c.mode != CLI_EXEC && llm_config_resolve(&c.llm, &err) < 0) {
		/* no model at all: the notebook still opens, for hand-run
		 * cells, with a banner on how to add one (tui_data.c) */
		int open_anyway = c.mode == CLI_TUI && c.llm.provider == NULL;
		if (!open_anyway)
			fprintf(stderr, "terp: %s\n", err);
		free(err);
		err = NULL;
		if (!open_anyway)
			return 2;
	}
	if (check_sandbox(&c) < 0)
		return 4;
	if (!kernel_opts_remote(&c.kopts) && (rc = setup_python(&c)) != 0)
		return rc;
	if (make_session(&c) < 0)
		return 1;
	switch (c.mode) {
	case CLI_EXEC:
		rc = exec_run(&c);
		break;
	case CLI_PROMPT:
		rc = headless_run(&c);
		break;
	default:
		rc = tui_session_run(&c);
		break;
	}
	/* kept: how to come back to it, on the terminal (-p's stdout is the
	 * answer only; a script's stderr does not need it either) */
	if (cli_sessions_end(&c) && !c.json && (c.mode == CLI_TUI || isatty(2)))
		fprintf(stderr, "session %s \xc2\xb7 terp --resume %s to continue\n",
		    c.session_id, c.session_id);
	llm_config_free(&c.llm);
	if (c.resume)
		resume_free(&c.res);
	return rc;
}
