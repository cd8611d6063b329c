/* kernel_artifact: the driver's artifact frames (see kernel_artifact.h)
 * over the one sink (kernel_sink.c): this file keeps only the frames'
 * order and their words; names, caps and the writing are the sink's. */
#include "terp/kernel_artifact.h"

#include <stdlib.h>

#include "terp/digest.h"
#include "terp/kernel_sink.h"
#include "terp/util.h"

struct kernel_artifacts {
	struct kernel_sink	*sink;
	kernel_artifact_copied_fn copied;
	kernel_artifact_note_fn	 note;
	void			*arg;
};

static void
sink_copied(void *arg, int cell, const char *name, const char *host_path, uint64_t bytes)
{
	struct kernel_artifacts *a = arg;

	if (a->copied != NULL)
		a->copied(a->arg, cell, name, host_path, bytes);
}

/* The sink names the cell; the driver's artifacts are the running cell's. */
static void
sink_note(void *arg, int cell, const char *line)
{
	struct kernel_artifacts *a = arg;

	(void)cell;
	a->note(a->arg, line);
}

struct kernel_artifacts *
kernel_artifact_new(const char *out_dir, const struct kframe_caps *caps,
    kernel_artifact_copied_fn copied, kernel_artifact_note_fn note, void *arg)
{
	struct kernel_artifacts *a = xcalloc(1, sizeof *a);

	a->copied = copied;
	a->note = note;
	a->arg = arg;
	a->sink = kernel_sink_new(out_dir, caps, sink_copied, sink_note, a);
	return a;
}

void
kernel_artifact_adopt(struct kernel_artifacts *a, const char *name,
    uint64_t bytes)
{
	kernel_sink_adopt(a->sink, name, bytes);
}

void
kernel_artifact_free(struct kernel_artifacts *a)
{
	if (a == NULL)
		return;
	kernel_sink_free(a->sink);
	free(a);
}

int
kernel_artifact_open(struct kernel_artifacts *a, char **err)
{
	return kernel_sink_open(a->sink, err);
}

void
kernel_artifact_cell_start(struct kernel_artifacts *a, int n)
{
	kernel_sink_cell_start(a->sink, n);
}

void
kernel_artifact_cell_end(struct kernel_artifacts *a)
{
	kernel_sink_cell_end(a->sink, "incomplete: the cell ended before terp had all of it");
}

void
kernel_artifact_abandon(struct kernel_artifacts *a, const char *why)
{
	kernel_sink_abandon(a->sink, why);
}

void
kernel_artifact_begin(struct kernel_artifacts *a, const struct kframe *f)
{
	kernel_sink_abandon(a->sink, "incomplete: another artifact started before it ended");
	if (f->name == NULL || kernel_sink_cell(a->sink) == 0)
		return;
	if (kframe_name_problem(f->name) == NULL && (!f->has_size || f->size < 0)) {
		kernel_sink_report(a->sink, f->name, "the sandbox gave no valid size");
		return;
	}
	(void)kernel_sink_begin(a->sink, "out/", f->name, f->has_size ? (uint64_t)f->size : 0);
}

void
kernel_artifact_chunk(struct kernel_artifacts *a, const struct kframe *f)
{
	size_t n;
	char *data;

	if (!kernel_sink_active(a->sink) || f->data == NULL)
		return;		/* "chunk" outside an artifact: ignored */
	data = base64_decode(f->data, f->data_len, &n);
	if (data == NULL) {
		kernel_sink_abandon(a->sink, "the sandbox sent data that is not base64");
		return;
	}
	(void)kernel_sink_write(a->sink, data, n);
	free(data);
}

void
kernel_artifact_end(struct kernel_artifacts *a, const struct kframe *f)
{
	uint64_t got = kernel_sink_got(a->sink);

	if (!kernel_sink_active(a->sink))
		return;		/* "artifact_end" outside an artifact: ignored */
	if (f->reason != NULL) {
		/* The driver's own account (a read error, a cap): shown, not trusted. */
		char *r = kframe_display_name(f->reason);
		kernel_sink_abandon(a->sink, r);
		free(r);
		return;
	}
	if (kernel_sink_room(a->sink) != 0 || !f->has_size || (uint64_t)f->size != got) {
		kernel_sink_abandon(a->sink, "it changed while it was copied (still being written?)");
		return;
	}
	(void)kernel_sink_commit(a->sink);
}

void
kernel_artifact_skip(struct kernel_artifacts *a, const struct kframe *f)
{
	char *r = kframe_display_name(f->reason ? f->reason : "refused");

	kernel_sink_report(a->sink, f->name ? f->name : "?", r);
	free(r);
}
