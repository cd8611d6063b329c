/* kernel_artifact: the host side of the files a cell saves. The driver
 * streams each one as frames (artifact, chunk..., artifact_end); those
 * frames are claims from a hostile process, so this module checks their
 * order, counts them against the caps, picks the host file name itself
 * and writes through a hidden temporary file in the output folder that
 * is unlinked whenever the artifact is abandoned. Every artifact not
 * copied is reported as a line for the cell's stderr, which reaches the
 * user and the model alike. The names, caps and writing are the one
 * sink's (kernel_sink.h), shared with the remote backends; this module
 * keeps the frames' order. Which cell a frame belongs to is kernel.c's
 * to check (it owns the running cell); this module is told when a cell
 * starts and ends. */
#ifndef TERP_KERNEL_ARTIFACT_H
#define TERP_KERNEL_ARTIFACT_H

#include <stdint.h>

#include "terp/kernel_frame.h"

struct kernel_artifacts;

/* A file copied: name is terp's host file name in the output folder,
 * host_path is out_dir/name (see kernel_cbs.artifact). */
typedef void (*kernel_artifact_copied_fn)(void *arg, int cell, const char *name,
    const char *host_path, uint64_t bytes);
/* One line for the running cell's stderr, '\n' included ("terp:
 * artifact x not copied: why"). */
typedef void (*kernel_artifact_note_fn)(void *arg, const char *line);

/* A receiver that writes into out_dir (borrowed: it must outlive the
 * receiver) within caps. Opens nothing yet. */
struct kernel_artifacts *kernel_artifact_new(const char *out_dir,
    const struct kframe_caps *caps, kernel_artifact_copied_fn copied,
    kernel_artifact_note_fn note, void *arg);
/* name (relative to out_dir, copied) is this session's, written by an
 * earlier run with this many bytes: a new artifact of that name
 * replaces it while the file still has that size (else the user
 * changed it, and it is left as it is). */
void kernel_artifact_adopt(struct kernel_artifacts *a, const char *name,
    uint64_t bytes);
/* Abandons an artifact in progress, closes the folder, frees. */
void kernel_artifact_free(struct kernel_artifacts *a);

/* Creates the output folder when missing and opens it; every file goes
 * through this fd with O_EXCL/O_NOFOLLOW. Does nothing once open.
 * Returns 0, or -1 with a one-line *err (caller frees). */
int kernel_artifact_open(struct kernel_artifacts *a, char **err);

/* Cell n starts: its per-cell counts start at 0. */
void kernel_artifact_cell_start(struct kernel_artifacts *a, int n);
/* The running cell ended: an artifact still incomplete is abandoned
 * and reported, then the count of reports past the per-cell list. */
void kernel_artifact_cell_end(struct kernel_artifacts *a);

/* The frames, for the running cell only (the caller checks the id):
 * "artifact" starts one (abandoning an unfinished one), "chunk" and
 * "artifact_end" outside an artifact are ignored, "artifact_skip" is
 * the driver refusing one, which is only reported. */
void kernel_artifact_begin(struct kernel_artifacts *a, const struct kframe *f);
void kernel_artifact_chunk(struct kernel_artifacts *a, const struct kframe *f);
void kernel_artifact_end(struct kernel_artifacts *a, const struct kframe *f);
void kernel_artifact_skip(struct kernel_artifacts *a, const struct kframe *f);

/* Drops the artifact being received (its temporary file is unlinked);
 * when why is set, the running cell is told. */
void kernel_artifact_abandon(struct kernel_artifacts *a, const char *why);

#endif
