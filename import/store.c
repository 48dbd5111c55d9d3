/*
 * store: one mongoc_client_t used by the main thread alone (the reading is
 * parallel, the writing is one stream of bulk writes). Known documents are
 * found by a range on the path field ([root + "/", root + "0"), '0' being
 * the byte after '/'), which the unique index serves. Only the fields the
 * plan compares are fetched (not _id, unless --print-urls needs it): with
 * FerretDB the reply's size is most of an unchanged run's time.
 */
#include "store.h"

#include "media/containment.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SERVER_SELECTION_TIMEOUT_MS 5000
#define CONNECT_TIMEOUT_MS 5000
#define SOCKET_TIMEOUT_MS 600000 /* one bulk command; FerretDB on SQLite scans per update */
#define KNOWN_BATCH_SIZE 100000 /* documents per reply (a reply stays under 16 MiB anyway) */
#define DEFAULT_MAX_DOCUMENT_SIZE (16 * 1024 * 1024)
#define LOOK_UP_RETRY_MS 250

static void default_int_option(mongoc_uri_t *uri, const char *name, int32_t value)
{
	if (!mongoc_uri_has_option(uri, name))
		mongoc_uri_set_option_as_int32(uri, name, value);
}

/* A client (and the collection) from store->uri, replacing any before. */
static int connect_client(struct store *store, char *error, size_t error_size)
{
	bson_error_t bson_error;
	if (store->collection)
		mongoc_collection_destroy(store->collection);
	if (store->client)
		mongoc_client_destroy(store->client);
	store->collection = NULL;
	store->client = mongoc_client_new_from_uri_with_error(store->uri, &bson_error);
	if (store->client == NULL) {
		snprintf(error, error_size, "--mongodb-uri: %s", bson_error.message);
		return -1;
	}
	mongoc_client_set_error_api(store->client, MONGOC_ERROR_API_VERSION_2);
	store->collection = mongoc_client_get_collection(store->client, store->database,
							 store->collection_name);
	return 0;
}

int store_open(struct store *store, const struct config *config, char *error, size_t error_size)
{
	bson_error_t bson_error;
	memset(store, 0, sizeof(*store));
	mongoc_uri_t *uri = mongoc_uri_new_with_error(config->mongodb_uri, &bson_error);
	if (uri == NULL) {
		snprintf(error, error_size, "--mongodb-uri: %s", bson_error.message);
		return -1;
	}
	default_int_option(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, SERVER_SELECTION_TIMEOUT_MS);
	default_int_option(uri, MONGOC_URI_CONNECTTIMEOUTMS, CONNECT_TIMEOUT_MS);
	default_int_option(uri, MONGOC_URI_SOCKETTIMEOUTMS, SOCKET_TIMEOUT_MS);
	if (mongoc_uri_get_appname(uri) == NULL)
		mongoc_uri_set_appname(uri, "musicd-import");
	store->uri = uri;
	store->database = strdup(config->database);
	store->collection_name = strdup(config->collection);
	store->path_field = strdup(config->path_field);
	if (store->database == NULL || store->collection_name == NULL || store->path_field == NULL) {
		snprintf(error, error_size, "out of memory");
		store_close(store);
		return -1;
	}
	if (connect_client(store, error, error_size) < 0) {
		store_close(store);
		return -1;
	}

	/* hello, not ping: its maxBsonObjectSize is what a document may weigh. */
	bson_t hello = BSON_INITIALIZER, reply;
	BSON_APPEND_INT32(&hello, "hello", 1);
	bool ok = mongoc_client_command_simple(store->client, "admin", &hello, NULL, &reply,
					       &bson_error);
	bson_destroy(&hello);
	store->max_document_size = DEFAULT_MAX_DOCUMENT_SIZE;
	bson_iter_t iter;
	if (ok && bson_iter_init_find(&iter, &reply, "maxBsonObjectSize") &&
	    (BSON_ITER_HOLDS_INT32(&iter) || BSON_ITER_HOLDS_INT64(&iter)) &&
	    bson_iter_as_int64(&iter) > 0)
		store->max_document_size = bson_iter_as_int64(&iter);
	bson_destroy(&reply);
	if (!ok) {
		snprintf(error, error_size, "database: %s", bson_error.message);
		store_close(store);
		return -1;
	}
	return 0;
}

