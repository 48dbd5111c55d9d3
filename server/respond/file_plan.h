/*
 * file_plan: what file_answer decided, as the body sources receive it: where
 * the bytes come from (struct file_body), which of them (struct file_plan),
 * and the 200 or 206 head that announces them, built the same way for every
 * source.
 */
#ifndef MUSICD_FILE_PLAN_H
#define MUSICD_FILE_PLAN_H

#include <event2/buffer.h>
#include <stddef.h>

#include "db/db_pool.h"
#include "db/gridfs_entry.h"
#include "db/gridfs_spool.h"
#include "http/disposition.h"
#include "http/multipart.h"
#include "http/range.h"
#include "http/representation.h"
#include "http/response_head.h"
#include "media/disk_io.h"
#include "respond/client_limits.h"
#include "respond/request.h"

enum body_kind {
	BODY_FILE,
	BODY_GRIDFS,
	BODY_KINDS
};

/*
 * Keeps a body's file (its segment, and the descriptor the segment closes) for
 * an answer that outlives the call: a start waiting for its first window, a
 * body fed a window at a time. hold takes one more reference to whatever owns
 * the segment (an open-file cache entry, a spooled copy), release gives one
 * back; both on the worker's thread. It costs no evbuffer chain (libevent
 * allocates each at 1 KiB, and every listener of a long track would carry one).
 */
struct file_keeper {
	void (*hold)(void *owner);
	void (*release)(void *owner);
	void *owner;
};

struct gridfs_representation; /* body_gridfs.h */

/* Where an answer's bytes come from; the caller's, for the call only (a source copies what it keeps). */
struct file_body {
	enum body_kind kind;
	const char *download_path; /* the name ?download offers comes from it; NULL: the URL's */
	struct evbuffer_file_segment *segment;	/* BODY_FILE: borrowed, the whole file */
	int fd;					/* BODY_FILE: the segment's descriptor */
	struct disk_file *disk;			/* BODY_FILE: for disk_residency; NULL: none */
	struct disk_io *io;			/* where a file's windows are read (BODY_FILE, and
						   BODY_GRIDFS's spooled copy); NULL: none */
	unsigned lane;				/* that file's disk lane (disk_io.h) */
	struct file_keeper keeper;		/* BODY_FILE: keeps segment alive past the call */
	const struct gridfs_representation *gridfs; /* BODY_GRIDFS: the file and its representation */
	struct gridfs_spool *spool;		/* BODY_GRIDFS: copies to send instead; NULL: none */
	struct db_pool *pool;			/* BODY_GRIDFS: where chunks are read */
};

/* The decided body: the whole representation (200), one range or several (206). */
struct file_plan {
	int whole;
	const struct byte_range *parts; /* count ranges, in request order */
	size_t count;
	char boundary[MULTIPART_BOUNDARY_MAX]; /* count > 1: multipart/byteranges */
};

/* What the fields of a 200 or 206 head point to besides the representation. */
struct file_head_text {
	char content_range[80];
	char content_type[MULTIPART_BOUNDARY_MAX + 64];
	char disposition[DISPOSITION_VALUE_MAX];
	struct client_limits_text limits;
};

/*
 * The 200 or 206 head of plan, answering request: its fields point into
 * representation and text, which must outlive the head. For the body sources.
 */
struct response_head file_plan_head(const struct request *request,
				      const struct representation *representation,
				      const char *download_path, const struct file_plan *plan,
				      struct file_head_text *text);

/*
 * Content-Disposition: attachment, named after the URL's :param (or the id
 * and download_path's extension when :param cannot be a name), when request
 * asks for ?download; value holds it and must outlive the head. The one field
 * an offloaded answer shares with these.
 */
void file_plan_add_disposition(const struct request *request, struct response_head *head,
			       const char *download_path, char value[DISPOSITION_VALUE_MAX]);

/* The body's length for plan (multipart texts included). */
uint64_t file_plan_body_length(const struct representation *representation,
				 const struct file_plan *plan);

#endif
