/*
 * gridfs_stream: answers a track whose file is in GridFS, with everything a
 * file on disk gets (serve.c's decision: 200, HEAD, 206, multipart 206, 304,
 * 412, 416), its bytes read chunk by chunk off the worker's loop (lookup
 * pool threads, gridfs_store) and sent as they arrive, at most
 * --gridfs-window bytes queued per response before reading waits for the
 * client to take them. With --gridfs-cache-dir, from a local copy instead
 * (gridfs_spool), by sendfile.
 */
#ifndef MUSICD_GRIDFS_STREAM_H
#define MUSICD_GRIDFS_STREAM_H

#include "wire/exchange.h"
#include "db/gridfs_file.h"
#include "db/gridfs_spool.h"

/*
 * Answers the exchange's GET or HEAD for mid with file (copied); with a
 * spool, from its copy (made first, if there is none yet) when it can.
 */
void gridfs_stream_serve(struct exchange *exchange, const char *mid,
			 const struct gridfs_file *file, struct gridfs_spool *spool);

#endif
