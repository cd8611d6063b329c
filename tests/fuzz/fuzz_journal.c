/* libFuzzer target for the journal reader (resume trusts a file on disk
 * that a crash may have cut anywhere): any bytes load into a notebook or
 * fail with a reason; never a crash or a leak. */
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "terp/journal.h"
#include "terp/notebook.h"
#include "terp/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("journal", 0);
	struct notebook *nb;
	struct journal_meta meta = { 0 };
	char path[64], *err = NULL;

	if (fd < 0 || write_all(fd, data, size) < 0)
		abort();
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	nb = notebook_new();
	journal_load(path, nb, &meta, &err);
	journal_meta_free(&meta);
	notebook_free(nb);
	free(err);
	close(fd);
	return 0;
}
