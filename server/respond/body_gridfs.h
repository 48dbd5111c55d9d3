/*
 * body_gridfs: the body source of a track whose file is in GridFS. With
 * --gridfs-cache-dir it sends the spool's copy (body_file), after waiting for
 * its fill if there is none yet; otherwise, or when no copy can be made, it
 * reads the decided parts chunk by chunk on the database threads
 * (gridfs_store) and streams them as they arrive, with at most
 * --gridfs-window bytes queued before reading waits for the client.
 */
#ifndef MUSICD_BODY_GRIDFS_H
#define MUSICD_BODY_GRIDFS_H

#include "config/config.h"
#include "respond/file_plan.h"
#include "wire/exchange.h"

/*
 * A GridFS file's representation, with the storage its strings point to (its
 * content type may be replaced in content_type). The body source's
 * (struct file_body's gridfs): it keeps a copy of its own.
 */
struct gridfs_representation {
	struct gridfs_entry entry;
	struct representation representation;
	char content_type[GRIDFS_TEXT_MAX];
	char file_lines[RESPONSE_FILE_LINES_SIZE(CONFIG_HEADER_VALUE_MAX)];
};

/*
 * Fills out for entry (copied), name (the URL's :param, name_length bytes)
 * naming the type when the entry does not, under cache_control (NULL: none).
 * 0, or -1 when the validators do not fit a head.
 */
int body_gridfs_representation(struct gridfs_representation *out,
			       const struct gridfs_entry *entry, const char *name,
			       size_t name_length, const char *cache_control);

/*
 * Reads plan's bytes from GridFS (or the spool's copy) and sends them, the
 * head before the first, answering request; body->gridfs is representation's
 * file.
 */
void body_gridfs_send(struct exchange *exchange, const struct request *request,
		      const struct representation *representation, const struct file_body *body,
		      const struct file_plan *plan);

#endif
