/*
 * config: the option table, and the three sources it is filled from (the
 * MONGODB_URI environment variable, a config file, command-line flags). One
 * table drives flag parsing, config-file parsing and --help, so the three can
 * never disagree about what a setting is called or accepts.
 */
#include "config/config.h"

#include "http/cors.h"
#include "base/flags.h"
#include "http/response_head.h"
#include "http/proxy_trust.h"
#include "http/range.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CONFIG_FILE_MAX (1024 * 1024)
#define CONFIG_LINE_MAX 4096

enum option_kind {
	OPTION_STRING,	   /* char * field, replaced */
	OPTION_UNSIGNED,   /* unsigned field within [minimum, maximum] */
	OPTION_BYTES,	   /* uint64_t field, 0 to byte_maximum, with an optional K/M/G/T/P suffix */
	OPTION_LISTEN,	   /* host + port */
	OPTION_METRICS_LISTEN, /* host + port of the metrics listener, or "off" */
	OPTION_LIST,	   /* repeatable: appended; the command line's replace the file's */
	OPTION_SWITCH,	   /* int field: "on"/"off"; a bare flag on the command line means on */
	OPTION_STRING_OR_OFF, /* char * field, or NULL for "off" */
	OPTION_LOG_LEVEL,
	OPTION_FILE_ONLY_ON_COMMAND_LINE, /* --config: meaningless inside a file */
};

struct option_spec {
	const char *name;
	const char *value_name;
	enum option_kind kind;
	size_t offset;
	unsigned minimum, maximum; /* OPTION_UNSIGNED: the range; OPTION_LIST: maximum = capacity */
	uint64_t byte_maximum;	   /* OPTION_BYTES: the largest size */
	const char *help;
	size_t count_offset;	   /* OPTION_LIST: the size_t holding the item count */
	/*
	 * The default, as the text a user would write, applied by config_init through
	 * config_set (so it is parsed and bounded like any other value); NULL for none.
	 */
	const char *default_value;
	/*
	 * Where the real default is settled later (by main, or from the environment), what
	 * --help and the documentation say instead of default_value; NULL otherwise.
	 */
	const char *default_note;
	/*
	 * On SIGHUP (reload.c), true: a new value applies to requests that start after
	 * the reload; false (what an unmarked option gets, the safe side): the setting is
	 * fixed at start-up and a changed value is named in the reload's warning and left
	 * as it was.
	 */
	bool live;
};

#define TEXT_OF(x) #x
#define NUMBER_TEXT(macro) TEXT_OF(macro) /* the digits a numeric macro expands to */

#define FIELD(name) offsetof(struct config, name)
#define STRING(field) .kind = OPTION_STRING, .offset = FIELD(field)
#define STRING_OR_OFF(field) .kind = OPTION_STRING_OR_OFF, .offset = FIELD(field)
#define NUMBER(field, low, high) .kind = OPTION_UNSIGNED, .offset = FIELD(field), .minimum = low, .maximum = high
#define BYTES(field, high) .kind = OPTION_BYTES, .offset = FIELD(field), .byte_maximum = high
#define LIST(items, count, capacity)                                                              \
	.kind = OPTION_LIST, .offset = FIELD(items), .count_offset = FIELD(count), .maximum = capacity

#define LIVE .live = true

#define DEFAULT_MONGODB_URI "mongodb://127.0.0.1:27017"

/*
 * Every setting, in --help order, with its one written default. config/musicd.conf
 * and README's options table repeat these; tests/integration/test_cli.py checks
 * that they agree with --help.
 */
