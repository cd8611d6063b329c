/* tui_act: what the user does to a cell or a file from the notebook
 * UI: expand is tui_cells'; here re-run, edit in $EDITOR and run, copy
 * the code, open a file with xdg-open, preview it full-screen, and save
 * a copy under a name the user types (asking first when the name leaves
 * the working folder or is hidden). */
#include "tui_act.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <readline/readline.h>

#include "terp/buf.h"
#include "terp/digest.h"
#include "terp/sanitize.h"
#include "terp/session.h"
#include "terp/util.h"

#include "tui_cells.h"
#include "tui_draw.h"
#include "tui_items.h"
#include "tui_spawn.h"
#include "tui_thumbs.h"

/* The folder for files terp writes for the user in this session: the
 * session's own folder (EV_SESSION names it), never the folder of all
 * sessions above it. */
static char *
session_dir(struct tui *t)
{
	if (t->st.workspace)
		return xstrdup(t->st.workspace);
	char *st = xdg_state_home();
	char *d = xasprintf("%s/terp", st);
	free(st);
	return d;
}

/* Copies src (a regular file) to dst, refusing to overwrite or follow
 * links; a copy cut short is removed. */
static int
copy_file(const char *src, const char *dst, char **err)
{
	struct stat st;
	int in = open(src, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		*err = xasprintf("%s: %s", src, in < 0 ? strerror(errno) :
		    "not a regular file");
		if (in >= 0)
			close(in);
		return -1;
	}
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0644);
	if (out < 0) {
		*err = xasprintf("%s: %s", dst, strerror(errno));
		close(in);
		return -1;
	}
	char b[65536];
	ssize_t n;
	int rc = 0;
	while ((n = read(in, b, sizeof b)) > 0)
		if (write_all(out, b, (size_t)n) < 0) {
			rc = -1;
			break;
		}
	if (n < 0)
		rc = -1;
	if (rc < 0)
		*err = xasprintf("copy to %s failed: %s", dst, strerror(errno));
	close(in);
	if (close(out) < 0 && rc == 0) {
		rc = -1;
		*err = xasprintf("%s: %s", dst, strerror(errno));
	}
	if (rc < 0)
		unlink(dst);
	return rc;
}

void
tui_act_rerun(struct tui *t, int n)
{
	char *err = NULL;
	if (session_rerun(t->session, n, &err) < 0)
		tui_show_err(t, "rerun", err);
	else
		t->v[P_CELLS].follow = 1;
}

/* code edited in $EDITOR through a temporary file: the new text, or
 * NULL (told on the status bar) when the editor failed; *len its
 * length. */
static char *
edit_code(struct tui *t, const char *code, size_t *len)
{
	char tmpl[] = "/tmp/terp-cell-XXXXXX.py";
	int fd = mkstemps(tmpl, 3);
	if (fd < 0) {
		tui_flash(t, "cannot create a temporary file: %s", strerror(errno));
		return NULL;
	}
	if (write_all(fd, code, strlen(code)) < 0) {
		close(fd);
		unlink(tmpl);
		tui_flash(t, "cannot write %s", tmpl);
		return NULL;
	}
	close(fd);
	int st = tui_spawn_editor(t, tmpl);
	char *nc = read_file(tmpl, 1024 * 1024, len);
	unlink(tmpl);
	if (st != 0 || !nc) {
		tui_flash(t, "editor failed (status %d); nothing run", st);
		free(nc);
		return NULL;
	}
	return nc;
}

void
tui_act_edit(struct tui *t, int n)
{
	const struct cell *c = notebook_cell(t->nb, n);
	if (!c)
		return;
	const char *code = c->code ? c->code : "";
	size_t len;
	char *nc = edit_code(t, code, &len);
	if (nc == NULL)
		return;
	if (strcmp(nc, code) == 0 || len == 0) {
		tui_flash(t, "cell [%d] unchanged; not run", n);
		free(nc);
		return;
	}
	char *err = NULL;
	if (session_run_cell(t->session, nc, &err) < 0)
		tui_show_err(t, "run", err);
	else
		t->v[P_CELLS].follow = 1;
	free(nc);
}

void
tui_act_approve_ask(struct tui *t, const char *code, size_t len)
{
	free(t->in.approve_code);
	t->in.approve_code = xstrndup(code, len);
	t->in.modal = M_APPROVE;
	tui_mark(t);
}

void
tui_act_approve_end(struct tui *t)
{
	free(t->in.approve_code);
	t->in.approve_code = NULL;
	if (t->in.modal == M_APPROVE)
		t->in.modal = M_NONE;
	tui_mark(t);
}

