/*
 * request_scan: a byte-at-a-time state machine over RFC 9112's grammar of
 * requests (request-line, field lines, the empty line, then a body framed by
 * Content-Length or as chunks). Every state consumes one byte and moves on
 * or refuses; the few facts the decisions need are kept as the bytes pass.
 */
#include "http/request_scan.h"

#include <string.h>
#include <strings.h>

#include "http/chars.h"
#include "http/framing.h"

enum state {
	S_IDLE,		  /* between requests */
	S_METHOD,
	S_TARGET_START,
	S_TARGET,
	S_VERSION,
	S_LINE_CR,	  /* a head line's CR: LF must follow */
	S_FIELD_START,	  /* a field line, or the empty line */
	S_FIELD_NAME,
	S_FIELD_VALUE,
	S_HEAD_END_CR,	  /* the empty line's CR */
	S_BODY,		  /* Content-Length bytes */
	S_CHUNK_SIZE,
	S_CHUNK_EXT,	  /* dropped from the output */
	S_CHUNK_SIZE_CR,
	S_CHUNK_DATA,
	S_CHUNK_DATA_CR,
	S_CHUNK_DATA_LF,
	S_TRAILER_START,
	S_TRAILER_NAME,
	S_TRAILER_VALUE,
	S_TRAILER_CR,
	S_TRAILER_END_CR,
	S_REFUSED,
};

/* The fields the scan reads. */
enum kept_field {
	FIELD_OTHER,
	FIELD_CONTENT_LENGTH,
	FIELD_TRANSFER_ENCODING,
	FIELD_HOST,
	FIELD_EXPECT,
};

/* "HTTP/" and up to 3 + 1 + 3 digits: the longest version read (a longer one is 400). */
#define VERSION_MAX 16
/* Digits of a minor version nginx reads ("HTTP/1.100"); more are 400, as there. */
#define MINOR_DIGITS_MAX 3
/* A chunk size of more hex digits than this cannot be below any body limit. */
#define CHUNK_DIGITS_MAX 15

/* The bytes a Host value may hold: reg-name, IP-literal and port characters (RFC 3986). */
static const unsigned char host_bytes[256] = {
	['0' ... '9'] = 1, ['a' ... 'z'] = 1, ['A' ... 'Z'] = 1,
	['-'] = 1, ['.'] = 1, ['_'] = 1, ['~'] = 1, ['%'] = 1, ['!'] = 1, ['$'] = 1, ['&'] = 1,
	['\''] = 1, ['('] = 1, [')'] = 1, ['*'] = 1, ['+'] = 1, [','] = 1, [';'] = 1, ['='] = 1,
	[':'] = 1, ['['] = 1, [']'] = 1,
};

static int is_host_byte(unsigned char c)
{
	return host_bytes[c];
}

/* A literal and its length, for tables compared by length first. */
#define WORD(text) text, sizeof(text) - 1

static const struct {
	const char *name;
	size_t length;
} known_methods[] = {{WORD("GET")},	{WORD("HEAD")},	 {WORD("POST")},
		     {WORD("PUT")},	{WORD("DELETE")}, {WORD("OPTIONS")},
		     {WORD("TRACE")},	{WORD("CONNECT")}, {WORD("PATCH")}};

static int method_is_known(const struct request_scan *scan)
{
	for (size_t i = 0; i < sizeof(known_methods) / sizeof(known_methods[0]); i++) {
		if (scan->method_length == known_methods[i].length &&
		    memcmp(scan->method, known_methods[i].name, scan->method_length) == 0)
			return 1;
	}
	return 0;
}

/* evhttp_method_may_have_body: the methods whose body evhttp reads. */
static int body_is_read(const struct request_scan *scan)
{
	return strcmp(scan->method, "HEAD") != 0 && strcmp(scan->method, "TRACE") != 0;
}

static void refuse(struct request_scan *scan, int status, const char *reason)
{
	scan->state = S_REFUSED;
	scan->refusal = status;
	scan->refusal_reason = reason;
}

