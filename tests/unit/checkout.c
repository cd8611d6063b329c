/* The unit tests read files of the checkout by relative path
 * (examples/demo.json, themes/, tests/fake_model.py): whatever folder
 * build/unit-tests is started from, they run in the checkout it was
 * built in, found from the binary's own path. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	char exe[4096], *s;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

	(void)set;
	if (n <= 0)
		return;
	exe[n] = '\0';
	for (int up = 0; up < 2; up++)		/* unit-tests, then build/ */
		if ((s = strrchr(exe, '/')) != NULL)
			*s = '\0';
	if (exe[0] == '/' && chdir(exe) != 0)
		fprintf(stderr, "unit-tests: cannot enter the checkout %s\n", exe);
}
