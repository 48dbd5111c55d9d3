/*
 * resources: what every worker's handlers share, built once by main before
 * the workers start and read-only (or internally synchronised) afterwards.
 * The settings a request reads come from its snapshot (settings.h,
 * exchange_config); config here is the process's as it started, read for
 * what only a restart changes.
 */
#ifndef MUSICD_RESOURCES_H
#define MUSICD_RESOURCES_H

#include "base/address_counts.h"
#include "base/metrics.h"
#include "config/config.h"
#include "config/settings.h"
#include "db/db_pool.h"
#include "db/gridfs_spool.h"
#include "db/lookup_cache.h"
#include "media/disk_io.h"
#include "media/file_cache.h"
#include "media/media.h"
#include "respond/handoff.h"

struct resources {
	const struct config *config;	   /* as started: only its restart-only settings */
	struct settings_board *settings;   /* the snapshots, one slot per worker (settings.h) */
	struct media_roots media_roots;
	struct db_pool *db;		   /* internally locked */
	struct lookup_cache *lookup_cache; /* internally locked */
	struct file_cache *file_cache;	   /* internally locked */
	struct disk_io *disk;		   /* the disk pool: every touch of storage; locked */
	const struct handoff *handoff;	   /* sendfile or an offload strategy */
	struct metrics *metrics;	   /* one shard per worker and lookup thread */
	struct gridfs_spool *gridfs_spool; /* NULL when off; internally locked */
	struct address_counts *client_places; /* streams per client (--max-streams-per-client); locked */
};

#endif