void request_scan_init(struct request_scan *scan, const struct request_scan_limits *limits)
{
	memset(scan, 0, sizeof(*scan));
	scan->limits = *limits;
	scan->state = S_IDLE;
}

int request_scan_rewrites(const struct request_scan *scan)
{
	return scan->state >= S_CHUNK_SIZE && scan->state <= S_TRAILER_END_CR;
}

int request_scan_in_head(const struct request_scan *scan)
{
	return scan->state >= S_METHOD && scan->state <= S_HEAD_END_CR;
}

/* begin_message forgets everything but the limits and the count: S_IDLE carries nothing else. */
int request_scan_idle(const struct request_scan *scan)
{
	return scan->state == S_IDLE;
}

/* A new request begins: forget the last one's facts. */
static void begin_message(struct request_scan *scan)
{
	struct request_scan_limits limits = scan->limits;
	unsigned messages = scan->messages;
	memset(scan, 0, sizeof(*scan));
	scan->limits = limits;
	scan->messages = messages + 1;
	scan->http_major = scan->http_minor = -1;
	scan->state = S_METHOD;
}

/* "scheme://authority..." or, for CONNECT, "authority": the authority is a host and a port. */
static int authority_is_valid(const char *text, size_t length, int port_required)
{
	size_t i = 0;
	if (length > 0 && text[0] == '[') {
		while (i < length && text[i] != ']')
			i++;
		if (i == length || i < 2)
			return 0;
		for (size_t j = 1; j < i; j++) {
			if (chars_hex_value((unsigned char)text[j]) < 0 && text[j] != ':' && text[j] != '.')
				return 0;
		}
		i++;
	} else {
		size_t start = i;
		while (i < length && text[i] != ':') {
			unsigned char c = (unsigned char)text[i];
			if (c == '@' || c == '[' || c == ']' || !is_host_byte(c))
				return 0; /* userinfo is an error in an http(s) URI (RFC 9110 4.2.4) */
			i++;
		}
		if (i == start)
			return 0;
	}
	if (i == length)
		return !port_required;
	if (text[i] != ':' || i + 1 == length || length - i - 1 > 5)
		return 0;
	unsigned port = 0;
	for (size_t j = i + 1; j < length; j++) {
		if (text[j] < '0' || text[j] > '9')
			return 0;
		port = port * 10 + (unsigned)(text[j] - '0');
	}
	return port <= 65535;
}

/* The whole target is read: is it a form evhttp will parse as the request's URI? */
static int target_is_valid(const struct request_scan *scan)
{
	const char *target = scan->target;
	size_t kept = scan->target_length < SCAN_TARGET_KEEP ? scan->target_length : SCAN_TARGET_KEEP;
	if (target[0] == '/')
		return 1; /* origin-form */
	if (target[0] == '*')
		return scan->target_length == 1 && strcmp(scan->method, "OPTIONS") == 0;
	if (strcmp(scan->method, "CONNECT") == 0)
		return scan->target_length <= SCAN_TARGET_KEEP &&
		       authority_is_valid(target, kept, 1); /* authority-form */
	/* absolute-form: http or https, then the authority, then a path or a query */
	size_t scheme = strncasecmp(target, "http://", 7) == 0	  ? 7
			: strncasecmp(target, "https://", 8) == 0 ? 8
								   : 0;
	if (scheme == 0)
		return 0;
	size_t end = scheme;
	while (end < kept && target[end] != '/' && target[end] != '?')
		end++;
	if (end == kept && scan->target_length > kept)
		return 0; /* an authority this long names no host */
	return authority_is_valid(target + scheme, end - scheme, 0);
}

/* Reads digits from *cursor; their count, with the value (capped) in *value. */
static size_t read_digits(const char **cursor, const char *end, int *value)
{
	size_t count = 0;
	*value = 0;
	while (*cursor < end && **cursor >= '0' && **cursor <= '9') {
		if (*value < 1000)
			*value = *value * 10 + (**cursor - '0');
		(*cursor)++;
		count++;
	}
	return count;
}