int
tui_act_approve_key(struct tui *t, int c)
{
	enum session_verdict v;
	char *nc = NULL, *err = NULL;
	size_t len;

	switch (c) {
	case 'y': case 'Y': case '\r': case '\n': case KEY_ENTER:
		v = SESSION_APPROVE_RUN;
		break;
	case 'n': case 'N':
		v = SESSION_APPROVE_SKIP;
		break;
	case 'a': case 'A':
		v = SESSION_APPROVE_ALWAYS;
		break;
	case 'e': case 'E':
		if ((nc = edit_code(t, t->in.approve_code, &len)) == NULL)
			return 1;	/* still waiting */
		if (len == 0) {
			free(nc);
			tui_flash(t, "the edited cell is empty: y runs the model's, n skips it");
			return 1;
		}
		v = SESSION_APPROVE_RUN;
		break;
	case 3:		/* Ctrl-C: the agent answers it as cancelled */
		return 0;
	default:
		tui_flash(t, "y or Enter runs the cell, e edits it first, n skips it "
		    "(the model is told), a runs it and stops asking");
		return 1;
	}
	/* the agent may ask about its next cell before it returns */
	tui_act_approve_end(t);
	if (v == SESSION_APPROVE_SKIP)
		tui_items_pending_skipped(t);
	if (session_approve(t->session, v, nc, &err) < 0)
		tui_show_err(t, "run", err);
	else if (v == SESSION_APPROVE_ALWAYS)
		tui_flash(t, "the model's cells run without asking now (/ask on asks again)");
	free(nc);
	return 1;
}

void
tui_act_drop_ask(struct tui *t, int n)
{
	snprintf(t->in.save_prompt, sizeof t->in.save_prompt,
	    "drop cell [%d] from the notebook and from what the model is sent? (y/n) ", n);
	t->in.save_art = n;
	t->in.modal = M_DROP_CONFIRM;
	tui_mark(t);
}

void
tui_act_drop_confirm(struct tui *t, int yes)
{
	int n = t->in.save_art;
	char *err = NULL;

	t->in.modal = M_NONE;
	tui_mark(t);
	if (!yes) {
		tui_flash(t, "cell [%d] kept", n);
		return;
	}
	if (session_drop_cell(t->session, n, &err) < 0) {
		tui_show_err(t, "drop", err);
		return;
	}
	tui_cells_invalidate(t);
	/* the selection moves to a cell still shown */
	int nc = notebook_ncells(t->nb), s = n;
	while (s <= nc && notebook_cell(t->nb, s)->dropped)
		s++;
	while (s > nc && --s >= 1 && notebook_cell(t->nb, s)->dropped)
		;
	t->v[P_CELLS].sel = s;
	for (int i = 0; i < t->conv.nitems; i++)	/* its link says so */
		if (t->conv.items[i].kind == IT_CELL && t->conv.items[i].cell == n)
			t->conv.items[i].version++;
	tui_flash(t, "cell [%d] dropped: the model no longer sees it (the journal keeps it)", n);
}

/* OSC 52 carries at most this much (base64 of it under 100 kB, what
 * terminals commonly accept). */
#define OSC52_MAX	(74 * 1024)

/* Sets the terminal's clipboard with OSC 52: it goes through ssh and
 * tmux (set-clipboard) to the terminal the user sits at. Returns 0 when
 * sent (whether the terminal honours it cannot be known), -1 when the
 * text is too long or the terminal is one that would show it. */
static int
osc52(const char *text)
{
	const char *term = getenv("TERM");
	size_t n = strlen(text), blen;

	if (n > OSC52_MAX || !term || !*term || strcmp(term, "dumb") == 0 ||
	    strncmp(term, "linux", 5) == 0)
		return -1;
	char *b = base64_encode(text, n, &blen);
	fputs("\033]52;c;", stdout);
	fwrite(b, 1, blen, stdout);
	fputs("\a", stdout);
	fflush(stdout);
	free(b);
	return 0;
}

/* Writes text to name in the session folder (0600, never through a
 * link). Returns the new path, or NULL with the reason flashed. */
