/* export_paths: the sandbox's paths rewritten to where an exported
 * .ipynb finds the same files, and lexical path helpers. Private to the
 * export module (export.c); export_relpath, its public face, is declared
 * in terp/export.h and defined in export_paths.c.
 *
 * The cells ran in terp's sandbox, where the data files are under
 * /workspace/data and the working directory is /workspace, whose out/
 * terp copies into the user's output folder. None of that exists where
 * the .ipynb is opened, so an export that keeps those paths stops at its
 * first cell. The export rewrites them, in the code only, to where the
 * notebook finds the same files: a data file is named where it is on
 * this machine (relative to the notebook when it is at or below its
 * folder, so that the two move together; absolute otherwise), and
 * /workspace is the notebook's folder, whose out/ a first cell creates.
 * Rewriting beats copying or linking the data next to the notebook: an
 * export writes one file, and data files can be large. Each rewritten
 * cell keeps the code as it ran in its metadata (terp.sandbox_source),
 * and the first cell lists what was rewritten. */

#ifndef TERP_EXPORT_PATHS_H
#define TERP_EXPORT_PATHS_H

#include "terp/notebook.h"

struct export_pathmap {
	char	*from;		/* a sandbox path */
	char	*to;		/* where the notebook finds it */
	int	 folder;	/* from may go on with "/..." */
	int	 used;		/* a cell's code had it */
};

/* Owns its maps; export_paths_free releases them. */
struct export_paths {
	struct export_pathmap	*v;
	int			 n;
	int			 out_rel;	/* a cell writes to a relative out/ */
};

/* The maps for nb's data files, /workspace/out and /workspace, as a
 * notebook in the folder dir (absolute) names them. */
void export_paths_init(struct export_paths *p, const struct notebook *nb,
    const char *dir);
void export_paths_free(struct export_paths *p);
/* code with the sandbox's paths rewritten (a new string), or NULL when
 * it has none; marks the maps used. */
char *export_paths_rewrite(struct export_paths *p, const char *code);
/* The first cell's code: what was rewritten, and the out/ folder the
 * cells save to (a new string). NULL when no cell needs it. */
char *export_paths_setup(const struct export_paths *p);
/* p as an absolute path with "." and ".." resolved lexically, against
 * the working directory when relative: a new string. */
char *export_paths_absolute(const char *p);

#endif