/*
 * The request line is read (its CR or LF is next): its version and target.
 * Versions as nginx reads them: "HTTP/" major "." minor, a major of 1 (0 and
 * a leading zero are malformed: 400; 2 and more are 505) and a minor of up
 * to three digits.
 */
static void end_request_line(struct request_scan *scan)
{
	const char *cursor = scan->value, *end = scan->value + scan->value_length;
	int major, minor;
	size_t major_digits = 0, minor_digits = 0;
	if (scan->value_length <= VERSION_MAX && scan->value_length > 5 &&
	    memcmp(cursor, "HTTP/", 5) == 0) {
		cursor += 5;
		major_digits = read_digits(&cursor, end, &major);
		if (cursor < end && *cursor == '.') {
			cursor++;
			minor_digits = read_digits(&cursor, end, &minor);
		}
	}
	if (cursor != end || major_digits == 0 || minor_digits == 0 ||
	    minor_digits > MINOR_DIGITS_MAX || major == 0 ||
	    (major_digits > 1 && scan->value[5] == '0')) {
		refuse(scan, 400, "the HTTP version is malformed");
		return;
	}
	scan->http_major = major;
	scan->http_minor = minor;
	if (!target_is_valid(scan))
		refuse(scan, 400, "the request target is malformed");
	else if (major != 1)
		refuse(scan, 505, "unsupported HTTP version");
}

/* A field name is read (its colon is next): which kept field, if any, the line is. */
static void classify_field(struct request_scan *scan)
{
	static const struct {
		const char *name;
		size_t length;
		enum kept_field field;
	} kept[] = {
		{WORD("content-length"), FIELD_CONTENT_LENGTH},
		{WORD("transfer-encoding"), FIELD_TRANSFER_ENCODING},
		{WORD("host"), FIELD_HOST},
		{WORD("expect"), FIELD_EXPECT},
	};
	scan->field = FIELD_OTHER;
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		if (scan->name_length == kept[i].length &&
		    memcmp(scan->name, kept[i].name, scan->name_length) == 0)
			scan->field = kept[i].field;
	}
	scan->value_length = 0;
	scan->value_seen_text = 0;
	scan->value_trailing_ows = 0;
	if (scan->field == FIELD_HOST) {
		scan->host_lines++;
		scan->host_valid = 1;
	}
}

/* One byte of a kept field's value: leading OWS skipped, trailing OWS trimmed at the end. */
static void keep_value_byte(struct request_scan *scan, unsigned char c)
{
	int ows = c == ' ' || c == '\t';
	if (!scan->value_seen_text && ows)
		return;
	scan->value_seen_text = 1;
	if (scan->field == FIELD_HOST && !ows &&
	    (scan->value_trailing_ows > 0 || !is_host_byte(c)))
		scan->host_valid = 0; /* whitespace inside, or a byte no authority holds */
	scan->value_trailing_ows = ows ? scan->value_trailing_ows + 1 : 0;
	if (scan->value_length < SCAN_FRAMING_VALUE_MAX)
		scan->value[scan->value_length] = (char)c;
	scan->value_length++;
}

/* A kept field's line ended: what its value says. */
static void end_field_line(struct request_scan *scan)
{
	size_t length = scan->value_length - scan->value_trailing_ows;
	char *slot = NULL;
	if (scan->field == FIELD_CONTENT_LENGTH || scan->field == FIELD_TRANSFER_ENCODING) {
		size_t *count = scan->field == FIELD_CONTENT_LENGTH ? &scan->content_length_count
								   : &scan->transfer_encoding_count;
		if (*count == SCAN_FRAMING_LINES_MAX) {
			refuse(scan, 400, "too many Content-Length or Transfer-Encoding fields");
			return;
		}
		slot = scan->field == FIELD_CONTENT_LENGTH ? scan->content_lengths[(*count)++]
							   : scan->transfer_encodings[(*count)++];
		if (length > SCAN_FRAMING_VALUE_MAX) {
			strcpy(slot, "?"); /* no valid value is this long */
		} else {
			memcpy(slot, scan->value, length);
			slot[length] = '\0';
		}
	} else if (scan->field == FIELD_EXPECT) {
		if (length != strlen("100-continue") ||
		    strncasecmp(scan->value, "100-continue", length) != 0)
			scan->expect_other = 1;
	}
	scan->field = FIELD_OTHER;
}

