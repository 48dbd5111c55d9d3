/*
 * service: what every worker shares, built once by main before the workers
 * start and read-only (or internally synchronised) afterwards.
 */
#ifndef MUSICD_SERVICE_H
#define MUSICD_SERVICE_H

#include "access_log.h"
#include "config.h"
#include "delivery.h"
#include "file_cache.h"
#include "gridfs_spool.h"
#include "lookup_cache.h"
#include "lookup.h"
#include "media.h"
#include "proxy_trust.h"

struct service {
	const struct config *config;
	struct media_roots media_roots;
	struct lookup_pool *lookups;	 /* internally locked */
	struct access_log *access_log;	 /* NULL when off; lock-free appends */
	struct lookup_cache *lookup_cache; /* internally locked */
	struct file_cache *file_cache;	   /* internally locked */
	const struct delivery *delivery;   /* sendfile or an offload strategy */
	struct gridfs_spool *gridfs_spool; /* NULL when off; internally locked */
	struct cidr trusted_proxies[CONFIG_MAX_TRUSTED_PROXIES];
	size_t trusted_proxy_count;
};

#endif
