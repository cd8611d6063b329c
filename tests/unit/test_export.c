/* Unit tests of export: a small notebook built here, exported to
 * .ipynb and Markdown, and the output checked field by field. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "terp/buf.h"
#include "terp/digest.h"
#include "terp/export.h"
#include "terp/util.h"

static const unsigned char png_bytes[] = {
	0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H',
	'D', 'R', 1, 2, 3,
};

/* The model's reply with text (may be NULL) and one call id. */
static void
add_call(struct notebook *nb, const char *text, const char *id)
{
	cJSON *calls = cJSON_CreateArray(), *c = cJSON_CreateObject();

	cJSON_AddStringToObject(c, "id", id);
	cJSON_AddStringToObject(c, "name", "python_exec");
	cJSON_AddStringToObject(c, "arguments", "{}");
	cJSON_AddItemToArray(calls, c);
	notebook_add_reply(nb, text, calls);
}

/* Q1 -> model cell 1 (stdout, value, PNG) -> answer; a hand-run cell 2
 * that raises; Q2 -> model cell 3 that times out -> answer. */
static struct notebook *
small_notebook(const char *dir)
{
	struct notebook *nb = notebook_new();
	struct cell *c;
	char *png = xasprintf("%s/out/chart.png", dir);
	char *outdir = xasprintf("%s/out", dir);
	FILE *f;

	cr_assert_eq(mkdir_p(outdir, 0700), 0);
	f = fopen(png, "wb");
	cr_assert_not_null(f);
	fwrite(png_bytes, 1, sizeof png_bytes, f);
	fclose(f);

	notebook_add_question(nb, "Best month?\nPer channel.", NULL);
	add_call(nb, "Loading the data.", "c1");
	c = notebook_add_cell(nb, CELL_BY_MODEL,
	    "import pandas as pd\nprint(6*7)\n6*7", "c1");
	outcap_add(&c->out[0], "42\n", 3);
	outcap_add(&c->out[0], "bad \xff byte\n", 11);
	c->status = CELL_OK;
	c->value = xstrdup("42");
	notebook_add_artifact(nb, 1, "chart.png", png, sizeof png_bytes);
	notebook_add_tool_result(nb, "c1", "42", 0);
	notebook_add_reply(nb, "March, with **42**.", NULL);

	c = notebook_add_cell(nb, CELL_BY_USER, "1/0", NULL);
	c->status = CELL_ERROR;
	c->ename = xstrdup("ZeroDivisionError");
	c->evalue = xstrdup("division by zero");
	c->traceback = xstrdup("Traceback (most recent call last):\n"
	    "  File \"<cell 2>\", line 1\nZeroDivisionError: division by zero");

	notebook_add_question(nb, "And ```fences```?", "Since your last turn the "
	    "user ran these cells by hand in the same session:\n[2]\n1/0\n");
	add_call(nb, NULL, "c3");
	c = notebook_add_cell(nb, CELL_BY_MODEL, "s = '```'\nwhile True: pass",
	    "c3");
	c->status = CELL_TIMEOUT;
	c->reason = xstrdup("ran past 120 s");
	outcap_add(&c->out[1], "\x1b[31mred\x1b[0m\n", 13);
	notebook_add_tool_result(nb, "c3", "timeout", 1);
	notebook_add_reply(nb, "It loops forever.", NULL);
	free(png);
	free(outdir);
	return nb;
}

static char *
tmpdir(void)
{
	char *d = xstrdup("/tmp/terp-export-XXXXXX");
	cr_assert_not_null(mkdtemp(d));
	return d;
}

static void
rm_rf(const char *d)
{
	char *cmd = xasprintf("rm -rf '%s'", d);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
}

static const char *
str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	cr_assert(cJSON_IsString(v), "%s is not a string", k);
	return v->valuestring;
}

/* nbformat's multiline string joined. */
static char *
joined(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k), *l;
	struct buf b;

	buf_init(&b, 1 << 20);
	if (cJSON_IsString(v))
		buf_adds(&b, v->valuestring);
	else if (cJSON_IsArray(v))
		cJSON_ArrayForEach(l, v)
			buf_adds(&b, l->valuestring);
	return buf_take(&b);
}

