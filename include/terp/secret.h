/* secret: a credential read from a command's output (api_key_cmd,
 * --sandbox-token-cmd), so that it never sits in a file. One runner for
 * every caller; each words its own errors, since only it knows which
 * option the user must fix. */
#ifndef TERP_SECRET_H
#define TERP_SECRET_H

#include <stddef.h>

enum secret_status {
	SECRET_OK = 0,
	SECRET_NO_RUN,		/* the shell could not be started (errno) */
	SECRET_FAILED,		/* it exited non-zero or by a signal */
	SECRET_EMPTY,		/* no text (or, with SECRET_ONE_LINE, several lines) */
};

/* Refuse an output of more than one line (an API key); without it the
 * first line is taken (a token command that also prints a notice). */
#define SECRET_ONE_LINE	1

/* Runs `sh -c cmd` with the caller's stdin and stderr, reads up to max
 * bytes of its stdout (the rest is drained, so that the command is not
 * killed by SIGPIPE) and stores in *out the text without trailing
 * whitespace, as a string the caller frees (and should clear). On
 * SECRET_FAILED *code is the exit status, or -1 for a signal. Whatever
 * was read is cleared before an error returns. */
enum secret_status secret_from_cmd(const char *cmd, size_t max, int flags,
    char **out, int *code);

#endif
