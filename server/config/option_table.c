/*
 * option_table: the table itself. Defaults are written as the text a user
 * would write, so config_init applies them through config_set, parsed and
 * bounded like any other value.
 */
#include "config/option_table.h"

#include <string.h>

#include "http/range.h"
#include "http/url_token.h"

#define TEXT_OF(x) #x
#define NUMBER_TEXT(macro) TEXT_OF(macro) /* the digits a numeric macro expands to */

#define FIELD(name) offsetof(struct config, name)
#define STRING(field) .kind = OPTION_STRING, .offset = FIELD(field)
#define STRING_OR_OFF(field) .kind = OPTION_STRING_OR_OFF, .offset = FIELD(field)
#define NUMBER(field, low, high) .kind = OPTION_UNSIGNED, .offset = FIELD(field), .minimum = low, .maximum = high
#define BYTES(field, high) BYTES_FROM(field, 0, high)
#define BYTES_FROM(field, low, high) \
	.kind = OPTION_BYTES, .offset = FIELD(field), .byte_minimum = low, .byte_maximum = high
#define LIST(items, count, capacity)                                                              \
	.kind = OPTION_LIST, .offset = FIELD(items), .count_offset = FIELD(count), .maximum = capacity

#define LIVE .live = true

#define DEFAULT_MONGODB_URI "mongodb://127.0.0.1:27017"

/*
 * Every setting, in --help order, with its one written default. config/musicd.conf
 * and the man page (man/musicd.8, the option reference) repeat these;
 * tests/integration/test_cli.py checks that they agree with --help.
 */
