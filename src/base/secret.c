/* secret: a credential from a command's output (secret.h). */
#include "terp/secret.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "terp/proc.h"

enum secret_status
secret_from_cmd(const char *cmd, size_t max, int flags, char **out, int *code)
{
	char *argv[] = { "/bin/sh", "-c", (char *)cmd, NULL };
	/* the caller's stdin and stderr: the command may ask the user */
	struct proc_opts o = { .name = "sh", .stdin_fd = 0, .out_max = max,
	    .err = PROC_ERR_INHERIT };
	struct proc_result r;
	char *buf, *e;
	size_t n;
	int st;

	*out = NULL;
	*code = 0;
	if (proc_run(argv, &o, &r, &e) < 0) {
		int saved = errno;
		free(e);
		proc_result_free(&r);
		errno = saved;
		return SECRET_NO_RUN;
	}
	st = r.status;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		*code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		proc_result_free(&r);
		return SECRET_FAILED;
	}
	buf = r.out;
	if (!(flags & SECRET_ONE_LINE))
		buf[strcspn(buf, "\r\n")] = '\0';
	n = strlen(buf);
	while (n > 0 && strchr("\r\n \t", buf[n - 1]) != NULL)
		buf[--n] = '\0';
	if (n == 0 || strpbrk(buf, "\r\n") != NULL) {
		proc_result_free(&r);
		return SECRET_EMPTY;
	}
	/* what followed the first line is no one's to see */
	explicit_bzero(buf + n, r.out_len - n);
	*out = buf;
	return SECRET_OK;
}