Test(export, ipynb_structure)
{
	char *dir = tmpdir(), *path = xasprintf("%s/nb.ipynb", dir), *err = NULL;
	struct notebook *nb = small_notebook(dir);
	char *text, *s;
	cJSON *doc, *cells, *c, *outs, *o;
	size_t len;
	const char *kinds[] = { "markdown", "markdown", "code", "markdown",
	    "code", "markdown", "code", "markdown" };

	cr_assert_eq(export_ipynb(nb, path, &err), 0, "%s", err);
	text = read_file(path, 1 << 20, &len);
	cr_assert_not_null(text);
	doc = cJSON_Parse(text);
	cr_assert_not_null(doc, "not JSON");
	cr_assert_eq(cJSON_GetObjectItem(doc, "nbformat")->valueint, 4);
	cr_assert_eq(cJSON_GetObjectItem(doc, "nbformat_minor")->valueint, 5);
	cr_assert_str_eq(str(cJSON_GetObjectItem(cJSON_GetObjectItem(doc,
	    "metadata"), "kernelspec"), "name"), "python3");
	cells = cJSON_GetObjectItem(doc, "cells");
	/* first, the note that Jupyter runs the code unsandboxed; the
	 * notebook's own cells follow it */
	c = cJSON_DetachItemFromArray(cells, 0);
	cr_assert_str_eq(str(c, "id"), "terp-unsandboxed");
	s = joined(c, "source");
	cr_assert_not_null(strstr(s, "runs that code on this machine **unsandboxed**"), "%s", s);
	free(s);
	cJSON_Delete(c);
	cr_assert_eq(cJSON_GetArraySize(cells), 8);
	for (int i = 0; i < 8; i++)
		cr_assert_str_eq(str(cJSON_GetArrayItem(cells, i), "cell_type"),
		    kinds[i], "cell %d", i);
	s = joined(cJSON_GetArrayItem(cells, 0), "source");
	cr_assert_str_eq(s, "**Question:**\n\n> Best month?\n> Per channel.\n");
	free(s);

	/* cell 1: stdout (invalid byte replaced), PNG, execute_result */
	c = cJSON_GetArrayItem(cells, 2);
	cr_assert_eq(cJSON_GetObjectItem(c, "execution_count")->valueint, 1);
	s = joined(c, "source");
	cr_assert_str_eq(s, "import pandas as pd\nprint(6*7)\n6*7");
	free(s);
	outs = cJSON_GetObjectItem(c, "outputs");
	cr_assert_eq(cJSON_GetArraySize(outs), 3);
	o = cJSON_GetArrayItem(outs, 0);
	cr_assert_str_eq(str(o, "output_type"), "stream");
	cr_assert_str_eq(str(o, "name"), "stdout");
	s = joined(o, "text");
	cr_assert_str_eq(s, "42\nbad \xef\xbf\xbd byte\n");
	free(s);
	o = cJSON_GetArrayItem(outs, 1);
	cr_assert_str_eq(str(o, "output_type"), "display_data");
	{
		const char *b64 = str(cJSON_GetObjectItem(o, "data"), "image/png");
		char *png = base64_decode(b64, strlen(b64), &len);
		cr_assert_eq(len, sizeof png_bytes);
		cr_assert(memcmp(png, png_bytes, len) == 0);
		free(png);
	}
	o = cJSON_GetArrayItem(outs, 2);
	cr_assert_str_eq(str(o, "output_type"), "execute_result");
	cr_assert_eq(cJSON_GetObjectItem(o, "execution_count")->valueint, 1);
	s = joined(cJSON_GetObjectItem(o, "data"), "text/plain");
	cr_assert_str_eq(s, "42");
	free(s);

	/* cell 2, run by hand before the second question: an error */
	c = cJSON_GetArrayItem(cells, 4);
	cr_assert_str_eq(str(cJSON_GetObjectItem(cJSON_GetObjectItem(c,
	    "metadata"), "terp"), "author"), "user");
	o = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "outputs"), 0);
	cr_assert_str_eq(str(o, "output_type"), "error");
	cr_assert_str_eq(str(o, "ename"), "ZeroDivisionError");
	cr_assert_str_eq(str(o, "evalue"), "division by zero");
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "traceback")), 3);
	cr_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "traceback"),
	    2)->valuestring, "ZeroDivisionError: division by zero");

	/* cell 3: stderr kept raw (Jupyter renders ANSI), then the reason */
	c = cJSON_GetArrayItem(cells, 6);
	outs = cJSON_GetObjectItem(c, "outputs");
	cr_assert_eq(cJSON_GetArraySize(outs), 2);
	s = joined(cJSON_GetArrayItem(outs, 0), "text");
	cr_assert_str_eq(s, "\x1b[31mred\x1b[0m\n");
	free(s);
	s = joined(cJSON_GetArrayItem(outs, 1), "text");
	cr_assert_str_eq(s, "[terp: cell timeout: ran past 120 s]\n");
	free(s);

	cJSON_Delete(doc);
	free(text);
	notebook_free(nb);
	free(path);
	rm_rf(dir);
	free(dir);
}

