/*
 * reply: the fields of libmongoc's bulk write reply (mongoc_bulk_operation_execute):
 * nInserted, nMatched, nUpserted, writeErrors [{index, code, errmsg}] with
 * indexes into the bulk's own operations, writeConcernErrors [{code, errmsg}].
 * An empty writeErrors says nothing was refused, not that all was written:
 * only the counts say that.
 */
#include "reply.h"

#include <stdio.h>
#include <string.h>

#define DUPLICATE_KEY 11000

static int64_t count_field(const bson_t *reply, const char *name)
{
	bson_iter_t iter;
	if (bson_iter_init_find(&iter, reply, name) &&
	    (BSON_ITER_HOLDS_INT32(&iter) || BSON_ITER_HOLDS_INT64(&iter)))
		return bson_iter_as_int64(&iter);
	return 0;
}

/* The code and errmsg of one error document in an array being iterated. */
static void error_of(const bson_iter_t *element, int64_t *index, int64_t *code,
		     const char **message)
{
	bson_iter_t field;
	*index = -1;
	*code = 0;
	*message = "";
	if (!BSON_ITER_HOLDS_DOCUMENT(element) || !bson_iter_recurse(element, &field))
		return;
	while (bson_iter_next(&field)) {
		const char *key = bson_iter_key(&field);
		if (strcmp(key, "index") == 0 &&
		    (BSON_ITER_HOLDS_INT32(&field) || BSON_ITER_HOLDS_INT64(&field)))
			*index = bson_iter_as_int64(&field);
		else if (strcmp(key, "code") == 0 &&
			 (BSON_ITER_HOLDS_INT32(&field) || BSON_ITER_HOLDS_INT64(&field)))
			*code = bson_iter_as_int64(&field);
		else if (strcmp(key, "errmsg") == 0 && BSON_ITER_HOLDS_UTF8(&field))
			*message = bson_iter_utf8(&field, NULL);
	}
}

static bool array_of(const bson_t *reply, const char *name, bson_iter_t *elements)
{
	bson_iter_t iter;
	return bson_iter_init_find(&iter, reply, name) && BSON_ITER_HOLDS_ARRAY(&iter) &&
	       bson_iter_recurse(&iter, elements);
}

void reply_read(const bson_t *reply, enum reply_kind kind, size_t count,
		struct op_result *results, struct reply_summary *summary)
{
	memset(summary, 0, sizeof(*summary));
	for (size_t i = 0; i < count; i++) {
		results[i].outcome = OP_UNKNOWN;
		results[i].message[0] = '\0';
	}
	bson_iter_t elements;
	if (array_of(reply, "writeErrors", &elements)) {
		while (bson_iter_next(&elements)) {
			int64_t index, code;
			const char *message;
			error_of(&elements, &index, &code, &message);
			if (index < 0 || (size_t)index >= count ||
			    results[index].outcome != OP_UNKNOWN)
				continue; /* not one of ours: the counts will not add up */
			struct op_result *result = &results[index];
			snprintf(result->message, sizeof(result->message), "%s (code %lld)", message,
				 (long long)code);
			if (code == DUPLICATE_KEY) {
				result->outcome = OP_DUPLICATE;
				summary->duplicates++;
			} else {
				result->outcome = OP_REFUSED;
				summary->refused++;
			}
		}
	}
	if (array_of(reply, "writeConcernErrors", &elements) && bson_iter_next(&elements)) {
		int64_t index, code;
		const char *message;
		error_of(&elements, &index, &code, &message);
		summary->write_concern_failed = true;
		snprintf(summary->write_concern, sizeof(summary->write_concern), "%s (code %lld)",
			 message, (long long)code);
	}
	int64_t written = kind == REPLY_INSERTS
				  ? count_field(reply, "nInserted")
				  : count_field(reply, "nMatched") + count_field(reply, "nUpserted");
	size_t settled = summary->duplicates + summary->refused;
	if (written >= 0 && (size_t)written == count - settled) {
		for (size_t i = 0; i < count; i++) {
			if (results[i].outcome == OP_UNKNOWN)
				results[i].outcome = OP_WRITTEN;
		}
		summary->written = (size_t)written;
	} else {
		summary->unknown = count - settled;
	}
}
