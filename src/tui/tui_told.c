/* tui_told: the tool result of a model's cell, read back from the
 * notebook's messages (the text agent.c stored when the cell ended). */
#include "tui_told.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curses.h>

#include "terp/notebook.h"
#include "terp/sanitize.h"
#include "terp/util.h"

#include "tui_draw.h"
#include "tui_items.h"

/* The cut marker text_truncate (outcap.c) puts in a cut result. */
#define CUT_MARK	"\n[... "
#define CUT_WORDS	" bytes cut; "
#define CUT_END		" ...]\n"

/* The content of the tool message answering cell c's call (the
 * notebook's, borrowed), or NULL. */
static const char *
told_text(struct tui *t, const struct cell *c)
{
	const cJSON *msgs = notebook_messages(t->nb), *m;

	if (c == NULL || c->tool_call_id == NULL || msgs == NULL ||
	    msgs->child == NULL)
		return NULL;
	/* the newest first: a cell's result follows its call */
	m = msgs->child->prev;
	for (;;) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "tool_call_id");
		const cJSON *ct = cJSON_GetObjectItemCaseSensitive(m, "content");
		if (cJSON_IsString(id) && strcmp(id->valuestring, c->tool_call_id) == 0)
			return cJSON_IsString(ct) ? ct->valuestring : NULL;
		if (m == msgs->child)
			return NULL;
		m = m->prev;
	}
}

/* Whether text was cut; *full gets the length it had before. */
static int
told_cut(const char *text, uint64_t *full)
{
	const char *p = text, *q;
	size_t len = strlen(text);

	while ((p = strstr(p, CUT_MARK)) != NULL) {
		char *end;
		unsigned long long cut = strtoull(p + strlen(CUT_MARK), &end, 10);
		if (end != p + strlen(CUT_MARK) && strncmp(end, CUT_WORDS,
		    strlen(CUT_WORDS)) == 0 &&
		    (q = strstr(end, CUT_END)) != NULL) {
			q += strlen(CUT_END);
			*full = (uint64_t)(len - (size_t)(q - p)) + cut;
			return 1;
		}
		p++;
	}
	return 0;
}

int
tui_told_cut_note(struct tui *t, const struct cell *c, char *buf, size_t size)
{
	const char *text = told_text(t, c);
	char a[32], b[32];
	uint64_t full;

	if (text == NULL || !told_cut(text, &full))
		return 0;
	fmt_bytes(a, sizeof a, strlen(text));
	fmt_bytes(b, sizeof b, full);
	snprintf(buf, size, "model saw %s of %s", a, b);
	return 1;
}

void
tui_told_show(struct tui *t, int n)
{
	const struct cell *c = notebook_cell(t->nb, n);
	const char *text = told_text(t, c);
	char a[32], b[32], *title, *s;
	uint64_t full;

	if (c == NULL)
		return;
	if (text == NULL) {
		tui_flash(t, "cell [%d] was not sent to the model as a result%s", n,
		    c->author == CELL_BY_USER ? " (you ran it)" : " yet");
		return;
	}
	fmt_bytes(a, sizeof a, strlen(text));
	if (told_cut(text, &full)) {
		fmt_bytes(b, sizeof b, full);
		title = xasprintf("cell [%d] as the model saw it: %s of %s (cut)", n, a, b);
	} else {
		title = xasprintf("cell [%d] as the model saw it: %s", n, a);
	}
	tui_overlay_open(t, title);
	free(title);
	s = sanitize_str(text, strlen(text), SANITIZE_KEEP_NL | SANITIZE_EXPAND_TABS);
	tui_tlines_wrap(&t->ov.lines, s, strlen(s), COLS, R_TEXT, " ", R_TEXT, 0);
	free(s);
}