Test(export, markdown)
{
	char *dir = tmpdir(), *sub = xasprintf("%s/reports", dir);
	char *path = xasprintf("%s/nb.md", sub), *err = NULL, *md;
	struct notebook *nb = small_notebook(dir);

	cr_assert_eq(mkdir_p(sub, 0700), 0);
	cr_assert_eq(export_file(nb, path, &err), 0, "%s", err);
	md = read_file(path, 1 << 20, NULL);
	cr_assert_not_null(md);
	cr_assert_not_null(strstr(md, "## Question\n\n> Best month?\n> Per channel.\n"));
	cr_assert_not_null(strstr(md, "```python\nimport pandas as pd\n"));
	cr_assert_not_null(strstr(md, "Output:\n\n```text\n42\n"));
	cr_assert_not_null(strstr(md, "![chart.png](../out/chart.png)"), "%s", md);
	cr_assert_not_null(strstr(md, "March, with **42**."));
	cr_assert_not_null(strstr(md, "ZeroDivisionError: division by zero"));
	/* code holding ``` gets a longer fence */
	cr_assert_not_null(strstr(md, "````python\ns = '```'\n"), "%s", md);
	/* no raw escape reaches the file */
	cr_assert_null(strchr(md, '\x1b'));
	cr_assert_not_null(strstr(md, "*ran past 120 s*"));
	/* the order: Q1, cell 1, answer, hand cell 2, Q2 */
	cr_assert_lt(strstr(md, "March"), strstr(md, "**[2]**"));
	cr_assert_lt(strstr(md, "**[2]**"), strstr(md, "And "));
	cr_assert_not_null(strstr(md, "## Question\n\n> And ```fences```?\n"));
	cr_assert_null(strstr(md, "Since your last turn"));
	free(md);
	notebook_free(nb);
	free(path);
	free(sub);
	rm_rf(dir);
	free(dir);
}

Test(export, markdown_output_truncated)
{
	char *dir = tmpdir(), *path = xasprintf("%s/big.md", dir), *err = NULL;
	struct notebook *nb = notebook_new();
	struct cell *c = notebook_add_cell(nb, CELL_BY_USER, "print('x'*10**5)",
	    NULL);
	char *big = xmalloc(100000), *md;
	size_t len;

	memset(big, 'x', 100000);
	outcap_add(&c->out[0], big, 100000);
	c->status = CELL_OK;
	cr_assert_eq(export_markdown(nb, path, &err), 0, "%s", err);
	md = read_file(path, 1 << 20, &len);
	cr_assert_lt(len, EXPORT_MD_OUTPUT + 400);
	cr_assert_not_null(strstr(md, "bytes cut"));
	free(md);
	free(big);
	notebook_free(nb);
	free(path);
	rm_rf(dir);
	free(dir);
}

Test(export, unknown_extension_and_unwritable)
{
	struct notebook *nb = notebook_new();
	char *err = NULL;

	cr_assert_eq(export_file(nb, "/tmp/x.pdf", &err), -1);
	cr_assert_not_null(strstr(err, ".ipynb"));
	free(err);
	err = NULL;
	cr_assert_eq(export_file(nb, "/nonexistent/dir/x.ipynb", &err), -1);
	cr_assert_not_null(err);
	free(err);
	notebook_free(nb);
}

