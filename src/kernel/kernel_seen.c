/* kernel_seen: the remote output folder's last listing (see
 * kernel_seen.h). */
#include "terp/kernel_seen.h"

#include <stdlib.h>
#include <string.h>

#include "terp/util.h"

void
kernel_seen_clear(struct kernel_seen *s)
{
	for (int i = 0; i < s->n; i++) {
		free(s->f[i].name);
		free(s->f[i].mtime);
	}
	free(s->f);
	s->f = NULL;
	s->n = 0;
}

int
kernel_seen_empty(const struct kernel_seen *s)
{
	return s->n == 0;
}

void
kernel_seen_start(struct kernel_seen *s)
{
	for (int i = 0; i < s->n; i++)
		s->f[i].listed = 0;
}

static int
find(const struct kernel_seen *s, const char *name)
{
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->f[i].name, name) == 0)
			return i;
	return -1;
}

int
kernel_seen_changed(struct kernel_seen *s, const char *name, uint64_t size,
    const char *mtime)
{
	int i = find(s, name), same;

	same = i >= 0 && size != KERNEL_SEEN_SIZE_UNKNOWN && mtime != NULL &&
	    s->f[i].size == size && s->f[i].mtime != NULL &&
	    strncmp(s->f[i].mtime, mtime, KERNEL_SEEN_MTIME_MAX) == 0;
	if (i < 0) {
		s->f = xrealloc(s->f, (size_t)(s->n + 1) * sizeof *s->f);
		i = s->n++;
		s->f[i].name = xstrdup(name);
		s->f[i].mtime = NULL;
	}
	s->f[i].listed = 1;
	s->f[i].size = size;
	if (!same) {
		free(s->f[i].mtime);
		s->f[i].mtime = mtime ? xstrndup(mtime, KERNEL_SEEN_MTIME_MAX) : NULL;
	}
	return !same;
}

void
kernel_seen_prune(struct kernel_seen *s)
{
	int o = 0;

	for (int i = 0; i < s->n; i++) {
		if (s->f[i].listed) {
			s->f[o++] = s->f[i];
		} else {
			free(s->f[i].name);
			free(s->f[i].mtime);
		}
	}
	s->n = o;
}
