/*
 * batch: a document's size is checked against the server's maxBsonObjectSize
 * before it is queued, so one file's oversized tags cost nobody else their
 * write (libmongoc would refuse the whole bulk write). What a bulk write did
 * is read from its reply (reply.c), never from its success alone; what the
 * reply leaves unknown is looked up by path afterwards: an insert is written
 * if its document is there with the _id it was given, an upsert if the
 * document now holds what was written (the plan would call it unchanged).
 */
#include "batch.h"

#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void batch_init(struct batch *batch, struct store *store)
{
	memset(batch, 0, sizeof(*batch));
	batch->store = store;
}

static mongoc_bulk_operation_t *new_bulk(struct store *store)
{
	bson_t opts = BSON_INITIALIZER;
	BSON_APPEND_BOOL(&opts, "ordered", false);
	mongoc_bulk_operation_t *bulk =
		mongoc_collection_create_bulk_operation_with_opts(store->collection, &opts);
	bson_destroy(&opts);
	return bulk;
}

static int too_large(const struct store *store, const bson_t *document, char *reason,
		     size_t reason_size)
{
	if ((int64_t)document->len <= store->max_document_size)
		return 0;
	snprintf(reason, reason_size,
		 "its document is too large for the database: %u bytes, the limit is %lld "
		 "(maxBsonObjectSize)",
		 document->len, (long long)store->max_document_size);
	return 1;
}

/* Appends an upsert by path of track to *bulk (made if NULL); 1 with a reason if it cannot be. */
static int append_upsert(struct store *store, mongoc_bulk_operation_t **bulk,
			 const struct track *track, char *reason, size_t reason_size)
{
	bson_t filter, update, opts = BSON_INITIALIZER;
	bson_error_t bson_error;
	document_filter(track->path, store->path_field, &filter);
	document_for_update(track, store->path_field, &update);
	BSON_APPEND_BOOL(&opts, "upsert", true);
	int status = too_large(store, &update, reason, reason_size);
	if (status == 0) {
		if (*bulk == NULL)
			*bulk = new_bulk(store);
		if (!mongoc_bulk_operation_update_one_with_opts(*bulk, &filter, &update, &opts,
								&bson_error)) {
			snprintf(reason, reason_size, "libmongoc refused its document: %s",
				 bson_error.message);
			status = 1;
		}
	}
	bson_destroy(&filter);
	bson_destroy(&update);
	bson_destroy(&opts);
	return status;
}

int batch_insert(struct batch *batch, const struct track *track, const bson_oid_t *id,
		 char *reason, size_t reason_size)
{
	struct store *store = batch->store;
	bson_t document;
	bson_error_t bson_error;
	document_for_insert(track, store->path_field, id, &document);
	int status = too_large(store, &document, reason, reason_size);
	if (status == 0) {
		if (batch->insert_bulk == NULL)
			batch->insert_bulk = new_bulk(store);
		if (!mongoc_bulk_operation_insert_with_opts(batch->insert_bulk, &document, NULL,
							    &bson_error)) {
			snprintf(reason, reason_size, "libmongoc refused its document: %s",
				 bson_error.message);
			status = 1;
		}
	}
	bson_destroy(&document);
	if (status == 0) {
		struct batch_op *op = &batch->inserts[batch->insert_count++];
		*op = (struct batch_op){.track = track, .has_id = true};
		bson_oid_copy(id, &op->id);
	}
	return status;
}

int batch_upsert(struct batch *batch, const struct track *track, const bson_oid_t *known_id,
		 char *reason, size_t reason_size)
{
	int status = append_upsert(batch->store, &batch->upsert_bulk, track, reason, reason_size);
	if (status == 0) {
		struct batch_op *op = &batch->upserts[batch->upsert_count++];
		*op = (struct batch_op){.track = track, .has_id = known_id != NULL};
		if (known_id != NULL)
			bson_oid_copy(known_id, &op->id);
	}
	return status;
}

bool batch_full(const struct batch *batch)
{
	return batch->insert_count == BATCH_INSERTS_MAX || batch->upsert_count == BATCH_UPSERTS_MAX;
}

/*
 * Executes one bulk write of count operations of kind and reads its reply
 * into results. Returns 0 when the reply accounts for every operation with
 * no database error, else -1 with the message (operations left unknown, or
 * not written when no server could be chosen).
 */
static int execute_bulk(mongoc_bulk_operation_t *bulk, enum reply_kind kind, size_t count,
			struct op_result *results, char *error, size_t error_size)
{
	bson_t reply;
	bson_error_t bson_error;
	struct reply_summary summary;
	bool ok = mongoc_bulk_operation_execute(bulk, &reply, &bson_error) != 0;
	reply_read(&reply, kind, count, results, &summary);
	bson_destroy(&reply);
	if (summary.write_concern_failed) {
		snprintf(error, error_size, "database: write concern: %s", summary.write_concern);
		return -1;
	}
	if (summary.unknown == 0)
		return 0; /* a failure of write errors only: each refused one is its file's */
	if (ok) {
		snprintf(error, error_size, "database: the reply accounts for %zu of %zu writes",
			 count - summary.unknown, count);
		return -1;
	}
	snprintf(error, error_size, "database: %s", bson_error.message);
	if (bson_error.domain == MONGOC_ERROR_SERVER_SELECTION && summary.written == 0 &&
	    summary.duplicates == 0 && summary.refused == 0) {
		for (size_t i = 0; i < count; i++)
			results[i].outcome = OP_NOT_WRITTEN; /* nothing was sent */
	}
	return -1;
}

