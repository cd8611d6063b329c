/* agentfiles: the files of an agent's session as the notebook records
 * them (agentfiles.h). */
#include "agentfiles.h"

#include <stdlib.h>
#include <string.h>

#include "terp/datafile.h"
#include "terp/util.h"

/* Whether path is dir/name, dir resolved (the file itself may be gone). */
static int
in_folder(const char *path, const char *name, const char *dir)
{
	char *copy = xstrdup(path), *slash = strrchr(copy, '/'), *parent;
	int yes = 0;

	if (slash != NULL && strcmp(slash + 1, name) == 0) {
		*slash = '\0';
		parent = realpath(copy[0] != '\0' ? copy : "/", NULL);
		yes = parent != NULL && strcmp(parent, dir) == 0;
		free(parent);
	}
	free(copy);
	return yes;
}

/* Adds name (or updates its size: the last copy counts) to own[0..m). */
static int
own_add(struct kernel_own_file *own, int m, const char *name, uint64_t bytes)
{
	int j;

	for (j = 0; j < m && strcmp(own[j].name, name) != 0; j++)
		;
	if (j == m)
		own[m++].name = name;
	own[j].bytes = bytes;
	return m;
}

/* The files a resumed session's earlier runs copied into this output
 * folder, the last size of each (its journal's artifacts): they are the
 * session's own, so a re-run cell replaces them (no c-2.txt). */
struct kernel_own_file *
agentfiles_own(const struct notebook *nb, const char *out_dir, int *nown)
{
	int n = notebook_nartifacts(nb), m = 0;
	struct kernel_own_file *own;
	char *dir;

	/* The journal's paths are absolute (from the folder terp ran in),
	 * out_dir may be relative: both are compared resolved. */
	*nown = 0;
	if (n == 0 || out_dir == NULL || (dir = realpath(out_dir, NULL)) == NULL)
		return NULL;
	own = xcalloc((size_t)n, sizeof *own);
	for (int i = 0; i < n; i++) {
		const struct artifact *art = notebook_artifact(nb, i);
		if (art->path != NULL && art->name != NULL &&
		    in_folder(art->path, art->name, dir))
			m = own_add(own, m, art->name, art->bytes);
	}
	free(dir);
	*nown = m;
	return own;
}

/* The notebook's record of the file at path, or NULL. */
static const struct datafile *
known_file(const struct notebook *nb, const char *path)
{
	char *abs = realpath(path, NULL);
	const struct datafile *f = NULL;

	for (int i = 0; abs != NULL && i < notebook_nfiles(nb) && !f; i++)
		if (strcmp(notebook_file(nb, i)->path, abs) == 0)
			f = notebook_file(nb, i);
	free(abs);
	return f;
}

void
agentfiles_record(struct notebook *nb, const char *path,
    const char *sandbox_path, int told)
{
	const struct datafile *known = known_file(nb, path);
	struct datafile f;
	char *e = NULL;

	if (known != NULL && !told) {
		/* staged again in a new sandbox: what it was at the start
		 * stays the reference a resume compares with */
		datafile_copy(&f, known);
		free(f.sandbox);
	} else if (datafile_fingerprint(path, &f, &e) < 0) {
		/* recorded all the same: a resume will say it is gone */
		free(e);
		memset(&f, 0, sizeof f);
		f.path = realpath(path, NULL);
		if (f.path == NULL)
			f.path = xstrdup(path);
	}
	f.sandbox = xstrdup(sandbox_path);
	notebook_add_file(nb, &f);
	datafile_free(&f);
}
