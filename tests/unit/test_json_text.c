/* Unit tests for json_text: the text is byte for byte what
 * cJSON_PrintUnformatted prints, for every kind of value, escapes and
 * numbers of every size. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "terp/json_text.h"

static void
same(const cJSON *v)
{
	char *want = cJSON_PrintUnformatted(v);
	struct buf b;

	buf_init(&b, 1 << 20);
	cr_assert_eq(json_text(&b, v), 0);
	cr_assert_str_eq(buf_str(&b), want);
	buf_free(&b);
	free(want);
}

Test(json_text, equals_cjson)
{
	static const double nums[] = { 0, -0.0, 1, -1, 2.5, -2.5, 0.1, 1.0 / 3,
	    2147483647, 2147483648.0, -2147483648.0, -2147483649.0,
	    1764573556123.0, 999999999999999.0, 1e15, 1e16, -1e15, 1e300,
	    1e-300, 5e-324, DBL_MAX, 123456789.125, 0.30000000000000004 };
	cJSON *o = cJSON_CreateObject(), *a = cJSON_CreateArray(), *x;
	char ctl[40];

	for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
		x = cJSON_CreateNumber(nums[i]);
		same(x);
		cJSON_AddItemToArray(a, x);
	}
	for (int i = 1; i < 32; i++)
		ctl[i - 1] = (char)i;
	memcpy(ctl + 31, "\"\\/\x7f\xc3\xa9", 7);
	ctl[38] = '\0';
	cJSON_AddStringToObject(o, "t", "sent");
	cJSON_AddStringToObject(o, ctl, ctl);
	cJSON_AddStringToObject(o, "", "");
	cJSON_AddItemToObject(o, "nums", a);
	cJSON_AddItemToObject(o, "nan", cJSON_CreateNumber(NAN));
	cJSON_AddItemToObject(o, "inf", cJSON_CreateNumber(-INFINITY));
	cJSON_AddTrueToObject(o, "yes");
	cJSON_AddFalseToObject(o, "no");
	cJSON_AddNullToObject(o, "none");
	cJSON_AddItemToObject(o, "empty", cJSON_CreateObject());
	cJSON_AddItemToObject(o, "list", cJSON_CreateArray());
	x = cJSON_Parse("[{\"a\":[1,[2,{}],\"x\"]},[],null,\"caf\\u00e9 \\u2603\"]");
	cr_assert_not_null(x);
	cJSON_AddItemToObject(o, "deep", x);
	same(o);
	cJSON_Delete(o);
}

Test(json_text, stops_at_the_buffers_maximum)
{
	cJSON *s = cJSON_CreateString("0123456789");
	struct buf b;

	buf_init(&b, 8);
	cr_assert_eq(json_text(&b, s), -1);
	buf_free(&b);
	cJSON_Delete(s);
}

/* Debian's cJSON_InsertItemInArray inserts nothing in the middle */
Test(json_text, array_insert_anywhere)
{
	cJSON *a = cJSON_CreateArray();
	char *s;

	json_array_insert(a, 0, cJSON_CreateNumber(2));	/* empty: appended */
	json_array_insert(a, 0, cJSON_CreateNumber(0));	/* first */
	json_array_insert(a, 1, cJSON_CreateNumber(1));	/* middle */
	json_array_insert(a, 3, cJSON_CreateNumber(3));	/* the end */
	json_array_insert(a, 3, cJSON_CreateNumber(9));	/* before the last */
	s = cJSON_PrintUnformatted(a);
	cr_assert_str_eq(s, "[0,1,2,9,3]");
	cr_assert_eq(cJSON_GetArrayItem(a, 4)->valueint, 3);
	cr_assert_eq(a->child->prev, cJSON_GetArrayItem(a, 4));
	free(s);
	cJSON_Delete(a);
}

/* The getters answer only for the type asked, and take any input:
 * replies and frames are hostile. */
Test(json_text, getters_check_types)
{
	cJSON *o = cJSON_Parse("{\"s\":\"x\",\"n\":2.5,\"o\":{},\"a\":[1],"
	    "\"nan\":null,\"big\":1e300,\"S\":\"case\"}");
	double d = -1;

	cr_assert_not_null(o);
	cr_assert_str_eq(json_str(o, "s"), "x");
	cr_assert_null(json_str(o, "n"));
	cr_assert_null(json_str(o, "missing"));
	cr_assert_str_eq(json_str(o, "S"), "case");
	cr_assert_null(json_get(o, "s2"));
	cr_assert_not_null(json_obj(o, "o"));
	cr_assert_null(json_obj(o, "a"));
	cr_assert_not_null(json_arr(o, "a"));
	cr_assert_null(json_arr(o, "o"));
	cr_assert_eq(json_num(o, "s", &d), -1);
	cr_assert_eq(d, -1);
	cr_assert_eq(json_num(o, "n", &d), 0);
	cr_assert_eq(d, 2.5);
	cr_assert_eq(json_num_in(o, "n", 0, 10, 7), 2.5);
	cr_assert_eq(json_num_in(o, "n", 3, 10, 7), 7);
	cr_assert_eq(json_num_in(o, "big", 0, 1e15, 7), 7);
	cr_assert_eq(json_num_in(o, "nan", 0, 1, 7), 7);
	/* Not an object: every getter answers as for a missing member. */
	cr_assert_null(json_str(json_get(o, "a"), "s"));
	cr_assert_null(json_get(NULL, "s"));
	cr_assert_eq(json_num_in(NULL, "n", 0, 10, 7), 7);
	/* Case matters: "s" is not "S". */
	cr_assert_str_neq(json_str(o, "s"), json_str(o, "S"));
	cJSON_Delete(o);
}
