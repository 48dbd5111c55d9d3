/*
 * Unit tests for import/summary.h: the summary line, its JSON form, and that
 * each refuses a buffer too small rather than printing a cut line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "summary.h"

static const struct summary example = {.added = 3, .updated = 1, .unchanged = 10, .pruned = 2,
				       .skipped = 4, .seconds = 0.4249};

static void test_text_summary(void **state)
{
	(void)state;
	char line[256];
	assert_int_equal(summary_format_text(&example, line, sizeof(line)), 0);
	assert_string_equal(line, "3 added, 1 updated, 10 unchanged, 2 pruned, 4 skipped in 0.42 s");
}

static void test_text_summary_of_a_dry_run_says_so(void **state)
{
	(void)state;
	struct summary dry = example;
	dry.dry_run = true;
	char line[256];
	assert_int_equal(summary_format_text(&dry, line, sizeof(line)), 0);
	assert_string_equal(line, "3 added, 1 updated, 10 unchanged, 2 pruned, 4 skipped in 0.42 s "
				  "(dry run: nothing written)");
}

static void test_json_summary(void **state)
{
	(void)state;
	char line[256];
	assert_int_equal(summary_format_json(&example, line, sizeof(line)), 0);
	assert_string_equal(line, "{\"added\":3,\"updated\":1,\"unchanged\":10,\"pruned\":2,"
				  "\"gone\":0,\"skipped\":4,\"seconds\":0.425,\"unconfirmed\":0,\"dry_run\":false}");
}

static void test_unconfirmed_writes_are_said_in_both_forms(void **state)
{
	(void)state;
	struct summary failed = example;
	failed.unconfirmed = 4000;
	char line[256];
	assert_int_equal(summary_format_text(&failed, line, sizeof(line)), 0);
	assert_string_equal(line, "3 added, 1 updated, 10 unchanged, 2 pruned, 4 skipped in 0.42 s; "
				  "4000 writes unconfirmed");
	assert_int_equal(summary_format_json(&failed, line, sizeof(line)), 0);
	assert_string_equal(line, "{\"added\":3,\"updated\":1,\"unchanged\":10,\"pruned\":2,"
				  "\"gone\":0,\"skipped\":4,\"seconds\":0.425,\"unconfirmed\":4000,"
				  "\"dry_run\":false}");
}

/* The text form leaves them to the note on stderr ("2 files gone: run with --prune ..."). */
static void test_files_gone_are_counted_in_the_json_form(void **state)
{
	(void)state;
	struct summary left = example;
	left.gone = 2;
	char line[256];
	assert_int_equal(summary_format_json(&left, line, sizeof(line)), 0);
	assert_string_equal(line, "{\"added\":3,\"updated\":1,\"unchanged\":10,\"pruned\":2,"
				  "\"gone\":2,\"skipped\":4,\"seconds\":0.425,\"unconfirmed\":0,"
				  "\"dry_run\":false}");
	assert_int_equal(summary_format_text(&left, line, sizeof(line)), 0);
	assert_string_equal(line, "3 added, 1 updated, 10 unchanged, 2 pruned, 4 skipped in 0.42 s");
}

static void test_short_buffers_are_refused(void **state)
{
	(void)state;
	char line[20];
	assert_int_equal(summary_format_text(&example, line, sizeof(line)), -1);
	assert_int_equal(summary_format_json(&example, line, sizeof(line)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_summary),
		cmocka_unit_test(test_text_summary_of_a_dry_run_says_so),
		cmocka_unit_test(test_json_summary),
		cmocka_unit_test(test_unconfirmed_writes_are_said_in_both_forms),
		cmocka_unit_test(test_files_gone_are_counted_in_the_json_form),
		cmocka_unit_test(test_short_buffers_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
