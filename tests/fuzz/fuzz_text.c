/* libFuzzer target for the text parsers fed by files and by the model:
 * the config file, theme files, and Markdown-lite (after the sanitizer,
 * as the TUI does). No crash, no leak, whatever the bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "terp/config.h"
#include "terp/sanitize.h"
#include "terp/tui_mdlite.h"
#include "terp/tui_span.h"
#include "terp/tui_theme.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config c = { 0 };
	struct theme t;
	struct span_doc d;
	char *err = NULL, *clean;

	if (config_parse(&c, (const char *)data, size, "fuzz", &err) < 0 && err == NULL)
		abort();
	config_free(&c);
	free(err);
	err = NULL;

	tui_theme_init_builtin(&t);
	tui_theme_parse(&t, (const char *)data, size, "fuzz", &err);
	free(err);

	clean = sanitize_str((const char *)data, size, SANITIZE_KEEP_NL | SANITIZE_EXPAND_TABS);
	for (int width = 10; width <= 90; width += 40) {
		tui_span_doc_init(&d);
		tui_mdlite_render(&d, clean, strlen(clean), width);
		tui_span_doc_free(&d);
	}
	free(clean);
	return 0;
}
