/*
 * lookup_status: the words each status is logged with, written once: a
 * failure's log line (respond/answer.c) says these too.
 */
#include "db/lookup_status.h"

#include <stddef.h>

static const char *const words[] = {
	[LOOKUP_FOUND] = "found",
	[LOOKUP_NOT_FOUND] = "no such document",
	[LOOKUP_NO_PATH] = "data problem",
	[LOOKUP_UNAVAILABLE] = "database unavailable",
	[LOOKUP_FAILED] = "database error",
	[LOOKUP_GRIDFS] = "file in GridFS",
	[LOOKUP_BAD_DATA] = "data error",
};

const char *lookup_status_describe(enum lookup_status status)
{
	return (size_t)status < sizeof(words) / sizeof(words[0]) && words[status] != NULL
		       ? words[status]
		       : "unknown";
}
