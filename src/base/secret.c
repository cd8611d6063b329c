/* secret: a credential from a command's output (secret.h). */
#include "terp/secret.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "terp/util.h"

static void
drop(char *buf, size_t n)
{
	explicit_bzero(buf, n);
	free(buf);
}

enum secret_status
secret_from_cmd(const char *cmd, size_t max, int flags, char **out, int *code)
{
	FILE *f = popen(cmd, "r");
	char *buf;
	size_t n;
	int st;

	*out = NULL;
	*code = 0;
	if (f == NULL)
		return SECRET_NO_RUN;
	buf = xmalloc(max + 1);
	n = fread(buf, 1, max, f);
	while (fgetc(f) != EOF)
		;
	st = pclose(f);
	buf[n] = '\0';
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		*code = st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		drop(buf, max + 1);
		return SECRET_FAILED;
	}
	if (!(flags & SECRET_ONE_LINE))
		buf[strcspn(buf, "\r\n")] = '\0';
	n = strlen(buf);
	while (n > 0 && strchr("\r\n \t", buf[n - 1]) != NULL)
		buf[--n] = '\0';
	if (n == 0 || strpbrk(buf, "\r\n") != NULL) {
		drop(buf, max + 1);
		return SECRET_EMPTY;
	}
	*out = buf;
	return SECRET_OK;
}
