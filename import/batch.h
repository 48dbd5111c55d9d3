/*
 * batch: one round of writes, the inserts of new files and the upserts (by
 * path) of changed ones, each executed as one unordered bulk write, and what
 * became of every one of them: written, refused (that file's error: its
 * document is too large, or the database said why), or, after a database
 * error, looked up in the collection (written or not) and, if even that
 * fails, unknown. An insert that lost a race with another writer is retried
 * as an upsert.
 */
#ifndef MUSICD_IMPORT_BATCH_H
#define MUSICD_IMPORT_BATCH_H

#include <mongoc/mongoc.h>
#include <stdbool.h>
#include <stddef.h>

#include "document.h"
#include "reply.h"
#include "store.h"

#define BATCH_INSERTS_MAX 4000 /* inserts per bulk write */
/*
 * Upserts per bulk write. FerretDB v1.24.2 on SQLite never answers an update
 * command of 100 statements or more (99 work; its database stays locked after),
 * and scans its table for each update.
 */
#define BATCH_UPSERTS_MAX 50
/* After a database error, how long the collection is asked what was written. */
#define BATCH_LOOK_UP_WAIT_MS 10000

struct batch_op {
	const struct track *track; /* the caller's, kept until batch_clear */
	bson_oid_t id;		   /* the document's _id: given to an insert, found for others */
	bool has_id;
	bool raced; /* an insert retried as an upsert */
};

/*
 * Owns its two bulk operations; batch_clear releases them. The result of
 * inserts[i] is insert_results[i], and so for upserts. Large: allocate it.
 */
struct batch {
	struct store *store;
	mongoc_bulk_operation_t *insert_bulk, *upsert_bulk; /* NULL while empty */
	struct batch_op inserts[BATCH_INSERTS_MAX], upserts[BATCH_UPSERTS_MAX];
	struct op_result insert_results[BATCH_INSERTS_MAX], upsert_results[BATCH_UPSERTS_MAX];
	size_t insert_count, upsert_count;
};

void batch_init(struct batch *batch, struct store *store);

/*
 * Queues the insert of a new file's document under id, or the upsert of a
 * changed file's (known_id: its document's _id, or NULL). Returns 0; 1 when
 * the file's document cannot be written (too large for the database, or
 * refused by libmongoc), with the reason; -1 when out of memory.
 */
int batch_insert(struct batch *batch, const struct track *track, const bson_oid_t *id,
		 char *reason, size_t reason_size);
int batch_upsert(struct batch *batch, const struct track *track, const bson_oid_t *known_id,
		 char *reason, size_t reason_size);

/* Whether one more insert or upsert would not fit. */
bool batch_full(const struct batch *batch);

/*
 * Executes the inserts, then the upserts; every operation's result is then
 * set. Returns 0, or -1 on a database error (message in error), after which
 * nothing more should be written.
 */
int batch_execute(struct batch *batch, char *error, size_t error_size);

/* Forgets the operations (after the caller has read their results). */
void batch_clear(struct batch *batch);

#endif
