/* sandbox_cgroup: a per-session cgroup v2 when the machine delegates one
 * to us, the only real bound on all of a session's memory (memfd and
 * tmpfs pages included, which no rlimit counts) and its process count.
 * Optional: where there is no usable v2 memory controller (a hybrid
 * hierarchy, no delegation), terp falls back to rlimits and says so once. */
#ifndef TERP_SANDBOX_CGROUP_H
#define TERP_SANDBOX_CGROUP_H

#include <stddef.h>
#include <stdint.h>

struct sandbox_cgroup;

/* Creates a child cgroup named name under terp's own cgroup, with
 * memory.max = memory, memory.swap.max = 0, memory.oom.group = 1 and
 * pids.max = pids. Returns NULL with *why (a new string) when cgroup v2
 * memory control is not available here. */
struct sandbox_cgroup *sandbox_cgroup_create(const char *name, uint64_t memory,
    long pids, char **why);

/* The same under a given parent cgroup directory instead of terp's own
 * (sandbox_cgroup_create finds that one and calls this). A test seam:
 * the unit tests point it at a fake tree in a temporary folder. */
struct sandbox_cgroup *sandbox_cgroup_create_in(const char *parent, const char *name,
    uint64_t memory, long pids, char **why);

/* The fd of the cgroup's cgroup.procs, opened for writing: a forked
 * child writes "0" to it to move itself in before exec. -1 if none. */
int sandbox_cgroup_procs_fd(const struct sandbox_cgroup *cg);

/* The count of OOM kills in the cgroup so far (memory.events oom_kill),
 * or -1 when unknown. */
long sandbox_cgroup_oom_kills(const struct sandbox_cgroup *cg);

/* Kills every process in the cgroup (cgroup.kill, or SIGKILL to each). */
void sandbox_cgroup_kill(struct sandbox_cgroup *cg);

/* Kills, removes the cgroup and frees. NULL is fine. */
void sandbox_cgroup_destroy(struct sandbox_cgroup *cg);

/* Pure helpers, exposed for tests. */
/* The cgroup v2 path ("/user.slice/...") from /proc/self/cgroup text;
 * a new string, or NULL when there is no "0::" line. */
char *sandbox_cgroup_parse_self(const char *proc_self_cgroup);
/* The cgroup2 mount point from /proc/self/mountinfo text; a new string
 * or NULL. */
char *sandbox_cgroup_parse_mount(const char *mountinfo);
/* Whether a space-separated controller list holds name. */
int sandbox_cgroup_has_controller(const char *list, const char *name);

#endif
