/* prompt: the texts terp writes for the model to read (prompt.h). */
#include "prompt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "terp/datadesc.h"
#include "terp/datafile.h"
#include "terp/netlog.h"
#include "terp/outcap.h"
#include "terp/sanitize.h"
#include "terp/util.h"

void
prompt_files_free(struct prompt_files *pf)
{
	free(pf->desc);
	free(pf->key);
	pf->desc = pf->key = NULL;
}

/* A data file for the model: where the code sees it, where it came
 * from (two sales.csv from two folders are sales.csv and sales-2.csv
 * there), its size, then what it holds (datadesc.h). */
static void
describe_file(struct buf *b, const struct datafile *f)
{
	struct stat st;
	char size[32] = "?";

	if (stat(f->path, &st) == 0)
		fmt_bytes(size, sizeof size, (uint64_t)st.st_size);
	if (stat(f->path, &st) == 0 && S_ISDIR(st.st_mode))	/* datadesc counts it */
		snprintf(size, sizeof size, "a folder");
	buf_printf(b, "- %s (%s), the user's %s\n", f->sandbox, size, f->path);
	datadesc_describe(b, f->path, "  ");
}

/* The data files' lines of the system prompt: made again only when the
 * set of files changed (a description reads each file). Borrowed. */
static const char *
describe_files(struct prompt_files *pf, struct notebook *nb)
{
	struct buf key, b;
	int any = 0;

	buf_init(&key, (size_t)-1 / 2);
	for (int i = 0; i < notebook_nfiles(nb); i++) {
		const struct datafile *f = notebook_file(nb, i);
		if (f->sandbox != NULL)
			buf_printf(&key, "%s\n%s\n%llu %lld\n", f->path, f->sandbox,
			    (unsigned long long)f->size, (long long)f->mtime);
	}
	if (pf->desc != NULL && strcmp(pf->key, buf_str(&key)) == 0) {
		buf_free(&key);
		return pf->desc;
	}
	buf_init(&b, 1 << 20);
	for (int i = 0; i < notebook_nfiles(nb); i++) {
		const struct datafile *f = notebook_file(nb, i);
		if (f->sandbox == NULL)
			continue;	/* not in this sandbox (gone since) */
		if (!any++)
			buf_adds(&b, "Data files (read-only):\n");
		describe_file(&b, f);
	}
	if (!any)
		buf_adds(&b, "No data files were given.\n");
	buf_adds(&b, "The user can add a data file with /load PATH: when you need "
	    "one that is not here, ask them to /load it.\n");
	free(pf->desc);
	free(pf->key);
	pf->desc = buf_take(&b);
	pf->key = buf_take(&key);
	return pf->desc;
}

/* What the model may import and whether it may reach the network:
 * the probe's sentence (kernel_python_info), then a line on pip and
 * egress from the hosts allowed at the start. Runtime /allow and /deny
 * reach the model as notes, so this text stays the same for the whole
 * session (a changing system prompt defeats the providers' caches). */
static void
describe_python(struct kernel *k, const char *const *h, struct buf *b)
{
	const char *info = kernel_python_info(k);
	int charts = kernel_python_charts(k);

	if (info != NULL)
		buf_printf(b, "The session runs %s\n", info);
	else
		buf_adds(b, "Which packages the session's Python has is not known: check "
		    "with importlib.util.find_spec before relying on one.\n");
	buf_adds(b, "Rules:\n"
	    "- Use python_exec for every computation. Never estimate or do arithmetic in "
	    "your head; print the numbers you report.\n"
	    "- Print every figure your answer will state (counts, totals, means, "
	    "percentages, differences) in a cell's output first, at the precision you "
	    "will write it or finer: each number in the answer is checked against the "
	    "outputs, and one no cell printed is flagged to the user.\n"
	    "- The value of a cell's last expression is shown, as in Jupyter.\n"
	    /* the driver's built-in IPython subset (driver.py), or a
	     * Jupyter server's own IPython: the same list holds for both */
	    "- IPython syntax works: %time, %timeit, %pip, %cd, %env, %who, "
	    "%matplotlib, %%writefile, %%capture, %%bash, !shell commands, x = !cmd, "
	    "display(); a trailing ';' hides a value. pandas prints as Jupyter's text "
	    "view: up to 20 columns, wrapped at 80 characters, 60 rows.\n");
	if (charts != 0)
		buf_adds(b, "- Save charts as PNG files under /workspace/out/ (plt.savefig); "
		    "they are shown to the user. ");
	else
		buf_adds(b, "- ");
	buf_adds(b, "Files you write under /workspace are kept.\n");
	if (h != NULL && h[0] != NULL) {
		buf_adds(b, "- The network reaches only these hosts, through a proxy the "
		    "environment names: ");
		for (int i = 0; h[i] != NULL; i++)
			buf_printf(b, "%s%s", i ? ", " : "", h[i]);
		buf_adds(b, ". Anything else is refused, and the result of the cell says "
		    "why. To install a package from an allowed index, run "
		    "subprocess.run([sys.executable, \"-m\", \"pip\", \"install\", NAME]); "
		    "the next cell can import it.\n");
	} else {
		buf_adds(b, "- The network is off: do not try to install packages or "
		    "download data (the user can allow a host with /allow HOST).\n");
	}
}