/* A Content-Length framing accepted: digits only, as evhttp_get_body_length reads them. */
static int parse_length(const char *text, uint64_t *out)
{
	uint64_t value = 0;
	if (*text == '\0' || strlen(text) > 19)
		return -1;
	for (; *text; text++) {
		if (*text < '0' || *text > '9')
			return -1;
		value = value * 10 + (uint64_t)(*text - '0');
	}
	*out = value;
	return 0;
}

/* The empty line ends the head: the head's own rules, then how its body is framed. */
static void end_head(struct request_scan *scan)
{
	if (scan->http_minor >= 1 && scan->host_lines != 1) {
		refuse(scan, 400, "an HTTP/1.1 request needs exactly one Host field");
		return;
	}
	if (scan->host_lines > 1 || (scan->host_lines == 1 && !scan->host_valid)) {
		refuse(scan, 400, "the Host field is malformed");
		return;
	}
	const char *lengths[SCAN_FRAMING_LINES_MAX], *encodings[SCAN_FRAMING_LINES_MAX];
	for (size_t i = 0; i < scan->content_length_count; i++)
		lengths[i] = scan->content_lengths[i];
	for (size_t i = 0; i < scan->transfer_encoding_count; i++)
		encodings[i] = scan->transfer_encodings[i];
	struct framing_request framing = {
		.body_is_read = body_is_read(scan),
		.content_lengths = lengths,
		.content_length_count = scan->content_length_count,
		.transfer_encodings = encodings,
		.transfer_encoding_count = scan->transfer_encoding_count,
	};
	uint64_t length = 0;
	if (framing_check(&framing) == FRAMING_REFUSE ||
	    (scan->content_length_count > 0 && parse_length(lengths[0], &length) < 0)) {
		refuse(scan, 400,
		       "Content-Length or Transfer-Encoding leaves the body's length unclear");
		return;
	}
	/* As evhttp_get_body: an expectation only matters with a body to send (nginx ignores it). */
	if (scan->expect_other && framing.body_is_read &&
	    (scan->transfer_encoding_count > 0 || length > 0)) {
		refuse(scan, 417, "an Expect other than 100-continue");
		return;
	}
	if (!method_is_known(scan)) {
		refuse(scan, 501, "unknown method");
		return;
	}
	if (!framing.body_is_read) {
		scan->state = S_IDLE;
	} else if (scan->transfer_encoding_count > 0) {
		scan->state = S_CHUNK_SIZE;
		scan->body_total = 0;
		scan->chunk_digits = 0;
		scan->chunk_size = 0;
	} else if (length > scan->limits.max_body) {
		refuse(scan, 413, "body too large");
	} else if (length > 0) {
		scan->state = S_BODY;
		scan->body_left = length;
	} else {
		scan->state = S_IDLE;
	}
}

/* A head line's LF: the request line, a field line, or the empty line ends. */
static void end_head_line(struct request_scan *scan, enum state line)
{
	if (line == S_VERSION) {
		end_request_line(scan);
		if (scan->state != S_REFUSED)
			scan->state = S_FIELD_START;
	} else if (line == S_FIELD_VALUE) {
		end_field_line(scan);
		if (scan->state != S_REFUSED)
			scan->state = S_FIELD_START;
	} else {
		end_head(scan);
	}
}

/* Counts one more head byte; refuses a head longer than the limit (414 within the request line). */
static int head_byte(struct request_scan *scan)
{
	if (++scan->head_bytes <= scan->limits.max_head)
		return 0;
	int in_request_line = scan->state <= S_VERSION ||
			      (scan->state == S_LINE_CR && scan->http_major < 0);
	refuse(scan, in_request_line ? 414 : 431, "head too large");
	return -1;
}

/* The state a head line's CR was in, kept while its LF is awaited. */
static enum state line_of_cr(const struct request_scan *scan)
{
	if (scan->http_major < 0)
		return S_VERSION;
	return scan->name_length > 0 ? S_FIELD_VALUE : S_FIELD_START;
}

