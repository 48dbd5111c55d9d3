/*
 * lookup_monitor: the started, succeeded and failed callbacks. libmongoc calls
 * them on the thread that runs the command, inside the driver call, so the
 * read preference a lookup thread notes just before its call is the one of
 * the command being reported (a thread-local, never shared).
 */
#include "db/lookup_monitor.h"

#include <inttypes.h>

#include "base/log.h"

static __thread mongoc_read_mode_t reading_mode = MONGOC_READ_PRIMARY;

const char *lookup_read_mode_name(mongoc_read_mode_t mode)
{
	switch (mode) {
	case MONGOC_READ_PRIMARY:
		return "primary";
	case MONGOC_READ_PRIMARY_PREFERRED:
		return "primaryPreferred";
	case MONGOC_READ_SECONDARY:
		return "secondary";
	case MONGOC_READ_SECONDARY_PREFERRED:
		return "secondaryPreferred";
	case MONGOC_READ_NEAREST:
		return "nearest";
	}
	return "unknown";
}

void lookup_monitor_reading(const mongoc_read_prefs_t *prefs)
{
	reading_mode = prefs != NULL ? mongoc_read_prefs_get_mode(prefs) : MONGOC_READ_PRIMARY;
}

/* The filter's ObjectId _id as 24 hex digits, or "-" for a command without one. */
static void filter_id(const bson_t *command, char out[25])
{
	bson_iter_t iter;
	if (bson_iter_init(&iter, command) && bson_iter_find_descendant(&iter, "filter._id", &iter) &&
	    BSON_ITER_HOLDS_OID(&iter)) {
		bson_oid_to_string(bson_iter_oid(&iter), out);
		return;
	}
	out[0] = '-';
	out[1] = '\0';
}

static void on_started(const mongoc_apm_command_started_t *event)
{
	char id[25];
	filter_id(mongoc_apm_command_started_get_command(event), id);
	const mongoc_host_list_t *host = mongoc_apm_command_started_get_host(event);
	log_debug("mongodb: %s started: _id %s, server %s, read preference %s, request %" PRId64,
		  mongoc_apm_command_started_get_command_name(event), id, host->host_and_port,
		  lookup_read_mode_name(reading_mode),
		  mongoc_apm_command_started_get_request_id(event));
}

static void on_succeeded(const mongoc_apm_command_succeeded_t *event)
{
	log_debug("mongodb: %s succeeded in %" PRId64 " us, request %" PRId64,
		  mongoc_apm_command_succeeded_get_command_name(event),
		  mongoc_apm_command_succeeded_get_duration(event),
		  mongoc_apm_command_succeeded_get_request_id(event));
}

static void on_failed(const mongoc_apm_command_failed_t *event)
{
	bson_error_t error;
	mongoc_apm_command_failed_get_error(event, &error);
	log_debug("mongodb: %s failed in %" PRId64 " us, request %" PRId64 ": %s",
		  mongoc_apm_command_failed_get_command_name(event),
		  mongoc_apm_command_failed_get_duration(event),
		  mongoc_apm_command_failed_get_request_id(event), error.message);
}

int lookup_monitor_attach(mongoc_client_pool_t *pool)
{
	mongoc_apm_callbacks_t *callbacks = mongoc_apm_callbacks_new();
	mongoc_apm_set_command_started_cb(callbacks, on_started);
	mongoc_apm_set_command_succeeded_cb(callbacks, on_succeeded);
	mongoc_apm_set_command_failed_cb(callbacks, on_failed);
	bool set = mongoc_client_pool_set_apm_callbacks(pool, callbacks, NULL);
	mongoc_apm_callbacks_destroy(callbacks);
	return set ? 0 : -1;
}
