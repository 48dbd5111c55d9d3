/*
 * head: response heads by memcpy and one integer conversion, no printf.
 */
#include "http/response_head.h"

#include <string.h>

#define SERVER_LINE "Server: musicd\r\n"

struct builder {
	char *out;
	size_t size, used;
	int overflow;
};

static void put(struct builder *b, const char *text, size_t length)
{
	if (b->overflow || length > b->size - b->used) {
		b->overflow = 1;
		return;
	}
	memcpy(b->out + b->used, text, length);
	b->used += length;
}

static void put_text(struct builder *b, const char *text)
{
	put(b, text, strlen(text));
}

static void put_number(struct builder *b, uint64_t value)
{
	char digits[20];
	size_t count = 0;
	do {
		digits[sizeof(digits) - ++count] = (char)('0' + value % 10);
		value /= 10;
	} while (value != 0);
	put(b, digits + sizeof(digits) - count, count);
}

static int is_unsafe(unsigned char c)
{
	return (c < 0x20 && c != '\t') || c == 0x7f;
}

/* name, value, CRLF; a value that could end its line early refuses the whole head. */
static void put_line(struct builder *b, const char *name, const char *value)
{
	/* One pass finds the length and checks every byte; memcpy copies. */
	size_t length = response_value_safe_length(value);
	if (value[length] != '\0') {
		b->overflow = 1;
		return;
	}
	put_text(b, name);
	put(b, value, length);
	put(b, "\r\n", 2);
}

size_t response_value_safe_length(const char *value)
{
	const unsigned char *end = (const unsigned char *)value;
	while (*end != '\0' && !is_unsafe(*end))
		end++;
	return (size_t)(end - (const unsigned char *)value);
}

int response_value_is_safe(const char *value)
{
	return value[response_value_safe_length(value)] == '\0';
}

int response_head_add(struct response_head *head, const char *name, const char *value)
{
	if (head->field_count == RESPONSE_FIELDS_MAX)
		return -1;
	head->fields[head->field_count++] = (struct response_field){name, value};
	return 0;
}

size_t response_head_format(char *out, size_t out_size, const struct response_head *head)
{
	struct builder b = {out, out_size, 0, 0};
	put_text(&b, head->http_minor == 0 ? "HTTP/1.0 " : "HTTP/1.1 ");
	put_number(&b, (uint64_t)head->status);
	put(&b, " ", 1);
	put_text(&b, head->reason);
	put(&b, "\r\n", 2);
	put_text(&b, SERVER_LINE);
	put_line(&b, "Date: ", head->date);
	if (head->content_type != NULL)
		put_line(&b, "Content-Type: ", head->content_type);
	if (head->has_length) {
		put_text(&b, "Content-Length: ");
		put_number(&b, head->content_length);
		put(&b, "\r\n", 2);
	}
	if (head->content_range != NULL)
		put_line(&b, "Content-Range: ", head->content_range);
	if (head->file_lines != NULL)
		put_text(&b, head->file_lines);
	if (head->accept_ranges)
		put_text(&b, "Accept-Ranges: bytes\r\n");
	for (size_t i = 0; i < head->field_count; i++) {
		put_text(&b, head->fields[i].name);
		put_line(&b, ": ", head->fields[i].value);
	}
	if (head->connection == RESPONSE_CONNECTION_CLOSE)
		put_text(&b, "Connection: close\r\n");
	else if (head->connection == RESPONSE_CONNECTION_KEEP_ALIVE)
		put_text(&b, "Connection: keep-alive\r\n");
	put(&b, "\r\n", 2);
	return b.overflow ? 0 : b.used;
}

size_t response_error_body(char *out, int status, const char *why)
{
	struct builder b = {out, RESPONSE_ERROR_BODY_SIZE, 0, 0};
	put_number(&b, (uint64_t)status);
	put(&b, " ", 1);
	put_text(&b, response_reason(status));
	size_t plain = b.used;
	if (why != NULL && response_value_is_safe(why)) {
		put(&b, ": ", 2);
		put_text(&b, why);
	}
	put(&b, "\n", 2); /* the NUL too */
	if (b.overflow) {
		/* The plain line always fits (a status and a reason phrase): it stands alone. */
		b = (struct builder){out, RESPONSE_ERROR_BODY_SIZE, plain, 0};
		put(&b, "\n", 2);
	}
	return b.used - 1;
}

size_t response_content_range(char *out, size_t out_size, uint64_t first, uint64_t last,
			      uint64_t size)
{
	struct builder b = {out, out_size, 0, 0};
	put_text(&b, "bytes ");
	put_number(&b, first);
	put(&b, "-", 1);
	put_number(&b, last);
	put(&b, "/", 1);
	put_number(&b, size);
	put(&b, "", 1); /* the NUL */
	return b.overflow ? 0 : b.used - 1;
}

size_t response_head_file_lines(char *out, size_t out_size, const char *last_modified, const char *etag,
		       const char *cache_control)
{
	struct builder b = {out, out_size, 0, 0};
	put_line(&b, "Last-Modified: ", last_modified);
	put_line(&b, "ETag: ", etag);
	if (cache_control != NULL)
		put_line(&b, "Cache-Control: ", cache_control);
	if (b.used == b.size)
		b.overflow = 1; /* no room for the NUL */
	if (!b.overflow)
		out[b.used] = '\0';
	return b.overflow ? 0 : b.used;
}

const char *response_reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 204:
		return "No Content";
	case 206:
		return "Partial Content";
	case 304:
		return "Not Modified";
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 412:
		return "Precondition Failed";
	case 413:
		return "Content Too Large";
	case 414:
		return "URI Too Long";
	case 416:
		return "Range Not Satisfiable";
	case 417:
		return "Expectation Failed";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 501:
		return "Not Implemented";
	case 503:
		return "Service Unavailable";
	case 505:
		return "HTTP Version Not Supported";
	}
	return "Unknown";
}
