/* kernel_jupyter_put: a data file up to the Jupyter server (see
 * kernel_jupyter_put.h). */
#include "terp/kernel_jupyter_put.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "terp/digest.h"
#include "terp/util.h"

#define UPLOAD_CHUNK	(4u << 20)	/* raw bytes per contents PUT */

void
jput_init(struct jput *j)
{
	memset(j, 0, sizeof *j);
	j->up_fd = -1;
}

void
jput_stop(struct jput *j)
{
	if (j->up_fd >= 0)
		close(j->up_fd);
	j->up_fd = -1;
	j->active = 0;
	free(j->session);
	free(j->host_path);
	free(j->name);
	j->session = j->host_path = j->name = NULL;
}

static void upload_chunk(struct jput *j);

/* Ends the upload: done is told (problem, or NULL when it went up). */
static void
upload_end(struct jput *j, char *problem)
{
	jput_stop(j);
	j->done(j->arg, problem);
}

static void
on_upload(void *arg, struct jreq *q, const struct http_result *r)
{
	struct jput *j = arg;
	char *p;

	if (q->i != j->rest->gen || !j->active)
		return;
	if ((p = jrest_problem(j->rest, r, "the upload")) != NULL) {
		upload_end(j, p);
		return;
	}
	if (j->up_chunk == -1 || j->up_chunk == 0) {
		upload_end(j, NULL);
		return;
	}
	j->up_chunk++;
	upload_chunk(j);
}

static void
upload_chunk(struct jput *j)
{
	size_t want = j->up_size - j->up_off > UPLOAD_CHUNK ? UPLOAD_CHUNK :
	    (size_t)(j->up_size - j->up_off);
	char *raw = xmalloc(want ? want : 1), *b64, *rel, *path, *body;
	ssize_t got = 0;
	cJSON *m;
	struct jreq *q;

	while ((size_t)got < want) {
		ssize_t r = pread(j->up_fd, raw + got, want - (size_t)got, (off_t)(j->up_off + (uint64_t)got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			free(raw);
			upload_end(j, xasprintf("cannot read %s: %s", j->host_path,
			    r < 0 ? strerror(errno) : "it shrank"));
			return;
		}
		got += r;
	}
	j->up_off += want;
	if (j->up_chunk > 0 && j->up_off >= j->up_size)
		j->up_chunk = -1;	/* the last chunk */
	b64 = base64_encode(raw, want, NULL);
	free(raw);
	m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "type", "file");
	cJSON_AddStringToObject(m, "format", "base64");
	cJSON_AddStringToObject(m, "content", b64);
	free(b64);
	if (j->up_chunk != 0)
		cJSON_AddNumberToObject(m, "chunk", j->up_chunk);
	body = cJSON_PrintUnformatted(m);
	cJSON_Delete(m);
	rel = xasprintf("%s/data/%s", j->session, j->name);
	path = jrest_path("/api/contents/", rel, NULL);
	free(rel);
	q = jrest_call_for(j->rest, j, "PUT", path, body, JPUT_ANSWER_MAX, on_upload);
	free(path);
	free(body);
	if (q != NULL)
		q->i = j->rest->gen;
}

void
jput_start(struct jput *j, struct jrest *rest, const char *session, const char *host_path,
    const char *name, jput_done_fn done, void *arg)
{
	struct stat st;

	jput_stop(j);
	j->rest = rest;
	j->session = xstrdup(session);
	j->host_path = xstrdup(host_path);
	j->name = xstrdup(name);
	j->done = done;
	j->arg = arg;
	j->active = 1;
	j->up_fd = open(j->host_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (j->up_fd < 0) {
		upload_end(j, xasprintf("cannot open %s: %s", j->host_path, strerror(errno)));
		return;
	}
	if (fstat(j->up_fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		upload_end(j, xasprintf("%s is not a regular file", j->host_path));
		return;
	}
	j->up_size = (uint64_t)st.st_size;
	j->up_off = 0;
	/* Larger files go up in chunks (the contents API's "chunk": 1, 2,
	 * ..., -1 for the last), so no request holds the whole file. */
	j->up_chunk = j->up_size > UPLOAD_CHUNK ? 1 : 0;
	upload_chunk(j);
}
