/*
 * config_fields: every setting of musicd as a field of one struct, and the
 * limits the settings are checked against. A plain data type: config.h
 * fills, copies and frees it.
 */
#ifndef MUSICD_CONFIG_FIELDS_H
#define MUSICD_CONFIG_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"

#define CONFIG_MAX_MEDIA_ROOTS 32
#define CONFIG_MAX_TRUSTED_PROXIES 64
#define CONFIG_MAX_CORS_ORIGINS 32
#define CONFIG_ERROR_MAX 512
#define CONFIG_DEFAULT_PORT 23001
#define CONFIG_DEFAULT_METRICS_PORT 23002
/* One limit for --workers and for the one-per-CPU default (main sizes its arrays by it). */
#define CONFIG_MAX_WORKERS 256
#define CONFIG_MAX_CONNECTIONS 10000000
/* --max-header-size: below the minimum an ordinary browser request does not fit. */
#define CONFIG_MAX_HEADER_SIZE_MIN 1024
#define CONFIG_MAX_HEADER_SIZE_MAX (1024 * 1024)
/* The longest --header-timeout, --keepalive-timeout and --send-timeout, in seconds. */
#define CONFIG_MAX_TIMEOUT 3600
/* The largest --gridfs-cache-size: 4 EiB, far past any disk, well inside off_t and uint64_t sums. */
#define CONFIG_MAX_GRIDFS_CACHE_SIZE ((uint64_t)1 << 62)
/*
 * The longest value config_validate lets into a response header (--cache-control,
 * --error-cache-control, an --x-accel-redirect prefix), so a head built from the
 * settings always fits; such values may not hold control characters either.
 */
#define CONFIG_HEADER_VALUE_MAX 1024
/* The longest --url-signing-leeway, in seconds, and the longest --url-signing-parameter. */
#define CONFIG_MAX_URL_SIGNING_LEEWAY 3600
#define CONFIG_URL_SIGNING_PARAMETER_MAX 64
/* --url-lifetime of a URL --sign-url prints: an hour unless given, ten years at most. */
#define CONFIG_DEFAULT_URL_LIFETIME 3600
#define CONFIG_MAX_URL_LIFETIME (10u * 366 * 24 * 3600)
/* The fastest --limit-rate (1 TiB/s) and the largest --limit-rate-after (as the spool's size). */
#define CONFIG_MAX_LIMIT_RATE ((uint64_t)1 << 40)
#define CONFIG_MAX_LIMIT_RATE_AFTER ((uint64_t)1 << 62)
/* The most --disk-threads (and --disk-threads-per-root). */
#define CONFIG_MAX_DISK_THREADS 1024
/* --client-ipv6-prefix: from a /32 (an ISP's: coarser would lump ISPs together) to one address. */
#define CONFIG_MIN_CLIENT_IPV6_PREFIX 32
#define CONFIG_MAX_CLIENT_IPV6_PREFIX 128
/* The most settings the option table may hold (what a list of their names is sized by). */
#define CONFIG_OPTION_MAX 128

