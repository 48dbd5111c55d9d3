/*
 * store: musicd-import's side of MongoDB (libmongoc): the connection, the
 * unique index on the path field, the documents already under the given
 * directories, and the writes, in unordered bulk batches. Every function
 * returns 0, or -1 with a one-line message in error (a database error ends
 * the run; batches already executed stay written).
 */
#ifndef MUSICD_IMPORT_STORE_H
#define MUSICD_IMPORT_STORE_H

#include <mongoc/mongoc.h>
#include <stddef.h>

#include "config/config.h"
#include "document.h"
#include "known.h"

#define STORE_BATCH_MAX 4000   /* operations per bulk write */
/*
 * Updates per bulk write. FerretDB v1.24.2 on SQLite never answers an update
 * command of 100 statements or more (99 work; its database stays locked after),
 * and scans its table for each update.
 */
#define STORE_BATCH_UPDATES 50

/* Owns the client and the collection; released by store_close. */
struct store {
	mongoc_client_t *client;
	mongoc_collection_t *collection;
	char *path_field;
};

/* Connects (and checks the server answers) with config's URI, database and collection. */
int store_open(struct store *store, const struct config *config, char *error, size_t error_size);
void store_close(struct store *store);

/* Creates the unique index on the path field unless it exists. */
int store_ensure_index(struct store *store, char *error, size_t error_size);

/* Adds to known every document whose path starts with one of roots followed by '/'. */
int store_load_known(struct store *store, const char *const *roots, size_t root_count,
		     struct known *known, char *error, size_t error_size);

/* One bulk write being put together: inserts of new files, updates, deletes. */
struct store_batch {
	struct store *store;
	mongoc_bulk_operation_t *bulk; /* NULL while empty */
	size_t operations;
	size_t updates;
	const struct track *inserted[STORE_BATCH_MAX]; /* by operation index; NULL for others */
};

void store_batch_init(struct store_batch *batch, struct store *store);

/* Queues the insert of a new file's document with the given _id. */
void store_batch_insert(struct store_batch *batch, const struct track *track, const bson_oid_t *id);
/* Queues the update of a changed file's document (an upsert by path). */
void store_batch_update(struct store_batch *batch, const struct track *track);
/* Whether the batch should be executed before more is queued. */
#define STORE_BATCH_FULL(batch)                                                                    \
	((batch)->operations == STORE_BATCH_MAX || (batch)->updates == STORE_BATCH_UPDATES)

/* Deletes the documents of these paths (files that are gone), in one command. */
int store_delete_paths(struct store *store, const char *const *paths, size_t count, char *error,
		       size_t error_size);

/*
 * Executes the queued operations (nothing if none). An insert refused because
 * another writer inserted the same path meanwhile is retried as an update;
 * *raced counts those. Any other write error fails the batch.
 */
int store_batch_execute(struct store_batch *batch, size_t *raced, char *error, size_t error_size);

#endif
