/* printer's live line (terp -p on a terminal): under a running cell, a
 * line on stderr with its time and, once the head is cut, its latest
 * output line, redrawn in place and cleared before anything else; never
 * when stderr is not a terminal. stderr is a real pty here. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "terp/notebook.h"
#include "terp/printer.h"
#include "terp/tui_uwidth.h"

struct pt {
	int		 master;
	FILE		*err, *out;
	struct printer	*p;
	struct notebook	*nb;
	struct cell	*c;
	char		 got[65536];
	size_t		 len;
};

static void
pt_open(struct pt *t, int cols)
{
	struct winsize ws = { .ws_row = 24, .ws_col = (unsigned short)cols };
	int slave;

	memset(t, 0, sizeof *t);
	t->master = posix_openpt(O_RDWR | O_NOCTTY);
	cr_assert_geq(t->master, 0);
	cr_assert_eq(grantpt(t->master), 0);
	cr_assert_eq(unlockpt(t->master), 0);
	slave = open(ptsname(t->master), O_RDWR | O_NOCTTY);
	cr_assert_geq(slave, 0);
	cr_assert_eq(ioctl(t->master, TIOCSWINSZ, &ws), 0);
	fcntl(t->master, F_SETFL, O_NONBLOCK);
	t->err = fdopen(slave, "w");
	t->out = fopen("/dev/null", "w");
	t->p = printer_new(t->out, t->err, PRINTER_PROMPT);
	t->nb = notebook_new();
}

static void
pt_close(struct pt *t)
{
	free(t->p);
	fclose(t->err);
	fclose(t->out);
	close(t->master);
	notebook_free(t->nb);
}

/* What the terminal got since the last call, NUL-terminated in t->got
 * (the pty turns "\n" into "\r\n"). */
static const char *
pt_read(struct pt *t)
{
	ssize_t n;

	fflush(t->err);
	t->len = 0;
	while (t->len < sizeof t->got - 1 &&
	    (n = read(t->master, t->got + t->len, sizeof t->got - 1 - t->len)) > 0)
		t->len += (size_t)n;
	t->got[t->len] = '\0';
	return t->got;
}

static void
ev(struct pt *t, enum event_type type, const char *text)
{
	struct event e = { .type = type, .cell = t->c, .text = text,
	    .len = text ? strlen(text) : 0 };

	if (type == EV_STDOUT)
		notebook_cell_output(t->nb, t->c->n, 0, text, e.len);
	printer_event(t->p, &e);
}

static void
start_cell(struct pt *t)
{
	t->c = notebook_add_cell(t->nb, CELL_BY_MODEL, "for i in range(40): print(i)", "c");
	ev(t, EV_CELL_START, NULL);
}

Test(printer, live_line_shows_the_latest_line_once_the_head_is_cut)
{
	struct pt t;
	char line[32];
	const char *s;

	pt_open(&t, 100);
	start_cell(&t);
	for (int i = 0; i < 20; i++) {
		snprintf(line, sizeof line, "line %d\n", i);
		ev(&t, EV_STDOUT, line);
	}
	/* the driver's pieces: one line may come in four */
	ev(&t, EV_STDOUT, "line");
	ev(&t, EV_STDOUT, " ");
	ev(&t, EV_STDOUT, "39");
	ev(&t, EV_STDOUT, "\n");
	ev(&t, EV_STDOUT, "\n");	/* an empty line keeps the last one */
	s = pt_read(&t);
	cr_assert(strstr(s, "    │ line 11\r\n    │ …\r\n"), "%s", s);
	cr_assert_null(strstr(s, "line 12"), "%s", s);
	cr_assert_null(strstr(s, "running"), "%s", s);	/* only at a tick */
	printer_tick(t.p);
	s = pt_read(&t);
	cr_assert(strncmp(s, "\r    [1] running 0.", strlen("\r    [1] running 0.")) == 0,
	    "%s", s);
	cr_assert(strstr(s, " s │ line 39\033[K") != NULL, "%s", s);
	/* more output past the cut: nothing until the next tick */
	ev(&t, EV_STDOUT, "partial");
	cr_assert_str_eq(pt_read(&t), "");
	printer_tick(t.p);
	cr_assert(strstr(pt_read(&t), " s │ partial\033[K") != NULL, "%s", t.got);
	/* the result clears it first */
	{
		struct cell_result r = { .status = CELL_OK };
		notebook_cell_result(t.nb, t.c->n, &r);
		ev(&t, EV_RESULT, NULL);
	}
	s = pt_read(&t);
	{
		static const char want[] = "\r\033[K    │ partial\r\n    [1] ok (";
		cr_assert(strncmp(s, want, sizeof want - 1) == 0, "%s", s);
	}
	printer_tick(t.p);
	cr_assert_str_eq(pt_read(&t), "");
	pt_close(&t);
}

Test(printer, live_line_fits_the_terminal)
{
	struct pt t;
	const char *s, *k;
	char line[200];

	pt_open(&t, 30);
	start_cell(&t);
	for (int i = 0; i < 13; i++)
		ev(&t, EV_STDOUT, "x\n");
	memset(line, 'y', sizeof line - 2);
	line[sizeof line - 2] = '\n';
	line[sizeof line - 1] = '\0';
	ev(&t, EV_STDOUT, line);
	pt_read(&t);
	printer_tick(t.p);
	s = pt_read(&t);
	k = strstr(s, "\033[K");
	cr_assert(s[0] == '\r' && k != NULL, "%s", s);
	/* one column short of the edge: it never wraps */
	cr_assert_eq(tui_uwidth_str(s + 1, (size_t)(k - s - 1)), 29, "%s", s);
	printer_done(t.p);
	cr_assert_str_eq(pt_read(&t), "\r\033[K");
	pt_close(&t);
}

Test(printer, a_short_cell_gets_no_line)
{
	struct pt t;

	pt_open(&t, 100);
	start_cell(&t);
	ev(&t, EV_STDOUT, "quick\n");
	pt_read(&t);
	printer_tick(t.p);	/* under a second, output not cut */
	cr_assert_str_eq(pt_read(&t), "");
	printer_done(t.p);
	cr_assert_str_eq(pt_read(&t), "");
	pt_close(&t);
}

Test(printer, no_live_line_when_stderr_is_not_a_terminal)
{
	FILE *err = tmpfile(), *out = fopen("/dev/null", "w");
	struct printer *p = printer_new(out, err, PRINTER_PROMPT);
	struct notebook *nb = notebook_new();
	struct cell *c = notebook_add_cell(nb, CELL_BY_MODEL, "x", "c");
	struct event e = { .type = EV_CELL_START, .cell = c };
	char buf[4096];
	size_t n;

	printer_event(p, &e);
	for (int i = 0; i < 20; i++) {
		struct event o = { .type = EV_STDOUT, .cell = c, .text = "x\n", .len = 2 };
		notebook_cell_output(nb, 1, 0, "x\n", 2);
		printer_event(p, &o);
	}
	printer_tick(p);
	printer_done(p);
	fflush(err);
	rewind(err);
	n = fread(buf, 1, sizeof buf - 1, err);
	buf[n] = '\0';
	cr_assert_null(strstr(buf, "running"), "%s", buf);
	cr_assert_null(strchr(buf, '\033'), "%s", buf);
	free(p);
	fclose(err);
	fclose(out);
	notebook_free(nb);
}