static char *
copy_to_file(struct tui *t, const char *text, const char *name)
{
	char *dir = session_dir(t);
	mkdir_p(dir, 0700);
	char *path = xasprintf("%s/%s", dir, name);
	free(dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd < 0 || write_all(fd, text, strlen(text)) < 0) {
		tui_flash(t, "cannot write %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(path);
		return NULL;
	}
	close(fd);
	return path;
}

/* Copies text ("the code of cell [3]"...): to the clipboard tool when
 * there is one; else to the terminal's clipboard (OSC 52) and, as the
 * terminal may ignore it, to the file `name` in the session folder. */
static void
copy_text(struct tui *t, const char *text, const char *what, const char *name)
{
	if (tui_spawn_clipboard(t, text) == 0) {
		tui_flash(t, "copied %s to the clipboard", what);
		return;
	}
	int sent = osc52(text) == 0;
	char *path = copy_to_file(t, text, name);
	if (!path)
		return;
	if (!t->in.copy_told) {
		/* once: where copies go without a clipboard tool */
		char *dir = session_dir(t);
		char *m = xasprintf("no clipboard tool (wl-copy, xclip, xsel): "
		    "copies go to the terminal's clipboard (OSC 52; in tmux "
		    "set-clipboard on) and to files in %s", dir);
		tui_item_text(t, IT_NOTICE, m);
		free(m);
		free(dir);
		t->in.copy_told = 1;
	}
	/* short enough for the status bar at 80 columns; the notice above
	 * names the folder */
	if (sent)
		tui_flash(t, "copied %s (OSC 52, %s)", what, name);
	else
		tui_flash(t, "%s is in %s", what, name);
	free(path);
}

void
tui_act_copy(struct tui *t, int n)
{
	const struct cell *c = notebook_cell(t->nb, n);
	if (!c || !c->code)
		return;
	char what[64], name[64];
	snprintf(what, sizeof what, "the code of cell [%d]", n);
	snprintf(name, sizeof name, "cell-%d.py", n);
	copy_text(t, c->code, what, name);
}

void
tui_act_copy_output(struct tui *t, int n)
{
	const struct cell *c = notebook_cell(t->nb, n);
	if (!c)
		return;
	struct buf b;
	buf_init(&b, 4 * 1024 * 1024);
	for (int st = 0; st < 2; st++) {
		size_t len;
		char *o = cell_output(c, st, &len);
		buf_add(&b, o, len);
		if (len && o[len - 1] != '\n')
			buf_addc(&b, '\n');
		free(o);
	}
	if (c->value)
		buf_printf(&b, "%s\n", c->value);
	if (c->ename || c->evalue)
		buf_printf(&b, "%s%s%s\n", c->ename ? c->ename : "",
		    c->ename && c->evalue ? ": " : "", c->evalue ? c->evalue : "");
	char what[64], name[64];
	snprintf(what, sizeof what, "the output of cell [%d]", n);
	snprintf(name, sizeof name, "out-%d.txt", n);
	if (b.len == 0)
		tui_flash(t, "cell [%d] has no output", n);
	else
		copy_text(t, buf_str(&b), what, name);
	buf_free(&b);
}

void
tui_act_copy_answer(struct tui *t)
{
	int w = t->lay.pw[P_CONV] > 0 ? t->lay.pw[P_CONV] : t->lay.cols;
	int h = t->lay.ph[P_CONV] > 1 ? t->lay.ph[P_CONV] - 1 : 1;
	int top = t->v[P_CONV].top, line = 0, pick = -1, last = -1;

	/* the last answer in view, else the last one */
	for (int i = 0; i < t->conv.nitems; i++) {
		struct item *it = &t->conv.items[i];
		int n = tui_item_lines(t, it, w)->n;
		if (it->kind == IT_ANSWER && it->text.len > 0) {
			last = i;
			if (line < top + h && line + n > top)
				pick = i;
		}
		line += n;
	}
	if (pick < 0)
		pick = last;
	if (pick < 0) {
		tui_flash(t, "no answer to copy yet");
		return;
	}
	/* named by its question (the pane may have lost the first ones
	 * to /clear: counted among those shown) */
	int q = 0;
	for (int i = 0; i <= pick; i++)
		q += t->conv.items[i].kind == IT_USER;
	char what[64], name[64];
	if (q > 0) {
		snprintf(what, sizeof what, "the answer to question %d", q);
		snprintf(name, sizeof name, "answer-%d.md", q);
	} else {
		snprintf(what, sizeof what, "the answer");
		snprintf(name, sizeof name, "answer.md");
	}
	copy_text(t, buf_str(&t->conv.items[pick].text), what, name);
}

int
tui_act_open_safe(const char *name)
{
	static const char *const safe[] = { "png", "jpg", "jpeg", "gif", "webp",
	    "bmp", "tif", "tiff", "pdf", "csv", "tsv", "txt", "log", "md", NULL };
	const char *dot = strrchr(name, '.');

	if (dot == NULL || dot == name || strchr(dot, '/') != NULL)
		return 0;
	for (const char *const *s = safe; *s != NULL; s++)
		if (strcasecmp(dot + 1, *s) == 0)
			return 1;
	return 0;
}

/* How to see a file on a machine without xdg-open (a server, a
 * container): where it is and one command that shows it here, for the
 * terminal declared (kitty, iTerm2) or a viewer found, else a copy to
 * the machine in front of the user; in the conversation, as it is
 * longer than a flash. */
static void
open_elsewhere(struct tui *t, const struct artifact *a)
{
	const char *tp = getenv("TERM_PROGRAM"), *term = getenv("TERM");
	const char *ext = strrchr(a->name, '.');
	int image = ext && (strcasecmp(ext, ".png") == 0 ||
	    strcasecmp(ext, ".jpg") == 0 || strcasecmp(ext, ".svg") == 0);
	char *how, *m;

	if (image && (getenv("KITTY_WINDOW_ID") ||
	    (term && strstr(term, "kitty"))))
		how = xasprintf("kitty +kitten icat '%s'", a->path);
	else if (image && tp && strcmp(tp, "iTerm.app") == 0)
		how = xasprintf("imgcat '%s' (iTerm2's shell integration)", a->path);
	else if (image && tui_spawn_found("chafa"))
		how = xasprintf("chafa '%s'", a->path);
	else if (getenv("SSH_CONNECTION"))
		how = xasprintf("on your own machine: scp THIS-HOST:'%s' . "
		    "and open it there", a->path);
	else if (image)
		how = xasprintf("copy it where an image viewer runs, or install "
		    "chafa to see it in this terminal (chafa '%s')", a->path);
	else
		how = xasprintf("less '%s', or copy it where a viewer runs", a->path);
	m = xasprintf("xdg-open is not installed here. %s is at %s%s; to view "
	    "it: %s", a->name, a->path, image ? " (Enter in the files pane "
	    "previews it)" : "", how);
	tui_item_text(t, IT_NOTICE, m);
	tui_flash(t, "xdg-open not found; the file is %s", a->path);
	free(m);
	free(how);
}

static void
open_now(struct tui *t, const struct artifact *a)
{
	if (!tui_spawn_found("xdg-open")) {
		open_elsewhere(t, a);
		return;
	}
	const char *argv[] = { "xdg-open", a->path, NULL };
	if (tui_spawn(t, argv, TUI_SPAWN_DETACHED, NULL) < 0)
		tui_flash(t, "cannot start xdg-open: %s", strerror(errno));
	else
		tui_flash(t, "opening %s", a->name);
}

void
tui_act_open(struct tui *t, int i)
{
	if (i < 0 || i >= notebook_nartifacts(t->nb))
		return;
	const struct artifact *a = notebook_artifact(t->nb, i);
	if (tui_act_open_safe(a->name)) {
		open_now(t, a);
		return;
	}
	/* the sandbox chose the name: what xdg-open does with it is the
	 * handler's (a .desktop runs a command): ask, naming the type */
	const char *dot = strrchr(a->name, '.');
	char *type = dot && dot != a->name ? sanitize_str(dot, strlen(dot), 0) :
	    xstrdup("no extension");
	snprintf(t->in.save_prompt, sizeof t->in.save_prompt,
	    "open this file (%.*s%s) with xdg-open? It may run what handles it (y/n) ",
	    (int)utf8_complete_prefix(type, strlen(type) > 24 ? 24 : strlen(type)), type,
	    dot && dot != a->name ? " file" : "");
	free(type);
	t->in.save_art = i;
	t->in.modal = M_OPEN_CONFIRM;
	tui_mark(t);
}

void
tui_act_open_confirm(struct tui *t, int yes)
{
	t->in.modal = M_NONE;
	if (yes && t->in.save_art >= 0 && t->in.save_art < notebook_nartifacts(t->nb))
		open_now(t, notebook_artifact(t->nb, t->in.save_art));
	else
		tui_flash(t, "not opened");
	tui_mark(t);
}

/* The first max bytes of the file at path (a new buffer, *len of them),
 * or NULL with errno. */
static char *
read_head(const char *path, size_t max, size_t *len)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n;

	*len = 0;
	if (fd < 0)
		return NULL;
	char *data = xmalloc(max + 1);
	while (*len < max && (n = read(fd, data + *len, max - *len)) > 0)
		*len += (size_t)n;
	close(fd);
	return data;
}

