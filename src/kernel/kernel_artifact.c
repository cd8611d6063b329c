/* kernel_artifact: receiving a cell's artifacts into the output folder
 * (see kernel_artifact.h). Every name written here is terp's; the
 * sandbox's name only appears in messages, made safe to print. */
#include "terp/kernel_artifact.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "terp/digest.h"
#include "terp/util.h"

#define REPORTS_PER_CELL 20		/* "artifact x not copied" lines; then a count */
#define NAME_TRIES	1000		/* chart.png, chart-2.png ... chart-1000.png */

struct kernel_artifacts {
	const char		*out_dir;
	int			 dirfd;		/* out_dir; -1 until opened */
	struct kframe_caps	 caps;
	kernel_artifact_copied_fn copied;
	kernel_artifact_note_fn	 note;
	void			*arg;
	int			 cell;		/* the running cell; 0: none */

	/* the artifact being received: all set, or all unset */
	int			 fd;		/* the temporary file */
	char			*shown;		/* the sandbox's name, safe to print */
	char			*path;		/* the host name in out_dir */
	char			*tmp;		/* the temporary file's name in out_dir */
	char			*renamed;	/* its note when path is not the sandbox's name */
	uint64_t		 size, got;	/* announced, and received so far */

	struct written {
		char		*name;		/* in out_dir */
		uint64_t	 size;
		int		 earlier;	/* an earlier run's (adopted) */
	}			*written;	/* files terp wrote this session */
	int			 nwritten;
	struct kframe_usage	 use;		/* counted against the caps */
	int			 reports;	/* not-copied lines this cell */
	int			 unreported;	/* ... and those beyond the cap */
};

/* Between calls an artifact is either wholly in progress or absent. */
static int written_index(const struct kernel_artifacts *a, const char *name);

static void
check(const struct kernel_artifacts *a)
{
	assert((a->fd >= 0) == (a->shown != NULL));
	assert((a->path != NULL) == (a->shown != NULL));
	assert((a->tmp != NULL) == (a->shown != NULL));
	assert(a->got <= a->size);
	assert(a->shown == NULL || a->cell != 0);
}

struct kernel_artifacts *
kernel_artifact_new(const char *out_dir, const struct kframe_caps *caps,
    kernel_artifact_copied_fn copied, kernel_artifact_note_fn note, void *arg)
{
	struct kernel_artifacts *a = xcalloc(1, sizeof *a);

	a->out_dir = out_dir;
	a->dirfd = -1;
	a->caps = *caps;
	a->copied = copied;
	a->note = note;
	a->arg = arg;
	a->fd = -1;
	return a;
}

void
kernel_artifact_adopt(struct kernel_artifacts *a, const char *name,
    uint64_t bytes)
{
	int w = written_index(a, name);

	if (w < 0) {
		a->written = xrealloc(a->written, (size_t)(a->nwritten + 1) *
		    sizeof *a->written);
		w = a->nwritten++;
		a->written[w].name = xstrdup(name);
	}
	/* Not counted against this run's caps: the bytes of a file
	 * replaced are taken off what use.bytes holds, at most all. */
	a->written[w].size = bytes;
	a->written[w].earlier = 1;
}

void
kernel_artifact_free(struct kernel_artifacts *a)
{
	if (a == NULL)
		return;
	kernel_artifact_abandon(a, NULL);
	if (a->dirfd >= 0)
		close(a->dirfd);
	for (int i = 0; i < a->nwritten; i++)
		free(a->written[i].name);
	free(a->written);
	free(a);
}