Test(export, relpath)
{
	struct { const char *base, *target, *want; } t[] = {
		{ "/a/b", "/a/b/c.png", "c.png" },
		{ "/a/b", "/a/c/d.png", "../c/d.png" },
		{ "/a/bc", "/a/b/x", "../b/x" },
		{ "/", "/x/y", "x/y" },
		{ "/a/b/c", "/x", "../../../x" },
		{ "/a", "/a", "." },
	};

	for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
		char *r = export_relpath(t[i].base, t[i].target);
		cr_assert_str_eq(r, t[i].want, "%s -> %s", t[i].base, t[i].target);
		free(r);
	}
}

/* 1 when the first line holding needle lies inside a fenced code block,
 * by CommonMark's rule: a fence opens with a line of at least three
 * backticks and closes with a line of at least as many (and nothing
 * else but spaces). A needle starting with '\n' names the line after. */
static int
in_fence(const char *md, const char *needle)
{
	const char *at = strstr(md, needle), *p = md;
	size_t open = 0;

	cr_assert_not_null(at, "%s not in the file", needle);
	at += needle[0] == '\n';
	while (*p != '\0') {
		const char *nl = strchr(p, '\n'), *e = nl ? nl : p + strlen(p);
		size_t run = 0;
		if (at >= p && at < e)
			return open > 0;
		while (p + run < e && p[run] == '`')
			run++;
		if (open == 0 && run >= 3)
			open = run;
		else if (open > 0 && run >= open &&
		    strspn(p + run, " ") == (size_t)(e - p - run))
			open = 0;
		p = nl ? nl + 1 : e;
	}
	return 0;
}

/* A cell printing 70 backticks and a forged artifact name holding
 * newlines, HTML and a link of its own (issue 8, 2.7). */
Test(export, markdown_hostile_name_and_backtick_run)
{
	char *dir = tmpdir(), *path = xasprintf("%s/nb.md", dir), *err = NULL;
	char *png = xasprintf("%s/out/x.png", dir), *md;
	char run[71], line[100];
	struct notebook *nb = notebook_new();
	struct cell *c;

	memset(run, '`', 70);
	run[70] = '\0';
	c = notebook_add_cell(nb, CELL_BY_USER, "print('`' * 70)", NULL);
	snprintf(line, sizeof line, "%s\n<b>after</b>\n", run);
	outcap_add(&c->out[0], line, strlen(line));
	c->status = CELL_TIMEOUT;
	c->reason = xstrdup("<script>x</script>\n# head");
	notebook_add_artifact(nb, 1, "x.png\n\n<img src=x onerror=alert(1)>\n"
	    "](javascript:alert(2))", png, 10);
	notebook_add_artifact(nb, 1, "a](b) [c `d` \\", png, 10);
	cr_assert_eq(export_markdown(nb, path, &err), 0, "%s", err);
	md = read_file(path, 1 << 20, NULL);
	cr_assert_not_null(md);
	/* the output stays in its block, whatever its backticks */
	cr_assert(in_fence(md, "<b>after</b>"), "%s", md);
	snprintf(line, sizeof line, "\n%s\n", run);
	cr_assert(in_fence(md, line), "%s", md);
	cr_assert_not_null(strstr(md, "```````````````````````````````````"
	    "````````````````````````````````````text\n"), "%s", md);
	/* the names are text on one line: no tag, no link of their own */
	cr_assert_null(strstr(md, "<img"), "%s", md);
	cr_assert_null(strstr(md, "<script"), "%s", md);
	cr_assert_null(strstr(md, "](javascript"), "%s", md);
	cr_assert_not_null(strstr(md, "\n[x.png\\\\u000a\\\\u000a&lt;img src=x "
	    "onerror=alert\\(1\\)&gt;\\\\u000a\\]\\(javascript:alert\\(2\\)\\)]"
	    "(out/x.png)\n"), "%s", md);
	cr_assert_not_null(strstr(md, "[a\\]\\(b\\) \\[c \\`d\\` \\\\](out/x.png)\n"),
	    "%s", md);
	cr_assert(!in_fence(md, "(out/x.png)"));
	cr_assert_not_null(strstr(md, "*&lt;script&gt;x&lt;/script&gt;\\\\u000a# head*"),
	    "%s", md);
	free(md);
	notebook_free(nb);
	free(png);
	free(path);
	rm_rf(dir);
	free(dir);
}

