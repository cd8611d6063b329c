/* sandbox_cgroup: per-session cgroup v2, used only where the machine hands terp
 * a usable memory controller: terp's own cgroup must already list
 * "memory" and "pids" in its cgroup.subtree_control (systemd delegation,
 * a container's delegated subtree). terp never rearranges the hierarchy
 * itself: the "no internal processes" rule makes that someone else's
 * decision. */
#include "terp/sandbox_cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "terp/util.h"

struct sandbox_cgroup {
	char	*path;		/* the session's cgroup directory */
	int	 procs_fd;
};

char *
sandbox_cgroup_parse_self(const char *text)
{
	const char *p = text;

	while (p && *p) {
		if (strncmp(p, "0::", 3) == 0) {
			size_t n = strcspn(p + 3, "\n");
			return xstrndup(p + 3, n);
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

char *
sandbox_cgroup_parse_mount(const char *text)
{
	const char *line = text;

	/* mountinfo: id parent maj:min root mountpoint opts... - fstype src opts */
	while (line && *line) {
		size_t len = strcspn(line, "\n");
		char *l = xstrndup(line, len), *dash = strstr(l, " - ");
		if (dash && strncmp(dash + 3, "cgroup2 ", 8) == 0) {
			char mnt[4096];
			if (sscanf(l, "%*s %*s %*s %*s %4095s", mnt) == 1) {
				free(l);
				return xstrdup(mnt);
			}
		}
		free(l);
		line += len;
		if (*line == '\n')
			line++;
	}
	return NULL;
}

int
sandbox_cgroup_has_controller(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
			return 1;
	return 0;
}

static int
write_file(const char *dir, const char *file, const char *value)
{
	char *path = xasprintf("%s/%s", dir, file);
	int fd = open(path, O_WRONLY | O_CLOEXEC), rc = -1;

	free(path);
	if (fd < 0)
		return -1;
	if (write_all(fd, value, strlen(value)) == 0)
		rc = 0;
	close(fd);
	return rc;
}

struct sandbox_cgroup *
sandbox_cgroup_create(const char *name, uint64_t memory, long pids, char **why)
{
	char *self = NULL, *mnt = NULL, *text, *parent;
	struct sandbox_cgroup *cg = NULL;

	if ((text = read_file("/proc/self/cgroup", 1 << 16, NULL)) != NULL) {
		self = sandbox_cgroup_parse_self(text);
		free(text);
	}
	if ((text = read_file("/proc/self/mountinfo", 1 << 20, NULL)) != NULL) {
		mnt = sandbox_cgroup_parse_mount(text);
		free(text);
	}
	if (self == NULL || mnt == NULL) {
		*why = xstrdup("no cgroup v2 hierarchy");
	} else {
		parent = xasprintf("%s%s", mnt, strcmp(self, "/") == 0 ? "" : self);
		cg = sandbox_cgroup_create_in(parent, name, memory, pids, why);
		free(parent);
	}
	free(self);
	free(mnt);
	return cg;
}

struct sandbox_cgroup *
sandbox_cgroup_create_in(const char *parent, const char *name, uint64_t memory,
    long pids, char **why)
{
	char *text, *ctl;
	struct sandbox_cgroup *cg = NULL;
	char v[32];

	text = xasprintf("%s/cgroup.subtree_control", parent);
	ctl = read_file(text, 4096, NULL);
	free(text);
	if (ctl == NULL || !sandbox_cgroup_has_controller(ctl, "memory") ||
	    !sandbox_cgroup_has_controller(ctl, "pids")) {
		*why = xasprintf("no memory controller delegated to terp's cgroup (%s)", parent);
		goto out;
	}
	cg = xcalloc(1, sizeof *cg);
	cg->procs_fd = -1;
	cg->path = xasprintf("%s/%s", parent, name);
	if (mkdir(cg->path, 0755) < 0 && errno != EEXIST) {
		*why = xasprintf("cannot create %s: %s", cg->path, strerror(errno));
		goto fail;
	}
	snprintf(v, sizeof v, "%llu", (unsigned long long)memory);
	if (write_file(cg->path, "memory.max", v) < 0) {
		*why = xasprintf("cannot set memory.max: %s", strerror(errno));
		goto fail;
	}
	/* Best effort: older kernels lack some of these files. */
	write_file(cg->path, "memory.swap.max", "0");
	write_file(cg->path, "memory.oom.group", "1");
	snprintf(v, sizeof v, "%ld", pids);
	write_file(cg->path, "pids.max", v);
	text = xasprintf("%s/cgroup.procs", cg->path);
	cg->procs_fd = open(text, O_WRONLY | O_CLOEXEC);
	free(text);
	if (cg->procs_fd < 0) {
		*why = xasprintf("cannot open cgroup.procs: %s", strerror(errno));
		goto fail;
	}
	goto out;
fail:
	sandbox_cgroup_destroy(cg);
	cg = NULL;
out:
	free(ctl);
	return cg;
}

int
sandbox_cgroup_procs_fd(const struct sandbox_cgroup *cg)
{
	return cg ? cg->procs_fd : -1;
}

long
sandbox_cgroup_oom_kills(const struct sandbox_cgroup *cg)
{
	char *path, *text, *p;
	long n = -1;

	if (cg == NULL)
		return -1;
	path = xasprintf("%s/memory.events", cg->path);
	text = read_file(path, 4096, NULL);
	free(path);
	if (text && (p = strstr(text, "oom_kill ")) != NULL)
		n = strtol(p + 9, NULL, 10);
	free(text);
	return n;
}

void
sandbox_cgroup_kill(struct sandbox_cgroup *cg)
{
	char *path, *text;

	if (cg == NULL)
		return;
	if (write_file(cg->path, "cgroup.kill", "1") == 0)
		return;
	/* Before Linux 5.14: signal every member. */
	path = xasprintf("%s/cgroup.procs", cg->path);
	text = read_file(path, 1 << 20, NULL);
	free(path);
	for (char *p = text; p && *p; ) {
		long pid = strtol(p, &p, 10);
		if (pid > 1)
			kill((pid_t)pid, SIGKILL);
		while (*p == '\n')
			p++;
	}
	free(text);
}

void
sandbox_cgroup_destroy(struct sandbox_cgroup *cg)
{
	if (cg == NULL)
		return;
	sandbox_cgroup_kill(cg);
	if (cg->procs_fd >= 0)
		close(cg->procs_fd);
	/* The kill is asynchronous: a few tries until the group is empty. */
	for (int i = 0; i < 50 && rmdir(cg->path) < 0 && errno == EBUSY; i++)
		usleep(2000);
	free(cg->path);
	free(cg);
}
