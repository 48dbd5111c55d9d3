/*
 * proxy_trust: CIDR parsing and matching with inet_pton, and the
 * right-to-left walk of X-Forwarded-For.
 */
#include "proxy_trust.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Parses a bare address into family and bytes. */
static int parse_address(const char *text, int *family, uint8_t bytes[16])
{
	memset(bytes, 0, 16);
	if (inet_pton(AF_INET, text, bytes) == 1) {
		*family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, text, bytes) == 1) {
		static const uint8_t mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		if (memcmp(bytes, mapped_prefix, 12) == 0) {
			memmove(bytes, bytes + 12, 4);
			memset(bytes + 4, 0, 12);
			*family = AF_INET;
		} else {
			*family = AF_INET6;
		}
		return 0;
	}
	return -1;
}

int cidr_parse(const char *text, struct cidr *out)
{
	char address[PROXY_TRUST_ADDRESS_MAX];
	const char *slash = strchr(text, '/');
	size_t length = slash ? (size_t)(slash - text) : strlen(text);
	if (length == 0 || length >= sizeof(address))
		return -1;
	memcpy(address, text, length);
	address[length] = '\0';
	if (parse_address(address, &out->family, out->bytes) < 0)
		return -1;

	unsigned maximum = out->family == AF_INET ? 32 : 128;
	out->prefix_bits = maximum;
	if (slash != NULL) {
		char *end;
		if (slash[1] < '0' || slash[1] > '9')
			return -1;
		unsigned long bits = strtoul(slash + 1, &end, 10);
		if (*end != '\0' || bits > maximum)
			return -1;
		out->prefix_bits = (unsigned)bits;
	}
	return 0;
}

bool cidr_contains(const struct cidr *cidr, const char *address)
{
	int family;
	uint8_t bytes[16];
	if (parse_address(address, &family, bytes) < 0 || family != cidr->family)
		return false;
	unsigned whole = cidr->prefix_bits / 8, rest = cidr->prefix_bits % 8;
	if (memcmp(bytes, cidr->bytes, whole) != 0)
		return false;
	if (rest == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (bytes[whole] & mask) == (cidr->bytes[whole] & mask);
}

static bool is_trusted(const struct cidr *trusted, size_t count, const char *address)
{
	for (size_t i = 0; i < count; i++) {
		if (cidr_contains(&trusted[i], address))
			return true;
	}
	return false;
}

/* Copies the list item ending just before end (trimmed of spaces) into out; returns its start. */
static const char *previous_item(const char *list, const char *end, char *out, size_t out_size)
{
	const char *start = end;
	while (start > list && start[-1] != ',')
		start--;
	const char *first = start, *last = end;
	while (first < last && (*first == ' ' || *first == '\t'))
		first++;
	while (last > first && (last[-1] == ' ' || last[-1] == '\t'))
		last--;
	size_t length = (size_t)(last - first);
	if (length >= out_size)
		length = 0; /* too long to be an address: treated as invalid */
	memcpy(out, first, length);
	out[length] = '\0';
	return start;
}

const char *proxy_trust_client(const struct cidr *trusted, size_t trusted_count, const char *peer,
			       const char *forwarded_for, char *out, size_t out_size)
{
	if (forwarded_for == NULL || peer == NULL || !is_trusted(trusted, trusted_count, peer))
		return peer;

	const char *client = peer;
	const char *end = forwarded_for + strlen(forwarded_for);
	char item[PROXY_TRUST_ADDRESS_MAX];
	while (end > forwarded_for) {
		const char *start = previous_item(forwarded_for, end, item, sizeof(item));
		struct cidr parsed;
		if (cidr_parse(item, &parsed) < 0 || strchr(item, '/') != NULL)
			break; /* not an address: stop at the last one we could believe */
		if (strlen(item) < out_size) {
			strcpy(out, item);
			client = out;
		}
		if (!is_trusted(trusted, trusted_count, item))
			break;
		end = start > forwarded_for ? start - 1 : start;
	}
	return client;
}