static const struct option_spec options[] = {
	{"config", "FILE|off", .kind = OPTION_FILE_ONLY_ON_COMMAND_LINE, .offset = FIELD(config_file),
	 .help = "read settings from FILE (name = value lines; SIGHUP re-reads it); flags "
		 "override it; without it, the installed file if it exists (below); off: none"},
	{"listen", "ADDR:PORT", .kind = OPTION_LISTEN, .help = "address and port to serve on",
	 .default_value = "127.0.0.1:" NUMBER_TEXT(CONFIG_DEFAULT_PORT)},
	{"metrics-listen", "ADDR:PORT|off", .kind = OPTION_METRICS_LISTEN,
	 .help = "address and port of GET /metrics (Prometheus), apart from --listen; or off",
	 .default_value = "127.0.0.1:" NUMBER_TEXT(CONFIG_DEFAULT_METRICS_PORT)},
	{"mongodb-uri", "URI", STRING(mongodb_uri), .help = "MongoDB connection string",
	 .default_value = DEFAULT_MONGODB_URI,
	 .default_note = "$MONGODB_URI, else " DEFAULT_MONGODB_URI},
	{"database", "NAME", STRING(database), .help = "database holding the tracks",
	 .default_value = "musicdb"},
	{"collection", "NAME", STRING(collection), .help = "collection holding the tracks",
	 .default_value = "tracks"},
	{"path-field", "NAME", STRING(path_field),
	 .help = "document field with the file's absolute path", .default_value = "path"},
	{"etag-field", "NAME|off", STRING_OR_OFF(etag_field),
	 .help = "document field (a content hash) sent as the ETag, the same from every origin; "
		 "off: from the file's mtime and size",
	 .default_value = "off"},
	{"content-type-field", "NAME|off", STRING_OR_OFF(content_type_field),
	 .help = "document field (a media type, e.g. audio/flac) sent as Content-Type; off: by the "
		 "file's extension",
	 .default_value = "off"},
	{"gridfs-field", "NAME", STRING(gridfs_field),
	 .help = "field with the GridFS file's ObjectId when the path field is absent; _id: "
		 "the documents are the fs.files entries",
	 .default_value = "gridfs_id"},
	{"gridfs-bucket", "NAME", STRING(gridfs_bucket),
	 .help = "GridFS bucket (NAME.files, NAME.chunks) in the same database",
	 .default_value = "fs"},
	{"gridfs-window", "BYTES", BYTES_FROM(gridfs_window, 1024, 1024 * 1024 * 1024),
	 .help = "GridFS bytes read ahead per response before waiting for the client",
	 .default_value = "1048576"},
	{"gridfs-cache-dir", "DIR|off", STRING_OR_OFF(gridfs_cache_dir),
	 .help = "keep a copy of each GridFS file read in DIR and send it from there",
	 .default_value = "off"},
	{"gridfs-cache-size", "BYTES", BYTES(gridfs_cache_size, CONFIG_MAX_GRIDFS_CACHE_SIZE),
	 .help = "bytes the GridFS copies may take (K, M, G, T, P: times 1024 each); the least "
		 "recently used are removed",
	 .default_value = "1073741824"},
	{"media-root", "DIR", LIST(media_roots, media_root_count, CONFIG_MAX_MEDIA_ROOTS),
	 .help = "directory files may be served from; repeatable, at least one required"},
	{"workers", "N", NUMBER(workers, 1, CONFIG_MAX_WORKERS), .help = "HTTP worker threads",
	 .default_note = "one per CPU, at most " NUMBER_TEXT(CONFIG_MAX_WORKERS)},
	{"lookup-threads", "N", NUMBER(lookup_threads, 1, 256),
	 .help = "database lookup threads", .default_value = "8"},
	{"lookup-timeout", "MS", NUMBER(lookup_timeout_ms, 1, 600000),
	 .help = "deadline for a database lookup before answering 503", .default_value = "2000"},
	{"max-pending-lookups", "N", NUMBER(max_pending_lookups, 1, 1000000),
	 .help = "lookups queued or running before new ones get 503 at once",
	 .default_value = "1024"},
	{"lookup-cache-entries", "N", NUMBER(lookup_cache_entries, 0, 100000000),
	 .help = "ids whose paths are remembered; 0 disables the lookup cache",
	 .default_value = "10000"},
	{"lookup-cache-ttl", "SECONDS", NUMBER(lookup_cache_ttl, 0, 86400),
	 .help = "how long a found path is reused without asking the database",
	 .default_value = "30", LIVE},
	{"lookup-cache-negative-ttl", "SECONDS", NUMBER(lookup_cache_negative_ttl, 0, 86400),
	 .help = "how long \"no such document\" is remembered", .default_value = "5", LIVE},
	{"open-file-cache-entries", "N", NUMBER(open_file_cache_entries, 0, 1000000),
	 .help = "files kept open between requests; 0 disables the cache",
	 .default_value = "1000"},
	{"open-file-cache-valid", "SECONDS", NUMBER(open_file_cache_valid, 0, 86400),
	 .help = "how often a cached file is checked against the disk", .default_value = "5", LIVE},
	{"open-file-cache-inactive", "SECONDS", NUMBER(open_file_cache_inactive, 1, 86400),
	 .help = "how long an unused cached file stays open", .default_value = "60", LIVE},
	/* The disk pool (media/disk_io.h): every touch of storage off the event loops. */
	{"disk-threads", "N", NUMBER(disk_threads, 1, CONFIG_MAX_DISK_THREADS),
	 .help = "threads that open, check, read ahead and close track files, so that no worker "
		 "waits for a disk",
	 .default_value = "32"},
	{"disk-threads-per-root", "N", NUMBER(disk_threads_per_root, 0, CONFIG_MAX_DISK_THREADS),
	 .help = "the most disk threads one media root (or the GridFS spool) may occupy at once, "
		 "so a hung mount leaves the others threads; 0: three quarters of --disk-threads",
	 .default_value = "0"},
	{"disk-queue", "N", NUMBER(disk_queue, 1, 1000000),
	 .help = "track starts queued per media root for a disk thread; more wait "
		 "--disk-queue-timeout for room",
	 .default_value = "256"},
	{"disk-queue-timeout", "MS", NUMBER(disk_queue_timeout_ms, 1, 600000),
	 .help = "how long a track start waits for room in a full disk queue before 503 with "
		 "Retry-After (a stream already playing always waits)",
	 .default_value = "2000", LIVE},
	{"disk-window", "BYTES", BYTES_FROM(disk_window, 65536, 64 * 1024 * 1024),
	 .help = "bytes of a track read ahead per stream, and the most sent from the page cache "
		 "at once: one window is sent while the next is read",
	 .default_value = "524288", LIVE},
	{"cache-control", "VALUE|off", STRING_OR_OFF(cache_control),
	 .help = "Cache-Control of 200, 206 and 304 answers",
	 .default_value = "public, max-age=86400", LIVE},
	{"error-cache-control", "VALUE|off", STRING_OR_OFF(error_cache_control),
	 .help = "Cache-Control of error answers, so caches do not keep an outage",
	 .default_value = "no-store", LIVE},
	{"cors-origin", "ORIGIN|*|off",
	 LIST(cors_origins, cors_origin_count, CONFIG_MAX_CORS_ORIGINS),
	 .help = "web page origin (scheme://host[:port]) allowed to read tracks by CORS, or * for "
		 "any; repeatable",
	 .default_note = "off", LIVE},
	/* Signed URLs: off until a key file is given (http/url_token.h, config/url_keys.h). */
	{"url-signing-key-file", "FILE|off", STRING_OR_OFF(url_signing_key_file),
	 .help = "hex keys, one a line: every track request then needs a valid signed-URL token "
		 "(Akamai EdgeAuth format); re-read on SIGHUP",
	 .default_value = "off", LIVE},
	{"url-signing-leeway", "SECONDS",
	 NUMBER(url_signing_leeway, 0, CONFIG_MAX_URL_SIGNING_LEEWAY),
	 .help = "clock skew allowed between the signer and musicd at a token's st and exp",
	 .default_value = "5", LIVE},
	{"url-signing-parameter", "NAME", STRING(url_signing_parameter),
	 .help = "query parameter holding the token", .default_value = URL_TOKEN_DEFAULT_PARAMETER,
	 LIVE},
	{"max-ranges", "N", NUMBER(max_ranges, 1, RANGE_MAX_PARTS_LIMIT),
	 .help = "ranges one request may ask for before it gets the whole file",
	 .default_value = NUMBER_TEXT(RANGE_DEFAULT_MAX_PARTS), LIVE},
	{"x-accel-redirect", "PREFIX",
	 LIST(x_accel_redirects, x_accel_redirect_count, CONFIG_MAX_MEDIA_ROOTS),
	 .help = "offload to nginx: answer X-Accel-Redirect: PREFIX<path in root>; one per media "
		 "root, in the same order"},
	{"x-sendfile", "[on|off]", .kind = OPTION_SWITCH, .offset = FIELD(x_sendfile),
	 .help = "offload to Apache/lighttpd: answer X-Sendfile: <absolute path>",
	 .default_value = "off"},
	{"trusted-proxy", "CIDR",
	 LIST(trusted_proxies, trusted_proxy_count, CONFIG_MAX_TRUSTED_PROXIES),
	 .help = "peer whose X-Forwarded-For names the client in the access log; repeatable", LIVE},
	/* Per-client limits. */
	{"limit-rate", "BYTES", BYTES(limit_rate, CONFIG_MAX_LIMIT_RATE),
	 .help = "send each track's body at BYTES per second once --limit-rate-after bytes went "
		 "out (K, M, G: times 1024 each), as nginx's limit_rate; behind a --trusted-proxy "
		 "the proxy is asked to (X-Accel-Limit-Rate); 0: off",
	 .default_value = "0", LIVE},
	{"limit-rate-after", "BYTES", BYTES(limit_rate_after, CONFIG_MAX_LIMIT_RATE_AFTER),
	 .help = "bytes of each track's body sent at full speed before --limit-rate applies",
	 .default_value = "0", LIVE},
	{"max-streams-per-client", "N", NUMBER(max_streams_per_client, 0, CONFIG_MAX_CONNECTIONS),
	 .help = "answers with a body in flight (until the client has the last byte) at once per "
		 "client (the peer, or the X-Forwarded-For client of a --trusted-proxy), over all "
		 "workers; beyond it 429; 0: no cap",
	 .default_value = "0", LIVE},
	{"client-ipv6-prefix", "BITS",
	 NUMBER(client_ipv6_prefix, CONFIG_MIN_CLIENT_IPV6_PREFIX, CONFIG_MAX_CLIENT_IPV6_PREFIX),
	 .help = "an IPv6 client is counted (--max-streams-per-client) by the first BITS of its "
		 "address, as one home or phone gets a whole /64; IPv4 (and IPv4-mapped IPv6) "
		 "clients by their address",
	 .default_value = "64", LIVE},
	{"max-connections", "N", NUMBER(max_connections, 1, CONFIG_MAX_CONNECTIONS),
	 .help = "connections open at once; beyond it new ones are closed at once",
	 .default_note = "what the descriptor limit leaves room for"},
	{"max-header-size", "BYTES",
	 NUMBER(max_header_size, CONFIG_MAX_HEADER_SIZE_MIN, CONFIG_MAX_HEADER_SIZE_MAX),
	 .help = "largest request head accepted; also the most pipelined input kept while "
		 "responding",
	 .default_value = "16384"},
	{"header-timeout", "SECONDS", NUMBER(header_timeout, 1, CONFIG_MAX_TIMEOUT),
	 .help = "time to send a whole request head before 408", .default_value = "20"},
	{"keepalive-timeout", "SECONDS", NUMBER(keepalive_timeout, 1, CONFIG_MAX_TIMEOUT),
	 .help = "how long an idle keep-alive connection is kept open", .default_value = "60"},
	{"send-timeout", "SECONDS", NUMBER(send_timeout, 1, CONFIG_MAX_TIMEOUT),
	 .help = "how long a response may make no progress before the connection is closed",
	 .default_value = "60"},
	{"access-log", "FILE|-|off", STRING_OR_OFF(access_log),
	 .help = "combined-format access log: a file, - for stdout, or off",
	 .default_value = "off", LIVE},
	{"error-log", "FILE|stderr", STRING(error_log),
	 .help = "diagnostics: a file (reopened on SIGUSR1, as the access log), or stderr",
	 .default_value = LOG_TARGET_STDERR},
	{"log-level", "LEVEL", .kind = OPTION_LOG_LEVEL, .help = "debug, info, warn or error",
	 .default_value = "info", LIVE},
	{"user", "USER[:GROUP]", STRING(user),
	 .help = "once the listeners are bound and the logs open, run as USER (its groups, or "
		 "GROUP); for a musicd started as root"},
	{"pid-file", "FILE|off", STRING_OR_OFF(pid_file),
	 .help = "once musicd serves (listeners bound, --user taken), write its pid to FILE, "
		 "removed at exit; off: none",
	 .default_value = "off"},
};

_Static_assert(sizeof(options) / sizeof(options[0]) <= CONFIG_OPTION_MAX,
	       "raise CONFIG_OPTION_MAX");

size_t option_table_count(void)
{
	return sizeof(options) / sizeof(options[0]);
}

const struct option_spec *option_table_at(size_t index)
{
	return index < option_table_count() ? &options[index] : NULL;
}

const char *option_table_name_at(size_t index)
{
	return index < option_table_count() ? options[index].name : NULL;
}

/* A flags_lookup over the table; a switch's value is optional (a bare --x-sendfile means on). */
const void *option_table_flag(const char *name, size_t length, enum flags_value *value)
{
	for (size_t i = 0; i < option_table_count(); i++) {
		if (flags_name_is(name, length, options[i].name)) {
			*value = options[i].kind == OPTION_SWITCH ? FLAGS_VALUE_OPTIONAL
								 : FLAGS_VALUE_REQUIRED;
			return &options[i];
		}
	}
	return NULL;
}

const struct option_spec *option_table_find(const char *name)
{
	enum flags_value value;
	return option_table_flag(name, strlen(name), &value);
}
