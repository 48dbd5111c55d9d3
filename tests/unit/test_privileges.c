/*
 * Unit tests for server/ops/privileges.h: privileges_parse splits --user's
 * "USER" or "USER:GROUP" and refuses an empty part, a second ':' or a part
 * too long for its buffer; privileges_check_as runs a check in a child
 * process as the target user (here the one running the test, so the drop is a
 * no-op and the test needs no root) and carries its verdict and message back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops/privileges.h"

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

/* The user running the test, as privileges_resolve would give it. */
static struct privileges current_user(void)
{
	struct privileges self = {.uid = getuid(), .gid = getgid()};
	struct passwd *entry = getpwuid(self.uid);
	assert_non_null(entry);
	snprintf(self.user, sizeof(self.user), "%s", entry->pw_name);
	return self;
}

static int marker; /* set by checks: 0 in the test's own process shows they ran elsewhere */

static int check_passes(const void *arg, char *error, size_t error_size)
{
	(void)error;
	(void)error_size;
	marker = 1;
	return getpid() == *(const pid_t *)arg ? -1 : 0; /* fails if it ran in the caller */
}

static int check_fails(const void *arg, char *error, size_t error_size)
{
	marker = 1;
	snprintf(error, error_size, "spool %s: not writable", (const char *)arg);
	return -1;
}

static int check_dies(const void *arg, char *error, size_t error_size)
{
	(void)arg;
	(void)error;
	(void)error_size;
	_exit(3);
}

static void test_check_as_runs_the_check_in_another_process(void **state)
{
	(void)state;
	struct privileges self = current_user();
	char error[PRIVILEGES_MESSAGE_MAX] = "";
	pid_t caller = getpid();
	marker = 0;
	assert_int_equal(privileges_check_as(&self, check_passes, &caller, error, sizeof(error)),
			 0);
	assert_int_equal(marker, 0);
}

static void test_check_as_carries_the_checks_message_back(void **state)
{
	(void)state;
	struct privileges self = current_user();
	char error[PRIVILEGES_MESSAGE_MAX] = "";
	marker = 0;
	assert_int_equal(privileges_check_as(&self, check_fails, "/srv/spool", error, sizeof(error)),
			 -1);
	assert_string_equal(error, "spool /srv/spool: not writable");
	assert_int_equal(marker, 0);
}

static void test_check_as_cuts_a_long_message_to_the_buffer(void **state)
{
	(void)state;
	struct privileges self = current_user();
	char error[16];
	assert_int_equal(privileges_check_as(&self, check_fails, "/srv/spool", error, sizeof(error)),
			 -1);
	assert_string_equal(error, "spool /srv/spoo");
}

static void test_check_as_says_so_when_the_check_ends_without_a_verdict(void **state)
{
	(void)state;
	struct privileges self = current_user();
	char error[PRIVILEGES_MESSAGE_MAX] = "";
	assert_int_equal(privileges_check_as(&self, check_dies, NULL, error, sizeof(error)), -1);
	char expected[PRIVILEGES_MESSAGE_MAX + 64];
	snprintf(expected, sizeof(expected), "--user %s: the check as that user did not finish",
		 self.user);
	assert_string_equal(error, expected);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_user_alone_has_no_group),
		cmocka_unit_test(test_user_colon_group_gives_both),
		cmocka_unit_test(test_an_empty_user_or_group_is_refused),
		cmocka_unit_test(test_a_second_colon_is_refused),
		cmocka_unit_test(test_a_name_longer_than_its_buffer_is_refused),
		cmocka_unit_test(test_check_as_runs_the_check_in_another_process),
		cmocka_unit_test(test_check_as_carries_the_checks_message_back),
		cmocka_unit_test(test_check_as_cuts_a_long_message_to_the_buffer),
		cmocka_unit_test(test_check_as_says_so_when_the_check_ends_without_a_verdict),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
