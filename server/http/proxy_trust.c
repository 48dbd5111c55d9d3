/*
 * proxy_trust: CIDR parsing and matching with inet_pton, and the
 * right-to-left walk of X-Forwarded-For, over one header line or several
 * read as one list (the later line's elements to the right), never joined
 * into a copy. List syntax as RFC 9110 section 5.6.1 has it: elements are
 * separated by commas with optional spaces and tabs, and empty elements are
 * ignored. An element is an address, optionally with a port as some proxies
 * write it (192.0.2.1:8080, [2001:db8::1]:443, [2001:db8::1]); the port is
 * dropped. Anything else ends the walk.
 */
#include "http/proxy_trust.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define IPV4_BITS 32
#define IPV6_BITS 128
#define MAPPED_PREFIX_BITS 96 /* ::ffff:0:0/96, IPv4-mapped IPv6 */
#define PORT_DIGITS_MAX 5

static const uint8_t mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/* Parses a bare address into family and bytes; *mapped says whether it was IPv4-mapped IPv6. */
static int parse_address(const char *text, int *family, uint8_t bytes[16], bool *mapped)
{
	memset(bytes, 0, 16);
	*mapped = false;
	if (inet_pton(AF_INET, text, bytes) == 1) {
		*family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, text, bytes) == 1) {
		if (memcmp(bytes, mapped_prefix, sizeof(mapped_prefix)) == 0) {
			memmove(bytes, bytes + 12, 4);
			memset(bytes + 4, 0, 12);
			*family = AF_INET;
			*mapped = true;
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
	bool mapped;
	if (length == 0 || length >= sizeof(address))
		return -1;
	memcpy(address, text, length);
	address[length] = '\0';
	if (parse_address(address, &out->family, out->bytes, &mapped) < 0)
		return -1;

	/* A mapped address's prefix counts IPv6 bits: ::ffff:10.0.0.0/104 is 10.0.0.0/8. */
	unsigned maximum = out->family == AF_INET6 || mapped ? IPV6_BITS : IPV4_BITS;
	unsigned long bits = maximum;
	if (slash != NULL) {
		char *end;
		if (slash[1] < '0' || slash[1] > '9')
			return -1;
		bits = strtoul(slash + 1, &end, 10);
		if (*end != '\0' || bits > maximum)
			return -1;
	}
	if (mapped) {
		if (bits < MAPPED_PREFIX_BITS)
			return -1; /* it would reach beyond the mapped addresses */
		bits -= MAPPED_PREFIX_BITS;
	}
	out->prefix_bits = (unsigned)bits;
	return 0;
}

bool cidr_contains(const struct cidr *cidr, const char *address)
{
	int family;
	uint8_t bytes[16];
	bool mapped;
	if (parse_address(address, &family, bytes, &mapped) < 0 || family != cidr->family)
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

static bool is_port(const char *text, size_t length)
{
	if (length == 0 || length > PORT_DIGITS_MAX)
		return false;
	unsigned long port = 0;
	for (size_t i = 0; i < length; i++) {
		if (text[i] < '0' || text[i] > '9')
			return false;
		port = port * 10 + (unsigned long)(text[i] - '0');
	}
	return port <= 65535;
}

/*
 * The address an element names (trimmed; length > 0), without brackets or
 * port, copied into out (PROXY_TRUST_ADDRESS_MAX bytes): 0, or -1 if the
 * element is not an address.
 */
static int element_address(const char *element, size_t length, char *out)
{
	const char *address = element, *end = element + length;
	size_t address_length = length;
	const char *colon = memchr(element, ':', length);
	if (element[0] == '[') {
		const char *close = memchr(element, ']', length);
		if (close == NULL)
			return -1;
		address = element + 1;
		address_length = (size_t)(close - address);
		if (close + 1 < end && (close[1] != ':' || !is_port(close + 2, (size_t)(end - close - 2))))
			return -1;
	} else if (colon != NULL && memchr(colon + 1, ':', (size_t)(end - colon - 1)) == NULL) {
		/* One colon: IPv4 with a port (an IPv6 address has at least two). */
		address_length = (size_t)(colon - element);
		if (!is_port(colon + 1, (size_t)(end - colon - 1)))
			return -1;
	}
	if (address_length == 0 || address_length >= PROXY_TRUST_ADDRESS_MAX)
		return -1;
	memcpy(out, address, address_length);
	out[address_length] = '\0';
	int family;
	uint8_t bytes[16];
	bool mapped;
	if (parse_address(out, &family, bytes, &mapped) < 0)
		return -1;
	if (element[0] == '[' && family == AF_INET && !mapped)
		return -1; /* brackets hold IPv6 only */
	return 0;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * One step of the walk over one line, from the right. *end is where the
 * elements not yet read end; on return, the element read is [*first, *last)
 * (empty for an empty element) and *end is before its comma. Returns false
 * when the line has no element left.
 */
static bool previous_element(const char *line, const char **end, const char **first,
			     const char **last)
{
	if (*end == line)
		return false;
	const char *start = *end;
	while (start > line && start[-1] != ',')
		start--;
	*first = start;
	*last = *end;
	while (*first < *last && is_space(**first))
		(*first)++;
	while (*last > *first && is_space((*last)[-1]))
		(*last)--;
	*end = start > line ? start - 1 : start;
	return true;
}

const char *proxy_trust_client_lines(const struct cidr *trusted, size_t trusted_count,
				     const char *peer, const char *const *forwarded_for,
				     size_t line_count, char *out, size_t out_size)
{
	if (peer == NULL || forwarded_for == NULL || !is_trusted(trusted, trusted_count, peer))
		return peer;

	const char *client = peer;
	char address[PROXY_TRUST_ADDRESS_MAX];
	for (size_t line = line_count; line-- > 0;) {
		const char *list = forwarded_for[line];
		if (list == NULL)
			continue;
		const char *end = list + strlen(list), *first, *last;
		while (previous_element(list, &end, &first, &last)) {
			if (first == last)
				continue; /* empty elements are ignored */
			if (element_address(first, (size_t)(last - first), address) < 0)
				return client; /* not an address: stop at the last one we could believe */
			if (strlen(address) < out_size) {
				strcpy(out, address);
				client = out;
			}
			if (!is_trusted(trusted, trusted_count, address))
				return client;
		}
	}
	return client;
}

const char *proxy_trust_client(const struct cidr *trusted, size_t trusted_count, const char *peer,
			       const char *forwarded_for, char *out, size_t out_size)
{
	return proxy_trust_client_lines(trusted, trusted_count, peer, &forwarded_for,
					forwarded_for != NULL ? 1 : 0, out, out_size);
}

enum proxy_trust_place proxy_trust_place(const struct cidr *trusted, size_t trusted_count,
					 const char *peer, const char *client)
{
	if (client != NULL && is_trusted(trusted, trusted_count, client))
		return PROXY_TRUST_PROXY_ITSELF;
	if (peer != NULL && is_trusted(trusted, trusted_count, peer))
		return PROXY_TRUST_BEHIND_PROXY;
	return PROXY_TRUST_DIRECT;
}

int proxy_trust_client_key(const char *text, unsigned ipv6_prefix_bits, uint8_t key[16])
{
	int family;
	bool mapped;
	if (text == NULL || parse_address(text, &family, key, &mapped) < 0)
		return -1;
	if (family == AF_INET) {
		/* parse_address left the four bytes first: they go last, behind ::ffff:. */
		memmove(key + 12, key, 4);
		memcpy(key, mapped_prefix, sizeof(mapped_prefix));
		return 0;
	}
	/* Only an address in ::ffff:0:0/96 (IPv4) has a prefix like ::ffff:a.b.c.d. */
	unsigned bits = ipv6_prefix_bits < IPV6_BITS ? ipv6_prefix_bits : IPV6_BITS;
	if (bits % 8 != 0)
		key[bits / 8] &= (uint8_t)(0xff << (8 - bits % 8));
	for (unsigned byte = (bits + 7) / 8; byte < 16; byte++)
		key[byte] = 0;
	return 0;
}
