/* dirsum: a bounded, symlink-free walk of a data folder (dirsum.h). */
#include "terp/dirsum.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "terp/util.h"

struct walk {
	struct dirsum	*s;
	dirsum_each_fn	 each;
	void		*arg;
	dev_t		 dev;
};

static int
by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in d, sorted; at most the entries the walk has left (one
 * more says "too many"). New array of new strings in *out. */
static size_t
read_names(DIR *d, struct dirsum *s, char ***out)
{
	size_t n = 0, cap = 0;
	char **v = NULL;
	struct dirent *e;

	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (s->entries + n >= DIRSUM_ENTRIES) {
			s->too_many = 1;
			break;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			v = xrealloc(v, cap * sizeof *v);
		}
		v[n++] = xstrdup(e->d_name);
	}
	if (n > 1)
		qsort(v, n, sizeof *v, by_name);
	*out = v;
	return n;
}

static void
keep_name(struct dirsum *s, const char *rel)
{
	if (s->nnames < DIRSUM_NAMES && strlen(rel) < DIRSUM_NAME_MAX)
		snprintf(s->names[s->nnames++], DIRSUM_NAME_MAX, "%s", rel);
}

static int
walk_dir(struct walk *w, int dfd, const char *rel, int depth)
{
	struct dirsum *s = w->s;
	char **v, *sub;
	size_t n;
	DIR *d;
	int fd = dup(dfd);

	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	rewinddir(d);	/* the dup shares dfd's offset: from the start */
	n = read_names(d, s, &v);
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (s->too_many || s->too_deep || fstatat(dirfd(d), v[i], &st,
		    AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		s->entries++;
		if (st.st_mtim.tv_sec > s->mtime)
			s->mtime = st.st_mtim.tv_sec;
		sub = *rel ? xasprintf("%s/%s", rel, v[i]) : xstrdup(v[i]);
		if (w->each)
			w->each(w->arg, sub, &st);
		if (S_ISREG(st.st_mode)) {
			s->files++;
			s->bytes += (uint64_t)st.st_size;
			keep_name(s, sub);
		} else if (S_ISLNK(st.st_mode)) {
			s->links++;
		} else if (S_ISDIR(st.st_mode) && st.st_dev == w->dev) {
			int cfd;
			if (depth + 1 > DIRSUM_DEPTH) {
				s->too_deep = 1;
			} else if ((cfd = openat(dirfd(d), v[i], O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) >= 0) {
				(void)walk_dir(w, cfd, sub, depth + 1);
				close(cfd);
			}
		}
		free(sub);
	}
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	closedir(d);
	return 0;
}

int
dirsum_walk(int dirfd, struct dirsum *s, dirsum_each_fn each, void *arg)
{
	struct walk w = { .s = s, .each = each, .arg = arg };
	struct stat st;

	memset(s, 0, sizeof *s);
	if (fstat(dirfd, &st) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	w.dev = st.st_dev;
	s->mtime = st.st_mtim.tv_sec;
	return walk_dir(&w, dirfd, "", 0);
}

char *
dirsum_line(const struct dirsum *s)
{
	char size[32];

	fmt_bytes(size, sizeof size, s->bytes);
	return xasprintf("%llu file%s, %s in all%s", (unsigned long long)s->files,
	    s->files == 1 ? "" : "s", size, s->links ? " (symlinks not followed)" : "");
}
