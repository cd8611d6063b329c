/* tui_data: the empty notebook's words about the data. A CSV's rows and
 * columns are counted here (quotes and "\r\n" understood, at most
 * DATA_SCAN_MAX bytes read) rather than in the sandbox: the sandbox is
 * still starting when the screen first shows, and the user should see
 * their data at once. Parquet, Excel and the rest show their size. */
#include "tui_data.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "terp/buf.h"
#include "terp/dirsum.h"
#include "terp/llm.h"
#include "terp/sanitize.h"
#include "terp/session.h"
#include "terp/util.h"

#define DATA_SCAN_MAX	(16u << 20)	/* bytes read to count rows */
#define DATA_COLS_MAX	240		/* bytes of column names shown */

static int
ends_with(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	if (m > n)
		return 0;
	for (size_t i = 0; i < m; i++) {
		char a = s[n - m + i];
		if (a >= 'A' && a <= 'Z')
			a = (char)(a - 'A' + 'a');
		if (a != suf[i])
			return 0;
	}
	return 1;
}

/* The delimiter of the first line: tab for .tsv and .tab, else the most
 * common of ',', ';' and tab outside quotes (',' when none). */
static char
sniff(const char *path, const char *s, size_t n)
{
	size_t cnt[3] = { 0, 0, 0 };
	static const char d[3] = { ',', ';', '\t' };
	int q = 0;

	if (ends_with(path, ".tsv") || ends_with(path, ".tab"))
		return '\t';
	for (size_t i = 0; i < n && (q || s[i] != '\n'); i++) {
		if (s[i] == '"')
			q = !q;
		for (int k = 0; k < 3 && !q; k++)
			cnt[k] += s[i] == d[k];
	}
	int best = 0;
	for (int k = 1; k < 3; k++)
		if (cnt[k] > cnt[best])
			best = k;
	return d[best];
}

/* Thousands separated: 12345 -> "12,345". */
static void
fmt_count(char *b, size_t n, unsigned long long v)
{
	char tmp[32];
	int len = snprintf(tmp, sizeof tmp, "%llu", v), o = 0;

	for (int i = 0; i < len && (size_t)o + 2 < n; i++) {
		if (i > 0 && (len - i) % 3 == 0)
			b[o++] = ',';
		b[o++] = tmp[i];
	}
	b[o] = '\0';
}

/* Counts the records of delimited text s[0..n) and the fields of the
 * first; its names go to *names (raw). */
static void
count_csv(const char *s, size_t n, char delim, unsigned long long *recs,
    int *fields, struct buf *names)
{
	int q = 0, first = 1, any = 0;

	*recs = 0;
	*fields = 1;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '"') {
			q = !q;
			continue;
		}
		if (q) {
			if (first)
				buf_addc(names, c == '\n' ? ' ' : c);
			any = 1;
			continue;
		}
		if (c == '\n') {
			*recs += any;
			any = 0;
			first = 0;
			continue;
		}
		if (c == '\r')
			continue;
		any = 1;
		if (first) {
			if (c == delim) {
				(*fields)++;
				buf_adds(names, ", ");
			} else
				buf_addc(names, c);
		}
	}
	*recs += any;	/* a last line without '\n' */
}

/* A folder given as data: its files counted (dirsum.h), the first
 * names as its "columns". Takes fd. */
static int
describe_folder(int fd, char **shape, char **cols)
{
	struct dirsum s;
	char size[32];
	struct buf names;
	int rc = dirsum_walk(fd, &s, NULL, NULL);

	close(fd);
	if (rc < 0)
		return -1;
	fmt_bytes(size, sizeof size, s.bytes);
	*shape = xasprintf("folder · %llu file%s%s · %s", (unsigned long long)s.files,
	    s.files == 1 ? "" : "s", s.too_many || s.too_deep ? " or more" : "", size);
	buf_init(&names, 1 << 16);
	for (int i = 0; i < s.nnames; i++)
		buf_printf(&names, "%s%s", i ? ", " : "", s.names[i]);
	if (s.files > (uint64_t)s.nnames)
		buf_adds(&names, ", …");
	if (names.len > 0)
		*cols = sanitize_str(buf_str(&names), names.len, 0);
	buf_free(&names);
	return 0;
}

