/* printer: plain-text rendering of core events for terminals and pipes.
 * Everything from the sandbox or the model is sanitized first. */
#include "terp/printer.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "terp/kernel.h"
#include "terp/netlog.h"
#include "terp/outnorm.h"
#include "terp/png.h"
#include "terp/sanitize.h"
#include "terp/thumb.h"
#include "terp/tui_mdlite.h"
#include "terp/tui_theme.h"
#include "terp/tui_uwidth.h"
#include "terp/util.h"

#define CODE_HEAD_LINES	8	/* -p shows this much of each cell's code */
#define OUT_HEAD_LINES	12	/* ... and of its output */
#define OUT_HEAD_BYTES	2048	/* ... even when it is one long line */
#define PRINTER_NET	64	/* egress attempts kept for one summary */
#define LIVE_AFTER_MS	1000	/* a cell this old gets the live line */
#define LIVE_TAIL	512	/* bytes of the latest output line kept */
#define PRINTER_HOLD	4096	/* of a stream's unfinished line */
#define PRINTER_MD	(64 * 1024)	/* Markdown held until its block ends */

struct printer {
	FILE			*out, *err;
	enum printer_mode	 mode;
	int			 text_open;	/* model text streamed, no newline yet */
	int			 streamed_answer; /* the answer went to the terminal */
	int			 same_tty;	/* stdout and stderr: one terminal */
	/* stdout and stderr are one file (2>&1, one terminal): the model's
	 * words go to stdout only, never once more as the answer */
	int			 same_file;
	int			 out_tty;	/* answers rendered: Markdown, words wrapped */
	int			 col_out;	/* p->col counts a line on stdout */
	size_t			 col_text;	/* the open text's column */
	FILE			*text_fp;	/* where the open text went */
	/* -p with stdout a terminal: the answer's Markdown held until a
	 * block ends (a blank line outside a fence), then rendered */
	char			 md[PRINTER_MD];
	size_t			 md_len;
	int			 err_tty;	/* thumbnails only on a terminal */
	int			 out_lines;	/* lines of output shown for this cell */
	size_t			 out_bytes;	/* bytes of output shown for this cell */
	int			 out_cut;
	size_t			 col;
	/* The egress attempts of cells not shown yet, summed up under the
	 * cell at its result (a fixed array: printer_new's caller frees the
	 * printer with free()). */
	struct net_attempt	 net[PRINTER_NET];
	size_t			 nnet;
	int			 net_over;	/* attempts past the array */
	int			 last_result;	/* the last cell shown */
	/* -p on a terminal: under a running cell, one line on stderr,
	 * redrawn in place by printer_tick, that says how long it has run
	 * and, once the output is cut, its latest line. Drawn only at the
	 * start of a line; cleared before anything else is printed. */
	int			 live;		/* stderr is a terminal, -p */
	int			 live_shown;	/* the line is on screen */
	int			 running;	/* the cell that runs, or 0 */
	int64_t			 started_ms;	/* when it started */
	char			 tail[LIVE_TAIL]; /* its latest line, raw */
	size_t			 tail_len;
	int			 tail_open;	/* no newline after it yet */
	int			 interrupted;	/* the last thing shown: an
						 * interrupted cell's line */
	int			 show_reasoning;	/* --show-reasoning */
	int			 reasoning_open;	/* reasoning shown, no newline yet */
	/* Each stream's unfinished line, printed once it ends (or the
	 * cell does), its carriage returns resolved (outnorm.h): a
	 * progress bar prints its last state only. */
	char			 hold[2][PRINTER_HOLD];
	size_t			 hold_len[2];
};

void
printer_show_reasoning(struct printer *p, int on)
{
	p->show_reasoning = on;
}

struct printer *
printer_new(FILE *out, FILE *err, enum printer_mode mode)
{
	struct printer *p = xcalloc(1, sizeof *p);

	p->out = out;
	p->err = err;
	p->mode = mode;
	p->same_tty = isatty(fileno(out)) && isatty(fileno(err));
	p->out_tty = isatty(fileno(out));
	struct stat so, se;
	p->same_file = fstat(fileno(out), &so) == 0 && fstat(fileno(err), &se) == 0 &&
	    so.st_dev == se.st_dev && so.st_ino == se.st_ino;
	p->same_file |= p->same_tty;
	p->err_tty = isatty(fileno(err));
	p->live = p->err_tty && mode == PRINTER_PROMPT;
	return p;
}

