/* kernel_aca: the Python session in an Azure Container Apps dynamic
 * session pool (PROTOCOLS.md §7) instead of the local sandbox, behind
 * the local kernel's API (kernel.h): the same callbacks, cells queued and
 * answered in order, exactly once each, everything driven by the loop.
 *
 * What differs from the local kernel, because the pool's API has no
 * streaming and no interrupt:
 * - a cell's output arrives when it ends (said once per session, as a
 *   terp note on stream 1 of the first cell);
 * - aca_interrupt abandons the wait: the cell ends interrupted and the
 *   remote cell may still run;
 * - the session lives in the pool under a random identifier
 *   (aca_identifier, for the journal only: never shown); the pool
 *   recycles it after its cooldown, which terp detects with a marker
 *   variable it sets and checks before every cell, and reports as lost
 *   state (like the idle stop);
 * - data files are uploaded to /mnt/data; files the code writes there
 *   are listed after each cell and the new or changed ones downloaded as
 *   artifacts (aca_note says so to the model).
 *
 * The bearer token comes from a command (cached until shortly before it
 * expires) or an environment variable. It is sent in the Authorization
 * header and nowhere else: no callback, message or file ever holds it.
 * Everything the pool returns is treated as hostile: bounded sizes,
 * checked JSON, terp-chosen file names, caps per cell and per session. */
#ifndef TERP_KERNEL_ACA_H
#define TERP_KERNEL_ACA_H

#include <stdint.h>

#include "terp/kernel_types.h"
#include "terp/loop.h"

/* The api-version used when none is configured: the one of the pool's
 * how-to documentation (the "properties" response shape). The
 * "executions" shape of 2024-10-02-preview and later is spoken too. */
#define ACA_API_DEFAULT		"2024-02-02-preview"
#define ACA_DATA_DIR		"/mnt/data"

struct aca_opts {
	/* The pool management endpoint, https://.../sessionPools/NAME
	 * (http only to a loopback address). */
	const char	*endpoint;
	const char	*api_version;	/* NULL: ACA_API_DEFAULT */
	/* The token: the output of token_cmd (run with /bin/sh -c; a bare
	 * token or the JSON of `az account get-access-token`), else the
	 * value of the environment variable token_env. */
	const char	*token_cmd;
	const char	*token_env;
	/* The token audience the pool wants, only quoted in the fix of an
	 * authentication error (NULL: the message names none). */
	const char	*audience;
	int64_t		 token_lifetime_ms;	/* a token with no expiry in it (10 min) */
	int64_t		 token_timeout_ms;	/* token_cmd's time limit (60 s) */
	/* The session to reach: the identifier the journal kept, or NULL
	 * for a new random one. */
	const char	*identifier;
	const char	*out_dir;	/* host folder artifacts are written to */
	const char	**data_files;	/* uploaded at start */
	int		 ndata;
	int64_t		 timeout_ms;	/* the pool's execution limit (220 s) */
	int64_t		 grace_ms;	/* waited past it for the answer (30 s) */
	int64_t		 connect_timeout_ms;	/* 0: libcurl's default */
	uint64_t	 upload_max;	/* the pool's upload limit (128 MiB) */
	uint64_t	 response_max;	/* largest answer read (32 MiB) */
	uint64_t	 artifact_max;	/* largest file downloaded (64 MiB) */
	int		 artifacts_per_cell;	/* 64 */
	int		 artifacts_per_session;	/* 1000 files */
	uint64_t	 artifact_bytes;	/* 1 GiB per session */
	int		 max_retries;	/* tries after a 429 (4) */
	int64_t		 retry_max_ms;	/* longest wait before a retry (60 s) */
	/* Unix time in seconds for token expiry; NULL: time(). For tests. */
	int64_t		(*wallclock)(void);
};

/* Fills o with the defaults above (the strings NULL). */
void aca_opts_default(struct aca_opts *o);

/* Checks the options that need no network: the endpoint's form, the
 * api-version, a token source, the identifier's form. Returns 0, or -1
 * with a one-line *err (caller frees). aca_start checks them too. */
int aca_check_opts(const struct aca_opts *o, char **err);

struct aca;

/* A session bound to loop l; opts' strings and cbs must outlive it.
 * Does not connect. The identifier is chosen here (opts->identifier or
 * a random UUID). */
struct aca *aca_new(struct loop *l, const struct aca_opts *opts,
    const struct kernel_cbs *cbs, void *arg);
/* Cancels every transfer, kills a running token command and frees. No
 * callback fires; not to be called from one. The remote session stays
 * in the pool until its cooldown. */
void aca_free(struct aca *a);

/* Connects: gets a token, checks the session (the marker), uploads the
 * data files. Reports KERNEL_STARTING, then KERNEL_READY, or KERNEL_DEAD
 * with one line saying what failed and how to fix it. Returns -1 with
 * *err only for what needs no network (bad options, the output folder). */
int aca_start(struct aca *a, char **err);
/* Stops talking to the pool (the remote session is kept until its
 * cooldown): the running cell ends interrupted (the remote cell may
 * still run), queued cells end unrun, KERNEL_STOPPED is reported with
 * reason (copied). The next aca_run reconnects to the same identifier
 * and reports whether the session kept its state. */
void aca_stop(struct aca *a, const char *reason);
/* Queues code as cell n; the result callback fires exactly once for it.
 * Reconnects when stopped or dead. Returns 0, or -1 with *err. */
int aca_run(struct aca *a, int n, const char *code, char **err);
/* Abandons the wait for the running cell: it ends CELL_INTERRUPTED, the
 * reason says the remote cell may still run. Queued cells go on. While
 * connecting with cells waiting, gives up the connect instead: they end
 * interrupted and KERNEL_STOPPED is reported (the next cell connects). */
void aca_interrupt(struct aca *a);
/* A fresh session: a new identifier (read aca_identifier again), the
 * running cell ends interrupted and queued ones unrun, the state is
 * lost and reported so. The old remote session lingers until its
 * cooldown. Returns 0, or -1 with *err. */
int aca_restart(struct aca *a, char **err);
/* Uploads another data file (queued behind the cells queued so far).
 * Checks it first (a regular file within upload_max) and returns the
 * path the code sees, /mnt/data/NAME (new string), or NULL with a
 * one-line *err. A failed upload is told in the next cell's stderr. */
char *aca_stage(struct aca *a, const char *host_path, char **err);

enum kernel_state aca_state(const struct aca *a);
/* 1 while a cell runs or waits in the queue. */
int aca_busy(const struct aca *a);
/* The session identifier, owned by a. For the journal only (so that
 * --resume reaches the same session): never print it. It changes on
 * aca_restart. */
const char *aca_identifier(const struct aca *a);
/* What the model must know about paths here (a static string). */
const char *aca_note(void);

/* ------------------------------------------------------------ pure parts
 * Exposed for the unit tests; they parse what the pool and the token
 * command send, so every input is hostile. */

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
