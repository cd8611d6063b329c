/* workspace_mount: a data file or folder the sandbox's bwrap cannot bind
 * itself, given to it as a mount instead (as root only). bwrap binds a
 * source by its path, resolved as the sandbox's uid, and the mount keeps
 * the file's owner and mode: a 0600 file of root's (or one under a 0700
 * folder) is out of the sandbox uid's reach, and was copied into every
 * session. Here terp, as root and in the host's mount namespace, clones
 * the open file into a detached mount that is read-only, nosuid, nodev
 * and noexec, and, when the sandbox's uid could not read it, idmapped
 * so that the file's owner and group show as that uid: the sandbox then
 * reads it as its owner would, and can change nothing (the mount is
 * read-only, which is locked once it enters the sandbox's namespace).
 * The launcher attaches it over the file's placeholder in the data
 * folder, in a mount namespace of its own (sandbox_launcher.c), so the
 * host's mount table never changes. Nothing is copied. */
#ifndef TERP_WORKSPACE_MOUNT_H
#define TERP_WORKSPACE_MOUNT_H

#include <sys/types.h>

/* A user namespace that maps uid to the host uid to, and gid to the
 * host gid to: the idmapping of a mount. Returns its fd (close-on-exec;
 * the namespace lives while it is open), or -1 with errno. Forks a
 * child that only waits (async-signal-safe: terp may have threads). */
int workspace_mount_userns(uid_t uid, gid_t gid, uid_t to);

/* A detached read-only, nosuid, nodev, noexec mount of the open file
 * or folder fd (one mount: nothing mounted below a folder comes along),
 * idmapped by the namespace userns_fd when it is not -1. Each launch
 * needs its own (attaching one consumes it). Returns its fd
 * (close-on-exec), or -1 with errno (ENOSYS, EPERM or EINVAL where the
 * kernel, a container or the file system refuses: the caller copies). */
int workspace_mount_clone(int fd, int userns_fd);

#endif
