/* workspace_copy: what staging copies into a session's data folder when
 * it cannot bind (a file or folder /load-ed into a running sandbox, a
 * file system that refuses the mount). Everything works on open
 * descriptors and follows nothing. Private to src/sandbox (workspace.c
 * is its one user). */
#ifndef TERP_WORKSPACE_COPY_H
#define TERP_WORKSPACE_COPY_H

#include <sys/types.h>

/* Copies the regular file in to out, keeping holes (SEEK_DATA/SEEK_HOLE;
 * copy_file_range first, by hand where it is refused). Returns 0 or -1
 * (errno set). */
int wscopy_file(int in, int out);
/* Copies the open folder in into the open folder out, at most
 * DIRSUM_DEPTH deep: regular files (holes kept), folders of the file
 * system dev, symlinks as they are; nothing followed. uid: the sandbox's
 * (0: terp's own); as root what is made is its group's to read. Returns
 * 0 or -1. */
int wscopy_tree(uid_t uid, int in, int out, dev_t dev, int depth);
/* Removes what wscopy_tree made under the open folder dfd (a failed
 * copy; nothing is followed). */
void wscopy_remove_tree(int dfd);

#endif
