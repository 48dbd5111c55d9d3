/*
 * db_reach: the start-up selection is an ordinary pool job (db_pool.h) that
 * frees itself: it runs when a thread is free (at once at start), and its one
 * line is written from that thread. Once musicd stops, it says nothing: a job
 * the pool answers without running it learnt nothing, and one that ran would
 * only add a line after the reason musicd stops.
 */
#include "db/db_reach.h"

#include <mongoc/mongoc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/log.h"

/* "host:port (type)" fits in this, as DB_DETAIL_MAX holds a driver's message. */
#define SERVER_NAME_MAX 300
/* libmongoc's own serverSelectionTimeoutMS, for a URI without one (db_pool_make_uri sets it). */
#define DRIVER_SELECTION_TIMEOUT_MS 30000

struct reach_job {
	struct db_job job; /* first: the pool hands back &job */
	struct db_pool *pool;
	bool ran;
	unsigned timeout_ms;
	char server[SERVER_NAME_MAX];
};

/* serverSelectionTimeoutMS as the URI (with db_pool_make_uri's defaults) sets it. */
static unsigned selection_timeout_ms(const mongoc_uri_t *uri)
{
	int32_t timeout = mongoc_uri_get_option_as_int32(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS,
							 DRIVER_SELECTION_TIMEOUT_MS);
	return timeout > 0 ? (unsigned)timeout : 0;
}

/* The selected server as "host:port (type)"; destroys it. */
static void describe(mongoc_server_description_t *selected, char *out, size_t out_size)
{
	snprintf(out, out_size, "%s (%s)", mongoc_server_description_host(selected)->host_and_port,
		 mongoc_server_description_type(selected));
	mongoc_server_description_destroy(selected);
}

static void run_reach(struct db_job *job, const struct db_thread *thread)
{
	struct reach_job *reach = (struct reach_job *)job;
	bson_error_t error;
	reach->ran = true;
	reach->timeout_ms = selection_timeout_ms(mongoc_client_get_uri(thread->client));
	/* The read preference the lookups read with (the URI's), so the answer is theirs. */
	mongoc_server_description_t *selected = mongoc_client_select_server(
		thread->client, false, mongoc_collection_get_read_prefs(thread->tracks), &error);
	if (selected == NULL) {
		job->status = LOOKUP_UNAVAILABLE;
		snprintf(job->detail, sizeof(job->detail), "%.250s", error.message);
		return;
	}
	describe(selected, reach->server, sizeof(reach->server));
	job->status = LOOKUP_FOUND;
}

static void reach_done(struct db_job *job)
{
	struct reach_job *reach = (struct reach_job *)job;
	/* Once musicd stops, what the database said no longer matters. */
	bool heard = reach->ran && !db_pool_stopping(reach->pool);
	if (heard && job->status == LOOKUP_FOUND)
		log_info("database: reached %s", reach->server);
	else if (heard)
		log_warn("database: no server could be selected within %u ms at start (%s); track "
			 "requests get 503 until one can, and musicd keeps trying",
			 reach->timeout_ms, job->detail);
	free(reach);
}

int db_reach_at_start(struct db_pool *pool)
{
	struct reach_job *reach = calloc(1, sizeof(*reach));
	if (reach == NULL)
		return -1;
	reach->pool = pool;
	reach->job.run = run_reach;
	reach->job.done = reach_done;
	/* Its time to wait for a free thread (at start every one is free); the selection's own is
	   the URI's. */
	reach->job.deadline = clock_deadline_after(db_pool_timeout_ms(pool));
	if (db_pool_submit(pool, &reach->job) < 0) {
		free(reach);
		return -1;
	}
	return 0;
}

int db_reach_check(const struct config *config, char *server, size_t server_size, char *error,
		   size_t error_size)
{
	char reason[CONFIG_ERROR_MAX];
	bson_error_t bson_error;
	int status = -1;
	mongoc_uri_t *uri = db_pool_make_uri(config, 1, reason, sizeof(reason));
	if (uri == NULL) {
		snprintf(error, error_size, "%s", reason);
		return -1;
	}
	unsigned timeout_ms = selection_timeout_ms(uri);
	mongoc_client_t *client = mongoc_client_new_from_uri_with_error(uri, &bson_error);
	mongoc_uri_destroy(uri);
	if (client == NULL) {
		snprintf(error, error_size, "mongodb-uri: %s", bson_error.message);
		return -1;
	}
	mongoc_client_set_error_api(client, MONGOC_ERROR_API_VERSION_2);
	mongoc_server_description_t *selected = mongoc_client_select_server(
		client, false, mongoc_client_get_read_prefs(client), &bson_error);
	if (selected == NULL) {
		snprintf(error, error_size, "database: no server could be selected within %u ms (%s)",
			 timeout_ms, bson_error.message);
	} else {
		describe(selected, server, server_size);
		status = 0;
	}
	mongoc_client_destroy(client);
	return status;
}
