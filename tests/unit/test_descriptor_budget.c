/*
 * Unit tests for server/ops/descriptor_budget.h: how many workers and connections
 * a descriptor limit holds, and when it holds too little to start.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ops/descriptor_budget.h"

/* The defaults of musicd's option table: 8 lookup threads, 1000 cached files. */
static struct descriptor_budget_input defaults(unsigned long long limit, unsigned workers,
					       unsigned default_workers)
{
	struct descriptor_budget_input input = {
		.limit = limit,
		.workers = workers,
		.default_workers = default_workers,
		.lookup_threads = 8,
		.open_file_cache_entries = 1000,
		.max_connections = 0,
		.max_connections_ceiling = 1000000,
	};
	return input;
}

/* 64 reserved + 8 lookup threads * 2 + 1000 cached files */
#define FIXED 1080ULL

static void test_a_roomy_limit_keeps_one_worker_per_cpu(void **state)
{
	(void)state;
	struct descriptor_budget_input input = defaults(20000, 0, 256);
	struct descriptor_budget budget;
	char error[512] = "";
	assert_int_equal(descriptor_budget_plan(&input, &budget, error, sizeof(error)), 0);
	assert_int_equal(budget.workers, 256);
	assert_false(budget.workers_lowered);
	assert_int_equal(budget.max_connections, 20000 - FIXED - 256 * DESCRIPTORS_PER_WORKER);
}

static void test_a_tight_limit_lowers_the_default_to_half_of_what_is_left(void **state)
{
	(void)state;
	struct descriptor_budget_input input = defaults(1500, 0, 256);
	struct descriptor_budget budget;
	char error[512] = "";
	assert_int_equal(descriptor_budget_plan(&input, &budget, error, sizeof(error)), 0);
	/* 420 left: 42 workers hold 210, the connections keep the other 210 */
	assert_int_equal(budget.workers, 42);
	assert_true(budget.workers_lowered);
	assert_int_equal(budget.max_connections, 1500 - FIXED - 42 * DESCRIPTORS_PER_WORKER);
}

static void test_a_given_worker_count_is_kept_while_it_fits(void **state)
{
	(void)state;
	struct descriptor_budget_input input = defaults(1500, 80, 256);
	struct descriptor_budget budget;
	char error[512] = "";
	assert_int_equal(descriptor_budget_plan(&input, &budget, error, sizeof(error)), 0);
	assert_int_equal(budget.workers, 80);
	assert_false(budget.workers_lowered);
	assert_int_equal(budget.max_connections, 1500 - FIXED - 80 * DESCRIPTORS_PER_WORKER);
}

static void test_a_given_worker_count_that_does_not_fit_is_refused(void **state)
{
	(void)state;
	struct descriptor_budget_input input = defaults(1500, 256, 256);
	struct descriptor_budget budget;
	char error[512] = "";
	assert_int_equal(descriptor_budget_plan(&input, &budget, error, sizeof(error)), -1);
	assert_non_null(strstr(error, "descriptor limit 1500 is too low"));
	assert_non_null(strstr(error, "256 workers (1280 descriptors)"));
	assert_non_null(strstr(error, "--workers"));
}

static void test_a_limit_below_the_fixed_share_is_refused_even_for_one_worker(void **state)
{
	(void)state;
	struct descriptor_budget_input input = defaults(1024, 0, 2);
	struct descriptor_budget budget;
	char error[512] = "";
	assert_int_equal(descriptor_budget_plan(&input, &budget, error, sizeof(error)), -1);
	assert_non_null(strstr(error, "1 worker (5 descriptors)"));
	assert_non_null(strstr(error, "1000 cached files (1080)"));
	assert_non_null(strstr(error, "--open-file-cache-entries"));
}

static void test_the_exact_edge_leaves_one_connection(void **state)
{
	(void)state;
	struct descriptor_budget_input input =
	    defaults(FIXED + 3 * DESCRIPTORS_PER_WORKER + 1, 3, 3);
	struct descriptor_budget budget;
	char error[512] = "";
	assert_int_equal(descriptor_budget_plan(&input, &budget, error, sizeof(error)), 0);
	assert_int_equal(budget.max_connections, 1);
	input.limit--;
	assert_int_equal(descriptor_budget_plan(&input, &budget, error, sizeof(error)), -1);
}

static void test_a_given_connection_cap_and_the_ceiling_are_kept(void **state)
{
	(void)state;
	struct descriptor_budget_input input = defaults(20000, 2, 2);
	input.max_connections = 50000; /* above what fits: the accept path handles EMFILE */
	struct descriptor_budget budget;
	char error[512] = "";
	assert_int_equal(descriptor_budget_plan(&input, &budget, error, sizeof(error)), 0);
	assert_int_equal(budget.max_connections, 50000);
	input.max_connections = 0;
	input.max_connections_ceiling = 100;
	assert_int_equal(descriptor_budget_plan(&input, &budget, error, sizeof(error)), 0);
	assert_int_equal(budget.max_connections, 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_roomy_limit_keeps_one_worker_per_cpu),
		cmocka_unit_test(test_a_tight_limit_lowers_the_default_to_half_of_what_is_left),
		cmocka_unit_test(test_a_given_worker_count_is_kept_while_it_fits),
		cmocka_unit_test(test_a_given_worker_count_that_does_not_fit_is_refused),
		cmocka_unit_test(test_a_limit_below_the_fixed_share_is_refused_even_for_one_worker),
		cmocka_unit_test(test_the_exact_edge_leaves_one_connection),
		cmocka_unit_test(test_a_given_connection_cap_and_the_ceiling_are_kept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