/* One byte of a head; its event, if it makes one. */
static enum scan_event head_step(struct request_scan *scan, unsigned char c)
{
	if (head_byte(scan) < 0)
		return SCAN_REFUSED;
	switch ((enum state)scan->state) {
	case S_METHOD:
		if (c == ' ' && scan->method_length > 0) {
			scan->state = S_TARGET_START;
		} else if (chars_is_tchar(c)) {
			if (scan->method_length < SCAN_METHOD_MAX)
				scan->method[scan->method_length] = (char)c;
			scan->method_length++;
		} else {
			refuse(scan, 400, "the method is malformed");
		}
		break;
	case S_TARGET_START:
	case S_TARGET:
		if (c == ' ' && scan->state == S_TARGET) {
			scan->state = S_VERSION;
			scan->value_length = 0;
		} else if (c > ' ' && c != 0x7f) {
			if (scan->target_length < SCAN_TARGET_KEEP)
				scan->target[scan->target_length] = (char)c;
			scan->target_length++;
			scan->state = S_TARGET;
		} else {
			refuse(scan, 400, "the request target is malformed");
		}
		break;
	case S_VERSION:
		if (c == '\r') {
			scan->state = S_LINE_CR;
		} else if (c == '\n') {
			end_head_line(scan, S_VERSION);
		} else if (c > ' ' && c < 0x7f && scan->value_length < VERSION_MAX) {
			scan->value[scan->value_length++] = (char)c;
		} else {
			refuse(scan, 400, "the HTTP version is malformed");
		}
		break;
	case S_LINE_CR:
		if (c == '\n')
			end_head_line(scan, line_of_cr(scan));
		else
			refuse(scan, 400, "a CR is not followed by LF");
		break;
	case S_FIELD_START:
		scan->name_length = 0;
		if (c == '\r') {
			scan->state = S_HEAD_END_CR;
		} else if (c == '\n') {
			end_head(scan);
		} else if (chars_is_tchar(c)) {
			scan->state = S_FIELD_NAME;
			scan->name[0] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
			scan->name_length = 1;
		} else {
			refuse(scan, 400,
			       c == ' ' || c == '\t'
				       ? "a field line is folded (obsolete line folding)"
				       : "a field name is malformed");
		}
		break;
	case S_FIELD_NAME:
		if (c == ':') {
			classify_field(scan);
			scan->state = S_FIELD_VALUE;
		} else if (chars_is_tchar(c)) {
			if (scan->name_length < sizeof(scan->name))
				scan->name[scan->name_length] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
			scan->name_length++;
		} else {
			refuse(scan, 400,
			       c == ' ' || c == '\t'
				       ? "whitespace between a field name and its colon"
				       : "a field name is malformed");
		}
		break;
	case S_FIELD_VALUE:
		if (c == '\r') {
			scan->state = S_LINE_CR;
		} else if (c == '\n') {
			end_head_line(scan, S_FIELD_VALUE);
		} else if (c == '\0') {
			refuse(scan, 400, "a field value holds a NUL");
		} else if (scan->field != FIELD_OTHER) {
			keep_value_byte(scan, c);
		}
		break;
	case S_HEAD_END_CR:
		if (c == '\n')
			end_head(scan);
		else
			refuse(scan, 400, "a CR is not followed by LF");
		break;
	default:
		break;
	}
	if (scan->state == S_REFUSED)
		return SCAN_REFUSED;
	return request_scan_in_head(scan) ? SCAN_NONE : SCAN_HEAD_DONE;
}

