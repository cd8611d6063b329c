/* pipindex: the package index the user configured for pip on the host
 * (PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, the pip.conf files), so that terp
 * can offer it: the sandbox reaches only hosts the user allowed, so
 * terp names the exact --allow-host that lets pip inside use that
 * index, and passes the URL in once its host is allowed. Reads files;
 * runs nothing, allows nothing. */
#ifndef TERP_PIPINDEX_H
#define TERP_PIPINDEX_H

#include <stddef.h>

#define PIPINDEX_MAX	8	/* URLs kept: the index and extra ones */

struct pipindex_url {
	char	*url;
	char	*from;		/* "PIP_INDEX_URL", "/etc/pip.conf"... */
	int	 extra;		/* an extra-index-url */
};

struct pipindex {
	struct pipindex_url	 u[PIPINDEX_MAX];
	size_t			 n;
};

/* Finds the configured index URLs as pip would: the files in pip's
 * order (/etc/xdg/pip/pip.conf, /etc/pip.conf, ~/.pip/pip.conf,
 * $XDG_CONFIG_HOME/pip/pip.conf, <venv>/pip.conf, or $PIP_CONFIG_FILE
 * alone), a later file over an earlier one, [install] over [global],
 * then the environment over the files. envp NULL: environ; venv: the
 * prefix of the virtualenv in use, or NULL. The caller frees out with
 * pipindex_free. */
void pipindex_find(const char *const *envp, const char *venv, struct pipindex *out);
void pipindex_free(struct pipindex *p);

/* The value of key in a pip.conf text ([install] over [global]; keys
 * compared with '-' and '_' alike; continuation lines joined with
 * spaces), a new string, or NULL. Pure. */
char *pipindex_conf_value(const char *text, size_t len, const char *key);

/* The host and port a URL reaches (http: 80, https: 443 unless given;
 * IPv6 without brackets), and whether it holds credentials (user:pass@,
 * or a token in its path or query: a long segment mixing letters and
 * digits, a token=/key=... parameter), which never enter the sandbox. Returns 0, or -1 for a URL that is
 * not http(s)://HOST... Pure. */
int pipindex_url_host(const char *url, char *host, size_t hostlen, unsigned *port,
    int *has_cred);

/* Whether s can be a package name or version as the session reports
 * them: 1 to 100 of letters, digits and ".-_+!". */
int pipindex_word_ok(const char *s);

/* The Python of a cell that installs again what a session installed
 * (--resume --replay): specs are "name==version" (NULL-terminated; ones
 * with other characters than pipindex_word_ok's are left out). Packages
 * already there at that version are not fetched; the others go through
 * `pip install --no-deps`, from the index the sandbox's pip is given
 * (the user's, when its host is allowed), and a failure raises, which
 * stops the replay. A new string, or NULL when nothing is left. */
char *pipindex_reinstall_code(const char *const *specs);

#endif