/* Owned strings are malloc'd and released by config_free. */
struct config {
	char *config_file;	  /* the file read (config_load); NULL when none was */
	bool config_off;	  /* none was, because --config off said so */
	bool check_database;	  /* -t --check-database: reach the database too */
	char *listen_host;	  /* "127.0.0.1", "::1", "0.0.0.0" ... */
	uint16_t listen_port;
	char *metrics_host;	  /* --metrics-listen; NULL for off */
	uint16_t metrics_port;
	char *mongodb_uri;
	char *database;
	char *collection;
	char *path_field;
	char *etag_field;	  /* string field whose value is the ETag; NULL: from mtime and size */
	char *content_type_field; /* string field whose value is the Content-Type; NULL: by extension */
	char *gridfs_field;	  /* a GridFS file's ObjectId when path_field is absent; "_id" */
	char *gridfs_bucket;
	uint64_t gridfs_window;	  /* GridFS bytes buffered per response before fetching waits */
	char *gridfs_cache_dir;	  /* the spool of GridFS copies; NULL for off */
	uint64_t gridfs_cache_size; /* bytes the spool may hold */
	char *media_roots[CONFIG_MAX_MEDIA_ROOTS]; /* as given; media.c resolves them */
	size_t media_root_count;
	unsigned workers;	    /* 0 = one per CPU (at most CONFIG_MAX_WORKERS), settled by main */
	unsigned lookup_threads;
	unsigned lookup_timeout_ms;
	char *access_log;	    /* a path, "-" for stdout, or NULL for off */
	char *error_log;	    /* a path, or LOG_TARGET_STDERR */
	char *user;		    /* --user USER[:GROUP] to drop to; NULL to stay who started */
	char *pid_file;		    /* --pid-file, written once serving; NULL for off */
	/*
	 * "FILE:LINE" when the config file set user (and no flag replaced it), else "":
	 * main looks the user up after loading, and names that line as config's own
	 * errors name theirs.
	 */
	char user_origin[CONFIG_ERROR_MAX];
	char *cache_control;	    /* sent on 200, 206 and 304; NULL for off */
	unsigned max_ranges;	    /* more ranges than this in one request: 200, whole file */
	unsigned max_pending_lookups;	  /* queued or running; beyond it, 503 at once */
	unsigned lookup_cache_entries;	  /* 0 disables the lookup cache */
	unsigned lookup_cache_ttl;	  /* seconds a found path is reused */
	unsigned lookup_cache_negative_ttl; /* seconds "no such document" is reused */
	unsigned open_file_cache_entries; /* 0 disables the open-file cache */
	unsigned open_file_cache_valid;	  /* seconds between checks of a cached file on disk */
	unsigned open_file_cache_inactive; /* seconds unused before a cached file is closed */
	unsigned disk_threads;		  /* the disk pool's threads */
	unsigned disk_threads_per_root;	  /* one lane's most; 0: three quarters, settled by main */
	unsigned disk_queue;		  /* starts queued per lane */
	unsigned disk_queue_timeout_ms;	  /* a start's wait for room in a full queue, then 503 */
	uint64_t disk_window;		  /* bytes read ahead per stream, and sent at once */
	enum log_level log_level;

	/* Offload: nginx or Apache/lighttpd send the bytes; musicd only looks up and checks. */
	char *x_accel_redirects[CONFIG_MAX_MEDIA_ROOTS]; /* one URI prefix per media root, in order */
	size_t x_accel_redirect_count;
	int x_sendfile;				 /* answer with X-Sendfile: <absolute path> */
	char *trusted_proxies[CONFIG_MAX_TRUSTED_PROXIES]; /* CIDRs whose X-Forwarded-For is believed */
	size_t trusted_proxy_count;
	char *error_cache_control; /* Cache-Control of 4xx and 5xx answers; NULL for none */
	char *cors_origins[CONFIG_MAX_CORS_ORIGINS]; /* origins, or one "*" or "off" (cors.h) */
	size_t cors_origin_count;		     /* 0: off */

	/* Per-client limits (respond/client_limits.c says which layer applies each). */
	uint64_t limit_rate;		 /* body bytes per second after limit_rate_after; 0: off */
	uint64_t limit_rate_after;	 /* body bytes sent at full speed first */
	unsigned max_streams_per_client; /* answers with a body in flight per client; 0: no cap */
	unsigned client_ipv6_prefix;	 /* an IPv6 client is counted by this many first bits */

	/* The connection layer's bounds. */
	unsigned max_connections;   /* 0 = what the descriptor limit leaves room for, settled by main */
	unsigned max_header_size;   /* bytes of one request head; also the pipelined input kept */
	unsigned header_timeout;    /* seconds for a whole request head, from its first byte */
	unsigned keepalive_timeout; /* seconds an idle keep-alive connection is kept */
	unsigned send_timeout;	    /* seconds a response may make no progress */

	/* Signed URLs (http/url_token.h): with a key file, the track route needs a token. */
	char *url_signing_key_file;  /* hex keys (config/url_keys.h); NULL: off */
	unsigned url_signing_leeway; /* seconds of clock skew allowed at st and at exp */
	char *url_signing_parameter; /* the query parameter holding the token */

	/* --sign-url's arguments (CONFIG_ACTION_SIGN_URL): not settings, so not in the table. */
	const char *sign_url;	 /* the URL, path or id to sign; points into argv */
	unsigned url_lifetime;	 /* --url-lifetime: seconds the signed URL stays valid */
};

enum config_action {
	CONFIG_ACTION_RUN,
	CONFIG_ACTION_HELP,
	CONFIG_ACTION_VERSION,
	CONFIG_ACTION_CHECK, /* -t, --check-config: validate everything, serve nothing */
	CONFIG_ACTION_SIGN_URL, /* --sign-url: print a signed URL, serve nothing */
};

#endif