int
kernel_artifact_open(struct kernel_artifacts *a, char **err)
{
	if (a->dirfd >= 0)
		return 0;
	/* The output folder is the user's: created if missing, and
	 * everything goes through this fd with O_EXCL/O_NOFOLLOW. */
	if (mkdir_p(a->out_dir, 0755) < 0 ||
	    (a->dirfd = open(a->out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		*err = xasprintf("cannot use the output folder %s: %s", a->out_dir,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/* "terp: artifact NAME not copied: WHY" in the running cell's stderr;
 * past REPORTS_PER_CELL lines only counted (see kernel_artifact_cell_end). */
static void
report(struct kernel_artifacts *a, const char *shown, const char *why)
{
	char *msg;

	if (a->cell == 0)
		return;		/* no cell to tell: a stray (forged) frame */
	if (a->reports >= REPORTS_PER_CELL) {
		a->unreported++;
		return;
	}
	a->reports++;
	msg = xasprintf("terp: artifact %s not copied: %s\n", shown, why);
	a->note(a->arg, msg);
	free(msg);
}

void
kernel_artifact_cell_start(struct kernel_artifacts *a, int n)
{
	check(a);
	assert(a->shown == NULL);	/* the last cell's ended with it */
	a->cell = n;
	a->use.cell = a->reports = a->unreported = 0;
}

void
kernel_artifact_cell_end(struct kernel_artifacts *a)
{
	char *msg;

	kernel_artifact_abandon(a, "incomplete: the cell ended before terp had all of it");
	if (a->cell != 0 && a->unreported > 0) {
		msg = xasprintf("terp: %d more artifacts not copied (not listed)\n",
		    a->unreported);
		a->note(a->arg, msg);
		free(msg);
	}
	a->unreported = 0;
	a->cell = 0;
}

void
kernel_artifact_abandon(struct kernel_artifacts *a, const char *why)
{
	if (a->fd >= 0)
		close(a->fd);
	if (a->tmp != NULL && a->dirfd >= 0)
		(void)unlinkat(a->dirfd, a->tmp, 0);
	if (why != NULL && a->shown != NULL)
		report(a, a->shown, why);
	a->fd = -1;
	free(a->shown);
	free(a->path);
	free(a->tmp);
	free(a->renamed);
	a->shown = a->path = a->tmp = a->renamed = NULL;
	a->size = a->got = 0;
}

static void
fail_errno(struct kernel_artifacts *a, const char *what, int err)
{
	char *why;

	if (err == ENOSPC || err == EDQUOT)
		why = xasprintf("the output folder is full (%s)", strerror(err));
	else if (err == EFBIG)
		why = xasprintf("it is over the output folder's file size limit (%s)",
		    strerror(err));
	else
		why = xasprintf("cannot %s it in the output folder: %s", what, strerror(err));
	kernel_artifact_abandon(a, why);
	free(why);
}

/* Index in a->written of a file terp wrote this session, or -1. */
static int
written_index(const struct kernel_artifacts *a, const char *name)
{
	for (int i = 0; i < a->nwritten; i++)
		if (strcmp(a->written[i].name, name) == 0)
			return i;
	return -1;
}

static void
refuse(struct kernel_artifacts *a, enum kframe_refusal r, uint64_t size)
{
	char *why = kframe_refusal_text(&a->caps, r, size);

	kernel_artifact_abandon(a, why);
	free(why);
}

char *
kernel_artifact_rename_note(const char *from, const char *shown,
    const char *out_dir, const char *host, const char *path)
{
	if (strcmp(shown, path) == 0)
		return NULL;
	if (strcmp(host, path) != 0)
		return xasprintf("terp: %s%s copied as %s/%s: %s/%s was already "
		    "there and is not this session's (left as it was)\n", from, shown,
		    out_dir, path, out_dir, host);
	return xasprintf("terp: %s%s copied as %s/%s (the output folder takes plain "
	    "file names only)\n", from, shown, out_dir, path);
}

/* The note for a copy whose host name (a->path) is not the name the
 * cell gave it (a->shown), or NULL. host is the name before the search
 * for a free one. */
static char *
rename_note(const struct kernel_artifacts *a, const char *host)
{
	return kernel_artifact_rename_note("out/", a->shown, a->out_dir, host, a->path);
}

/* Chooses the host name: the sanitized name; when a file of that name
 * exists that terp did not write in this session, name-2.ext and so on.
 * A file terp wrote in this session is replaced (through a temp file and
 * rename, never by writing into the existing inode). */
void
kernel_artifact_begin(struct kernel_artifacts *a, const struct kframe *f)
{
	const char *problem;
	char *host;
	enum kframe_refusal r;
	uint64_t size;
	int w = -1;

	check(a);
	kernel_artifact_abandon(a, "incomplete: another artifact started before it ended");
	if (f->name == NULL || a->dirfd < 0 || a->cell == 0)
		return;
	a->shown = kframe_display_name(f->name);
	if ((problem = kframe_name_problem(f->name)) != NULL) {
		kernel_artifact_abandon(a, problem);
		return;
	}
	if (!f->has_size || f->size < 0) {
		kernel_artifact_abandon(a, "the sandbox gave no valid size");
		return;
	}
	size = (uint64_t)f->size;
	/* The caps that hold whatever the name: checked before the search
	 * for a free name, so that a flood past the cap costs nothing. */
	if ((r = kframe_admit(&a->caps, &a->use, size, 1, UINT64_MAX)) != KF_ADMIT) {
		refuse(a, r, size);
		return;
	}
	host = kframe_host_name(f->name);
	for (int i = 1; i <= NAME_TRIES; i++) {
		struct stat st;
		char *cand = kframe_host_candidate(host, i);
		w = -1;
		if (fstatat(a->dirfd, cand, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			a->path = cand;
			break;
		}
		if (S_ISREG(st.st_mode) && (w = written_index(a, cand)) >= 0 &&
		    (!a->written[w].earlier ||
		    (uint64_t)st.st_size == a->written[w].size)) {
			a->path = cand;
			break;
		}
		free(cand);
	}
	if (a->path == NULL) {
		free(host);
		kernel_artifact_abandon(a, "no free name for it in the output folder");
		return;
	}
	a->renamed = rename_note(a, host);
	free(host);
	if (w >= 0 && a->written[w].earlier)
		w = -1;		/* not in this run's counts yet */
	r = kframe_admit(&a->caps, &a->use, size, w >= 0, w >= 0 ? a->written[w].size : 0);
	if (r != KF_ADMIT) {
		refuse(a, r, size);
		return;
	}
	a->use.cell++;
	a->size = size;
	a->tmp = xasprintf(".terp-%d-%s.part", (int)getpid(), a->path);
	(void)unlinkat(a->dirfd, a->tmp, 0);
	a->fd = openat(a->dirfd, a->tmp,
	    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (a->fd < 0) {
		int e = errno;
		free(a->tmp);	/* not ours: never unlink it */
		a->tmp = NULL;
		fail_errno(a, "create", e);
	}
	check(a);
}

void
kernel_artifact_chunk(struct kernel_artifacts *a, const struct kframe *f)
{
	size_t n;
	char *data;

	check(a);
	if (a->fd < 0 || f->data == NULL)
		return;		/* "chunk" outside an artifact: ignored */
	data = base64_decode(f->data, f->data_len, &n);
	if (data == NULL) {
		kernel_artifact_abandon(a, "the sandbox sent data that is not base64");
		return;
	}
	if (n > a->size - a->got) {
		free(data);
		kernel_artifact_abandon(a, "it grew while it was copied (still being written?)");
		return;
	}
	if (write_all(a->fd, data, n) < 0) {
		int e = errno;
		free(data);
		fail_errno(a, "write", e);
		return;
	}
	a->got += n;
	free(data);
}

void
kernel_artifact_end(struct kernel_artifacts *a, const struct kframe *f)
{
	char *host;
	int w, fd;

	check(a);
	if (a->fd < 0)
		return;		/* "artifact_end" outside an artifact: ignored */
	if (f->reason != NULL) {
		/* The driver's own account (a read error, a cap): shown, not trusted. */
		char *r = kframe_display_name(f->reason);
		kernel_artifact_abandon(a, r);
		free(r);
		return;
	}
	if (a->got != a->size || !f->has_size || (uint64_t)f->size != a->got) {
		kernel_artifact_abandon(a, "it changed while it was copied (still being written?)");
		return;
	}
	fd = a->fd;
	a->fd = -1;
	if (close(fd) < 0) {
		fail_errno(a, "write", errno);
		return;
	}
	if (renameat(a->dirfd, a->tmp, a->dirfd, a->path) < 0) {
		fail_errno(a, "rename", errno);
		return;
	}
	free(a->tmp);
	a->tmp = NULL;
	if ((w = written_index(a, a->path)) >= 0 && a->written[w].earlier) {
		a->written[w].earlier = 0;	/* now this run's: counted */
		a->use.files++;
	} else if (w >= 0) {
		a->use.bytes -= a->written[w].size < a->use.bytes ? a->written[w].size : a->use.bytes;
	} else {
		a->written = xrealloc(a->written, (size_t)(a->nwritten + 1) * sizeof *a->written);
		w = a->nwritten++;
		a->written[w].name = xstrdup(a->path);
		a->use.files++;
	}
	a->written[w].size = a->got;
	a->use.bytes += a->got;
	if (a->copied) {
		host = xasprintf("%s/%s", a->out_dir, a->path);
		a->copied(a->arg, a->cell, a->path, host, a->got);
		free(host);
	}
	if (a->renamed != NULL)
		a->note(a->arg, a->renamed);
	kernel_artifact_abandon(a, NULL);
}

void
kernel_artifact_skip(struct kernel_artifacts *a, const struct kframe *f)
{
	char *name = kframe_display_name(f->name ? f->name : "?");
	char *r = kframe_display_name(f->reason ? f->reason : "refused");

	report(a, name, r);
	free(name);
	free(r);
}
