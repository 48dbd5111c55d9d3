/*
 * lookup_status: the words each status is logged with.
 */
#include "db/lookup_status.h"

const char *lookup_status_describe(enum lookup_status status)
{
	switch (status) {
	case LOOKUP_FOUND:
		return "found";
	case LOOKUP_NOT_FOUND:
		return "no such document";
	case LOOKUP_NO_PATH:
		return "document has no usable path";
	case LOOKUP_UNAVAILABLE:
		return "database unavailable";
	case LOOKUP_FAILED:
		return "database error";
	case LOOKUP_GRIDFS:
		return "file in GridFS";
	case LOOKUP_BAD_DATA:
		return "inconsistent GridFS data";
	}
	return "unknown";
}