/* Retries as upserts the inserts that lost a race for their path. */
static int retry_races(struct batch *batch, char *error, size_t error_size)
{
	mongoc_bulk_operation_t *bulk = NULL;
	size_t raced[BATCH_INSERTS_MAX], count = 0;
	for (size_t i = 0; i < batch->insert_count; i++) {
		struct op_result *result = &batch->insert_results[i];
		if (result->outcome != OP_DUPLICATE)
			continue;
		batch->inserts[i].raced = true;
		batch->inserts[i].has_id = false; /* the other writer's document keeps its _id */
		if (append_upsert(batch->store, &bulk, batch->inserts[i].track, result->message,
				  sizeof(result->message)) != 0) {
			result->outcome = OP_REFUSED;
			continue;
		}
		raced[count++] = i;
	}
	if (count == 0)
		return 0;
	struct op_result *results = calloc(count, sizeof(*results));
	int status = -1;
	if (results == NULL) {
		snprintf(error, error_size, "out of memory");
	} else {
		status = execute_bulk(bulk, REPLY_UPSERTS, count, results, error, error_size);
		for (size_t k = 0; k < count; k++)
			batch->insert_results[raced[k]] = results[k];
	}
	free(results);
	mongoc_bulk_operation_destroy(bulk);
	return status;
}

/* Whether the looked-up document shows op's write. */
static bool shows_write(const struct batch_op *op, bool insert, const struct known_entry *entry)
{
	if (entry == NULL)
		return false;
	if (insert && !op->raced)
		return entry->has_oid && bson_oid_equal(&entry->id, &op->id);
	const struct track *track = op->track;
	return plan_classify(entry, track->size, track->mtime_ms, track->has_sha256) ==
	       PLAN_UNCHANGED;
}

/* Settles the unknown results by looking their paths up; those it cannot stay unknown. */
static void look_up_unknown(struct batch *batch)
{
	const char *paths[BATCH_INSERTS_MAX + BATCH_UPSERTS_MAX];
	size_t count = 0;
	for (size_t i = 0; i < batch->insert_count; i++) {
		if (batch->insert_results[i].outcome == OP_UNKNOWN)
			paths[count++] = batch->inserts[i].track->path;
	}
	for (size_t i = 0; i < batch->upsert_count; i++) {
		if (batch->upsert_results[i].outcome == OP_UNKNOWN)
			paths[count++] = batch->upserts[i].track->path;
	}
	if (count == 0)
		return;
	struct known found;
	char ignored[256];
	known_init(&found);
	if (store_look_up(batch->store, paths, count, BATCH_LOOK_UP_WAIT_MS, &found, ignored,
			  sizeof(ignored)) == 0) {
		for (int insert = 1; insert >= 0; insert--) {
			struct batch_op *ops = insert ? batch->inserts : batch->upserts;
			struct op_result *results =
				insert ? batch->insert_results : batch->upsert_results;
			size_t n = insert ? batch->insert_count : batch->upsert_count;
			for (size_t i = 0; i < n; i++) {
				if (results[i].outcome != OP_UNKNOWN)
					continue;
				const struct known_entry *entry =
					known_find(&found, ops[i].track->path);
				results[i].outcome = shows_write(&ops[i], insert, entry)
							     ? OP_WRITTEN
							     : OP_NOT_WRITTEN;
			}
		}
	}
	known_free(&found);
}

int batch_execute(struct batch *batch, char *error, size_t error_size)
{
	int status = 0;
	if (batch->insert_count > 0) {
		status = execute_bulk(batch->insert_bulk, REPLY_INSERTS, batch->insert_count,
				      batch->insert_results, error, error_size);
		if (status == 0)
			status = retry_races(batch, error, error_size);
	}
	if (batch->upsert_count > 0) {
		if (status == 0)
			status = execute_bulk(batch->upsert_bulk, REPLY_UPSERTS, batch->upsert_count,
					      batch->upsert_results, error, error_size);
		else
			for (size_t i = 0; i < batch->upsert_count; i++)
				batch->upsert_results[i].outcome = OP_NOT_WRITTEN; /* never sent */
	}
	if (status < 0)
		look_up_unknown(batch);
	return status;
}

void batch_clear(struct batch *batch)
{
	if (batch->insert_bulk)
		mongoc_bulk_operation_destroy(batch->insert_bulk);
	if (batch->upsert_bulk)
		mongoc_bulk_operation_destroy(batch->upsert_bulk);
	batch_init(batch, batch->store);
}
