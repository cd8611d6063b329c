/* kernel_aca_parse: the pure parts of the session pool backend: what
 * the pool and the token command send, read without the network, so
 * every input is hostile (bounded, checked, never quoted raw). Used by
 * kernel_aca.c and kernel_aca_token.c; exposed for the unit tests. */
#ifndef TERP_KERNEL_ACA_PARSE_H
#define TERP_KERNEL_ACA_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* The claims of a JWT, read without verifying it: "exp" into *exp (unix
 * seconds; 0 when absent) and the first "aud" into aud (cut to audlen,
 * "" when absent). Returns 0, or -1 when token is no JWT. */
int aca_jwt_claims(const char *token, int64_t *exp, char *aud, size_t audlen);

/* The token in a token command's output: one line of token characters
 * (a bare token), or the JSON of az account get-access-token
 * (accessToken, expires_on). Returns the token (new string) with the
 * expiry in *exp (0 when not given), or NULL with a static reason that
 * never quotes the output. */
char *aca_token_parse(const char *out, size_t len, int64_t *exp, const char **why);

/* A command's stderr line made safe to show: the first non-empty line,
 * control characters escaped, anything token-like ("eyJ..." runs, and
 * secret if given) replaced by [redacted], at most 200 bytes. New
 * string. */
char *aca_redact_line(const char *err, size_t len, const char *secret);

/* One code execution's answer, in either response shape. Strings point
 * into json (freed by aca_exec_free). */
struct aca_exec {
	int		 ok;		/* status Success/Succeeded */
	int		 timed_out;	/* the pool says the time limit hit */
	const char	*out, *err;	/* stdout, stderr ("" when absent) */
	char		*value;		/* the result's text, or NULL */
	const char	*image;		/* an image result: base64, or NULL */
	const char	*image_fmt;	/* "png", "jpeg"... (NULL: png) */
	const char	*code, *message;	/* the error object's */
	int64_t		 ms;		/* executionTimeInMilliseconds, -1 */
	void		*json;
};

/* Parses an execution's answer. Returns 0, or -1 with a static reason
 * (not JSON, not an object, no status, an asynchronous answer). */
int aca_exec_parse(const char *body, size_t len, struct aca_exec *e, const char **why);
void aca_exec_free(struct aca_exec *e);

/* One file of a /mnt/data listing. */
struct aca_file {
	char		*name;
	uint64_t	 size;
	char		*mtime;		/* as the pool wrote it, at most 64 bytes */
};

/* Parses a files listing in either shape, keeping at most max regular
 * files with a usable name (one path component, no control characters,
 * at most 255 bytes) and a size. *skipped counts the entries dropped.
 * Returns the count (files in *out, free with aca_files_free), or -1
 * with a static reason. */
int aca_files_parse(const char *body, size_t len, int max, struct aca_file **out,
    int *skipped, const char **why);
void aca_files_free(struct aca_file *f, int n);

#endif
