/*
 * reply: what the reply to one bulk write says of each of its operations.
 * A bulk write of n operations of one kind (all inserts or all upserts) is
 * written only as far as its reply accounts for it: writeErrors name the
 * operations refused, the counts (nInserted; nMatched + nUpserted) the ones
 * written, and when the two do not add up to n (the connection dropped, the
 * server answered something else) the rest are unknown, for the caller to
 * look up in the collection. Pure: reads a bson_t.
 */
#ifndef MUSICD_IMPORT_REPLY_H
#define MUSICD_IMPORT_REPLY_H

#include <bson/bson.h>
#include <stdbool.h>
#include <stddef.h>

#define REPLY_MESSAGE_MAX 256

enum reply_kind { REPLY_INSERTS, REPLY_UPSERTS };

enum op_outcome {
	OP_WRITTEN,
	OP_DUPLICATE, /* an insert refused for its path: another writer inserted it meanwhile */
	OP_REFUSED,   /* a write error of its own (message kept) */
	OP_UNKNOWN,   /* the reply does not say: look it up */
	OP_NOT_WRITTEN, /* not in the collection: never sent, or looked up and not found */
};

struct op_result {
	enum op_outcome outcome;
	char message[REPLY_MESSAGE_MAX]; /* OP_DUPLICATE, OP_REFUSED: the server's errmsg and code */
};

/* What a reply says beyond the operations: a write concern error is a database error. */
struct reply_summary {
	size_t written, duplicates, refused, unknown;
	bool write_concern_failed;
	char write_concern[REPLY_MESSAGE_MAX]; /* its errmsg, when it failed */
};

/*
 * Reads reply (may be empty: nothing was acknowledged) for count operations
 * of kind, filling results[0..count). Every operation starts unknown; a
 * writeError makes it duplicate or refused; if the counts then account for
 * every other operation, they are written.
 */
void reply_read(const bson_t *reply, enum reply_kind kind, size_t count,
		struct op_result *results, struct reply_summary *summary);

#endif
