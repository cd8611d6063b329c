/* libFuzzer target for the journal loader against damage (issue 21):
 * a real journal (a question answered through three tool calls, as
 * `terp -p` wrote it against the fake model) is damaged as the input
 * says (byte flips, cut lines, lost lines, a line merged with the next,
 * as a full disk or a bad sector leave them), then loaded. Whatever the
 * damage: no crash or leak, the load succeeds while the meta line is
 * intact, the conversation is one the providers accept (every tool
 * result right after the reply that made its call, every call answered),
 * and a cell whose own line is intact comes back with its code. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "terp/journal.h"
#include "terp/notebook.h"
#include "terp/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char journal[] =
	"{\"t\":\"meta\",\"v\":2,\"id\":\"20261201-202122-ee09\",\"started\":1796156482,\"provider\":\"openai\",\"model\":\"fake\",\"ts\":1796156482488}\n"
	"{\"t\":\"session\",\"id\":\"20261201-202122-ee09\",\"workspace\":\"/state/terp/sessions/20261201-202122-ee09\",\"ts\":1796156482497}\n"
	"{\"t\":\"kernel\",\"state\":\"starting\",\"msg\":\"starting the sandbox\",\"ts\":1796156482551}\n"
	"{\"t\":\"question\",\"text\":\"q?\",\"ts\":1796156482551}\n"
	"{\"t\":\"kernel\",\"state\":\"loading\",\"msg\":\"loading pandas, numpy, matplotlib\",\"ts\":1796156482891}\n"
	"{\"t\":\"turn\",\"n\":1,\"ts\":1796156482891}\n"
	"{\"t\":\"usage\",\"in\":10,\"out\":5,\"cached\":0,\"ts\":1796156482908}\n"
	"{\"t\":\"reply\",\"calls\":[{\"id\":\"call_1\",\"name\":\"python_exec\",\"arguments\":\"{\\\"code\\\": \\\"print('a')\\\"}\"}],\"ts\":1796156482908}\n"
	"{\"t\":\"cell\",\"n\":1,\"by\":\"model\",\"call\":\"call_1\",\"code\":\"print('a')\",\"ts\":1796156482908}\n"
	"{\"t\":\"kernel\",\"state\":\"busy\",\"msg\":\"running\",\"ts\":1796156482911}\n"
	"{\"t\":\"out\",\"c\":1,\"s\":0,\"d\":\"a\\n\",\"ts\":1796156482912}\n"
	"{\"t\":\"kernel\",\"state\":\"loading\",\"msg\":\"loading libraries\",\"ts\":1796156482913}\n"
	"{\"t\":\"result\",\"c\":1,\"status\":\"ok\",\"ms\":1,\"ts\":1796156482913}\n"
	"{\"t\":\"tool\",\"id\":\"call_1\",\"content\":\"status: ok (0.00 s)\\nstdout:\\na\\n\",\"ts\":1796156482913}\n"
	"{\"t\":\"turn\",\"n\":2,\"ts\":1796156482913}\n"
	"{\"t\":\"usage\",\"in\":10,\"out\":5,\"cached\":0,\"ts\":1796156482963}\n"
	"{\"t\":\"reply\",\"calls\":[{\"id\":\"call_2\",\"name\":\"python_exec\",\"arguments\":\"{\\\"code\\\": \\\"print('b')\\\"}\"}],\"ts\":1796156482963}\n"
	"{\"t\":\"cell\",\"n\":2,\"by\":\"model\",\"call\":\"call_2\",\"code\":\"print('b')\",\"ts\":1796156482963}\n"
	"{\"t\":\"kernel\",\"state\":\"busy\",\"msg\":\"running\",\"ts\":1796156482963}\n"
	"{\"t\":\"out\",\"c\":2,\"s\":0,\"d\":\"b\\n\",\"ts\":1796156483004}\n"
	"{\"t\":\"kernel\",\"state\":\"loading\",\"msg\":\"loading libraries\",\"ts\":1796156483004}\n"
	"{\"t\":\"result\",\"c\":2,\"status\":\"ok\",\"ms\":40,\"ts\":1796156483004}\n"
	"{\"t\":\"tool\",\"id\":\"call_2\",\"content\":\"status: ok (0.04 s)\\nstdout:\\nb\\n\",\"ts\":1796156483004}\n"
	"{\"t\":\"turn\",\"n\":3,\"ts\":1796156483004}\n"
	"{\"t\":\"usage\",\"in\":10,\"out\":5,\"cached\":0,\"ts\":1796156483016}\n"
	"{\"t\":\"reply\",\"calls\":[{\"id\":\"call_3\",\"name\":\"python_exec\",\"arguments\":\"{\\\"code\\\": \\\"print('c')\\\"}\"}],\"ts\":1796156483016}\n"
	"{\"t\":\"cell\",\"n\":3,\"by\":\"model\",\"call\":\"call_3\",\"code\":\"print('c')\",\"ts\":1796156483016}\n"
	"{\"t\":\"kernel\",\"state\":\"busy\",\"msg\":\"running\",\"ts\":1796156483017}\n"
	"{\"t\":\"out\",\"c\":3,\"s\":0,\"d\":\"c\\n\",\"ts\":1796156483018}\n"
	"{\"t\":\"kernel\",\"state\":\"loading\",\"msg\":\"loading libraries\",\"ts\":1796156483018}\n"
	"{\"t\":\"result\",\"c\":3,\"status\":\"ok\",\"ms\":1,\"ts\":1796156483018}\n"
	"{\"t\":\"tool\",\"id\":\"call_3\",\"content\":\"status: ok (0.00 s)\\nstdout:\\nc\\n\",\"ts\":1796156483018}\n"
	"{\"t\":\"turn\",\"n\":4,\"ts\":1796156483018}\n"
	"{\"t\":\"usage\",\"in\":10,\"out\":5,\"cached\":0,\"ts\":1796156483063}\n"
	"{\"t\":\"reply\",\"text\":\"done\",\"ts\":1796156483063}\n"
	;

#define MAXLINES	64

/* The conversation's shape, as the OpenAI API checks it. */
static void
check_conversation(const struct notebook *nb)
{
	const cJSON *msgs = notebook_messages(nb), *m, *c, *calls = NULL;
	int answered[64], ncalls = 0;

	cJSON_ArrayForEach(m, msgs) {
		const char *role = cJSON_GetStringValue(cJSON_GetObjectItem(m, "role"));
		if (role != NULL && strcmp(role, "tool") == 0) {
			const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(m,
			    "tool_call_id"));
			int i = 0, hit = -1;
			if (calls == NULL || id == NULL)
				abort();	/* a result without its call */
			cJSON_ArrayForEach(c, calls) {
				const char *cid = cJSON_GetStringValue(cJSON_GetObjectItem(c, "id"));
				if (i < 64 && cid != NULL && strcmp(cid, id) == 0 && !answered[i])
					hit = i;
				i++;
			}
			if (hit < 0)
				abort();	/* not a call of that reply, or answered twice */
			answered[hit] = 1;
			continue;
		}
		for (int i = 0; i < ncalls && i < 64; i++)
			if (!answered[i] && cJSON_GetStringValue(cJSON_GetObjectItem(
			    cJSON_GetArrayItem(calls, i), "id")) != NULL)
				abort();	/* a call left without a result */
		calls = cJSON_GetObjectItem(m, "tool_calls");
		if (!cJSON_IsArray(calls) || cJSON_GetArraySize(calls) == 0)
			calls = NULL;
		ncalls = calls ? cJSON_GetArraySize(calls) : 0;
		memset(answered, 0, sizeof answered);
	}
	for (int i = 0; i < ncalls && i < 64; i++)
		if (!answered[i] && cJSON_GetStringValue(cJSON_GetObjectItem(
		    cJSON_GetArrayItem(calls, i), "id")) != NULL)
			abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *lines[MAXLINES], *text = xstrdup(journal), *p, *s;
	int touched[MAXLINES] = { 0 }, nlines = 0, meta_ok, renumbered = 0;
	struct notebook *nb;
	struct journal_meta meta = { 0 };
	char path[64], *err = NULL;
	FILE *f;

	for (s = text; (p = strchr(s, '\n')) != NULL && nlines < MAXLINES; s = p + 1) {
		*p = '\0';
		lines[nlines++] = s;
	}
	/* each 3 input bytes: what (flip, cut, drop, merge), which line, where */
	for (size_t i = 0; i + 3 <= size && i < 48; i += 3) {
		int k = data[i + 1] % nlines, op = data[i] % 4;
		size_t n = strlen(lines[k]);
		touched[k] = 1;
		if (op == 0 && n > 0) {
			/* a flip may leave valid JSON saying another number:
			 * then which cell is which is not the loader's to know */
			if (strncmp(lines[k], "{\"t\":\"cell\"", 11) == 0)
				renumbered = 1;
			lines[k][data[i + 2] * 131u % n] ^= (char)(1u << (data[i] >> 2 & 7));
		}
		else if (op == 1)
			lines[k][n ? data[i + 2] % n : 0] = '\0';
		else if (op == 2)
			lines[k][0] = '\0';
		else if (k + 1 < nlines)
			touched[k + 1] = 2;	/* written without its newline */
	}
	/* a real file: the loader opens with O_NOFOLLOW (no /proc/self/fd) */
	snprintf(path, sizeof path, "/tmp/fuzz-journal-damage-%d.jsonl", (int)getpid());
	if ((f = fopen(path, "w")) == NULL)
		abort();
	for (int k = 0; k < nlines; k++)
		fprintf(f, "%s%s", lines[k], k + 1 < nlines && touched[k + 1] == 2 ? "" : "\n");
	if (fclose(f) != 0)
		abort();
	nb = notebook_new();
	meta_ok = !touched[0] && touched[1] != 2;
	if (journal_load(path, nb, &meta, &err) < 0 && meta_ok)
		abort();	/* an intact meta line always loads */
	if (err == NULL) {
		check_conversation(nb);
		/* an intact cell line brings its cell back with its code */
		for (int k = 0; k < nlines && !renumbered; k++) {
			cJSON *o;
			int n;
			if (touched[k] || (k + 1 < nlines && touched[k + 1] == 2) ||
			    strncmp(lines[k], "{\"t\":\"cell\"", 11) != 0)
				continue;
			o = cJSON_Parse(lines[k]);
			n = o ? cJSON_GetObjectItem(o, "n")->valueint : 0;
			if (o == NULL || notebook_cell(nb, n) == NULL ||
			    strcmp(notebook_cell(nb, n)->code,
			    cJSON_GetStringValue(cJSON_GetObjectItem(o, "code"))) != 0)
				abort();
			cJSON_Delete(o);
		}
	}
	journal_meta_free(&meta);
	notebook_free(nb);
	free(err);
	free(text);
	unlink(path);
	return 0;
}
