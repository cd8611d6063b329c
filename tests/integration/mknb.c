/* mknb: a test helper for test_export.py. Plays a small session through
 * the journal the way the agent emits it (real code, outputs as Python
 * prints them), loads the journal back into a fresh notebook, and
 * exports that to .ipynb and .md. Usage: mknb SESSIONS_DIR PNG OUT.ipynb
 * OUT.md; prints the session id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/export.h"
#include "terp/journal.h"
#include "terp/store.h"
#include "terp/util.h"

static struct journal *j;
static struct notebook *nb;

static void
emit(enum event_type t, const struct cell *c, const struct artifact *a,
    const char *text)
{
	struct event ev = { .type = t, .cell = c, .artifact = a, .text = text,
	    .len = text ? strlen(text) : 0 };
	journal_event(j, &ev);
}

/* The notebook's observer, as the session runner sets it. */
static void
observe(void *arg, const struct nb_change *ch)
{
	journal_change(arg, ch);
}

static void
model_cell(const char *id, const char *code, const char *out,
    const char *value, const char *png)
{
	cJSON *calls = cJSON_CreateArray(), *call, *args;
	struct cell *c;
	struct cell_result r = { .status = CELL_OK, .value = value,
	    .duration_ms = 5 };
	char *a;

	call = cJSON_CreateObject();
	cJSON_AddStringToObject(call, "id", id);
	cJSON_AddStringToObject(call, "name", "python_exec");
	args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "code", code);
	a = cJSON_PrintUnformatted(args);
	cJSON_AddStringToObject(call, "arguments", a);
	free(a);
	cJSON_Delete(args);
	cJSON_AddItemToArray(calls, call);
	notebook_add_reply(nb, NULL, calls);
	emit(EV_TOOL_CALL, NULL, NULL, code);
	c = notebook_add_cell(nb, CELL_BY_MODEL, code, id);
	emit(EV_CELL_START, c, NULL, NULL);
	notebook_cell_output(nb, c->n, 0, out, strlen(out));
	emit(EV_STDOUT, c, NULL, out);
	notebook_cell_result(nb, c->n, &r);
	emit(EV_RESULT, c, NULL, NULL);
	if (png != NULL)
		emit(EV_ARTIFACT, c, notebook_add_artifact(nb, c->n, "chart.png",
		    png, 100), NULL);
	notebook_add_tool_result(nb, id, out, 0);
}

int
main(int argc, char **argv)
{
	struct notebook *back;
	struct journal_meta meta;
	char *err = NULL, *path;

	if (argc != 5) {
		fprintf(stderr, "usage: mknb SESSIONS PNG OUT.ipynb OUT.md\n");
		return 2;
	}
	nb = notebook_new();
	if ((j = journal_create(argv[1], NULL, NULL, nb, &err)) == NULL) {
		fprintf(stderr, "mknb: %s\n", err);
		return 1;
	}
	notebook_observe(nb, observe, j);
	notebook_add_question(nb, "What is the total of a?", NULL);
	emit(EV_QUESTION, NULL, NULL, "What is the total of a?");
	model_cell("call_1", "import pandas as pd\n"
	    "df = pd.DataFrame({'a': [3, 5, 34]})\nprint(df['a'].sum())\n",
	    "42\n", NULL, NULL);
	model_cell("call_2", "total = int(df['a'].sum()) * 1000 + 7\n"
	    "print(total)\ntotal / 2\n", "42007\n", "21003.5", NULL);
	model_cell("call_3", "import matplotlib\nmatplotlib.use('Agg')\n"
	    "import matplotlib.pyplot as plt\nplt.bar(df.index, df['a'])\n"
	    "print(len(df))\n", "3\n", NULL, argv[2]);
	notebook_add_reply(nb, "The total is **42**.", NULL);
	emit(EV_ANSWER, NULL, NULL, "The total is **42**.");
	emit(EV_IDLE, NULL, NULL, NULL);
	path = store_journal_path(argv[1], journal_id(j));
	printf("%s\n", journal_id(j));
	notebook_observe(nb, NULL, NULL);
	journal_close(j);

	back = notebook_new();
	if (journal_load(path, back, &meta, &err) < 0 ||
	    export_file(back, argv[3], &err) < 0 ||
	    export_file(back, argv[4], &err) < 0) {
		fprintf(stderr, "mknb: %s\n", err);
		return 1;
	}
	journal_meta_free(&meta);
	notebook_free(back);
	notebook_free(nb);
	free(path);
	return 0;
}
