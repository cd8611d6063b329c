/* sandbox_uid: the unprivileged uid a root terp runs each sandbox under.
 * One uid per live session, taken from a reserved range and held with a
 * lock file (flock) for the session's life, so two sessions never share
 * a uid (RLIMIT_NPROC counts per uid) and no session runs as an account
 * the system knows (NSS users and groups) or as a uid that owns a
 * process. The range, 2100000000-2100065535, lies above SSSD's default
 * id-mapping range (200000-2000200000), outside systemd's container
 * (524288-1879048191) and foreign ranges, and below 2^31, which some
 * tools treat as negative. */
#ifndef TERP_SANDBOX_UID_H
#define TERP_SANDBOX_UID_H

#include <sys/types.h>

#define SANDBOX_UID_FIRST	2100000000u
#define SANDBOX_UID_COUNT	65536u

struct sandbox_uid_pool {
	uid_t		 first;		/* the range: first .. first + count - 1 */
	unsigned	 count;
	unsigned	 start;		/* offset of the first candidate tried */
	const char	*lockdir;	/* holds one lock file per uid */
	/* Whether uid is in use by something other than terp (an NSS
	 * user or group, a process). NULL: sandbox_uid_in_use. */
	int		(*in_use)(uid_t uid, void *arg);
	void		*arg;
};

/* Fills p with the reserved range, a random start, the lock folder
 * /run/terp/uids (or /var/lib/terp/uids when /run is not writable) and
 * sandbox_uid_in_use. */
void sandbox_uid_default(struct sandbox_uid_pool *p);

/* Takes a free uid: the first candidate from start (wrapping) whose
 * lock file it can lock and that in_use says is free. Creates lockdir
 * (0700) when missing. On success *uid is the uid and *lockfd the open,
 * locked, close-on-exec lock file: closing it releases the uid. Returns
 * 0, or -1 with a new message in *err (caller frees). */
int sandbox_uid_take(const struct sandbox_uid_pool *p, uid_t *uid, int *lockfd,
    char **err);

/* Gives the uid back: unlinks the lock file (while still holding the
 * lock) and closes it. lockfd -1 is fine. A terp that dies without this
 * still frees the uid (the kernel drops the lock); the file stays. */
void sandbox_uid_release(int lockfd);

/* The default in_use check: an NSS user or group with this id, or a
 * process whose effective uid is it. */
int sandbox_uid_in_use(uid_t uid, void *arg);

#endif
