/* tui_view: a cell's output in the full-pane view, unwrapped, for
 * tables wider than the pane (tui_view.h). */
#include "tui_view.h"

#include <stdlib.h>
#include <string.h>

#include <curses.h>

#include "terp/sanitize.h"
#include "terp/util.h"

#include "tui_draw.h"
#include "tui_items.h"

/* Wide enough never to cut a line: the output kept is bounded. */
#define VIEW_NOCUT	(1 << 24)

static void
view_add(struct tui *t, const char *text, size_t len, int role,
    const char *label)
{
	if (len == 0)
		return;
	if (label)
		tui_tlines_cut(&t->ov.lines, label, strlen(label), VIEW_NOCUT, R_DIM,
		    "", R_DIM, 0);
	char *s = sanitize_str(text, len, SANITIZE_KEEP_NL |
	    SANITIZE_EXPAND_TABS | SANITIZE_CR_AS_NL);
	size_t n = strlen(s);
	while (n > 0 && s[n - 1] == '\n')
		n--;
	tui_tlines_cut(&t->ov.lines, s, n, VIEW_NOCUT, role, "", R_TEXT, 0);
	free(s);
}

void
tui_view_output(struct tui *t, int n)
{
	const struct cell *c = notebook_cell(t->nb, n);
	size_t len[2];
	char *out[2];

	if (c == NULL)
		return;
	out[0] = cell_output(c, 0, &len[0]);
	out[1] = cell_output(c, 1, &len[1]);
	size_t vlen = c->value ? strlen(c->value) : 0;
	if (len[0] == 0 && len[1] == 0 && vlen == 0) {
		tui_flash(t, "cell [%d] has no output to view", n);
		free(out[0]);
		free(out[1]);
		return;
	}
	char *title = xasprintf("cell [%d] output", n);
	tui_overlay_open(t, title);
	free(title);
	t->ov.hscroll = 1;
	int parts = (len[0] > 0) + (len[1] > 0) + (vlen > 0);
	view_add(t, out[0], len[0], R_STDOUT, parts > 1 ? "stdout:" : NULL);
	view_add(t, c->value ? c->value : "", vlen, R_VALUE, parts > 1 ? "value:" : NULL);
	view_add(t, out[1], len[1], R_STDERR, parts > 1 ? "stderr:" : NULL);
	free(out[0]);
	free(out[1]);
}

int
tui_view_hstep(const struct tui *t)
{
	int s = t->lay.cols / 2;
	return s > 0 ? s : 1;
}