/* ---- the live line ---- */

/* The live line goes: the cursor is back at the start of its line. */
static void
live_clear(struct printer *p)
{
	if (!p->live_shown)
		return;
	fputs("\r\033[K", p->err);
	p->live_shown = 0;
}

static void
tail_add(struct printer *p, const char *s, size_t n)
{
	if (n > LIVE_TAIL - p->tail_len)
		n = LIVE_TAIL - p->tail_len;	/* the start of a long line */
	memcpy(p->tail + p->tail_len, s, n);
	p->tail_len += n;
}

static int
is_break(char c)
{
	return c == '\n' || c == '\r';
}

/* The latest line of a cell's output chunk s[0..n) (all of it, not only
 * what the head shows), kept raw and bounded: sanitized when drawn. An
 * empty line does not replace the one before it. */
static void
live_feed(struct printer *p, const char *s, size_t n)
{
	size_t end = n, start;

	if (!p->live || n == 0)
		return;
	while (end > 0 && is_break(s[end - 1]))
		end--;
	start = end;
	while (start > 0 && !is_break(s[start - 1]))
		start--;
	if (start > 0 || !p->tail_open) {
		if (end > start)
			p->tail_len = 0;	/* a new line, with text */
	}
	if (end > start)
		tail_add(p, s + start, end - start);
	p->tail_open = end == n;
}

