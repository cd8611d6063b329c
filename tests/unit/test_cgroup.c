#include <criterion/criterion.h>
#include <stdlib.h>

#include "terp/cgroup.h"

Test(cgroup, parses_self_from_a_hybrid_hierarchy)
{
	char *p = cgroup_parse_self("12:pids:/user.slice\n1:name=systemd:/x\n0::/user.slice/terp.scope\n");
	cr_assert_str_eq(p, "/user.slice/terp.scope");
	free(p);
	cr_assert_null(cgroup_parse_self("4:memory:/\n3:cpu:/\n"));
}

Test(cgroup, finds_the_cgroup2_mount)
{
	const char *mi =
	    "25 30 0:22 / /sys rw,nosuid - sysfs sysfs rw\n"
	    "35 25 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
	    "36 25 0:31 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw\n";
	char *m = cgroup_parse_mount(mi);
	cr_assert_str_eq(m, "/sys/fs/cgroup/unified");
	free(m);
	cr_assert_null(cgroup_parse_mount("25 30 0:22 / /sys rw - sysfs sysfs rw\n"));
}

Test(cgroup, controller_lists_match_whole_words)
{
	cr_assert(cgroup_has_controller("cpu io memory pids\n", "memory"));
	cr_assert(cgroup_has_controller("memory", "memory"));
	cr_assert_not(cgroup_has_controller("cpu hugetlb", "memory"));
	cr_assert_not(cgroup_has_controller("memoryx pidsy", "pids"));
}

Test(cgroup, unavailable_here_says_why)
{
	/* On a machine with a delegated controller this creates a group;
	 * either way the call must answer cleanly. */
	char *why = NULL;
	struct cgroup *cg = cgroup_create("terp-unit-test", 64 << 20, 32, &why);
	if (cg == NULL) {
		cr_assert_not_null(why);
		cr_assert(why[0] != '\0');
		free(why);
	} else {
		cr_assert_geq(cgroup_procs_fd(cg), 0);
		cr_assert_geq(cgroup_oom_kills(cg), 0);
		cgroup_destroy(cg);
	}
}