void
tui_act_preview(struct tui *t, int i)
{
	if (i < 0 || i >= notebook_nartifacts(t->nb))
		return;
	const struct artifact *a = notebook_artifact(t->nb, i);
	char sz[32];
	fmt_bytes(sz, sizeof sz, a->bytes);
	char *title = xasprintf("%s  (%s, cell [%d])", a->name, sz, a->cell);
	tui_overlay_open(t, title);
	free(title);
	t->ov.art = i;
	if (tui_thumbs_is_png(a->name)) {
		t->ov.png = xstrdup(a->path);
		return;
	}
	size_t len;
	char *data = read_head(a->path, PREVIEW_MAX, &len);
	if (!data) {
		const char *m = strerror(errno);
		tui_tlines_wrap(&t->ov.lines, m, strlen(m), COLS, R_ERROR, " ", R_ERROR, 0);
		return;
	}
	if (memchr(data, 0, len)) {
		char *m = xasprintf("binary file (%s); o opens it with xdg-open", sz);
		tui_tlines_wrap(&t->ov.lines, m, strlen(m), COLS, R_DIM, " ", R_DIM, 0);
		free(m);
	} else {
		char *s = sanitize_str(data, len,
		    SANITIZE_KEEP_NL | SANITIZE_EXPAND_TABS | SANITIZE_CR_AS_NL);
		tui_tlines_wrap(&t->ov.lines, s, strlen(s), COLS, R_TEXT, " ", R_TEXT, 0);
		free(s);
		if (a->bytes > PREVIEW_MAX) {
			const char *m = "… (the preview shows the first 256 KiB)";
			tui_tlines_wrap(&t->ov.lines, m, strlen(m), COLS, R_HIDDEN, " ", R_HIDDEN, 0);
		}
	}
	free(data);
}