static size_t
err_cols(const struct printer *p)
{
	struct winsize ws;

	if (ioctl(fileno(p->err), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1)
		return ws.ws_col;
	return 80;
}

/* "3.2 s", "1 min 05 s" */
static void
fmt_elapsed(char *b, size_t len, int64_t ms)
{
	if (ms < 60000)
		snprintf(b, len, "%.1f s", (double)ms / 1000.0);
	else
		snprintf(b, len, "%lld min %02lld s", (long long)(ms / 60000),
		    (long long)(ms / 1000 % 60));
}

/* Draws the live line: "    [3] running 12.3 s │ the latest line",
 * cut to the terminal's width (a line that wraps could not be redrawn
 * in place). */
static void
live_draw(struct printer *p, int64_t now)
{
	char el[48];
	struct buf b, t;
	size_t cols = err_cols(p) - 1, used, fit;

	if (!p->live || p->running == 0 || p->col != 0 || p->text_open)
		return;
	if (now - p->started_ms < LIVE_AFTER_MS && !p->out_cut)
		return;
	fmt_elapsed(el, sizeof el, now - p->started_ms);
	buf_init(&b, 1 << 16);
	buf_printf(&b, "    [%d] running %s", p->running, el);
	if (p->out_cut && p->tail_len > 0) {
		buf_init(&t, 1 << 16);
		sanitize_append(&t, p->tail, p->tail_len, SANITIZE_EXPAND_TABS, NULL);
		buf_adds(&b, " │ ");
		buf_add(&b, t.data ? t.data : "", t.len);
		buf_free(&t);
	}
	fit = tui_uwidth_prefix(b.data, b.len, cols, &used);
	fputs("\r", p->err);
	fwrite(b.data, 1, fit, p->err);
	fputs("\033[K", p->err);
	fflush(p->err);
	buf_free(&b);
	p->live_shown = 1;
}

void
printer_tick(struct printer *p)
{
	if (p->live && p->running != 0)
		live_draw(p, now_ms());
}

static void hold_flush(struct printer *p);

void
printer_done(struct printer *p)
{
	live_clear(p);
	hold_flush(p);
	fflush(p->err);
}

static void
put_clean(FILE *fp, const char *s, size_t n, size_t *col)
{
	struct buf b;

	buf_init(&b, (size_t)-1 / 2);
	sanitize_append(&b, s, n, SANITIZE_KEEP_NL | SANITIZE_EXPAND_TABS | SANITIZE_CR_AS_NL, col);
	fwrite(b.data ? b.data : "", 1, b.len, fp);
	buf_free(&b);
}

/* ---- the answer on a terminal: light Markdown, wrapped at words ---- */

/* The SGR a Markdown role is shown with (colours unless NO_COLOR). */
static const char *
md_sgr(int role)
{
	const char *nc = getenv("NO_COLOR");
	int color = nc == NULL || *nc == '\0';

	switch (role) {
	case THEME_MD_HEADING:
	case THEME_MD_BOLD:
	case THEME_MD_BULLET:
	case THEME_TABLE_HEADER:
	case THEME_CODE_KEYWORD:
		return "\033[1m";
	case THEME_MD_ITALIC:
		return "\033[3m";
	case THEME_MD_QUOTE:
	case THEME_TABLE_BORDER:
	case THEME_CODE_COMMENT:
		return "\033[2m";
	case THEME_MD_CODE:
		return color ? "\033[36m" : "";
	case THEME_CODE_STRING:
		return color ? "\033[32m" : "";
	case THEME_CODE_NUMBER:
		return color ? "\033[33m" : "";
	default:
		return "";
	}
}

/* Renders md[0..n) to stdout (a terminal) and drops it from md. */
static void
md_render(struct printer *p, size_t n)
{
	struct span_doc d;
	struct winsize ws;
	const char *term = getenv("TERM");
	int styled = term == NULL || strcmp(term, "dumb") != 0;
	int width = 80;

	if (n == 0)
		return;
	/* one column spare: a full row would leave the cursor pending */
	if (ioctl(fileno(p->out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1)
		width = ws.ws_col - 1;
	tui_span_doc_init(&d);
	tui_mdlite_render(&d, p->md, n, width);
	for (size_t i = 0; i < d.n; i++) {
		for (size_t j = 0; j < d.lines[i].n; j++) {
			const struct span *s = &d.lines[i].v[j];
			const char *sgr = styled ? md_sgr(s->role) : "";
			fputs(sgr, p->out);
			fputs(s->text, p->out);
			if (*sgr)
				fputs("\033[0m", p->out);
		}
		fputc('\n', p->out);
	}
	tui_span_doc_free(&d);
	memmove(p->md, p->md + n, p->md_len - n);
	p->md_len -= n;
	fflush(p->out);
}

/* Where the last complete block of md ends: after a blank line outside
 * a fenced code block (a list or a table is not cut); 0 when none. */
static size_t
md_block_end(const struct printer *p)
{
	size_t i = 0, end = 0;
	int fence = 0;

	while (i < p->md_len) {
		const char *l = p->md + i, *nl = memchr(l, '\n', p->md_len - i);
		size_t n, k = 0;
		if (nl == NULL)
			break;
		n = (size_t)(nl - l);
		while (k < n && k < 3 && l[k] == ' ')
			k++;
		if (n - k >= 3 && (memcmp(l + k, "```", 3) == 0 ||
		    memcmp(l + k, "~~~", 3) == 0))
			fence = !fence;
		else if (!fence && strspn(l, " \t") == n)
			end = (size_t)(nl + 1 - p->md);
		i = (size_t)(nl + 1 - p->md);
	}
	return end;
}

static void
md_flush(struct printer *p, int all)
{
	md_render(p, all ? p->md_len : md_block_end(p));
}

/* Takes raw model text: sanitized, held, rendered block by block. */
static void
md_feed(struct printer *p, const char *raw, size_t len)
{
	char *s = sanitize_str(raw, len,
	    SANITIZE_KEEP_NL | SANITIZE_EXPAND_TABS | SANITIZE_CR_AS_NL);
	const char *t = s;
	size_t n = strlen(s);

	while (n > 0) {
		size_t k = PRINTER_MD - p->md_len;
		if (k >= n)
			k = n;
		else
			k = utf8_complete_prefix(t, k);
		memcpy(p->md + p->md_len, t, k);
		p->md_len += k;
		t += k;
		n -= k;
		if (p->md_len + 4 > PRINTER_MD || k == 0)
			md_flush(p, 1);	/* one block this long: as it is */
	}
	free(s);
	md_flush(p, 0);
}

/* Whether the answer is drawn as Markdown (-p, stdout a terminal). */
static int
md_on(const struct printer *p)
{
	return p->out_tty && p->mode == PRINTER_PROMPT;
}

static void
end_text(struct printer *p)
{
	if (p->reasoning_open) {
		fputc('\n', p->err);
		p->reasoning_open = 0;
	}
	if (p->text_open) {
		md_flush(p, 1);
		if (p->col_text != 0)
			fputc('\n', p->text_fp ? p->text_fp : p->err);
		fflush(p->text_fp ? p->text_fp : p->err);
		p->col_text = 0;
		p->text_open = 0;
	}
}

/* Before a line of terp's own on stderr: the cell's output line that
 * has no newline yet gets one, where it shares the file (else terp's
 * line would be glued onto it; a separate stdout keeps its bytes). */
static void
own_line(struct printer *p)
{
	if (p->col == 0 || (p->col_out && !p->same_file))
		return;
	fputc('\n', p->col_out ? p->out : p->err);
	fflush(p->col_out ? p->out : p->err);
	p->col = 0;
}

/* -p: a cell's output, indented and cut after OUT_HEAD_LINES lines. */
static void
put_output_head(struct printer *p, const char *s, size_t n)
{
	struct buf b;
	size_t col = 0;

	if (p->out_cut)
		return;
	buf_init(&b, (size_t)-1 / 2);
	sanitize_append(&b, s, n, SANITIZE_KEEP_NL | SANITIZE_EXPAND_TABS | SANITIZE_CR_AS_NL, &col);
	for (size_t i = 0; i < b.len; i++) {
		/* Cut at a character boundary, not inside a UTF-8 sequence. */
		if (p->out_bytes >= OUT_HEAD_BYTES &&
		    ((unsigned char)b.data[i] & 0xc0) != 0x80) {
			fputs(p->col == 0 ? "    │ …\n" : " …\n", p->err);
			p->col = 0;
			p->out_cut = 1;
			break;
		}
		if (p->col == 0)
			fputs("    │ ", p->err);
		fputc(b.data[i], p->err);
		p->col++;
		p->out_bytes++;
		if (b.data[i] == '\n') {
			p->col = 0;
			if (++p->out_lines >= OUT_HEAD_LINES) {
				p->out_cut = 1;
				fputs("    │ …\n", p->err);
				break;
			}
		}
	}
	buf_free(&b);
}

static void
put_stream(struct printer *p, int s, const char *text, size_t n)
{
	size_t len;
	char *t = outnorm_text(text, n, &len);

	if (len > 0 && p->mode == PRINTER_EXEC) {
		p->col_out = !s;
		put_clean(s ? p->err : p->out, t, len, &p->col);
		fflush(s ? p->err : p->out);
	} else if (len > 0) {
		end_text(p);
		put_output_head(p, t, len);
		fflush(p->err);
	}
	free(t);
}

/* Prints what stream s holds up to its last newline (all of it when
 * all), keeps the rest. */
static void
hold_out(struct printer *p, int s, int all)
{
	size_t k = p->hold_len[s];

	while (!all && k > 0 && p->hold[s][k - 1] != '\n')
		k--;
	if (k == 0)
		return;
	put_stream(p, s, p->hold[s], k);
	memmove(p->hold[s], p->hold[s] + k, p->hold_len[s] - k);
	p->hold_len[s] -= k;
}

static void
hold_flush(struct printer *p)
{
	hold_out(p, 0, 1);
	hold_out(p, 1, 1);
}

static void
on_stream(struct printer *p, const struct event *ev)
{
	int s = ev->type == EV_STDERR;
	size_t n = ev->cell ? outcap_head_part(&ev->cell->out[s], ev->len) : ev->len;
	const char *t = ev->text;

	while (n > 0) {
		size_t room = PRINTER_HOLD - p->hold_len[s], k = n < room ? n : room;
		if (k < n)
			k = utf8_complete_prefix(t, k);
		if (k == 0) {
			/* a line longer than the hold: out as it is so far */
			hold_out(p, s, 1);
			continue;
		}
		memcpy(p->hold[s] + p->hold_len[s], t, k);
		p->hold_len[s] += k;
		t += k;
		n -= k;
		hold_out(p, s, 0);
	}
}

static void
put_code_head(struct printer *p, const struct cell *c)
{
	const char *s = c->code;
	int lines = 0;

	fprintf(p->err, "[%d] python%s\n", c->n, c->author == CELL_BY_USER ? " (you)" : "");
	while (*s && lines < CODE_HEAD_LINES) {
		size_t n = strcspn(s, "\n");
		fputs("    ", p->err);
		put_clean(p->err, s, n, NULL);
		fputc('\n', p->err);
		s += n;
		if (*s == '\n')
			s++;
		lines++;
	}
	if (*s) {
		int more = 0;
		for (; *s; s++)
			more += *s == '\n';
		fprintf(p->err, "    … (%d more lines)\n", more + 1);
	}
}

static void put_net(struct printer *p, int cell, const char *lead);
static void printer_show(struct printer *p, const struct event *ev, char *size,
    size_t sizelen);

/* -p: a cell the user interrupted (Ctrl-C) is the end of the question:
 * one line says so, and the error that follows is not said again. */
static void
put_interrupted(struct printer *p, const struct cell *c)
{
	static const char plain[] = "interrupted; ";
	char el[48];
	const char *why = c->reason;

	fmt_elapsed(el, sizeof el, c->duration_ms);
	fprintf(p->err, "terp: interrupted cell [%d] after %s", c->n, el);
	if (why != NULL && strncmp(why, plain, sizeof plain - 1) == 0)
		why += sizeof plain - 1;	/* "the session kept its state" */
	if (why != NULL && *why) {
		fputs("; ", p->err);
		put_clean(p->err, why, strlen(why), NULL);
	}
	fputc('\n', p->err);
	fflush(p->err);
	p->interrupted = 1;
	if (c->n > p->last_result)
		p->last_result = c->n;
	put_net(p, c->n, "    ");
}

static void
on_result(struct printer *p, const struct cell *c)
{
	FILE *e = p->err;

	for (int s = 0; s < 2; s++) {
		size_t len;
		char *rest = outcap_rest(&c->out[s], &len);
		if (rest == NULL)
			continue;
		if (p->mode == PRINTER_EXEC)
			put_clean(s ? p->err : p->out, rest, len, &p->col);
		free(rest);
	}
	if (p->mode == PRINTER_EXEC) {
		if (p->col != 0) {
			fputc('\n', p->out);
			p->col = 0;
		}
		fflush(p->out);
		if (c->value) {
			put_clean(p->out, c->value, strlen(c->value), NULL);
			fputc('\n', p->out);
			fflush(p->out);
		}
	} else {
		if (p->col != 0)
			fputc('\n', e);
		p->col = 0;
		if (p->live && p->out_cut && p->tail_len > 0) {
			/* the live line's last word stays: how the output ended */
			fputs("    │ ", e);
			put_clean(e, p->tail, p->tail_len, NULL);
			fputc('\n', e);
		}
		if (c->value && !p->out_cut) {
			size_t n = strcspn(c->value, "\n");
			fputs("    │ ", e);
			if (n > OUT_HEAD_BYTES)
				n = utf8_complete_prefix(c->value, OUT_HEAD_BYTES);
			put_clean(e, c->value, n, NULL);
			if (c->value[n] != '\0' && c->value[n] != '\n')
				fputs(" …", e);
			fputc('\n', e);
		}
	}
	if (c->ename && c->traceback && *c->traceback &&
	    (c->status == CELL_ERROR || p->mode == PRINTER_EXEC))
		put_clean(e, c->traceback, strlen(c->traceback), NULL);
	if (p->mode == PRINTER_PROMPT && c->status == CELL_INTERRUPTED) {
		put_interrupted(p, c);
		return;
	}
	fprintf(e, "%s[%d] %s (%lld ms)", p->mode == PRINTER_EXEC ? "terp: " : "    ",
	    c->n, cell_status_name(c->status), (long long)c->duration_ms);
	if (c->ename) {
		fprintf(e, ": ");
		put_clean(e, c->ename, strlen(c->ename), NULL);
		if (c->evalue && *c->evalue) {
			fputs(": ", e);
			put_clean(e, c->evalue, strcspn(c->evalue, "\n"), NULL);
		}
	}
	if (c->reason) {
		fputs(" — ", e);
		put_clean(e, c->reason, strlen(c->reason), NULL);
	}
	fputc('\n', e);
	fflush(e);
	if (c->n > p->last_result)
		p->last_result = c->n;
	put_net(p, c->n, p->mode == PRINTER_EXEC ? "terp: " : "    ");
}

/* The cell's egress, one line under it ("host ✓ 2 MiB ↓ 3 KiB ↑ ·
 * evil.example ✗ not allowed"), then forgotten. */
static void
put_net(struct printer *p, int cell, const char *lead)
{
	char *s = netlog_summary(p->net, p->nnet, cell, NETLOG_UTF8);
	size_t k = 0;

	if (s != NULL) {
		fprintf(p->err, "%snet: %s", lead, s);
		if (p->net_over)
			fprintf(p->err, " (and %d more attempts)", p->net_over);
		fputc('\n', p->err);
		fflush(p->err);
	}
	free(s);
	for (size_t i = 0; i < p->nnet; i++)
		if (p->net[i].cell != cell)
			p->net[k++] = p->net[i];
	p->nnet = k;
	p->net_over = 0;
}

static void
on_net(struct printer *p, const struct event *ev)
{
	const struct net_attempt *a = ev->net;
	char lead[48];

	if (a == NULL)
		return;
	if (a->cell != 0 && a->cell <= p->last_result) {
		/* the cell was shown: only what ends badly later is news */
		if (a->open || a->verdict == NETLOG_ALLOWED)
			return;
		p->net[0] = *a;
		p->nnet = 1;
		snprintf(lead, sizeof lead, "%s[%d] ",
		    p->mode == PRINTER_EXEC ? "terp: " : "    ", a->cell);
		put_net(p, a->cell, lead);
		return;
	}
	for (size_t i = 0; i < p->nnet; i++) {
		if (p->net[i].open && p->net[i].id == a->id && a->id != 0) {
			p->net[i] = *a;
			return;
		}
	}
	if (p->nnet < PRINTER_NET)
		p->net[p->nnet++] = *a;
	else
		p->net_over++;
}

/* A chart artifact, previewed in block characters on a terminal. */
static void
put_thumbnail(struct printer *p, const char *path)
{
	const char *ext = strrchr(path, '.');
	const char *nc = getenv("NO_COLOR");
	struct thumb_opts o;
	struct png_rgba *img;
	struct thumb *t;
	struct buf b;

	if (!p->err_tty || ext == NULL || strcasecmp(ext, ".png") != 0)
		return;
	if ((img = png_decode_file_fit(path, 0, NULL)) == NULL)
		return;
	thumb_opts_init(&o);
	o.cols = 48;
	o.max_rows = 16;
	if (nc != NULL && *nc != '\0')
		o.palette = THUMB_PAL_MONO;
	t = thumb_render(img->px, (int)img->w, (int)img->h, 4, (size_t)img->w * 4, &o, NULL);
	png_rgba_free(img);
	if (t == NULL)
		return;
	buf_init(&b, 1 << 20);
	if (thumb_write_ansi(t, &b) == 0) {
		const char *line = buf_str(&b);
		while (*line) {
			size_t n = strcspn(line, "\n");
			fputs("    ", p->err);
			fwrite(line, 1, n, p->err);
			fputc('\n', p->err);
			line += n + (line[n] == '\n');
		}
	}
	buf_free(&b);
	thumb_free(t);
}

void
printer_event(void *arg, const struct event *ev)
{
	struct printer *p = arg;
	int stream = ev->type == EV_STDOUT || ev->type == EV_STDERR;
	int live = p->live_shown;
	char size[32];

	/* Output past the cut prints nothing: the line stays, and the
	 * next tick shows the new tail. Anything else prints over it. */
	if (!(stream && p->out_cut))
		live_clear(p);
	if (ev->type != EV_ERROR && ev->type != EV_KERNEL && ev->type != EV_NET)
		p->interrupted = 0;
	printer_show(p, ev, size, sizeof size);
	if (live && p->running != 0 && !p->live_shown)
		live_draw(p, now_ms());
}

static void
printer_show(struct printer *p, const struct event *ev, char *size, size_t sizelen)
{
	switch (ev->type) {
	case EV_STDOUT:
	case EV_STDERR:
		if (ev->cell != NULL && ev->cell->n == p->running)
			live_feed(p, ev->text, ev->len);
		on_stream(p, ev);
		break;
	case EV_CELL_START:
		hold_flush(p);
		p->running = ev->cell->n;
		p->started_ms = now_ms();
		p->tail_len = 0;
		p->tail_open = 0;
		p->out_lines = 0;
		p->out_bytes = 0;
		p->out_cut = 0;
		p->col = 0;
		if (p->mode == PRINTER_PROMPT) {
			end_text(p);
			put_code_head(p, ev->cell);
		}
		break;
	case EV_RESULT:
		hold_flush(p);
		if (ev->cell->n == p->running)
			p->running = 0;
		on_result(p, ev->cell);
		break;
	case EV_ARTIFACT:
		own_line(p);
		fmt_bytes(size, sizelen, ev->artifact->bytes);
		fprintf(p->err, "%s[%d] artifact ",
		    p->mode == PRINTER_EXEC ? "terp: " : "    ", ev->artifact->cell);
		put_clean(p->err, ev->artifact->path, strlen(ev->artifact->path), NULL);
		fprintf(p->err, " (%s)\n", size);
		put_thumbnail(p, ev->artifact->path);
		fflush(p->err);
		break;
	case EV_KERNEL:
		if (ev->kstate == KERNEL_DEAD || ev->restarted) {
			end_text(p);
			own_line(p);
			/* may quote what the sandbox printed while starting */
			fputs("terp: ", p->err);
			put_clean(p->err, ev->text, strlen(ev->text), NULL);
			fputc('\n', p->err);
		}
		break;
	case EV_TURN:
		end_text(p);
		break;
	case EV_TEXT:
		own_line(p);
		if (p->same_file) {
			/* one file: the words once, on stdout */
			p->text_fp = p->out;
			if (md_on(p))
				md_feed(p, ev->text, ev->len);
			else
				put_clean(p->out, ev->text, ev->len, &p->col_text);
		} else {
			p->text_fp = p->err;
			if (!p->text_open)
				fputs("model: ", p->err);
			put_clean(p->err, ev->text, ev->len, &p->col_text);
			if (p->col_text == 0)
				p->col_text = 1;	/* "model: " wants its newline */
		}
		fflush(p->text_fp);
		p->text_open = 1;
		p->streamed_answer = p->same_file;
		break;
	case EV_TOOL_CALL:
		end_text(p);
		break;
	case EV_CODE:		/* the status line stays; the call comes whole */
	case EV_APPROVE:	/* never headless (-p refuses --ask) */
		break;
	case EV_REASONING:
		/* stderr only, never the answer's stdout */
		if (!p->show_reasoning)
			break;
		if (p->text_open) {
			fputc('\n', p->err);
			p->text_open = 0;
		}
		if (!p->reasoning_open)
			fputs("thinking: ", p->err);
		put_clean(p->err, ev->text, ev->len, NULL);
		fflush(p->err);
		p->reasoning_open = 1;
		break;
	case EV_NOTICE:
		end_text(p);
		own_line(p);
		fputs("terp: ", p->err);
		put_clean(p->err, ev->text, ev->len, NULL);
		fputc('\n', p->err);
		break;
	case EV_ERROR:
		if (ev->error == ERROR_CANCELLED && p->interrupted)
			break;	/* put_interrupted said it */
		end_text(p);
		own_line(p);
		fputs("terp: ", p->err);
		put_clean(p->err, ev->text, ev->len, NULL);
		fputc('\n', p->err);
		fflush(p->err);
		break;
	case EV_ANSWER:
		if (p->text_open && p->streamed_answer) {
			end_text(p);
		} else if (md_on(p)) {
			end_text(p);
			md_feed(p, ev->text, ev->len);
			md_flush(p, 1);
		} else {
			end_text(p);
			put_clean(p->out, ev->text, ev->len, NULL);
			if (ev->len == 0 || ev->text[ev->len - 1] != '\n')
				fputc('\n', p->out);
		}
		fflush(p->out);
		break;
	case EV_NET:
		on_net(p, ev);
		break;
	case EV_SESSION:
		if (ev->isolation) {	/* once, when connecting to a remote */
			fputs("terp: the session runs on ", p->err);
			put_clean(p->err, ev->where, strlen(ev->where), NULL);
			fputs(". ", p->err);
			put_clean(p->err, ev->isolation, strlen(ev->isolation), NULL);
			fputc('\n', p->err);
		}
		break;
	case EV_PACKAGE:	/* pip said so in the cell's output */
	case EV_INPUT:		/* never headless (the cell is refused) */
	case EV_USAGE:
	case EV_QUESTION:
	case EV_REQUEST:
	case EV_IDLE:
		break;
	}
}
