/*
 * Unit tests for server/privileges.h: privileges_parse splits --user's
 * "USER" or "USER:GROUP" and refuses an empty part, a second ':' or a part
 * too long for its buffer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "privileges.h"

static int parse(const char *spec, char *user, char *group)
{
	return privileges_parse(spec, user, PRIVILEGES_NAME_MAX, group, PRIVILEGES_NAME_MAX);
}

static void assert_refused(const char *spec)
{
	char user[PRIVILEGES_NAME_MAX], group[PRIVILEGES_NAME_MAX];
	if (parse(spec, user, group) != -1)
		fail_msg("privileges_parse(\"%s\") accepted it", spec);
}

static void test_a_user_alone_has_no_group(void **state)
{
	(void)state;
	char user[PRIVILEGES_NAME_MAX], group[PRIVILEGES_NAME_MAX];
	assert_int_equal(parse("musicd", user, group), 0);
	assert_string_equal(user, "musicd");
	assert_string_equal(group, "");
}

static void test_user_colon_group_gives_both(void **state)
{
	(void)state;
	char user[PRIVILEGES_NAME_MAX], group[PRIVILEGES_NAME_MAX];
	assert_int_equal(parse("musicd:audio", user, group), 0);
	assert_string_equal(user, "musicd");
	assert_string_equal(group, "audio");
}

static void test_an_empty_user_or_group_is_refused(void **state)
{
	(void)state;
	assert_refused("");
	assert_refused(":audio");
	assert_refused("musicd:");
	assert_refused(":");
}

static void test_a_second_colon_is_refused(void **state)
{
	(void)state;
	assert_refused("musicd:audio:x");
	assert_refused("musicd::audio");
}

static void test_a_name_longer_than_its_buffer_is_refused(void **state)
{
	(void)state;
	char user[8], group[8];
	assert_int_equal(privileges_parse("abcdefg:hijklmn", user, sizeof(user), group,
					  sizeof(group)),
			 0);
	assert_int_equal(privileges_parse("abcdefgh", user, sizeof(user), group, sizeof(group)),
			 -1);
	assert_int_equal(privileges_parse("a:abcdefgh", user, sizeof(user), group, sizeof(group)),
			 -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_user_alone_has_no_group),
		cmocka_unit_test(test_user_colon_group_gives_both),
		cmocka_unit_test(test_an_empty_user_or_group_is_refused),
		cmocka_unit_test(test_a_second_colon_is_refused),
		cmocka_unit_test(test_a_name_longer_than_its_buffer_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
