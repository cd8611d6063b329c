/* Unit tests of src/core/prompt.c: the note on the cells run by hand
 * tells each finished one once, also when it finishes after the cells
 * after it (prompt_hand_cells' start skips only what is told). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/notebook.h"

#include "../../src/core/prompt.h"

static void
finish(struct notebook *nb, int n)
{
	struct cell_result r = { .status = CELL_OK };

	notebook_cell_result(nb, n, &r);
}

Test(prompt, hand_cells_each_told_once_running_ones_later)
{
	struct notebook *nb = notebook_new();
	struct buf b;
	int from;

	buf_init(&b, 1 << 20);
	notebook_add_cell(nb, CELL_BY_USER, "x = 1", NULL);	/* [1] */
	finish(nb, 1);
	notebook_add_cell(nb, CELL_BY_MODEL, "m = 1", "call_1");	/* [2] */
	finish(nb, 2);
	notebook_add_cell(nb, CELL_BY_USER, "slow()", NULL);	/* [3] runs */
	notebook_cell(nb, 3)->status = CELL_RUNNING;
	notebook_add_cell(nb, CELL_BY_USER, "y = 2", NULL);	/* [4] */
	finish(nb, 4);

	from = prompt_hand_cells(nb, 4096, 1, &b);
	cr_assert_not_null(strstr(buf_str(&b), "[1]\n```python\nx = 1\n```"));
	cr_assert_not_null(strstr(buf_str(&b), "[4]\n```python\ny = 2\n```"));
	cr_assert_null(strstr(buf_str(&b), "m = 1"), "the model's cell is its own");
	cr_assert_null(strstr(buf_str(&b), "slow()"), "a running cell waits");
	cr_assert_eq(from, 3, "the next look starts at the running cell");

	buf_reset(&b);
	from = prompt_hand_cells(nb, 4096, from, &b);
	cr_assert_eq(b.len, 0, "nothing new: %s", buf_str(&b));
	cr_assert_eq(from, 3);

	finish(nb, 3);
	notebook_add_cell(nb, CELL_BY_USER, "z = 3", NULL);	/* [5] */
	finish(nb, 5);
	from = prompt_hand_cells(nb, 4096, from, &b);
	cr_assert_not_null(strstr(buf_str(&b), "slow()"), "told once it is over");
	cr_assert_not_null(strstr(buf_str(&b), "z = 3"));
	cr_assert_null(strstr(buf_str(&b), "x = 1"), "told only once");
	cr_assert_eq(from, 6, "all told: past the last cell");
	buf_free(&b);
	notebook_free(nb);
}
