/* main: parses the command line and hands over to a frontend. */
#include <stdio.h>

int
main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "terp: not built yet\n");
	return 2;
}