char *
prompt_system(struct prompt_files *pf, struct notebook *nb, struct kernel *k,
    const char *const *allow_hosts)
{
	struct buf b;

	buf_init(&b, 1 << 20);
	buf_adds(&b,
	    "You are a careful data analyst working in a Python notebook.\n"
	    "You have one tool, python_exec(code), which runs Python 3 in a persistent "
	    "sandboxed session: variables, imports and loaded data stay between calls, "
	    "like cells of a Jupyter notebook.\n");
	describe_python(k, allow_hosts, &b);
	buf_adds(&b,
	    "- Outputs you see may be truncated; print summaries, not whole tables.\n"
	    "- When done, answer in plain language with the key numbers, using Markdown.\n");
	buf_adds(&b, describe_files(pf, nb));
	if (kernel_prompt_note(k) != NULL)	/* a remote session: its own paths */
		buf_printf(&b, "%s\n", kernel_prompt_note(k));
	else
		buf_adds(&b, "The working directory is /workspace.\n");
	return buf_take(&b);
}

char *
prompt_cell_result(struct notebook *nb, const struct cell *c, size_t limit)
{
	struct buf b;
	char *s, *clean, *cut;
	size_t len;

	buf_init(&b, (size_t)-1 / 2);
	buf_printf(&b, "status: %s (%.2f s)\n", cell_status_name(c->status),
	    (double)c->duration_ms / 1000.0);
	{
		/* first, where a truncation of the output cannot cut it:
		 * why a download failed is the model's to know */
		char *net = netlog_sum_text(notebook_net_sum(nb, c->n),
		    NETLOG_MODEL);
		if (net != NULL)
			buf_printf(&b, "%s\n", net);
		free(net);
	}
	for (int i = 0; i < 2; i++) {
		if (c->out[i].total == 0)
			continue;
		s = cell_output(c, i, &len);
		buf_printf(&b, "%s:\n", i ? "stderr" : "stdout");
		buf_add(&b, s, len);
		if (len > 0 && s[len - 1] != '\n')
			buf_addc(&b, '\n');
		free(s);
	}
	if (c->value)
		buf_printf(&b, "value: %s\n", c->value);
	if (c->ename) {
		buf_printf(&b, "error: %s: %s\n", c->ename, c->evalue ? c->evalue : "");
		if (c->traceback && *c->traceback)
			buf_printf(&b, "traceback:\n%s", c->traceback);
	}
	if (c->reason)
		buf_printf(&b, "note: %s\n", c->reason);
	if (c->nartifacts > 0) {
		/* Names are the copies' in the user's folder (chart-2.png
		 * when chart.png was taken), not the sandbox's. */
		buf_adds(&b, "files copied to the user's output folder:\n");
		for (int i = 0; i < notebook_nartifacts(nb); i++) {
			const struct artifact *art = notebook_artifact(nb, i);
			if (art->cell == c->n)
				buf_printf(&b, "  %s (%llu bytes)\n", art->name,
				    (unsigned long long)art->bytes);
		}
	}
	clean = sanitize_str(b.data, b.len, SANITIZE_KEEP_NL | SANITIZE_KEEP_TAB |
	    SANITIZE_CR_AS_NL);
	buf_free(&b);
	{
		/* what the notebook itself dropped (outcap) is cut too: the
		 * line says how much in all, and that it is kept nowhere */
		uint64_t dropped = outcap_dropped(&c->out[0]) +
		    outcap_dropped(&c->out[1]);
		uint64_t total = c->out[0].total + c->out[1].total;
		cut = text_truncate_of(clean, strlen(clean),
		    limit, dropped, total);
	}
	free(clean);
	return cut;
}

int
prompt_hand_cells(struct notebook *nb, size_t limit, int from, struct buf *b)
{
	int any = 0, next = 0;

	for (int i = from > 1 ? from : 1; i <= notebook_ncells(nb); i++) {
		struct cell *c = notebook_cell(nb, i);
		char *res;
		if (c->author != CELL_BY_USER || c->told_model)
			continue;
		if (c->status == CELL_RUNNING || c->status == CELL_PENDING) {
			if (next == 0)
				next = i;	/* told once it is over */
			continue;
		}
		if (!any)
			buf_adds(b, "Since your last turn the user ran these cells by hand "
			    "in the same session:\n");
		any = 1;
		res = prompt_cell_result(nb, c, limit);
		buf_printf(b, "[%d]\n```python\n%s\n```\n%s\n", c->n, c->code, res);
		free(res);
		c->told_model = 1;
	}
	return next != 0 ? next : notebook_ncells(nb) + 1;
}