/* An .ipynb shown on a terminal (cat, less -r) must not drive it
 * either: C1, DEL and bidi controls are \u escapes, and the notebook
 * still holds the same text. */
Test(export, ipynb_controls_escaped)
{
	static const char text[] = "\xc2\x9d]0;x\x07 \xe2\x80\xae \x7f\n";
	struct notebook *nb = notebook_new();
	struct cell *c = notebook_add_cell(nb, CELL_BY_USER, "print(1)", NULL);
	char *s, *out;
	cJSON *doc, *o;

	outcap_add(&c->out[0], text, sizeof text - 1);
	c->status = CELL_OK;
	notebook_add_artifact(nb, 1, "n\xc2\x9b" "1.txt", "/nonexistent/n.txt", 3);
	s = export_ipynb_string(nb);
	cr_assert_null(strstr(s, "\xc2\x9d"), "%s", s);
	cr_assert_null(strstr(s, "\xc2\x9b"), "%s", s);
	cr_assert_null(strstr(s, "\xe2\x80\xae"), "%s", s);
	cr_assert_null(strchr(s, '\x7f'), "%s", s);
	cr_assert_not_null(strstr(s, "\\u009d]0;x\\u0007 \\u202e \\u007f"), "%s", s);
	doc = cJSON_Parse(s);
	cr_assert_not_null(doc);
	o = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(
	    cJSON_GetObjectItem(doc, "cells"), 1), "outputs"), 0);
	out = joined(o, "text");
	cr_assert_str_eq(out, text);
	free(out);
	cJSON_Delete(doc);
	free(s);
	notebook_free(nb);
}

/* The code of the first (only) code cell after the paths cell of an
 * .ipynb exported into dir, and the paths cell's in *setup. */
static char *
exported_code(struct notebook *nb, const char *dir, char **setup)
{
	char *path = xasprintf("%s/nb.ipynb", dir), *err = NULL, *text, *s;
	cJSON *doc, *c, *cells;
	int k = 0;

	cr_assert_eq(export_ipynb(nb, path, &err), 0, "%s", err);
	text = read_file(path, 1 << 20, NULL);
	doc = cJSON_Parse(text);
	cr_assert_not_null(doc);
	cells = cJSON_GetObjectItem(doc, "cells");
	*setup = NULL;
	s = NULL;
	cJSON_ArrayForEach(c, cells) {
		if (strcmp(str(c, "cell_type"), "code") != 0)
			continue;
		if (k++ == 0 && strcmp(str(c, "id"), "terp-paths") == 0)
			*setup = joined(c, "source");
		else if (s == NULL)
			s = joined(c, "source");
	}
	cJSON_Delete(doc);
	free(text);
	free(path);
	return s;
}

/* Issue 12: an .ipynb re-runs where it is written: the sandbox's paths
 * are rewritten where they are whole paths, and only there. */
