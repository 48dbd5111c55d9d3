/*
 * proxy_trust: which address the access log names as the client. For a peer
 * inside a trusted CIDR (--trusted-proxy, e.g. the nginx in front), the
 * client is taken from X-Forwarded-For: walking it from the right, the first
 * address that is not itself a trusted proxy (nginx's real_ip_recursive on).
 * Anyone else's X-Forwarded-For is ignored: it could say anything. Pure.
 */
#ifndef MUSICD_PROXY_TRUST_H
#define MUSICD_PROXY_TRUST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROXY_TRUST_ADDRESS_MAX 64 /* an IPv6 address in text, with room */

struct cidr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t bytes[16];
	unsigned prefix_bits;
};

/* "10.0.0.0/8", "192.168.1.7", "::1", "fd00::/8"; -1 if not an address or the prefix is too long. */
int cidr_parse(const char *text, struct cidr *out);

/* Whether address (text; IPv4-mapped IPv6 counts as IPv4) lies in cidr. */
bool cidr_contains(const struct cidr *cidr, const char *address);

/*
 * The client address to log for a request from peer with this
 * X-Forwarded-For (NULL when absent). Returns peer or a copy in out.
 */
const char *proxy_trust_client(const struct cidr *trusted, size_t trusted_count, const char *peer,
			       const char *forwarded_for, char *out, size_t out_size);

#endif