int
tui_data_describe(const char *path, char **shape, char **cols)
{
	struct stat st;
	char size[32], rows[40], ncol[24];

	*shape = NULL;
	*cols = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
		return describe_folder(fd, shape, cols);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	fmt_bytes(size, sizeof size, (uint64_t)st.st_size);
	if (!ends_with(path, ".csv") && !ends_with(path, ".tsv") &&
	    !ends_with(path, ".tab") && !ends_with(path, ".txt")) {
		close(fd);
		*shape = xstrdup(size);
		return 0;
	}
	size_t want = (uint64_t)st.st_size < DATA_SCAN_MAX ?
	    (size_t)st.st_size : DATA_SCAN_MAX, got = 0;
	char *s = xmalloc(want + 1);
	while (got < want) {
		ssize_t r = read(fd, s + got, want - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	unsigned long long recs;
	int fields;
	struct buf names;
	buf_init(&names, 1 << 16);
	count_csv(s, got, sniff(path, s, got), &recs, &fields, &names);
	free(s);
	int partial = got < (size_t)st.st_size;
	fmt_count(rows, sizeof rows, recs > 0 ? recs - 1 : 0);
	fmt_count(ncol, sizeof ncol, (unsigned long long)fields);
	if (recs == 0)
		*shape = xasprintf("empty · %s", size);
	else
		*shape = xasprintf("%s%s row%s × %s column%s · %s",
		    partial ? "≥ " : "", rows, recs == 2 ? "" : "s", ncol,
		    fields == 1 ? "" : "s", size);
	if (names.len > 0) {
		size_t n = names.len > DATA_COLS_MAX ? DATA_COLS_MAX : names.len;
		char *c = sanitize_str(buf_str(&names), n, 0);
		*cols = names.len > DATA_COLS_MAX ? xasprintf("%s …", c) : c;
		if (*cols != c)
			free(c);
	}
	buf_free(&names);
	return 0;
}

/* Where a data file came from, short: relative to the folder terp
 * runs in, or to the home folder (~/), else the whole path. New. */
static char *
origin(const char *path)
{
	char *cwd = getcwd(NULL, 0), *s;
	const char *home = getenv("HOME"), *p = path, *pre = "";
	size_t n;

	if (cwd != NULL && (n = strlen(cwd)) > 1 && strncmp(path, cwd, n) == 0 &&
	    path[n] == '/')
		p = path + n + 1;
	else if (home != NULL && (n = strlen(home)) > 1 &&
	    strncmp(path, home, n) == 0 && path[n] == '/') {
		p = path + n + 1;
		pre = "~/";
	}
	free(cwd);
	s = xasprintf("%s%s", pre, p);
	p = s;
	s = sanitize_str(p, strlen(p), 0);
	free((char *)p);
	return s;
}

/* The data files' descriptions, made on the first empty screen. */
static void
describe_all(struct tui *t)
{
	if (t->data.done)
		return;
	t->data.done = 1;
	/* the session's data files are the notebook's */
	t->data.n = t->nb ? notebook_nfiles(t->nb) : 0;
	t->data.v = xcalloc((size_t)(t->data.n > 0 ? t->data.n : 1),
	    sizeof *t->data.v);
	for (int i = 0; i < t->data.n; i++) {
		const struct datafile *f = notebook_file(t->nb, i);
		const char *p = f->path;
		/* the name the code uses (two sales.csv from two folders are
		 * sales.csv and sales-2.csv there), and where it came from */
		const char *n = f->sandbox ? f->sandbox : p;
		const char *slash = strrchr(n, '/');
		char *shape, *from;
		t->data.v[i].name = sanitize_str(slash ? slash + 1 : n,
		    strlen(slash ? slash + 1 : n), 0);
		if (tui_data_describe(p, &t->data.v[i].shape,
		    &t->data.v[i].cols) < 0)
			t->data.v[i].shape = xasprintf("cannot read: %s",
			    strerror(errno));
		from = origin(p);
		shape = xasprintf("%s · from %s", t->data.v[i].shape, from);
		free(from);
		free(t->data.v[i].shape);
		t->data.v[i].shape = shape;
	}
}

int
tui_data_no_model(const struct tui *t)
{
	return t->session && !session_llm(t->session) && !t->o.provider_label;
}

/* Three questions to start with: the ones the backend answers well
 * when it has them (the demo answers only its recorded questions), else
 * general ones about the first data file. */
static void
example_questions(struct tui *t, struct tlines *ls, int ww)
{
	const struct llm *m = session_llm(t->session);
	const char *f = t->data.v[0].name;
	char *ex[3] = { NULL, NULL, NULL };
	int n = 0;

	for (int i = 0; m != NULL && i < 3 && llm_suggest(m, i) != NULL; i++)
		ex[n++] = sanitize_str(llm_suggest(m, i),
		    strlen(llm_suggest(m, i)), 0);
	if (n == 0) {
		ex[n++] = xasprintf("What does each column of %s hold?", f);
		ex[n++] = xasprintf("What stands out in %s?", f);
		ex[n++] = xasprintf("Plot the main numbers of %s over time.", f);
	}
	tui_tlines_add(ls, 0);
	tui_tline_adds(tui_tlines_add(ls, 0), R_TEXT, "  For example:");
	for (int i = 0; i < n; i++) {
		tui_tlines_wrap(ls, ex[i], strlen(ex[i]), ww, R_DIM, "    › ",
		    R_USER_MARK, 0);
		free(ex[i]);
	}
}

void
tui_data_empty(struct tui *t, struct tlines *ls, int w)
{
	int ww = w > 12 ? w - 1 : w;
	int no_model = tui_data_no_model(t);

	describe_all(t);
	if (no_model)
		tui_tlines_wrap(ls, TUI_NO_MODEL, strlen(TUI_NO_MODEL), ww, R_ERROR,
		    "  ! ", R_ERROR, 0);
	else
	{
		static const char ask[] = "Ask a question about your data and "
		    "press Enter.";
		tui_tlines_wrap(ls, ask, strlen(ask), ww, R_DIM, "  ", R_DIM, 0);
	}
	tui_tline_adds(tui_tlines_add(ls, 0), R_DIM,
	    "  /help lists the commands, ? or F1 the keys.");
	if (t->data.n == 0)
		return;
	tui_tlines_add(ls, 0);
	tui_tline_adds(tui_tlines_add(ls, 0), R_TEXT,
	    "  Your data, in /workspace/data:");
	for (int i = 0; i < t->data.n; i++) {
		struct tline *l = tui_tlines_add(ls, 0);
		tui_tline_adds(l, R_USER, "    ");
		tui_tline_adds(l, R_USER, t->data.v[i].name);
		tui_tline_adds(l, R_DIM, "  ");
		tui_tline_adds(l, R_DIM, t->data.v[i].shape);
		if (t->data.v[i].cols)
			tui_tlines_cut(ls, t->data.v[i].cols,
			    strlen(t->data.v[i].cols), ww, R_DIM, "      ",
			    R_DIM, 0);
	}
	if (no_model)
		return;
	example_questions(t, ls, ww);
}

void
tui_data_free(struct tui *t)
{
	for (int i = 0; i < t->data.n; i++) {
		free(t->data.v[i].name);
		free(t->data.v[i].shape);
		free(t->data.v[i].cols);
	}
	free(t->data.v);
	t->data.v = NULL;
	t->data.n = 0;
	t->data.done = 0;
}
