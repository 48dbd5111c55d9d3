/*
 * lookup_status: what a database job found (a findById, a GridFS read, a
 * spool fill), in the one vocabulary every job reports in. Which answer each
 * status gets is decided once, in respond/answer.c. Pure.
 */
#ifndef MUSICD_LOOKUP_STATUS_H
#define MUSICD_LOOKUP_STATUS_H

enum lookup_status {
	LOOKUP_FOUND,	    /* the job's result is there (find_track: a path) */
	LOOKUP_NOT_FOUND,   /* no such document */
	LOOKUP_NO_PATH,	    /* the document has no usable path (nor GridFS file): a data problem */
	LOOKUP_UNAVAILABLE, /* unreachable, past the deadline, or a retryable error twice: 503 */
	LOOKUP_FAILED,	    /* any other database error */
	LOOKUP_GRIDFS,	    /* no path, the file is in GridFS (find_track: gridfs is set) */
	LOOKUP_BAD_DATA,    /* GridFS data that contradicts itself (entry or chunks): a data error */
};

/* A few words for the log ("no such document"), the same wherever a status is logged. */
const char *lookup_status_describe(enum lookup_status status);

#endif
