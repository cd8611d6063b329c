/* kernel_sink: writing a cell's artifacts into the output folder, for
 * every backend (see kernel_sink.h). Every name written here is terp's;
 * the sandbox's name only appears in messages, made safe to print. */
#include "terp/kernel_sink.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "terp/util.h"

struct kernel_sink {
	const char		*out_dir;
	int			 dirfd;		/* out_dir; -1 until opened */
	struct kframe_caps	 caps;
	kernel_sink_copied_fn	 copied;
	kernel_sink_note_fn	 note;
	void			*arg;
	int			 cell;		/* the running cell; 0: none */

	/* the artifact in progress: all set, or all unset */
	int			 fd;		/* the temporary file */
	char			*shown;		/* the sandbox's name, safe to print */
	char			*path;		/* the host name in out_dir */
	char			*tmp;		/* the temporary file's name in out_dir */
	char			*renamed;	/* its note when path is not the sandbox's name */
	uint64_t		 size, got;	/* announced, and received so far */

	struct sink_written {
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
static void
check(const struct kernel_sink *s)
{
	assert((s->fd >= 0) == (s->shown != NULL));
	assert((s->path != NULL) == (s->shown != NULL));
	assert((s->tmp != NULL) == (s->shown != NULL));
	assert(s->got <= s->size);
	(void)s;
}

struct kernel_sink *
kernel_sink_new(const char *out_dir, const struct kframe_caps *caps,
    kernel_sink_copied_fn copied, kernel_sink_note_fn note, void *arg)
{
	struct kernel_sink *s = xcalloc(1, sizeof *s);

	s->out_dir = out_dir;
	s->dirfd = -1;
	s->caps = *caps;
	s->copied = copied;
	s->note = note;
	s->arg = arg;
	s->fd = -1;
	return s;
}

void
kernel_sink_free(struct kernel_sink *s)
{
	if (s == NULL)
		return;
	kernel_sink_abandon(s, NULL);
	if (s->dirfd >= 0)
		close(s->dirfd);
	for (int i = 0; i < s->nwritten; i++)
		free(s->written[i].name);
	free(s->written);
	free(s);
}

int
kernel_sink_open(struct kernel_sink *s, char **err)
{
	if (s->dirfd >= 0)
		return 0;
	/* The output folder is the user's: created if missing, and
	 * everything goes through this fd with O_EXCL/O_NOFOLLOW. */
	if (mkdir_p(s->out_dir, 0755) < 0 ||
	    (s->dirfd = open(s->out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		*err = xasprintf("cannot use the output folder %s: %s", s->out_dir,
		    strerror(errno));
		return -1;
	}
	return 0;
}

int
kernel_sink_is_open(const struct kernel_sink *s)
{
	return s->dirfd >= 0;
}

/* The line for an already safe name; past KERNEL_SINK_REPORTS only
 * counted (see kernel_sink_cell_end). */
static void
report_shown(struct kernel_sink *s, const char *shown, const char *why)
{
	char *msg;

	if (s->cell == 0)
		return;
	if (s->reports >= KERNEL_SINK_REPORTS) {
		s->unreported++;
		return;
	}
	s->reports++;
	msg = xasprintf("terp: artifact %s not copied: %s\n", shown, why);
	s->note(s->arg, s->cell, msg);
	free(msg);
}

void
kernel_sink_report(struct kernel_sink *s, const char *name, const char *why)
{
	char *shown = kframe_display_name(name);

	report_shown(s, shown, why);
	free(shown);
}

char *
kernel_sink_refusal(const struct kernel_sink *s, enum kframe_refusal r, uint64_t size)
{
	return kframe_refusal_text(&s->caps, r, size);
}

void
kernel_sink_cell_start(struct kernel_sink *s, int n)
{
	kernel_sink_abandon(s, NULL);
	s->cell = n;
	s->use.cell = s->reports = s->unreported = 0;
}

int
kernel_sink_cell(const struct kernel_sink *s)
{
	return s->cell;
}

void
kernel_sink_cell_end(struct kernel_sink *s, const char *why)
{
	char *msg;

	kernel_sink_abandon(s, why);
	if (s->cell != 0 && s->unreported > 0) {
		msg = xasprintf("terp: %d more artifacts not copied (not listed)\n",
		    s->unreported);
		s->note(s->arg, s->cell, msg);
		free(msg);
	}
	s->unreported = 0;
	s->cell = 0;
}

void
kernel_sink_abandon(struct kernel_sink *s, const char *why)
{
	if (s->fd >= 0)
		close(s->fd);
	if (s->tmp != NULL && s->dirfd >= 0)
		(void)unlinkat(s->dirfd, s->tmp, 0);
	if (why != NULL && s->shown != NULL)
		report_shown(s, s->shown, why);
	s->fd = -1;
	free(s->shown);
	free(s->path);
	free(s->tmp);
	free(s->renamed);
	s->shown = s->path = s->tmp = s->renamed = NULL;
	s->size = s->got = 0;
}

static void
fail_errno(struct kernel_sink *s, const char *what, int err)
{
	char *why;

	if (err == ENOSPC || err == EDQUOT)
		why = xasprintf("the output folder is full (%s)", strerror(err));
	else if (err == EFBIG)
		why = xasprintf("it is over the output folder's file size limit (%s)",
		    strerror(err));
	else
		why = xasprintf("cannot %s it in the output folder: %s", what, strerror(err));
	kernel_sink_abandon(s, why);
	free(why);
}

/* Index in s->written of a file terp wrote this session, or -1. */
static int
written_index(const struct kernel_sink *s, const char *name)
{
	for (int i = 0; i < s->nwritten; i++)
		if (strcmp(s->written[i].name, name) == 0)
			return i;
	return -1;
}

void
kernel_sink_adopt(struct kernel_sink *s, const char *name, uint64_t bytes)
{
	int w = written_index(s, name);

	if (w < 0) {
		s->written = xrealloc(s->written, (size_t)(s->nwritten + 1) *
		    sizeof *s->written);
		w = s->nwritten++;
		s->written[w].name = xstrdup(name);
	}
	/* Not counted against this run's caps until replaced. */
	s->written[w].size = bytes;
	s->written[w].earlier = 1;
}

static void
refuse(struct kernel_sink *s, enum kframe_refusal r, uint64_t size)
{
	char *why = kframe_refusal_text(&s->caps, r, size);

	kernel_sink_abandon(s, why);
	free(why);
}

char *
kernel_sink_rename_note(const char *from, const char *shown,
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

/* The host name for host (kframe_host_name's): host itself, or
 * name-2.ext and so on, when a file of that name exists that terp did
 * not write in this session; *w the written index of the one replaced,
 * or -1. NULL when none is free. */
static char *
free_name(const struct kernel_sink *s, const char *host, int *w)
{
	*w = -1;
	for (int i = 1; i <= KERNEL_SINK_NAME_TRIES; i++) {
		struct stat st;
		char *cand = kframe_host_candidate(host, i);
		if (fstatat(s->dirfd, cand, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return cand;
		/* an earlier run's file is replaced only while it is as
		 * that run left it: else the user changed it */
		if (S_ISREG(st.st_mode) && (*w = written_index(s, cand)) >= 0 &&
		    (!s->written[*w].earlier ||
		    (uint64_t)st.st_size == s->written[*w].size))
			return cand;
		*w = -1;
		free(cand);
	}
	return NULL;
}

int
kernel_sink_begin(struct kernel_sink *s, const char *from, const char *name,
    uint64_t size)
{
	const char *problem;
	enum kframe_refusal r;
	char *host;
	int w;

	check(s);
	kernel_sink_abandon(s, NULL);
	if (name == NULL || s->dirfd < 0 || s->cell == 0)
		return -1;
	s->shown = kframe_display_name(name);
	if ((problem = kframe_name_problem(name)) != NULL) {
		kernel_sink_abandon(s, problem);
		return -1;
	}
	/* The caps that hold whatever the name: checked before the search
	 * for a free name, so that a flood past the cap costs nothing. */
	if ((r = kframe_admit(&s->caps, &s->use, size, 1, UINT64_MAX)) != KF_ADMIT) {
		refuse(s, r, size);
		return -1;
	}
	host = kframe_host_name(name);
	if ((s->path = free_name(s, host, &w)) == NULL) {
		free(host);
		kernel_sink_abandon(s, "no free name for it in the output folder");
		return -1;
	}
	s->renamed = kernel_sink_rename_note(from, s->shown, s->out_dir, host, s->path);
	free(host);
	if (w >= 0 && s->written[w].earlier)
		w = -1;		/* not in this run's counts yet */
	r = kframe_admit(&s->caps, &s->use, size, w >= 0, w >= 0 ? s->written[w].size : 0);
	if (r != KF_ADMIT) {
		refuse(s, r, size);
		return -1;
	}
	s->use.cell++;
	s->size = size;
	s->tmp = xasprintf(".terp-%d-%s.part", (int)getpid(), s->path);
	(void)unlinkat(s->dirfd, s->tmp, 0);
	s->fd = openat(s->dirfd, s->tmp,
	    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (s->fd < 0) {
		int e = errno;
		free(s->tmp);	/* not ours: never unlink it */
		s->tmp = NULL;
		fail_errno(s, "create", e);
		return -1;
	}
	check(s);
	return 0;
}

int
kernel_sink_active(const struct kernel_sink *s)
{
	return s->fd >= 0;
}

uint64_t
kernel_sink_room(const struct kernel_sink *s)
{
	return s->size - s->got;
}

uint64_t
kernel_sink_got(const struct kernel_sink *s)
{
	return s->got;
}

int
kernel_sink_write(struct kernel_sink *s, const void *p, size_t n)
{
	check(s);
	if (s->fd < 0)
		return 0;
	if (n > s->size - s->got) {
		kernel_sink_abandon(s, "it grew while it was copied (still being written?)");
		return -1;
	}
	if (write_all(s->fd, p, n) < 0) {
		fail_errno(s, "write", errno);
		return -1;
	}
	s->got += n;
	return 0;
}

int
kernel_sink_commit(struct kernel_sink *s)
{
	char *path, *renamed, *host;
	uint64_t got;
	int w, fd, cell;

	check(s);
	if (s->fd < 0)
		return -1;
	fd = s->fd;
	s->fd = -1;
	if (close(fd) < 0) {
		fail_errno(s, "write", errno);
		return -1;
	}
	if (renameat(s->dirfd, s->tmp, s->dirfd, s->path) < 0) {
		fail_errno(s, "rename", errno);
		return -1;
	}
	free(s->tmp);
	s->tmp = NULL;
	if ((w = written_index(s, s->path)) >= 0 && s->written[w].earlier) {
		s->written[w].earlier = 0;	/* now this run's: counted */
		s->use.files++;
	} else if (w >= 0) {
		s->use.bytes -= s->written[w].size < s->use.bytes ? s->written[w].size : s->use.bytes;
	} else {
		s->written = xrealloc(s->written, (size_t)(s->nwritten + 1) * sizeof *s->written);
		w = s->nwritten++;
		s->written[w].name = xstrdup(s->path);
		s->use.files++;
	}
	s->written[w].size = s->got;
	s->use.bytes += s->got;
	/* Forgotten before the callbacks, which may call back in. */
	path = s->path;
	renamed = s->renamed;
	got = s->got;
	cell = s->cell;
	s->path = s->renamed = NULL;
	free(s->shown);
	s->shown = NULL;
	s->size = s->got = 0;
	if (s->copied != NULL) {
		host = xasprintf("%s/%s", s->out_dir, path);
		s->copied(s->arg, cell, path, host, got);
		free(host);
	}
	if (renamed != NULL)	/* after the artifact, as every backend says it */
		s->note(s->arg, cell, renamed);
	free(path);
	free(renamed);
	return 0;
}

int
kernel_sink_put(struct kernel_sink *s, const char *from, const char *name,
    const void *p, size_t n)
{
	if (kernel_sink_begin(s, from, name, n) < 0 || kernel_sink_write(s, p, n) < 0)
		return -1;
	return kernel_sink_commit(s);
}