void
tui_act_save_ask(struct tui *t, int i)
{
	if (i < 0 || i >= notebook_nartifacts(t->nb))
		return;
	t->in.modal = M_SAVE_AS;
	t->in.save_art = i;
	t->focus = P_INPUT;
	/* Offered: the host copy's file name, made safe again here (one
	 * component, not hidden); never the name the sandbox gave, which
	 * may hold "../", newlines or escapes. */
	char *name = sanitize_filename(notebook_artifact(t->nb, i)->path, 100);
	rl_replace_line(name, 0);
	free(name);
	rl_point = rl_end;
	tui_mark(t);
}

static void
art_save_to(struct tui *t, const struct artifact *a, const char *name)
{
	char *err = NULL;
	if (copy_file(a->path, name, &err) < 0) {
		tui_flash(t, "%s", err);
		free(err);
	} else
		tui_flash(t, "saved a copy as %s", name);
}

/* Why a copy's name needs a yes first: "outside ./" (absolute, or a
 * .. on the way), "hidden" (a part starting with a dot), "in a folder
 * under ./" (which may be a symlink to anywhere), or NULL for a plain
 * name in ./. */
static const char *
save_name_why(const char *name)
{
	int hidden = 0;

	if (name[0] == '/')
		return "outside ./";
	for (const char *p = name; *p; ) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return "outside ./";
		if (n > 0 && p[0] == '.' && !(n == 1))
			hidden = 1;
		p += n;
		while (*p == '/')
			p++;
	}
	return hidden ? "hidden" : strchr(name, '/') ? "in a folder under ./" : NULL;
}

void
tui_act_save_name(struct tui *t, const char *name)
{
	const struct artifact *a = t->in.save_art < notebook_nartifacts(t->nb) ?
	    notebook_artifact(t->nb, t->in.save_art) : NULL;
	if (!a || !*name) {
		tui_flash(t, "not saved");
		return;
	}
	const char *why = save_name_why(name);
	if (why != NULL) {
		/* outside the working folder, or hidden: ask first */
		char *shown = sanitize_str(name, strlen(name), 0);
		free(t->in.save_name);
		t->in.save_name = xstrdup(name);
		snprintf(t->in.save_prompt, sizeof t->in.save_prompt,
		    "write \"%.*s%s\" (%s)? (y/n) ",
		    (int)utf8_complete_prefix(shown, strlen(shown) > 60 ? 60 :
		    strlen(shown)), shown, strlen(shown) > 60 ? "…" : "", why);
		free(shown);
		t->in.modal = M_SAVE_CONFIRM;
		tui_mark(t);
		return;
	}
	art_save_to(t, a, name);
}

void
tui_act_save_confirm(struct tui *t, int yes)
{
	t->in.modal = M_NONE;
	if (yes && t->in.save_art < notebook_nartifacts(t->nb))
		art_save_to(t, notebook_artifact(t->nb, t->in.save_art),
		    t->in.save_name);
	else
		tui_flash(t, "not saved");
	free(t->in.save_name);
	t->in.save_name = NULL;
	tui_mark(t);
}
