/* kernel_jupyter_cell: the running cell's messages, outcome and result
 * (see kernel_jupyter_cell.h). */
#include "terp/kernel_jupyter_cell.h"

#include <stdlib.h>
#include <string.h>

#include "terp/json_text.h"
#include "terp/kernel_frame.h"
#include "terp/kernel_jupyter_msg.h"
#include "terp/outdisp.h"
#include "terp/util.h"

void
jcell_clear(struct jcell *c)
{
	free(c->reply_status);
	free(c->value);
	free(c->ename);
	free(c->evalue);
	free(c->traceback);
	free(c->fp);
	free(c->code);
	memset(c, 0, sizeof *c);
}

void
jcell_reply(struct jcell *c, const cJSON *content, const char *fp_name, size_t fp_max)
{
	const char *st = json_str(content, "status"), *fp;

	c->got_reply = 1;
	free(c->reply_status);
	c->reply_status = kframe_text_cap(st ? st : "error");
	fp = jmsg_user_expr_text(content, fp_name);
	free(c->fp);
	c->fp = fp != NULL && strlen(fp) <= fp_max ? xstrdup(fp) : NULL;
}

/* display(df), Markdown, a display_id and its updates: a marked region
 * of stdout (outdisp.h), as the local driver writes them, so that the
 * notebook shows them alike (in place, rendered, updated). */
static void
on_display(const char *type, const cJSON *content, const cJSON *data,
    const char *txt, const struct jcell_cbs *cb, void *arg)
{
	const char *md = json_str(data, "text/markdown");
	const char *id = json_str(json_obj(content, "transient"), "display_id");
	int update = strcmp(type, "update_display_data") == 0;
	const char *text = md ? md : txt;
	size_t n;
	char *r;

	if (md == NULL && id == NULL && !update) {
		cb->output(arg, 0, txt, strlen(txt));
		cb->output(arg, 0, "\n", 1);
		return;
	}
	r = outdisp_region(text, strlen(text), md != NULL, id, update, &n);
	cb->output(arg, 0, r, n);
	free(r);
}

void
jcell_message(struct jcell *c, const char *type, const cJSON *content,
    const struct jcell_cbs *cb, void *arg)
{
	if (strcmp(type, "stream") == 0) {
		const char *name = json_str(content, "name"), *text = json_str(content, "text");
		if (name != NULL && text != NULL)
			cb->output(arg, strcmp(name, "stderr") == 0 ? 1 : 0, text, strlen(text));
	} else if (strcmp(type, "execute_result") == 0 || strcmp(type, "display_data") == 0 ||
	    strcmp(type, "update_display_data") == 0) {
		const cJSON *data = json_obj(content, "data");
		const char *png = data ? json_str(data, "image/png") : NULL;
		const char *txt = data ? json_str(data, "text/plain") : NULL;
		if (png != NULL) {
			c->figs++;
			cb->image(arg, png);
		} else if (strcmp(type, "execute_result") == 0 && txt != NULL) {
			free(c->value);
			c->value = kframe_text_cap(txt);
		} else if (txt != NULL || json_str(data, "text/markdown") != NULL) {
			on_display(type, content, data, txt, cb, arg);
		}
	} else if (strcmp(type, "clear_output") == 0) {
		/* read as the local driver's clear_output() (outdisp.h) */
		static const char clear[] = "\n" OUTDISP_MARK "clear\a\n";
		cb->output(arg, 0, clear, sizeof clear - 1);
		cb->output(arg, 1, clear, sizeof clear - 1);
	} else if (strcmp(type, "error") == 0) {
		const char *en = json_str(content, "ename"), *ev = json_str(content, "evalue");
		free(c->ename);
		free(c->evalue);
		free(c->traceback);
		c->ename = kframe_text_cap(en ? en : "Error");
		c->evalue = kframe_text_cap(ev ? ev : "");
		c->traceback = jmsg_traceback(content);
	}
}

enum cell_status
jcell_outcome(struct jcell *c, int64_t timeout_ms, char **reason)
{
	enum cell_status st = CELL_OK;

	*reason = NULL;
	if (c->ename != NULL || (c->reply_status && strcmp(c->reply_status, "ok") != 0))
		st = CELL_ERROR;
	if (c->stop == JCELL_STOP_USER && st == CELL_ERROR) {
		st = CELL_INTERRUPTED;
		*reason = xstrdup("interrupted; the session kept its state");
	} else if (c->stop == JCELL_STOP_TIMEOUT && st == CELL_ERROR) {
		st = CELL_TIMEOUT;
		*reason = xasprintf("the cell ran past its time limit of %lld s and was interrupted; the session kept its state",
		    (long long)(timeout_ms / 1000));
	} else if (c->lost_reply) {
		st = CELL_INTERRUPTED;
		*reason = xstrdup("the connection to the Jupyter server dropped during the cell and its result was lost; the session kept its state");
	}
	if (st == CELL_ERROR && c->ename == NULL) {
		c->ename = xstrdup(c->reply_status && strcmp(c->reply_status, "aborted") == 0 ?
		    "Aborted" : "Error");
		c->evalue = xstrdup("the kernel reported an error without details");
	}
	return st;
}

void
jcell_result(const struct jcell *c, enum cell_status st, const char *reason, int lost,
    int64_t now, struct kernel_result *r)
{
	int64_t us = now - c->start_us;

	memset(r, 0, sizeof *r);
	r->status = st;
	r->duration_us = us;
	r->duration_ms = us / 1000;
	r->value = c->value;
	r->ename = c->ename;
	r->evalue = c->evalue;
	r->traceback = c->traceback;
	r->reason = reason;
	r->state_lost = lost;
}