Test(export, ipynb_paths_rewritten)
{
	char *dir = tmpdir(), *setup, *code, *want;
	struct notebook *nb = notebook_new();
	struct cell *c;
	struct datafile in = { .path = xasprintf("%s/x.csv", dir),
	    .sandbox = "/workspace/data/x.csv" };
	struct datafile far = { .path = "/srv/it's/y.csv",
	    .sandbox = "/workspace/data/y.csv" };
	struct datafile bad = { .path = "/srv/b\xff/z.csv",
	    .sandbox = "/workspace/data/z.csv" };

	notebook_add_file(nb, &in);
	notebook_add_file(nb, &far);
	notebook_add_file(nb, &bad);
	c = notebook_add_cell(nb, CELL_BY_USER,
	    "a = '/workspace/data/x.csv'\n"
	    "b = \"/workspace/data/x.csv2\"\n"
	    "c = '/x/workspace/data/x.csv'\n"
	    "d = '/workspace/data/y.csv'\n"
	    "e = '/workspace/out/c.png'\n"
	    "f = '/workspaces'\n"
	    "g = '/workspace'\n"
	    "h = '/workspace/data/z.csv'\n", NULL);
	c->status = CELL_OK;
	code = exported_code(nb, dir, &setup);
	cr_assert_not_null(setup, "no paths cell");
	want = "a = 'x.csv'\n"
	    "b = \"./data/x.csv2\"\n"
	    "c = '/x/workspace/data/x.csv'\n"
	    "d = './data/y.csv'\n"	/* a quote in the host path: not written in */
	    "e = 'out/c.png'\n"
	    "f = '/workspaces'\n"
	    "g = '.'\n"
	    "h = './data/z.csv'\n";	/* nor one that is not UTF-8 */
	cr_assert_str_eq(code, want);
	cr_assert_not_null(strstr(setup, "#   /workspace/data/x.csv -> x.csv\n"), "%s", setup);
	cr_assert_null(strstr(setup, "it's"), "%s", setup);
	cr_assert_not_null(strstr(setup, "os.makedirs(\"out\", exist_ok=True)"), "%s", setup);
	free(setup);
	free(code);
	free(in.path);
	notebook_free(nb);
	rm_rf(dir);
	free(dir);
}

/* A notebook whose cells name no sandbox path gets no paths cell. */
Test(export, ipynb_without_paths_has_no_paths_cell)
{
	char *dir = tmpdir(), *setup, *code;
	struct notebook *nb = notebook_new();
	struct cell *c = notebook_add_cell(nb, CELL_BY_USER, "print(6 * 7)", NULL);

	c->status = CELL_OK;
	code = exported_code(nb, dir, &setup);
	cr_assert_null(setup);
	cr_assert_str_eq(code, "print(6 * 7)");
	free(code);
	notebook_free(nb);
	rm_rf(dir);
	free(dir);
}

/* The walk's order: what each item is and, for cells, their number. */
static void
log_item(void *arg, enum export_item k, const char *text, const struct cell *c)
{
	struct buf *b = arg;
	static const char *const names[] = { "Q", "R", "C", "W" };

	if (k == EXPORT_CELL)
		buf_printf(b, "C%d ", c->n);
	else
		buf_printf(b, "%s:%s ", names[k], text);
}

Test(export, walk_places_cells_where_called_and_the_rest_by_number_before_the_question_after)
{
	struct notebook *nb = notebook_new();
	struct buf b;
	cJSON *calls = cJSON_CreateArray();

	buf_init(&b, 1 << 16);

	notebook_add_question(nb, "a", NULL);
	notebook_add_reply(nb, "text only", NULL);
	notebook_add_cell(nb, CELL_BY_USER, "1", NULL);		/* 1, by hand */
	notebook_add_question(nb, "b", NULL);
	/* two calls in one reply */
	for (int i = 0; i < 2; i++) {
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "id", i == 0 ? "k1" : "k2");
		cJSON_AddStringToObject(c, "name", "python_exec");
		cJSON_AddStringToObject(c, "arguments", "{}");
		cJSON_AddItemToArray(calls, c);
	}
	notebook_add_reply(nb, NULL, calls);
	notebook_add_cell(nb, CELL_BY_MODEL, "2", "k1");	/* 2 */
	notebook_add_cell(nb, CELL_BY_MODEL, "3", "k2");	/* 3 */
	notebook_add_tool_result(nb, "k1", "", 0);
	notebook_add_tool_result(nb, "k2", "", 0);
	notebook_add_reply(nb, "done", NULL);
	notebook_add_question(nb, "c", NULL);
	notebook_add_reply(nb, "more text", NULL);
	notebook_add_cell(nb, CELL_BY_USER, "4", NULL);		/* 4, at the end */
	/* a cell by hand has only its number: it goes before the first
	 * question whose calls made a later cell (C1 before a, C4 before c,
	 * the only question left), as the walk has always placed them */
	export_walk(nb, log_item, &b);
	cr_assert_str_eq(buf_str(&b), "C1 Q:a R:text only Q:b C2 C3 R:done C4 Q:c R:more text ");
	buf_free(&b);
	notebook_free(nb);
}
