/* kernel_seen: the remote out/ diff shared by the Jupyter and pool
 * backends. A file is fetched again only when its size or time moved,
 * or when either is unknown; one gone from a pruned listing is new when
 * it comes back. */
#include <criterion/criterion.h>

#include "terp/kernel_seen.h"

Test(kernel_seen, new_changed_and_same)
{
	struct kernel_seen s = { 0 };

	cr_assert(kernel_seen_empty(&s));
	kernel_seen_start(&s);
	cr_assert_eq(kernel_seen_changed(&s, "a.png", 10, "t1"), 1);
	cr_assert_eq(kernel_seen_changed(&s, "b.csv", 5, "t1"), 1);
	kernel_seen_prune(&s);
	cr_assert_not(kernel_seen_empty(&s));
	kernel_seen_start(&s);
	cr_assert_eq(kernel_seen_changed(&s, "a.png", 10, "t1"), 0);
	cr_assert_eq(kernel_seen_changed(&s, "b.csv", 6, "t1"), 1);	/* size */
	cr_assert_eq(kernel_seen_changed(&s, "c.txt", 1, "t2"), 1);
	kernel_seen_prune(&s);
	kernel_seen_start(&s);
	cr_assert_eq(kernel_seen_changed(&s, "a.png", 10, "t2"), 1);	/* time */
	cr_assert_eq(kernel_seen_changed(&s, "b.csv", 6, "t1"), 0);	/* as last seen */
	kernel_seen_clear(&s);
	cr_assert(kernel_seen_empty(&s));
}

Test(kernel_seen, unknown_size_or_time_is_never_the_same)
{
	struct kernel_seen s = { 0 };

	for (int i = 0; i < 3; i++) {
		kernel_seen_start(&s);
		cr_assert_eq(kernel_seen_changed(&s, "x", KERNEL_SEEN_SIZE_UNKNOWN, "t"), 1);
		cr_assert_eq(kernel_seen_changed(&s, "y", 3, NULL), 1);
	}
	kernel_seen_clear(&s);
}

Test(kernel_seen, pruned_files_come_back_new)
{
	struct kernel_seen s = { 0 };

	kernel_seen_start(&s);
	kernel_seen_changed(&s, "a", 1, "t");
	kernel_seen_changed(&s, "b", 1, "t");
	kernel_seen_prune(&s);
	kernel_seen_start(&s);			/* a was deleted */
	cr_assert_eq(kernel_seen_changed(&s, "b", 1, "t"), 0);
	kernel_seen_prune(&s);
	kernel_seen_start(&s);			/* ... and written again alike */
	cr_assert_eq(kernel_seen_changed(&s, "a", 1, "t"), 1);
	cr_assert_eq(kernel_seen_changed(&s, "b", 1, "t"), 0);
	/* not pruned (Jupyter's way): seen once stays seen */
	kernel_seen_start(&s);
	cr_assert_eq(kernel_seen_changed(&s, "b", 1, "t"), 0);
	kernel_seen_start(&s);
	cr_assert_eq(kernel_seen_changed(&s, "a", 1, "t"), 0);
	kernel_seen_clear(&s);
}
