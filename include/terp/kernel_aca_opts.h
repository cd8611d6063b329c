/* kernel_aca_opts: what the session pool backend is told (struct
 * aca_opts, filled by kernel_aca_ops.c from kernel_opts, or by a test),
 * its defaults, and the checks that need no network: the endpoint's
 * form, the api-version and the response shape it means, a token
 * source, a saved identifier's form. */
#ifndef TERP_KERNEL_ACA_OPTS_H
#define TERP_KERNEL_ACA_OPTS_H

#include <stdint.h>

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

/* The two response shapes of the pool's API versions. */
enum aca_shape { ACA_SHAPE_PROPERTIES, ACA_SHAPE_EXECUTIONS };

/* The shape api-version v speaks into *s. Returns 0, or -1 when terp
 * does not speak v. */
int aca_api_shape(const char *v, enum aca_shape *s);
/* Whether s is a session identifier the pool takes (4 to 128 of
 * letters, digits and |-&^%$#(){}[];<>). */
int aca_identifier_ok(const char *s);

#endif
