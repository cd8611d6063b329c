/* kernel_sink: the one artifact writer under every backend. Names the
 * sandbox gives are only claims: a file terp did not write is never
 * replaced (chart-2.png), one it wrote this session is; the caps hold
 * per cell and per session; an abandoned artifact leaves no temporary
 * file; every refusal is one line for the cell, then a count. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "terp/kernel_sink.h"
#include "terp/util.h"

struct rec {
	char	 notes[8192];
	int	 nnotes;
	char	 names[16][64];
	int	 cells[16];
	int	 ncopied;
};

static void
copied(void *arg, int cell, const char *name, const char *host_path, uint64_t bytes)
{
	struct rec *r = arg;

	(void)host_path;
	(void)bytes;
	cr_assert_lt(r->ncopied, 16);
	snprintf(r->names[r->ncopied], sizeof r->names[0], "%s", name);
	r->cells[r->ncopied++] = cell;
}

static void
note(void *arg, int cell, const char *line)
{
	struct rec *r = arg;

	(void)cell;
	r->nnotes++;
	strncat(r->notes, line, sizeof r->notes - strlen(r->notes) - 1);
}

static char *
tmpdir(void)
{
	char *d = xstrdup("/tmp/terp-sink-XXXXXX");

	cr_assert_not_null(mkdtemp(d));
	return d;
}

static char *
slurp(const char *dir, const char *name)
{
	char *p = xasprintf("%s/%s", dir, name), *s = xcalloc(1, 256);
	FILE *f = fopen(p, "r");

	cr_assert_not_null(f, "%s missing", p);
	cr_assert_geq(fread(s, 1, 255, f), 0);
	fclose(f);
	free(p);
	return s;
}

/* Files in dir whose names start with '.' (a temporary file left). */
static int
hidden_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] == '.' && strcmp(e->d_name, ".") != 0 &&
		    strcmp(e->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

static const struct kframe_caps CAPS = {
	.size_max = 1000, .per_cell = 64, .per_session = 100, .session_bytes = 1 << 20,
};

Test(kernel_sink, a_file_not_ours_is_never_replaced)
{
	char *dir = tmpdir(), *err = NULL, *p, *s;
	struct rec r = { 0 };
	struct kernel_sink *k = kernel_sink_new(dir, &CAPS, copied, note, &r);
	FILE *f;

	p = xasprintf("%s/chart.png", dir);
	f = fopen(p, "w");
	fputs("the user's", f);
	fclose(f);
	cr_assert_eq(kernel_sink_open(k, &err), 0);
	kernel_sink_cell_start(k, 3);
	cr_assert_eq(kernel_sink_put(k, "out/", "chart.png", "new", 3), 0);
	cr_assert_eq(r.ncopied, 1);
	cr_assert_str_eq(r.names[0], "chart-2.png");
	cr_assert_eq(r.cells[0], 3);
	s = slurp(dir, "chart.png");
	cr_assert_str_eq(s, "the user's");
	free(s);
	cr_assert(strstr(r.notes, "terp: out/chart.png copied as ") != NULL, "%s", r.notes);
	cr_assert(strstr(r.notes, "was already there and is not this session's") != NULL);
	/* the same name again: chart-2.png is ours now, so it is replaced */
	cr_assert_eq(kernel_sink_put(k, "out/", "chart.png", "newer", 5), 0);
	cr_assert_str_eq(r.names[1], "chart-2.png");
	s = slurp(dir, "chart-2.png");
	cr_assert_str_eq(s, "newer");
	free(s);
	/* a name the folder cannot take is made plain, and said */
	r.notes[0] = '\0';
	cr_assert_eq(kernel_sink_put(k, "", "by month/a.csv", "x", 1), 0);
	cr_assert_str_eq(r.names[2], "by_month_a.csv");
	cr_assert(strstr(r.notes, "(the output folder takes plain file names only)") != NULL,
	    "%s", r.notes);
	cr_assert_eq(hidden_files(dir), 0);
	kernel_sink_cell_end(k, NULL);
	kernel_sink_free(k);
	free(p);
	free(dir);
}

Test(kernel_sink, caps_per_cell_and_size, .init = NULL)
{
	char *dir = tmpdir(), *err = NULL;
	struct rec r = { 0 };
	struct kframe_caps caps = CAPS;
	struct kernel_sink *k;

	caps.per_cell = 2;
	k = kernel_sink_new(dir, &caps, copied, note, &r);
	cr_assert_eq(kernel_sink_open(k, &err), 0);
	kernel_sink_cell_start(k, 1);
	cr_assert_eq(kernel_sink_put(k, "", "a.txt", "a", 1), 0);
	cr_assert_eq(kernel_sink_put(k, "", "b.txt", "b", 1), 0);
	cr_assert_eq(kernel_sink_put(k, "", "c.txt", "c", 1), -1);
	cr_assert(strstr(r.notes, "terp: artifact c.txt not copied: cap reached (2 artifacts "
	    "per cell)") != NULL, "%s", r.notes);
	cr_assert_eq(kernel_sink_begin(k, "", "big.bin", 5000), -1);
	cr_assert(strstr(r.notes, "big.bin not copied: too large") != NULL, "%s", r.notes);
	kernel_sink_cell_end(k, NULL);
	/* a new cell: its own count */
	kernel_sink_cell_start(k, 2);
	cr_assert_eq(kernel_sink_put(k, "", "c.txt", "c", 1), 0);
	cr_assert_eq(r.ncopied, 3);
	kernel_sink_cell_end(k, NULL);
	kernel_sink_free(k);
	free(dir);
}

Test(kernel_sink, a_file_that_grows_or_is_abandoned_leaves_nothing)
{
	char *dir = tmpdir(), *err = NULL, *p;
	struct rec r = { 0 };
	struct kernel_sink *k = kernel_sink_new(dir, &CAPS, copied, note, &r);
	struct stat st;

	cr_assert_eq(kernel_sink_open(k, &err), 0);
	kernel_sink_cell_start(k, 1);
	cr_assert_eq(kernel_sink_begin(k, "out/", "g.txt", 3), 0);
	cr_assert(kernel_sink_active(k));
	cr_assert_eq(kernel_sink_room(k), 3);
	cr_assert_eq(kernel_sink_write(k, "ab", 2), 0);
	cr_assert_eq(kernel_sink_got(k), 2);
	cr_assert_eq(kernel_sink_write(k, "cd", 2), -1);
	cr_assert(!kernel_sink_active(k));
	cr_assert(strstr(r.notes, "terp: artifact g.txt not copied: it grew while it was "
	    "copied") != NULL, "%s", r.notes);
	cr_assert_eq(hidden_files(dir), 0);
	p = xasprintf("%s/g.txt", dir);
	cr_assert_lt(stat(p, &st), 0);
	free(p);
	/* the cell ends mid-artifact: abandoned with the words given */
	cr_assert_eq(kernel_sink_begin(k, "out/", "h.txt", 3), 0);
	kernel_sink_cell_end(k, "incomplete: the cell ended");
	cr_assert(strstr(r.notes, "h.txt not copied: incomplete: the cell ended") != NULL);
	cr_assert_eq(hidden_files(dir), 0);
	cr_assert_eq(r.ncopied, 0);
	/* no cell: nothing is written and no one is told */
	r.nnotes = 0;
	cr_assert_eq(kernel_sink_put(k, "", "x.txt", "x", 1), -1);
	kernel_sink_report(k, "y", "why");
	cr_assert_eq(r.nnotes, 0);
	kernel_sink_free(k);
	free(dir);
}

Test(kernel_sink, hostile_names_and_the_report_cap)
{
	char *dir = tmpdir(), *err = NULL;
	struct rec r = { 0 };
	struct kframe_caps caps = CAPS;
	struct kernel_sink *k;

	caps.per_cell = 1000;
	caps.size_max = 1;
	k = kernel_sink_new(dir, &caps, copied, note, &r);
	cr_assert_eq(kernel_sink_open(k, &err), 0);
	kernel_sink_cell_start(k, 1);
	cr_assert_eq(kernel_sink_put(k, "", "a\x1b[2Jb", "x", 1), -1);
	cr_assert(strchr(r.notes, '\x1b') == NULL, "an escape reached the note");
	cr_assert(strstr(r.notes, "control characters") != NULL, "%s", r.notes);
	cr_assert_eq(kernel_sink_put(k, "", "", "x", 1), -1);
	r.nnotes = 0;
	for (int i = 0; i < 30; i++)
		cr_assert_eq(kernel_sink_put(k, "", "big", "xx", 2), -1);
	cr_assert_eq(r.nnotes, KERNEL_SINK_REPORTS - 2);
	kernel_sink_cell_end(k, NULL);
	cr_assert(strstr(r.notes, "terp: 12 more artifacts not copied (not listed)\n") != NULL,
	    "%s", r.notes);
	cr_assert_eq(r.ncopied, 0);
	kernel_sink_free(k);
	free(dir);
}
