/* The kernel's lifecycle edges that need no sandbox: a kernel that was
 * never started owns no descriptor, so freeing it closes none (it used
 * to close fd 0: the launcher's pipe and pidfd fields started at 0). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <unistd.h>

#include "terp/kernel.h"
#include "terp/loop.h"

Test(kernel, free_before_start_closes_no_descriptor)
{
	struct kernel_opts o;
	struct kernel_cbs cbs = { 0 };
	struct loop *l = loop_new();
	struct kernel *k;
	int fd = open("/dev/null", O_RDONLY);

	/* fd 0 must be open to see it closed: the lowest free number. */
	cr_assert(fd >= 0);
	if (fd != 0)
		close(fd);
	cr_assert_neq(fcntl(0, F_GETFD), -1, "fd 0 is not open before the test");
	kernel_opts_default(&o);
	o.session_dir = "/nonexistent/terp-unit";
	k = kernel_new(l, &o, &cbs, NULL);
	kernel_free(k);
	cr_assert_neq(fcntl(0, F_GETFD), -1, "kernel_free closed fd 0");
	loop_free(l);
}
