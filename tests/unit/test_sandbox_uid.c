/* Unit tests for the sandbox uid allocator (sandbox_uid.c): a uid whose lock
 * another session holds is skipped, so is one the in-use check names,
 * the lock is held until the fd closes, and the default check knows
 * real accounts and uids that own processes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "terp/sandbox_uid.h"

static char dir[] = "/tmp/terp-uidpool-XXXXXX";

static void
setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
}

static void
teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

static int
never(uid_t uid, void *arg)
{
	(void)uid;
	(void)arg;
	return 0;
}

/* arg: a uid to call taken (as NSS would for a real account). */
static int
one_taken(uid_t uid, void *arg)
{
	return uid == *(uid_t *)arg;
}

static struct sandbox_uid_pool
pool(unsigned count, int (*in_use)(uid_t, void *), void *arg)
{
	struct sandbox_uid_pool p;

	memset(&p, 0, sizeof p);
	p.first = 3000000000u;
	p.count = count;
	p.start = 0;
	p.lockdir = dir;
	p.in_use = in_use;
	p.arg = arg;
	return p;
}

/* Holds the lock of uid u in a separate open file description, as
 * another terp process would. */
static int
hold(uid_t u)
{
	char path[256];
	int fd;

	snprintf(path, sizeof path, "%s/%u", dir, (unsigned)u);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(flock(fd, LOCK_EX | LOCK_NB), 0);
	return fd;
}

Test(sandbox_uid, takes_the_first_free_uid_and_holds_its_lock, .init = setup, .fini = teardown)
{
	struct sandbox_uid_pool p = pool(4, never, NULL);
	uid_t u = 0, v = 0;
	int fd = -1, fd2 = -1;
	char *err = NULL;

	cr_assert_eq(sandbox_uid_take(&p, &u, &fd, &err), 0, "%s", err ? err : "");
	cr_assert_eq(u, 3000000000u);
	/* While fd is open the same uid is not handed out again. */
	cr_assert_eq(sandbox_uid_take(&p, &v, &fd2, &err), 0);
	cr_assert_eq(v, 3000000001u);
	close(fd2);
	close(fd);
	/* Closing releases it. */
	cr_assert_eq(sandbox_uid_take(&p, &v, &fd2, &err), 0);
	cr_assert_eq(v, 3000000000u);
	close(fd2);
}

Test(sandbox_uid, a_lock_held_by_another_session_moves_to_the_next, .init = setup, .fini = teardown)
{
	struct sandbox_uid_pool p = pool(4, never, NULL);
	int held = hold(3000000000u), fd = -1;
	uid_t u = 0;
	char *err = NULL;

	cr_assert_eq(sandbox_uid_take(&p, &u, &fd, &err), 0, "%s", err ? err : "");
	cr_assert_eq(u, 3000000001u);
	close(fd);
	close(held);
}

Test(sandbox_uid, a_uid_nss_knows_is_skipped, .init = setup, .fini = teardown)
{
	uid_t known = 3000000000u, u = 0;
	struct sandbox_uid_pool p = pool(4, one_taken, &known);
	int fd = -1;
	char *err = NULL;

	cr_assert_eq(sandbox_uid_take(&p, &u, &fd, &err), 0, "%s", err ? err : "");
	cr_assert_eq(u, 3000000001u);
	close(fd);
	/* ...and its lock is not kept: a later call can look at it again. */
	known = 0;
	cr_assert_eq(sandbox_uid_take(&p, &u, &fd, &err), 0);
	cr_assert_eq(u, 3000000000u);
	close(fd);
}

Test(sandbox_uid, start_wraps_around_the_range, .init = setup, .fini = teardown)
{
	struct sandbox_uid_pool p = pool(3, never, NULL);
	int held = hold(3000000002u), fd = -1;
	uid_t u = 0;
	char *err = NULL;

	p.start = 2;
	cr_assert_eq(sandbox_uid_take(&p, &u, &fd, &err), 0);
	cr_assert_eq(u, 3000000000u);
	close(fd);
	close(held);
}

Test(sandbox_uid, a_full_range_fails_with_one_line, .init = setup, .fini = teardown)
{
	struct sandbox_uid_pool p = pool(2, never, NULL);
	int a = hold(3000000000u), b = hold(3000000001u), fd = -1;
	uid_t u = 0;
	char *err = NULL;

	cr_assert_eq(sandbox_uid_take(&p, &u, &fd, &err), -1);
	cr_assert_not_null(err);
	cr_assert_null(strchr(err, '\n'));
	cr_assert(strstr(err, "no free sandbox uid") != NULL, "%s", err);
	free(err);
	close(a);
	close(b);
}

Test(sandbox_uid, the_default_check_knows_accounts_and_process_owners)
{
	cr_assert(sandbox_uid_in_use(0, NULL), "root is an NSS user");
	cr_assert(sandbox_uid_in_use(getuid(), NULL), "we own a process");
	/* Far inside the reserved range, nothing should know this one. */
	cr_assert_not(sandbox_uid_in_use(SANDBOX_UID_FIRST + 65000u, NULL));
}

Test(sandbox_uid, the_default_range_avoids_known_ranges)
{
	struct sandbox_uid_pool p;

	sandbox_uid_default(&p);
	cr_assert_eq(p.first, SANDBOX_UID_FIRST);
	cr_assert_lt(p.start, p.count);
	/* above SSSD's default id-mapping range, below 2^31 */
	cr_assert_gt((unsigned long)p.first, 2000200000ul);
	cr_assert_lt((unsigned long)p.first + p.count, 2147483648ul);
}

Test(sandbox_uid, release_removes_the_lock_file_and_frees_the_uid, .init = setup, .fini = teardown)
{
	struct sandbox_uid_pool p = pool(2, never, NULL);
	char path[256];
	uid_t u = 0, v = 0;
	int fd = -1, fd2 = -1;
	char *err = NULL;

	cr_assert_eq(sandbox_uid_take(&p, &u, &fd, &err), 0);
	snprintf(path, sizeof path, "%s/%u", dir, (unsigned)u);
	cr_assert_eq(access(path, F_OK), 0);
	sandbox_uid_release(fd);
	cr_assert_neq(access(path, F_OK), 0, "the lock file is still there");
	cr_assert_eq(sandbox_uid_take(&p, &v, &fd2, &err), 0);
	cr_assert_eq(v, u);
	close(fd2);
}
