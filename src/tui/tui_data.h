/* tui_data: what the empty notebook says about the data files staged
 * at start (tui_data.c): rows × columns and the column names of a CSV
 * or TSV, else the file's size; and a few questions to start with. */
#ifndef TERP_TUI_DATA_H
#define TERP_TUI_DATA_H

#include "tui_priv.h"

/* Describes the file at path (the user's, given on the command line):
 * *shape gets "1,234 rows × 6 columns · 84 KiB" (or only the size when
 * the file is not delimited text, "≥ 1,234 rows" past the bytes read),
 * *cols the column names ("month, channel, revenue") or NULL. Both new,
 * printable, one line. Returns 0, or -1 when the file cannot be read. */
int tui_data_describe(const char *path, char **shape, char **cols);

/* The banner of a notebook without a model, and whether that is t's. */
#define TUI_NO_MODEL "No model is configured, so questions cannot be " \
	"asked yet; /py CODE runs your own cells. To add one: set " \
	"ANTHROPIC_API_KEY, OPENAI_API_KEY, or AZURE_OPENAI_API_KEY with " \
	"AZURE_OPENAI_ENDPOINT, or start terp with --provider ollama (a " \
	"local server) or --provider demo (see terp(1))."
int tui_data_no_model(const struct tui *t);

/* Appends the empty conversation's lines to ls at width w: how to start,
 * the data files (described once, then kept in t), the banner when no
 * model is configured, example questions. */
void tui_data_empty(struct tui *t, struct tlines *ls, int w);
void tui_data_free(struct tui *t);

#endif