void store_close(struct store *store)
{
	if (store->collection)
		mongoc_collection_destroy(store->collection);
	if (store->client)
		mongoc_client_destroy(store->client);
	if (store->uri)
		mongoc_uri_destroy(store->uri);
	free(store->database);
	free(store->collection_name);
	free(store->path_field);
	memset(store, 0, sizeof(*store));
}

int store_ensure_index(struct store *store, char *error, size_t error_size)
{
	bson_t keys = BSON_INITIALIZER, command = BSON_INITIALIZER, indexes, index;
	bson_error_t bson_error;
	char name[256];
	snprintf(name, sizeof(name), "%s_1", store->path_field);
	BSON_APPEND_INT32(&keys, store->path_field, 1);
	BSON_APPEND_UTF8(&command, "createIndexes", mongoc_collection_get_name(store->collection));
	BSON_APPEND_ARRAY_BEGIN(&command, "indexes", &indexes);
	BSON_APPEND_DOCUMENT_BEGIN(&indexes, "0", &index);
	BSON_APPEND_DOCUMENT(&index, "key", &keys);
	BSON_APPEND_UTF8(&index, "name", name);
	BSON_APPEND_BOOL(&index, "unique", true);
	bson_append_document_end(&indexes, &index);
	bson_append_array_end(&command, &indexes);
	bool ok = mongoc_collection_write_command_with_opts(store->collection, &command, NULL, NULL,
							    &bson_error);
	bson_destroy(&keys);
	bson_destroy(&command);
	if (!ok) {
		snprintf(error, error_size, "database: creating the unique index %s on %s: %s", name,
			 store->path_field, bson_error.message);
		return -1;
	}
	return 0;
}

/* The path of a stored document, if it is a string. */
static const char *document_path(const bson_t *document, const char *path_field)
{
	bson_iter_t iter, found;
	if (bson_iter_init(&iter, document) && bson_iter_find_descendant(&iter, path_field, &found) &&
	    BSON_ITER_HOLDS_UTF8(&found))
		return bson_iter_utf8(&found, NULL);
	return NULL;
}

/* Adds each document of cursor whose path is inside one of roots (all, if root_count is 0). */
static int take_documents(struct store *store, mongoc_cursor_t *cursor, const char *const *roots,
			  size_t root_count, struct known *known, struct console *console,
			  char *error, size_t error_size)
{
	const bson_t *document;
	while (mongoc_cursor_next(cursor, &document)) {
		if (console != NULL)
			console_load_progress(console, known->count);
		const char *path = document_path(document, store->path_field);
		if (path == NULL ||
		    (root_count > 0 && containment_find_root(roots, root_count, path) < 0))
			continue;
		struct known_entry *entry = known_add(known, path);
		if (entry == NULL || known_take_document(entry, document) < 0) {
			snprintf(error, error_size, "out of memory loading the known documents");
			return -1;
		}
	}
	bson_error_t bson_error;
	if (mongoc_cursor_error(cursor, &bson_error)) {
		snprintf(error, error_size, "database: reading the known documents: %s",
			 bson_error.message);
		return -1;
	}
	known_sort(known);
	return 0;
}

/* The find's options: the fields known_take_document reads, in one batch. */
static void known_options(const struct store *store, bool listing, bson_t *opts)
{
	bson_t projection;
	bson_init(opts);
	BSON_APPEND_DOCUMENT_BEGIN(opts, "projection", &projection);
	if (!listing)
		BSON_APPEND_INT32(&projection, "_id", 0);
	BSON_APPEND_INT32(&projection, store->path_field, 1);
	BSON_APPEND_INT32(&projection, "size", 1);
	BSON_APPEND_INT32(&projection, "mtime", 1);
	BSON_APPEND_INT32(&projection, "sha256", 1);
	BSON_APPEND_INT32(&projection, "duration", 1);
	if (listing) {
		BSON_APPEND_INT32(&projection, "artist", 1);
		BSON_APPEND_INT32(&projection, "title", 1);
	}
	bson_append_document_end(opts, &projection);
	/* Few round trips: the server's default first batch is 101 documents. */
	BSON_APPEND_INT32(opts, "batchSize", KNOWN_BATCH_SIZE);
}