/* One byte of a chunked body (framing and trailers); 0 to hand it on, 1 to drop it, -1 refused. */
static int chunk_step(struct request_scan *scan, unsigned char c)
{
	switch ((enum state)scan->state) {
	case S_CHUNK_SIZE: {
		int digit = chars_hex_value(c);
		if (digit >= 0 && scan->chunk_digits < CHUNK_DIGITS_MAX) {
			scan->chunk_size = scan->chunk_size * 16 + (uint64_t)digit;
			scan->chunk_digits++;
			return 0;
		}
		if (digit >= 0 || scan->chunk_digits == 0) {
			refuse(scan, 400, "a chunk size is malformed");
			return -1;
		}
		if (c == ';' || c == ' ' || c == '\t') {
			scan->state = S_CHUNK_EXT;
			return 1;
		}
		if (c == '\r') {
			scan->state = S_CHUNK_SIZE_CR;
			return 0;
		}
		refuse(scan, 400, "a chunk size is malformed");
		return -1;
	}
	case S_CHUNK_EXT:
		if (c == '\r') {
			scan->state = S_CHUNK_SIZE_CR;
			return 0;
		}
		if (c == '\t' || (c >= ' ' && c != 0x7f))
			return 1;
		refuse(scan, 400, "a chunk extension is malformed");
		return -1;
	case S_CHUNK_SIZE_CR:
		if (c != '\n') {
			refuse(scan, 400, "a chunk line does not end with CRLF");
			return -1;
		}
		scan->body_total += scan->chunk_size;
		if (scan->body_total > scan->limits.max_body) {
			refuse(scan, 413, "body too large");
			return -1;
		}
		scan->body_left = scan->chunk_size;
		scan->state = scan->chunk_size == 0 ? S_TRAILER_START : S_CHUNK_DATA;
		return 0;
	case S_CHUNK_DATA_CR:
	case S_TRAILER_CR:
	case S_TRAILER_END_CR:
		if (c != (scan->state == S_CHUNK_DATA_CR ? '\r' : '\n')) {
			refuse(scan, 400, "a chunk line does not end with CRLF");
			return -1;
		}
		scan->state = scan->state == S_CHUNK_DATA_CR ? S_CHUNK_DATA_LF
			      : scan->state == S_TRAILER_CR ? S_TRAILER_START
							     : S_IDLE;
		return 0;
	case S_CHUNK_DATA_LF:
		if (c != '\n') {
			refuse(scan, 400, "a chunk line does not end with CRLF");
			return -1;
		}
		scan->state = S_CHUNK_SIZE;
		scan->chunk_digits = 0;
		scan->chunk_size = 0;
		return 0;
	case S_TRAILER_START:
	case S_TRAILER_NAME:
	case S_TRAILER_VALUE:
		if (++scan->head_bytes > scan->limits.max_head) {
			refuse(scan, 431, "trailers too large");
			return -1;
		}
		if (scan->state == S_TRAILER_START && c == '\r') {
			scan->state = S_TRAILER_END_CR;
		} else if (scan->state == S_TRAILER_START && chars_is_tchar(c)) {
			scan->state = S_TRAILER_NAME;
		} else if (scan->state == S_TRAILER_NAME && (c == ':' || chars_is_tchar(c))) {
			if (c == ':')
				scan->state = S_TRAILER_VALUE;
		} else if (scan->state == S_TRAILER_VALUE && c == '\r') {
			scan->state = S_TRAILER_CR;
		} else if (scan->state == S_TRAILER_VALUE && c != '\n' && c != '\0') {
			/* a value byte */
		} else {
			refuse(scan, 400, "a trailer field is malformed");
			return -1;
		}
		return 0;
	default:
		return 0;
	}
}

/*
 * The bytes at in that change nothing but what head_step would record of
 * them, taken in one run: the rest of a target, of a field name, or of a
 * value the scan does not keep, up to the byte that ends it (or that
 * head_step refuses) and within the head's limit. What a run records is what
 * head_step would have, byte by byte; the byte after it goes to head_step.
 */
