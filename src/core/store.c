/* store: session folders on disk: their ids, paths, lock, listing and
 * deletion.
 *
 * Dependencies point one way: store knows nothing of what a journal
 * says, journal.c uses store for its id, path and lock, and the listing
 * that needs each session's meta (resume_list) sits above both: it
 * takes store_list's folders and has journal.c read their heads. Had
 * store_list read the metas itself, store and journal would need each
 * other. */
#include "terp/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "terp/util.h"

#define JOURNAL_NAME	"notebook.jsonl"
#define DELETE_DEPTH	128

/* ---- ids and paths ----------------------------------------------- */

char *
store_sessions_dir(void)
{
	char *st = xdg_state_home();
	char *d = xasprintf("%s/terp/sessions", st);
	free(st);
	return d;
}

char *
store_new_id(void)
{
	time_t t = time(NULL);
	struct tm tm;
	unsigned char r[2] = { 0, 0 };
	char stamp[32];

	localtime_r(&t, &tm);
	strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
	if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
		uint64_t x = (uint64_t)now_us() ^ (uint64_t)getpid() << 16;
		r[0] = (unsigned char)x;
		r[1] = (unsigned char)(x >> 8);
	}
	return xasprintf("%s-%02x%02x", stamp, r[0], r[1]);
}

int
store_id_valid(const char *id)
{
	size_t n;

	if (id == NULL || (n = strlen(id)) == 0 || n > 64)
		return -1;
	if (strcmp(id, ".") == 0 || strcmp(id, "..") == 0 || id[0] == '.')
		return -1;
	for (const char *p = id; *p; p++) {
		char c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
			return -1;
	}
	if (strstr(id, "..") != NULL)
		return -1;
	return 0;
}

char *
store_journal_path(const char *sessions_dir, const char *id)
{
	if (store_id_valid(id) < 0)
		return NULL;
	return xasprintf("%s/%s/%s", sessions_dir, id, JOURNAL_NAME);
}

/* ---- the lock ---------------------------------------------------- */

int
store_open_locked(const char *path, const char *id, int flags, char **err)
{
	/* O_NONBLOCK: a FIFO in the journal's place fails, never hangs
	 * (appends to a regular file ignore it) */
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK | flags, 0600);
	struct stat st;

	if (fd < 0) {
		*err = xasprintf("cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		*err = xasprintf("cannot open %s: not a regular file", path);
		close(fd);
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		*err = xasprintf("session %s is open in another terp", id);
		close(fd);
		return -1;
	}
	return fd;
}

/* ---- listing ----------------------------------------------------- */

static int
by_recent(const void *a, const void *b)
{
	const struct store_entry *x = a, *y = b;

	if (x->last_active != y->last_active)
		return x->last_active < y->last_active ? 1 : -1;
	return strcmp(y->id, x->id);
}

int
store_list(const char *sessions_dir, struct store_entry **out, int *n,
    char **err)
{
	DIR *d = opendir(sessions_dir);
	struct dirent *e;
	int cap = 0;

	*out = NULL;
	*n = 0;
	if (d == NULL) {
		if (errno == ENOENT)
			return 0;
		*err = xasprintf("cannot list %s: %s", sessions_dir,
		    strerror(errno));
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		struct stat st;
		char *name;
		int rc;

		if (store_id_valid(e->d_name) < 0 ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		name = xasprintf("%s/%s", e->d_name, JOURNAL_NAME);
		rc = fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW);
		free(name);
		if (rc < 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			*out = xrealloc(*out, (size_t)cap * sizeof **out);
		}
		(*out)[*n].id = xstrdup(e->d_name);
		(*out)[*n].last_active = (int64_t)st.st_mtim.tv_sec;
		(*n)++;
	}
	closedir(d);
	if (*n > 0)
		qsort(*out, (size_t)*n, sizeof **out, by_recent);
	return 0;
}

void
store_list_free(struct store_entry *list, int n)
{
	for (int i = 0; i < n; i++)
		free(list[i].id);
	free(list);
}

/* ---- deleting ---------------------------------------------------- */

/* Removes name under dfd: files and symlinks are unlinked (a link is
 * never followed), folders emptied through descriptors opened with
 * O_NOFOLLOW, so nothing outside the tree can be reached even if the
 * sandbox planted links in its workspace. */
static int
rm_at(int dfd, const char *name, int depth)
{
	DIR *d;
	struct dirent *e;
	int fd, rc = 0;

	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	if (depth > DELETE_DEPTH) {
		errno = ELOOP;
		return -1;
	}
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	(void)fchmod(fd, 0700);	/* code may have made folders read-only */
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (rm_at(fd, e->d_name, depth + 1) < 0)
			rc = -1;
	}
	closedir(d);
	if (rc == 0 && unlinkat(dfd, name, AT_REMOVEDIR) < 0)
		rc = -1;
	return rc;
}

int
store_delete(const char *sessions_dir, const char *id, char **err)
{
	char *path;
	int dfd, fd;
	struct stat st;

	if (store_id_valid(id) < 0) {
		*err = xasprintf("not a session id: '%s'", id);
		return -1;
	}
	dfd = open(sessions_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fstatat(dfd, id, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		*err = xasprintf("no session %s", id);
		if (dfd >= 0)
			close(dfd);
		return -1;
	}
	path = store_journal_path(sessions_dir, id);
	if (S_ISDIR(st.st_mode) &&
	    (fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)) >= 0) {
		int busy = flock(fd, LOCK_EX | LOCK_NB) < 0;
		close(fd);
		if (busy) {
			*err = xasprintf("session %s is open in another terp", id);
			free(path);
			close(dfd);
			return -1;
		}
	}
	free(path);
	if (rm_at(dfd, id, 0) < 0) {
		*err = xasprintf("cannot delete session %s: %s", id,
		    strerror(errno));
		close(dfd);
		return -1;
	}
	close(dfd);
	return 0;
}
