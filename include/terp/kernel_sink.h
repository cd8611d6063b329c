/* kernel_sink: the one writer of a cell's artifacts into the output
 * folder, below every backend. A backend hands it a name and bytes it
 * got from the sandbox or the remote server (claims from a hostile
 * party, both); the sink checks the name, counts the file against the
 * caps (kframe_admit), picks the host name itself (a free one, or a file
 * terp wrote this session, which is replaced), writes through a hidden
 * temporary file in the folder (O_EXCL|O_NOFOLLOW through one folder fd)
 * and renames it into place. Every artifact not copied is one line for
 * its cell's stderr ("terp: artifact x not copied: why"), at most
 * KERNEL_SINK_REPORTS a cell and then a count. The backends keep only
 * their protocol: the driver's frames (kernel_artifact.c), ssh's lines,
 * Jupyter's contents API, the ACA pool's downloads.
 *
 * One artifact at a time: begin, write..., commit, or abandon. The
 * callbacks run after the sink has forgotten the artifact, so they may
 * call back into it (a teardown abandons nothing twice). */
#ifndef TERP_KERNEL_SINK_H
#define TERP_KERNEL_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "terp/kernel_frame.h"

#define KERNEL_SINK_REPORTS	20	/* "not copied" lines a cell; then a count */
#define KERNEL_SINK_NAME_TRIES	1000	/* chart.png, chart-2.png ... chart-1000.png */

struct kernel_sink;

/* A file copied for cell: name is terp's host file name in the output
 * folder, host_path is out_dir/name (see kernel_cbs.artifact). */
typedef void (*kernel_sink_copied_fn)(void *arg, int cell, const char *name,
    const char *host_path, uint64_t bytes);
/* One line for cell's stderr, '\n' included. */
typedef void (*kernel_sink_note_fn)(void *arg, int cell, const char *line);

/* The line for the cell's stderr, '\n' included, when the file the
 * cell saved as from+shown (shown: its name, safe to print; from: where
 * the code saved it, "out/", or "" for a file terp named) was copied as
 * out_dir/path instead: the cell printed, and the model remembers, its
 * own name, which would point at another file (an older chart.png) or
 * at none. host is the name before terp looked for a free one
 * (kframe_host_name's). NULL when path is shown. A new string; every
 * backend says it in these words. */
char *kernel_sink_rename_note(const char *from, const char *shown,
    const char *out_dir, const char *host, const char *path);

/* A sink that writes into out_dir (borrowed: it must outlive the sink)
 * within caps. Opens nothing yet. */
struct kernel_sink *kernel_sink_new(const char *out_dir, const struct kframe_caps *caps,
    kernel_sink_copied_fn copied, kernel_sink_note_fn note, void *arg);
/* Abandons an artifact in progress (unreported), closes, frees. */
void kernel_sink_free(struct kernel_sink *s);
/* name (relative to out_dir, copied) is this session's, written by an
 * earlier run with this many bytes (from the journal, on --resume): a new
 * artifact of that name replaces it while the file still has that size
 * (else the user changed it, and it is left as it is). */
void kernel_sink_adopt(struct kernel_sink *s, const char *name, uint64_t bytes);

/* Creates the output folder when missing and opens it. Does nothing
 * once open. Returns 0, or -1 with a one-line *err (caller frees). */
int kernel_sink_open(struct kernel_sink *s, char **err);

/* Whether the output folder is open. */
int kernel_sink_is_open(const struct kernel_sink *s);

/* Cell n starts: its per-cell counts start at 0. An artifact of the
 * cell before is abandoned unreported. */
void kernel_sink_cell_start(struct kernel_sink *s, int n);
/* The running cell, 0 when none. */
int kernel_sink_cell(const struct kernel_sink *s);
/* The running cell ended: the artifact in progress is abandoned with
 * why (when set), then the count of reports past the per-cell list is
 * said. No cell runs after it. */
void kernel_sink_cell_end(struct kernel_sink *s, const char *why);

/* "terp: artifact NAME not copied: WHY" on the running cell's stderr
 * (name as the sandbox gave it: made safe to print here). Nothing when
 * no cell runs (a stray, forged frame has no one to tell). */
void kernel_sink_report(struct kernel_sink *s, const char *name, const char *why);
/* The words for a cap refusal under this sink's caps. A new string. */
char *kernel_sink_refusal(const struct kernel_sink *s, enum kframe_refusal r,
    uint64_t size);

/* Starts an artifact of the running cell: name as the sandbox or server
 * gave it (any bytes), size the bytes announced, from as in
 * kernel_sink_rename_note (static). An artifact in progress is
 * abandoned unreported first. Returns 0, or -1 after reporting why not
 * (nothing is reported when the folder is not open or no cell runs). */
int kernel_sink_begin(struct kernel_sink *s, const char *from, const char *name,
    uint64_t size);
/* Whether an artifact is in progress. */
int kernel_sink_active(const struct kernel_sink *s);
/* Bytes the artifact in progress may still take (its announced size
 * less what it got). */
uint64_t kernel_sink_room(const struct kernel_sink *s);
/* Bytes it got so far. */
uint64_t kernel_sink_got(const struct kernel_sink *s);
/* Appends n bytes. More than kernel_sink_room abandons the artifact
 * ("it grew while it was copied"), as a write error does. Returns 0, or
 * -1 once abandoned and reported. Nothing (0) outside an artifact. */
int kernel_sink_write(struct kernel_sink *s, const void *p, size_t n);
/* Closes, renames into place, counts; then the copied callback and, when
 * the host name is not the sandbox's, that line on the cell's stderr.
 * Returns 0 when copied, -1 when it was not (reported). */
int kernel_sink_commit(struct kernel_sink *s);
/* begin, write, commit for bytes already in memory. */
int kernel_sink_put(struct kernel_sink *s, const char *from, const char *name,
    const void *p, size_t n);
/* Drops the artifact in progress (its temporary file is unlinked); when
 * why is set, the running cell is told. */
void kernel_sink_abandon(struct kernel_sink *s, const char *why);

#endif