static const struct option_spec options[] = {
	{"config", "FILE", .kind = OPTION_FILE_ONLY_ON_COMMAND_LINE, .offset = FIELD(config_file),
	 .help = "read settings from FILE (name = value lines; SIGHUP re-reads it); flags "
		 "override it"},
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
	{"gridfs-field", "NAME", STRING(gridfs_field),
	 .help = "field with the GridFS file's ObjectId when the path field is absent; _id: "
		 "the documents are the fs.files entries",
	 .default_value = "gridfs_id"},
	{"gridfs-bucket", "NAME", STRING(gridfs_bucket),
	 .help = "GridFS bucket (NAME.files, NAME.chunks) in the same database",
	 .default_value = "fs"},
	{"gridfs-window", "BYTES", NUMBER(gridfs_window, 1024, 1024 * 1024 * 1024),
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
};

#define OPTION_COUNT (sizeof(options) / sizeof(options[0]))

static void set_error(char *error, size_t error_size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_error(char *error, size_t error_size, const char *fmt, ...)
{
	va_list args;
	va_start(args, fmt);
	vsnprintf(error, error_size, fmt, args);
	va_end(args);
}

/* A flags_lookup over the table; a switch's value is optional (a bare --x-sendfile means on). */
static const void *find_flag(const char *name, size_t length, enum flags_value *value)
{
	for (size_t i = 0; i < OPTION_COUNT; i++) {
		if (flags_name_is(name, length, options[i].name)) {
			*value = options[i].kind == OPTION_SWITCH ? FLAGS_VALUE_OPTIONAL
								 : FLAGS_VALUE_REQUIRED;
			return &options[i];
		}
	}
	return NULL;
}

static const struct option_spec *find_option(const char *name)
{
	enum flags_value value;
	return find_flag(name, strlen(name), &value);
}

static int replace_string(char **field, const char *value)
{
	char *copy = strdup(value);
	if (copy == NULL)
		return -1;
	free(*field);
	*field = copy;
	return 0;
}

/*
 * A default the table gives but config_set refuses is a mistake in the table
 * (test_config applies every one), and a failed strdup of a short default
 * leaves nothing to start with: either way there is no configuration to run.
 */
void config_init(struct config *config)
{
	memset(config, 0, sizeof(*config));
	for (size_t i = 0; i < OPTION_COUNT; i++) {
		if (options[i].default_value == NULL)
			continue;
		char error[CONFIG_ERROR_MAX];
		if (config_set(config, options[i].name, options[i].default_value, error,
			       sizeof(error)) < 0) {
			fprintf(stderr, "musicd: built-in default of %s: %s\n", options[i].name,
				error);
			abort();
		}
	}
}

static void clear_list(struct config *config, const struct option_spec *option)
{
	char **items = (char **)((char *)config + option->offset);
	size_t *count = (size_t *)((char *)config + option->count_offset);
	for (size_t i = 0; i < *count; i++)
		free(items[i]);
	*count = 0;
}

void config_free(struct config *config)
{
	free(config->config_file);
	free(config->listen_host);
	free(config->metrics_host);
	free(config->mongodb_uri);
	free(config->database);
	free(config->collection);
	free(config->path_field);
	free(config->etag_field);
	free(config->gridfs_field);
	free(config->gridfs_bucket);
	free(config->gridfs_cache_dir);
	for (size_t i = 0; i < OPTION_COUNT; i++) {
		if (options[i].kind == OPTION_LIST)
			clear_list(config, &options[i]);
	}
	free(config->access_log);
	free(config->error_log);
	free(config->user);
	free(config->error_cache_control);
	free(config->cache_control);
	memset(config, 0, sizeof(*config));
}

static int parse_unsigned(const char *text, unsigned minimum, unsigned maximum, unsigned *out)
{
	if (text[0] < '0' || text[0] > '9')
		return -1;
	errno = 0;
	char *end;
	unsigned long value = strtoul(text, &end, 10);
	if (errno != 0 || *end != '\0' || value < minimum || value > maximum)
		return -1;
	*out = (unsigned)value;
	return 0;
}

/*
 * Digits, then nothing or one of K, M, G, T, P (each 1024 times the one
 * before, as sizes of memory and disks are counted); at most maximum.
 */
static int parse_bytes(const char *text, uint64_t maximum, uint64_t *out)
{
	static const char suffixes[] = "KMGTP";
	if (text[0] < '0' || text[0] > '9')
		return -1;
	errno = 0;
	char *end;
	unsigned long long value = strtoull(text, &end, 10);
	if (errno != 0)
		return -1;
	uint64_t unit = 1;
	if (*end != '\0') {
		const char *suffix = strchr(suffixes, *end);
		if (suffix == NULL || end[1] != '\0')
			return -1;
		unit = (uint64_t)1 << (10 * (suffix - suffixes + 1));
	}
	if (value > maximum / unit)
		return -1;
	*out = (uint64_t)value * unit;
	return 0;
}

int config_parse_listen(const char *text, char *host, size_t host_size, uint16_t *port)
{
	const char *colon;
	const char *host_start = text;
	size_t host_length;

	if (text[0] == '[') {
		const char *close = strchr(text, ']');
		if (close == NULL || close[1] != ':')
			return -1;
		host_start = text + 1;
		host_length = (size_t)(close - host_start);
		colon = close + 1;
		if (host_length == 0)
			return -1;
	} else {
		colon = strrchr(text, ':');
		if (colon == NULL || memchr(text, ':', (size_t)(colon - text)) != NULL)
			return -1; /* a bare IPv6 address needs brackets */
		host_length = (size_t)(colon - text);
	}
	unsigned value;
	if (parse_unsigned(colon + 1, 1, 65535, &value) < 0)
		return -1;
	if (host_length == 0) {
		host_start = "0.0.0.0";
		host_length = strlen(host_start);
	}
	if (host_length >= host_size)
		return -1;
	memcpy(host, host_start, host_length);
	host[host_length] = '\0';
	*port = (uint16_t)value;
	return 0;
}

int config_set(struct config *config, const char *name, const char *value, char *error,
	       size_t error_size)
{
	const struct option_spec *option = find_option(name);
	if (option == NULL) {
		set_error(error, error_size, "unknown setting '%s'", name);
		return -1;
	}
	if (value[0] == '\0') {
		set_error(error, error_size, "%s: empty value", name);
		return -1;
	}
	char *base = (char *)config;

	switch (option->kind) {
	case OPTION_STRING:
	case OPTION_FILE_ONLY_ON_COMMAND_LINE:
		if (replace_string((char **)(base + option->offset), value) < 0)
			goto out_of_memory;
		return 0;
	case OPTION_UNSIGNED:
		if (parse_unsigned(value, option->minimum, option->maximum,
				   (unsigned *)(base + option->offset)) < 0) {
			set_error(error, error_size, "%s: '%s' is not a number from %u to %u", name,
				  value, option->minimum, option->maximum);
			return -1;
		}
		return 0;
	case OPTION_BYTES:
		if (parse_bytes(value, option->byte_maximum, (uint64_t *)(base + option->offset)) <
		    0) {
			set_error(error, error_size,
				  "%s: '%s' is not a size from 0 to %" PRIu64
				  " bytes (digits, optionally followed by K, M, G, T or P)",
				  name, value, option->byte_maximum);
			return -1;
		}
		return 0;
	case OPTION_LISTEN:
	case OPTION_METRICS_LISTEN: {
		int metrics = option->kind == OPTION_METRICS_LISTEN;
		char host[256];
		uint16_t port;
		if (metrics && strcmp(value, "off") == 0) {
			free(config->metrics_host);
			config->metrics_host = NULL;
			return 0;
		}
		if (config_parse_listen(value, host, sizeof(host), &port) < 0) {
			set_error(error, error_size,
				  "%s: '%s' is not ADDR:PORT (IPv6 as [ADDR]:PORT, port 1-65535)%s",
				  name, value, metrics ? " or off" : "");
			return -1;
		}
		if (replace_string(metrics ? &config->metrics_host : &config->listen_host, host) < 0)
			goto out_of_memory;
		*(metrics ? &config->metrics_port : &config->listen_port) = port;
		return 0;
	}
	case OPTION_LIST: {
		char **items = (char **)(base + option->offset);
		size_t *count = (size_t *)(base + option->count_offset);
		if (*count == option->maximum) {
			set_error(error, error_size, "%s: given more than %u times", name,
				  option->maximum);
			return -1;
		}
		if ((items[*count] = strdup(value)) == NULL)
			goto out_of_memory;
		(*count)++;
		return 0;
	}
	case OPTION_SWITCH: {
		int *field = (int *)(base + option->offset);
		if (strcmp(value, "on") == 0 || strcmp(value, "yes") == 0 || strcmp(value, "true") == 0) {
			*field = 1;
		} else if (strcmp(value, "off") == 0 || strcmp(value, "no") == 0 ||
			   strcmp(value, "false") == 0) {
			*field = 0;
		} else {
			set_error(error, error_size, "%s: '%s' is not on or off", name, value);
			return -1;
		}
		return 0;
	}
	case OPTION_STRING_OR_OFF: {
		char **field = (char **)(base + option->offset);
		if (strcmp(value, "off") == 0) {
			free(*field);
			*field = NULL;
			return 0;
		}
		if (replace_string(field, value) < 0)
			goto out_of_memory;
		return 0;
	}
	case OPTION_LOG_LEVEL:
		if (log_level_parse(value, &config->log_level) < 0) {
			set_error(error, error_size,
				  "%s: '%s' is not one of debug, info, warn, error", name, value);
			return -1;
		}
		return 0;
	}
	set_error(error, error_size, "%s: unhandled setting", name);
	return -1;

out_of_memory:
	set_error(error, error_size, "%s: out of memory", name);
	return -1;
}

static char *trim(char *text)
{
	while (*text == ' ' || *text == '\t')
		text++;
	char *end = text + strlen(text);
	while (end > text && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		*--end = '\0';
	return text;
}

int config_parse_text(struct config *config, const char *text, const char *source, char *error,
		      size_t error_size)
{
	char line[CONFIG_LINE_MAX];
	unsigned line_number = 0;
	const char *cursor = text;

	while (*cursor != '\0') {
		line_number++;
		size_t length = strcspn(cursor, "\n");
		if (length >= sizeof(line)) {
			set_error(error, error_size, "%s:%u: line too long", source, line_number);
			return -1;
		}
		memcpy(line, cursor, length);
		line[length] = '\0';
		cursor += length + (cursor[length] == '\n');

		char *content = trim(line);
		if (content[0] == '\0' || content[0] == '#')
			continue;
		char *equals = strchr(content, '=');
		if (equals == NULL) {
			set_error(error, error_size, "%s:%u: expected 'name = value', got '%s'",
				  source, line_number, content);
			return -1;
		}
		*equals = '\0';
		char *name = trim(content);
		char *value = trim(equals + 1);
		const struct option_spec *option = find_option(name);
		if (option != NULL && option->kind == OPTION_FILE_ONLY_ON_COMMAND_LINE) {
			set_error(error, error_size, "%s:%u: '%s' only works on the command line",
				  source, line_number, name);
			return -1;
		}
		char reason[CONFIG_ERROR_MAX];
		if (config_set(config, name, value, reason, sizeof(reason)) < 0) {
			set_error(error, error_size, "%s:%u: %s", source, line_number, reason);
			return -1;
		}
	}
	return 0;
}

static int read_file(const char *path, char **out, char *error, size_t error_size)
{
	FILE *file = fopen(path, "re");
	if (file == NULL) {
		set_error(error, error_size, "config file %s: %s", path, strerror(errno));
		return -1;
	}
	char *text = malloc(CONFIG_FILE_MAX + 1);
	size_t length = text ? fread(text, 1, CONFIG_FILE_MAX + 1, file) : 0;
	int failed = text == NULL || ferror(file) || length > CONFIG_FILE_MAX;
	fclose(file);
	if (failed) {
		set_error(error, error_size, "config file %s: unreadable or larger than %d bytes",
			  path, CONFIG_FILE_MAX);
		free(text);
		return -1;
	}
	text[length] = '\0';
	if (strlen(text) != length) {
		set_error(error, error_size, "config file %s: contains a NUL byte", path);
		free(text);
		return -1;
	}
	*out = text;
	return 0;
}

int config_load_file(struct config *config, const char *path, char *error, size_t error_size)
{
	char *text;
	if (read_file(path, &text, error, error_size) < 0)
		return -1;
	int parsed = config_parse_text(config, text, path, error, error_size);
	free(text);
	return parsed;
}

/* One flag from argv: a setting's (flags.c reads it), or one of the words outside the table. */
struct flag {
	const char *name;		  /* the setting's, or "help", "version", "check-config" */
	const char *value;		  /* NULL for the words */
	const struct option_spec *option; /* NULL for the words */
};

/*
 * Reads argv[*index] (and its value) into flag, advancing *index. Returns 0,
 * or -1 with a message. Knows --help, -h, --version, --check-config and -t,
 * which take no value.
 */
static int next_flag(int argc, char *const *argv, int *index, struct flag *flag, char *error,
		     size_t error_size)
{
	const char *arg = argv[*index];
	const char *word = NULL;
	if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)
		word = "help";
	else if (strcmp(arg, "-t") == 0 || strcmp(arg, "--check-config") == 0)
		word = "check-config";
	else if (strcmp(arg, "--version") == 0)
		word = "version";
	if (word != NULL) {
		*flag = (struct flag){word, NULL, NULL};
		(*index)++;
		return 0;
	}
	if (strncmp(arg, "--", 2) != 0) {
		set_error(error, error_size, "unexpected argument '%s' (options start with --)", arg);
		return -1;
	}
	struct flags_flag read;
	if (flags_read(argc, argv, index, find_flag, &read, error, error_size) < 0)
		return -1;
	const struct option_spec *option = read.option;
	*flag = (struct flag){option->name, read.value != NULL ? read.value : "on", option};
	return 0;
}

static bool flag_is(const struct flag *flag, const char *name)
{
	return strcmp(flag->name, name) == 0;
}

/* Applies a flag through config_set, whose messages name settings the way flags do. */
static int apply_flag(struct config *config, const struct flag *flag, char *error,
		      size_t error_size)
{
	char reason[CONFIG_ERROR_MAX];
	if (config_set(config, flag->name, flag->value, reason, sizeof(reason)) < 0) {
		set_error(error, error_size, "--%s", reason);
		return -1;
	}
	return 0;
}

/*
 * A setting musicd writes into response heads: a CR or LF would end the header
 * early (and let the value forge others), and a value longer than a head has
 * room for could only be cut. The value itself is not echoed: it may hold them.
 */
static int check_header_value(const char *setting, const char *value, char *error,
			      size_t error_size)
{
	size_t length = strlen(value);
	if (length > CONFIG_HEADER_VALUE_MAX) {
		set_error(error, error_size, "%s: %zu bytes long; a header value may be at most %d",
			  setting, length, CONFIG_HEADER_VALUE_MAX);
		return -1;
	}
	/* response_head.c decides what a header value may hold; config only says where it fails. */
	size_t safe = response_value_safe_length(value);
	if (safe < length) {
		set_error(error, error_size,
			  "%s: control character 0x%02x at byte %zu; a header value may not hold one",
			  setting, (unsigned char)value[safe], safe + 1);
		return -1;
	}
	return 0;
}

/*
 * Whether sockets bound to hosts a and b on one port take each other's
 * connections: the same address, or a wildcard that covers the other
 * ("::" covers every address, "0.0.0.0" every IPv4 one). Names are compared
 * as written.
 */
static bool listen_hosts_overlap(const char *a, const char *b)
{
	if (strcasecmp(a, b) == 0 || strcmp(a, "::") == 0 || strcmp(b, "::") == 0)
		return true;
	if (strcmp(a, "0.0.0.0") == 0)
		return strchr(b, ':') == NULL;
	if (strcmp(b, "0.0.0.0") == 0)
		return strchr(a, ':') == NULL;
	return false;
}

int config_validate(const struct config *config, char *error, size_t error_size)
{
	if (config->metrics_host != NULL && config->metrics_port == config->listen_port &&
	    listen_hosts_overlap(config->metrics_host, config->listen_host)) {
		/* Both are SO_REUSEPORT sockets: the kernel would hand tracks' clients to /metrics. */
		set_error(error, error_size,
			  "metrics-listen: port %u on that address is where musicd serves tracks "
			  "(listen); give the metrics a port of their own",
			  (unsigned)config->metrics_port);
		return -1;
	}
	if (config->media_root_count == 0) {
		set_error(error, error_size,
			  "no media root: give at least one --media-root DIR (or media-root in the "
			  "config file)");
		return -1;
	}
	if (config->x_accel_redirect_count != 0 &&
	    config->x_accel_redirect_count != config->media_root_count) {
		set_error(error, error_size,
			  "x-accel-redirect: given %zu times for %zu media roots; give one prefix per "
			  "media root, in the same order",
			  config->x_accel_redirect_count, config->media_root_count);
		return -1;
	}
	for (size_t i = 0; i < config->x_accel_redirect_count; i++) {
		if (check_header_value("x-accel-redirect", config->x_accel_redirects[i], error,
				       error_size) < 0)
			return -1;
		if (config->x_accel_redirects[i][0] != '/') {
			set_error(error, error_size, "x-accel-redirect: '%s' must start with /",
				  config->x_accel_redirects[i]);
			return -1;
		}
	}
	if (config->x_accel_redirect_count != 0 && config->x_sendfile) {
		set_error(error, error_size, "x-accel-redirect and x-sendfile cannot both be on");
		return -1;
	}
	for (size_t i = 0; i < config->trusted_proxy_count; i++) {
		struct cidr cidr;
		if (cidr_parse(config->trusted_proxies[i], &cidr) < 0) {
			set_error(error, error_size,
				  "trusted-proxy: '%s' is not an address or CIDR (e.g. 10.0.0.0/8)",
				  config->trusted_proxies[i]);
			return -1;
		}
	}
	if (strcmp(config->error_log, "off") == 0 || strcmp(config->error_log, "-") == 0) {
		/* nginx's "error_log off" quietly writes to a file named off; refuse instead. */
		set_error(error, error_size,
			  "error-log: '%s' would be a file of that name; give a file or %s",
			  config->error_log, LOG_TARGET_STDERR);
		return -1;
	}
	if (config->etag_field != NULL && strcmp(config->etag_field, config->path_field) == 0) {
		/* The path would go out as the ETag: the body never names the path, nor may a header. */
		set_error(error, error_size, "etag-field: '%s' is the path field; name the field "
			  "holding the content hash", config->etag_field);
		return -1;
	}
	for (size_t i = 0; i < config->cors_origin_count; i++) {
		if (check_header_value("cors-origin", config->cors_origins[i], error, error_size) < 0)
			return -1;
	}
	if (cors_check_origins(config->cors_origins, config->cors_origin_count, error,
			       error_size) < 0)
		return -1;
	if (config->cache_control != NULL &&
	    check_header_value("cache-control", config->cache_control, error, error_size) < 0)
		return -1;
	if (config->error_cache_control != NULL &&
	    check_header_value("error-cache-control", config->error_cache_control, error,
			       error_size) < 0)
		return -1;
	return 0;
}

int config_load_under_flags(struct config *config, const char *env_mongodb_uri,
			    const char *config_path, char *error, size_t error_size)
{
	if (env_mongodb_uri != NULL && env_mongodb_uri[0] != '\0' &&
	    config_set(config, "mongodb-uri", env_mongodb_uri, error, error_size) < 0)
		return -1;
	if (config_path != NULL && config_load_file(config, config_path, error, error_size) < 0)
		return -1;
	return 0;
}

int config_load(struct config *config, int argc, char *const *argv, const char *env_mongodb_uri,
		enum config_action *action, char *error, size_t error_size)
{
	struct flag flag;
	const char *config_path = NULL;
	bool check_only = false;
	*action = CONFIG_ACTION_RUN;

	/* First pass: check every flag and find --config, --help, --version, --check-config. */
	for (int i = 1; i < argc;) {
		if (next_flag(argc, argv, &i, &flag, error, error_size) < 0)
			return -1;
		if (flag_is(&flag, "help")) {
			*action = CONFIG_ACTION_HELP;
			return 0;
		}
		if (flag_is(&flag, "version"))
			*action = CONFIG_ACTION_VERSION;
		else if (flag_is(&flag, "check-config"))
			check_only = true;
		else if (flag_is(&flag, "config"))
			config_path = flag.value;
	}
	if (*action == CONFIG_ACTION_VERSION)
		return 0;

	if (config_load_under_flags(config, env_mongodb_uri, config_path, error, error_size) < 0)
		return -1;

	/* Second pass: flags override the file; a list on the command line replaces the file's. */
	bool list_from_flags[OPTION_COUNT] = {false};
	for (int i = 1; i < argc;) {
		next_flag(argc, argv, &i, &flag, error, error_size);
		if (flag.option == NULL)
			continue; /* --check-config: no setting */
		size_t index = (size_t)(flag.option - options);
		if (flag.option->kind == OPTION_LIST && !list_from_flags[index]) {
			clear_list(config, flag.option);
			list_from_flags[index] = true;
		}
		if (apply_flag(config, &flag, error, error_size) < 0)
			return -1;
	}
	if (check_only)
		*action = CONFIG_ACTION_CHECK;
	return config_validate(config, error, error_size);
}

void config_print_usage(const char *program)
{
	printf("Usage: %s --media-root DIR [options]\n\n"
	       "Serves GET /musicdb/:mid/:param: finds the document with _id ObjectId(:mid) in\n"
	       "MongoDB and streams the file at its path with sendfile(2).\n\nOptions:\n",
	       program);
	for (size_t i = 0; i < OPTION_COUNT; i++) {
		const struct option_spec *option = &options[i];
		char left[80];
		snprintf(left, sizeof(left), "--%s %s", option->name, option->value_name);
		/* "(default X)" is a value as written; "(default: ...)" describes one settled later. */
		if (option->default_note != NULL)
			printf("  %-36s %s (default: %s)\n", left, option->help, option->default_note);
		else if (option->default_value != NULL)
			printf("  %-36s %s (default %s)\n", left, option->help, option->default_value);
		else
			printf("  %-36s %s\n", left, option->help);
	}
	printf("  %-36s %s\n", "--help", "show this help and exit");
	printf("  %-36s %s\n", "--check-config",
	       "check the configuration (options, config file, media roots, database URI, logs, "
	       "--user) without serving or touching the database, and exit (also -t)");
	printf("  %-36s %s\n", "--version", "print the version and exit");
}

/* --- The settings one by one: what reload.c compares and carries over --- */

_Static_assert(OPTION_COUNT <= CONFIG_OPTION_MAX, "raise CONFIG_OPTION_MAX");

size_t config_option_count(void)
{
	return OPTION_COUNT;
}

const char *config_option_name(size_t index)
{
	return options[index].name;
}

bool config_option_live(size_t index)
{
	return options[index].live;
}

static bool same_text(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

bool config_option_equal(size_t index, const struct config *a, const struct config *b)
{
	const struct option_spec *option = &options[index];
	const char *base_a = (const char *)a, *base_b = (const char *)b;
	switch (option->kind) {
	case OPTION_STRING:
	case OPTION_STRING_OR_OFF:
	case OPTION_FILE_ONLY_ON_COMMAND_LINE:
		return same_text(*(char *const *)(base_a + option->offset),
				 *(char *const *)(base_b + option->offset));
	case OPTION_UNSIGNED:
		return *(const unsigned *)(base_a + option->offset) ==
		       *(const unsigned *)(base_b + option->offset);
	case OPTION_BYTES:
		return *(const uint64_t *)(base_a + option->offset) ==
		       *(const uint64_t *)(base_b + option->offset);
	case OPTION_SWITCH:
		return *(const int *)(base_a + option->offset) ==
		       *(const int *)(base_b + option->offset);
	case OPTION_LOG_LEVEL:
		return a->log_level == b->log_level;
	case OPTION_LISTEN:
		return a->listen_port == b->listen_port && same_text(a->listen_host, b->listen_host);
	case OPTION_METRICS_LISTEN:
		return a->metrics_port == b->metrics_port && same_text(a->metrics_host, b->metrics_host);
	case OPTION_LIST: {
		size_t count = *(const size_t *)(base_a + option->count_offset);
		if (count != *(const size_t *)(base_b + option->count_offset))
			return false;
		char *const *items_a = (char *const *)(base_a + option->offset);
		char *const *items_b = (char *const *)(base_b + option->offset);
		for (size_t i = 0; i < count; i++) {
			if (!same_text(items_a[i], items_b[i]))
				return false;
		}
		return true;
	}
	}
	return false;
}

/* Replaces *field with a copy of value (NULL stays NULL); -1 if out of memory (field unchanged). */
static int copy_text(char **field, const char *value)
{
	if (value == NULL) {
		free(*field);
		*field = NULL;
		return 0;
	}
	return replace_string(field, value);
}

/* Gives dst src's value of one setting; -1 if out of memory. */
static int copy_option(const struct option_spec *option, struct config *dst,
		       const struct config *src)
{
	char *base_dst = (char *)dst;
	const char *base_src = (const char *)src;
	switch (option->kind) {
	case OPTION_STRING:
	case OPTION_STRING_OR_OFF:
	case OPTION_FILE_ONLY_ON_COMMAND_LINE:
		return copy_text((char **)(base_dst + option->offset),
				 *(char *const *)(base_src + option->offset));
	case OPTION_UNSIGNED:
		*(unsigned *)(base_dst + option->offset) =
			*(const unsigned *)(base_src + option->offset);
		return 0;
	case OPTION_BYTES:
		*(uint64_t *)(base_dst + option->offset) =
			*(const uint64_t *)(base_src + option->offset);
		return 0;
	case OPTION_SWITCH:
		*(int *)(base_dst + option->offset) = *(const int *)(base_src + option->offset);
		return 0;
	case OPTION_LOG_LEVEL:
		dst->log_level = src->log_level;
		return 0;
	case OPTION_LISTEN:
		dst->listen_port = src->listen_port;
		return copy_text(&dst->listen_host, src->listen_host);
	case OPTION_METRICS_LISTEN:
		dst->metrics_port = src->metrics_port;
		return copy_text(&dst->metrics_host, src->metrics_host);
	case OPTION_LIST: {
		clear_list(dst, option);
		char **items = (char **)(base_dst + option->offset);
		char *const *given = (char *const *)(base_src + option->offset);
		size_t *count = (size_t *)(base_dst + option->count_offset);
		size_t wanted = *(const size_t *)(base_src + option->count_offset);
		for (; *count < wanted; (*count)++) {
			if ((items[*count] = strdup(given[*count])) == NULL)
				return -1;
		}
		return 0;
	}
	}
	return -1;
}

int config_copy(struct config *dst, const struct config *src)
{
	/* Every value at once, then each owned string replaced by a copy of its own. */
	*dst = *src;
	dst->listen_host = NULL;
	dst->metrics_host = NULL;
	for (size_t i = 0; i < OPTION_COUNT; i++) {
		const struct option_spec *option = &options[i];
		char *base = (char *)dst;
		if (option->kind == OPTION_LIST)
			*(size_t *)(base + option->count_offset) = 0;
		else if (option->kind == OPTION_STRING || option->kind == OPTION_STRING_OR_OFF ||
			 option->kind == OPTION_FILE_ONLY_ON_COMMAND_LINE)
			*(char **)(base + option->offset) = NULL;
	}
	for (size_t i = 0; i < OPTION_COUNT; i++) {
		if (copy_option(&options[i], dst, src) < 0) {
			config_free(dst);
			return -1;
		}
	}
	return 0;
}

int config_copy_live(struct config *dst, const struct config *src)
{
	for (size_t i = 0; i < OPTION_COUNT; i++) {
		if (options[i].live && copy_option(&options[i], dst, src) < 0)
			return -1;
	}
	return 0;
}