int store_load_known(struct store *store, const char *const *roots, size_t root_count,
		     bool listing, struct known *known, struct console *console, char *error,
		     size_t error_size)
{
	bson_t filter = BSON_INITIALIZER, any, opts;
	BSON_APPEND_ARRAY_BEGIN(&filter, "$or", &any);
	for (size_t i = 0; i < root_count; i++) {
		bson_t clause, range;
		char key[24];
		const char *prefix = strcmp(roots[i], "/") == 0 ? "" : roots[i];
		snprintf(key, sizeof(key), "%zu", i);
		char *low = bson_strdup_printf("%s/", prefix);
		char *high = bson_strdup_printf("%s0", prefix);
		BSON_APPEND_DOCUMENT_BEGIN(&any, key, &clause);
		BSON_APPEND_DOCUMENT_BEGIN(&clause, store->path_field, &range);
		BSON_APPEND_UTF8(&range, "$gte", low);
		BSON_APPEND_UTF8(&range, "$lt", high);
		bson_free(low);
		bson_free(high);
		bson_append_document_end(&clause, &range);
		bson_append_document_end(&any, &clause);
	}
	bson_append_array_end(&filter, &any);
	known_options(store, listing, &opts);
	mongoc_cursor_t *cursor =
		mongoc_collection_find_with_opts(store->collection, &filter, &opts, NULL);
	console_loading(console);
	int status =
		take_documents(store, cursor, roots, root_count, known, console, error, error_size);
	mongoc_cursor_destroy(cursor);
	bson_destroy(&filter);
	bson_destroy(&opts);
	return status;
}

/* The filter { <path_field>: { $in: paths } }. */
static void paths_filter(const struct store *store, const char *const *paths, size_t count,
			 bson_t *filter)
{
	bson_t condition, list;
	bson_init(filter);
	BSON_APPEND_DOCUMENT_BEGIN(filter, store->path_field, &condition);
	BSON_APPEND_ARRAY_BEGIN(&condition, "$in", &list);
	for (size_t i = 0; i < count; i++) {
		char key[24];
		snprintf(key, sizeof(key), "%zu", i);
		BSON_APPEND_UTF8(&list, key, paths[i]);
	}
	bson_append_array_end(&condition, &list);
	bson_append_document_end(filter, &condition);
}

static void sleep_ms(unsigned ms)
{
	struct timespec pause = {ms / 1000, (long)(ms % 1000) * 1000000};
	nanosleep(&pause, NULL);
}

int store_look_up(struct store *store, const char *const *paths, size_t count, unsigned wait_ms,
		  struct known *known, char *error, size_t error_size)
{
	bson_t filter, opts;
	paths_filter(store, paths, count, &filter);
	known_options(store, true, &opts);
	int status = -1;
	for (unsigned waited = 0;; waited += LOOK_UP_RETRY_MS) {
		/*
		 * A new client each time: a single-threaded client waits out a
		 * cooldown before it tries a server that failed again.
		 */
		if (connect_client(store, error, error_size) == 0) {
			mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(
				store->collection, &filter, &opts, NULL);
			known_free(known);
			status = take_documents(store, cursor, NULL, 0, known, NULL, error,
						error_size);
			mongoc_cursor_destroy(cursor);
		}
		if (status == 0 || waited >= wait_ms)
			break;
		sleep_ms(LOOK_UP_RETRY_MS);
	}
	bson_destroy(&filter);
	bson_destroy(&opts);
	return status;
}

int store_delete_paths(struct store *store, const char *const *paths, size_t count,
		       size_t *deleted, char *error, size_t error_size)
{
	*deleted = 0;
	if (count == 0)
		return 0;
	bson_t filter, reply;
	paths_filter(store, paths, count, &filter);
	bson_error_t bson_error;
	bool ok = mongoc_collection_delete_many(store->collection, &filter, NULL, &reply,
						&bson_error);
	bson_destroy(&filter);
	bson_iter_t iter;
	if (bson_iter_init_find(&iter, &reply, "deletedCount") &&
	    (BSON_ITER_HOLDS_INT32(&iter) || BSON_ITER_HOLDS_INT64(&iter)) &&
	    bson_iter_as_int64(&iter) >= 0)
		*deleted = (size_t)bson_iter_as_int64(&iter);
	else if (ok) {
		ok = false;
		snprintf(bson_error.message, sizeof(bson_error.message),
			 "the reply to a delete has no deletedCount");
	}
	bson_destroy(&reply);
	if (!ok) {
		snprintf(error, error_size, "database: %s", bson_error.message);
		return -1;
	}
	return 0;
}