static size_t plain_run(struct request_scan *scan, const char *in, size_t length)
{
	if (scan->head_bytes >= scan->limits.max_head)
		return 0;
	uint64_t room = scan->limits.max_head - scan->head_bytes;
	size_t limit = length < room ? length : (size_t)room;
	const unsigned char *bytes = (const unsigned char *)in;
	size_t run = 0;
	switch ((enum state)scan->state) {
	case S_METHOD:
		while (run < limit && chars_is_tchar(bytes[run])) {
			if (scan->method_length < SCAN_METHOD_MAX)
				scan->method[scan->method_length] = (char)bytes[run];
			scan->method_length++;
			run++;
		}
		break;
	case S_TARGET: {
		while (run < limit && bytes[run] > ' ' && bytes[run] != 0x7f)
			run++;
		size_t kept = scan->target_length < SCAN_TARGET_KEEP
				      ? SCAN_TARGET_KEEP - scan->target_length
				      : 0;
		/* Past the kept part the target is only counted: no pointer beyond the array. */
		if (kept > 0)
			memcpy(scan->target + scan->target_length, bytes, run < kept ? run : kept);
		scan->target_length += run;
		break;
	}
	case S_VERSION:
		/* Up to VERSION_MAX: the byte past it is head_step's to refuse. */
		while (run < limit && scan->value_length < VERSION_MAX && bytes[run] > ' ' &&
		       bytes[run] < 0x7f)
			scan->value[scan->value_length++] = (char)bytes[run++];
		break;
	case S_FIELD_NAME:
		while (run < limit && chars_is_tchar(bytes[run])) {
			unsigned char c = bytes[run];
			if (scan->name_length < sizeof(scan->name))
				scan->name[scan->name_length] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
			scan->name_length++;
			run++;
		}
		break;
	case S_FIELD_VALUE:
		if (scan->field == FIELD_HOST && scan->value_trailing_ows == 0) {
			/* keep_value_byte's path for a host byte after no whitespace: nothing but kept. */
			while (run < limit && is_host_byte(bytes[run])) {
				if (scan->value_length < SCAN_FRAMING_VALUE_MAX)
					scan->value[scan->value_length] = (char)bytes[run];
				scan->value_length++;
				run++;
			}
			if (run > 0)
				scan->value_seen_text = 1;
			break;
		}
		if (scan->field != FIELD_OTHER)
			break;
		while (run < limit && bytes[run] != '\r' && bytes[run] != '\n' && bytes[run] != '\0')
			run++;
		break;
	default:
		break;
	}
	scan->head_bytes += run;
	return run;
}

struct scan_step request_scan_feed(struct request_scan *scan, const char *in, size_t length,
				   char *out)
{
	struct scan_step step = {0, 0, SCAN_NONE};
	while (step.consumed < length) {
		if (scan->state == S_REFUSED) {
			step.event = SCAN_REFUSED;
			return step;
		}
		if (scan->state == S_BODY || scan->state == S_CHUNK_DATA) {
			/* The data itself, in one run. */
			size_t run = length - step.consumed;
			if (run > scan->body_left)
				run = (size_t)scan->body_left;
			if (out != NULL)
				memcpy(out + step.produced, in + step.consumed, run);
			step.consumed += run;
			step.produced += run;
			scan->body_left -= run;
			if (scan->body_left == 0)
				scan->state = scan->state == S_BODY ? S_IDLE : S_CHUNK_DATA_CR;
			continue;
		}
		size_t run = plain_run(scan, in + step.consumed, length - step.consumed);
		if (run > 0) {
			if (out != NULL)
				memcpy(out + step.produced, in + step.consumed, run);
			step.consumed += run;
			step.produced += run;
			continue;
		}
		unsigned char c = (unsigned char)in[step.consumed++];
		int began = scan->state == S_IDLE;
		int drop = 0;
		enum scan_event event = SCAN_NONE;
		if (began)
			begin_message(scan);
		if (request_scan_in_head(scan))
			event = head_step(scan, c);
		else if ((drop = chunk_step(scan, c)) < 0)
			event = SCAN_REFUSED;
		if (event == SCAN_REFUSED) {
			step.event = SCAN_REFUSED;
			return step;
		}
		if (out != NULL && !drop)
			out[step.produced] = (char)c;
		step.produced += !drop;
		if (began) {
			step.event = SCAN_MESSAGE_BEGAN;
			return step;
		}
		if (event == SCAN_HEAD_DONE) {
			step.event = SCAN_HEAD_DONE;
			return step;
		}
	}
	return step;
}
