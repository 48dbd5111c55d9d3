/*
 * store: one mongoc_client_t used by the main thread alone (the reading is
 * parallel, the writing is one stream of bulk writes). Known documents are
 * found by a range on the path field ([root + "/", root + "0"), '0' being
 * the byte after '/'), which the unique index serves.
 */
#include "store.h"

#include "media/containment.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SERVER_SELECTION_TIMEOUT_MS 5000
#define CONNECT_TIMEOUT_MS 5000
#define SOCKET_TIMEOUT_MS 600000 /* one bulk command; FerretDB on SQLite scans per update */
#define DUPLICATE_KEY 11000
#define KNOWN_BATCH_SIZE 100000 /* documents per reply (a reply stays under 16 MiB anyway) */

static void default_int_option(mongoc_uri_t *uri, const char *name, int32_t value)
{
	if (!mongoc_uri_has_option(uri, name))
		mongoc_uri_set_option_as_int32(uri, name, value);
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
	store->client = mongoc_client_new_from_uri_with_error(uri, &bson_error);
	mongoc_uri_destroy(uri);
	if (store->client == NULL) {
		snprintf(error, error_size, "--mongodb-uri: %s", bson_error.message);
		return -1;
	}
	mongoc_client_set_error_api(store->client, MONGOC_ERROR_API_VERSION_2);
	store->collection =
		mongoc_client_get_collection(store->client, config->database, config->collection);
	store->path_field = strdup(config->path_field);

	bson_t ping = BSON_INITIALIZER;
	BSON_APPEND_INT32(&ping, "ping", 1);
	bool ok = mongoc_client_command_simple(store->client, "admin", &ping, NULL, NULL,
					       &bson_error);
	bson_destroy(&ping);
	if (!ok || store->path_field == NULL) {
		snprintf(error, error_size, "database: %s",
			 ok ? "out of memory" : bson_error.message);
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

int store_load_known(struct store *store, const char *const *roots, size_t root_count,
		     struct known *known, char *error, size_t error_size)
{
	bson_t filter = BSON_INITIALIZER, any, projection = BSON_INITIALIZER, opts = BSON_INITIALIZER;
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
	BSON_APPEND_INT32(&projection, store->path_field, 1);
	BSON_APPEND_INT32(&projection, "size", 1);
	BSON_APPEND_INT32(&projection, "mtime", 1);
	BSON_APPEND_INT32(&projection, "sha256", 1);
	BSON_APPEND_DOCUMENT(&opts, "projection", &projection);
	/* Few round trips: the server's default first batch is 101 documents. */
	BSON_APPEND_INT32(&opts, "batchSize", KNOWN_BATCH_SIZE);

	mongoc_cursor_t *cursor =
		mongoc_collection_find_with_opts(store->collection, &filter, &opts, NULL);
	const bson_t *document;
	int status = 0;
	while (mongoc_cursor_next(cursor, &document)) {
		const char *path = document_path(document, store->path_field);
		if (path == NULL || containment_find_root(roots, root_count, path) < 0)
			continue;
		struct known_entry *entry = known_add(known, path);
		if (entry == NULL) {
			snprintf(error, error_size, "out of memory loading the known documents");
			status = -1;
			break;
		}
		known_take_document(entry, document);
	}
	bson_error_t bson_error;
	if (status == 0 && mongoc_cursor_error(cursor, &bson_error)) {
		snprintf(error, error_size, "database: reading the known documents: %s",
			 bson_error.message);
		status = -1;
	}
	mongoc_cursor_destroy(cursor);
	bson_destroy(&filter);
	bson_destroy(&projection);
	bson_destroy(&opts);
	if (status == 0)
		known_sort(known);
	return status;
}

void store_batch_init(struct store_batch *batch, struct store *store)
{
	memset(batch, 0, sizeof(*batch));
	batch->store = store;
}

static mongoc_bulk_operation_t *bulk_of(struct store_batch *batch)
{
	if (batch->bulk == NULL) {
		bson_t opts = BSON_INITIALIZER;
		BSON_APPEND_BOOL(&opts, "ordered", false);
		batch->bulk = mongoc_collection_create_bulk_operation_with_opts(
			batch->store->collection, &opts);
		bson_destroy(&opts);
	}
	return batch->bulk;
}

void store_batch_insert(struct store_batch *batch, const struct track *track, const bson_oid_t *id)
{
	bson_t document;
	document_for_insert(track, batch->store->path_field, id, &document);
	mongoc_bulk_operation_insert_with_opts(bulk_of(batch), &document, NULL, NULL);
	bson_destroy(&document);
	batch->inserted[batch->operations++] = track;
}

static void queue_update(mongoc_bulk_operation_t *bulk, const struct track *track,
			 const char *path_field)
{
	bson_t filter, update, opts = BSON_INITIALIZER;
	document_filter(track->path, path_field, &filter);
	document_for_update(track, path_field, &update);
	BSON_APPEND_BOOL(&opts, "upsert", true);
	mongoc_bulk_operation_update_one_with_opts(bulk, &filter, &update, &opts, NULL);
	bson_destroy(&filter);
	bson_destroy(&update);
	bson_destroy(&opts);
}

void store_batch_update(struct store_batch *batch, const struct track *track)
{
	queue_update(bulk_of(batch), track, batch->store->path_field);
	batch->inserted[batch->operations++] = NULL;
	batch->updates++;
}

int store_delete_paths(struct store *store, const char *const *paths, size_t count, char *error,
		       size_t error_size)
{
	if (count == 0)
		return 0;
	bson_t filter = BSON_INITIALIZER, condition, list;
	BSON_APPEND_DOCUMENT_BEGIN(&filter, store->path_field, &condition);
	BSON_APPEND_ARRAY_BEGIN(&condition, "$in", &list);
	for (size_t i = 0; i < count; i++) {
		char key[24];
		snprintf(key, sizeof(key), "%zu", i);
		BSON_APPEND_UTF8(&list, key, paths[i]);
	}
	bson_append_array_end(&condition, &list);
	bson_append_document_end(&filter, &condition);
	bson_error_t bson_error;
	bool ok = mongoc_collection_delete_many(store->collection, &filter, NULL, NULL, &bson_error);
	bson_destroy(&filter);
	if (!ok) {
		snprintf(error, error_size, "database: %s", bson_error.message);
		return -1;
	}
	return 0;
}

/*
 * Looks at the reply's writeErrors: duplicate keys of inserts are queued as
 * updates on retry; returns false if any other error is there.
 */
static bool collect_races(struct store_batch *batch, const bson_t *reply,
			  mongoc_bulk_operation_t **retry, size_t *raced, char *error,
			  size_t error_size)
{
	bson_iter_t iter, errors;
	if (!bson_iter_init_find(&iter, reply, "writeErrors") || !BSON_ITER_HOLDS_ARRAY(&iter) ||
	    !bson_iter_recurse(&iter, &errors))
		return false;
	bool only_races = true;
	while (bson_iter_next(&errors)) {
		bson_t item;
		const uint8_t *data;
		uint32_t length;
		bson_iter_document(&errors, &length, &data);
		if (!bson_init_static(&item, data, length))
			return false;
		bson_iter_t field;
		int64_t index = -1, code = 0;
		const char *message = "";
		if (bson_iter_init_find(&field, &item, "index"))
			index = bson_iter_as_int64(&field);
		if (bson_iter_init_find(&field, &item, "code"))
			code = bson_iter_as_int64(&field);
		if (bson_iter_init_find(&field, &item, "errmsg") && BSON_ITER_HOLDS_UTF8(&field))
			message = bson_iter_utf8(&field, NULL);
		if (code == DUPLICATE_KEY && index >= 0 && (size_t)index < batch->operations &&
		    batch->inserted[index] != NULL) {
			if (*retry == NULL) {
				bson_t opts = BSON_INITIALIZER;
				BSON_APPEND_BOOL(&opts, "ordered", false);
				*retry = mongoc_collection_create_bulk_operation_with_opts(
					batch->store->collection, &opts);
				bson_destroy(&opts);
			}
			queue_update(*retry, batch->inserted[index], batch->store->path_field);
			(*raced)++;
		} else if (only_races) {
			snprintf(error, error_size, "database: write error %lld: %s",
				 (long long)code, message);
			only_races = false;
		}
	}
	return only_races;
}

int store_batch_execute(struct store_batch *batch, size_t *raced, char *error, size_t error_size)
{
	if (batch->bulk == NULL)
		return 0;
	bson_t reply;
	bson_error_t bson_error;
	int status = 0;
	mongoc_bulk_operation_t *retry = NULL;
	if (!mongoc_bulk_operation_execute(batch->bulk, &reply, &bson_error)) {
		snprintf(error, error_size, "database: %s", bson_error.message);
		if (!collect_races(batch, &reply, &retry, raced, error, error_size))
			status = -1;
	}
	bson_destroy(&reply);
	if (status == 0 && retry != NULL &&
	    !mongoc_bulk_operation_execute(retry, NULL, &bson_error)) {
		snprintf(error, error_size, "database: %s", bson_error.message);
		status = -1;
	}
	if (retry != NULL)
		mongoc_bulk_operation_destroy(retry);
	mongoc_bulk_operation_destroy(batch->bulk);
	batch->bulk = NULL;
	batch->operations = 0;
	batch->updates = 0;
	return status;
}
