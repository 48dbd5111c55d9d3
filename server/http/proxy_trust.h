/*
 * proxy_trust: which address the access log names as the client. For a peer
 * inside a trusted CIDR (--trusted-proxy, e.g. the nginx in front), the
 * client is taken from X-Forwarded-For: walking it from the right, the first
 * address that is not itself a trusted proxy (nginx's real_ip_recursive on),
 * or the left-most address when every one is trusted; the walk stops at an
 * element that is not an address, and the last address it believed stands.
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

/*
 * "10.0.0.0/8", "192.168.1.7", "::1", "fd00::/8"; -1 if not an address or the
 * prefix is too long. An IPv4-mapped IPv6 address is IPv4, its prefix in IPv6
 * bits (::ffff:10.0.0.0/104 is 10.0.0.0/8; under /96 it is refused).
 */
int cidr_parse(const char *text, struct cidr *out);

/* Whether address (text; IPv4-mapped IPv6 counts as IPv4) lies in cidr. */
bool cidr_contains(const struct cidr *cidr, const char *address);

/*
 * The client address to log for a request from peer whose X-Forwarded-For
 * header came in line_count lines (0: absent; NULL lines are skipped), read
 * as the one list RFC 9110 makes of them: the lines joined by ", " in order.
 * Returns peer or the address copied into out (of PROXY_TRUST_ADDRESS_MAX
 * bytes, any address fits). Allocates nothing, copies no line.
 */
const char *proxy_trust_client_lines(const struct cidr *trusted, size_t trusted_count,
				     const char *peer, const char *const *forwarded_for,
				     size_t line_count, char *out, size_t out_size);

/* The same for a header of one line (forwarded_for NULL when absent). */
const char *proxy_trust_client(const struct cidr *trusted, size_t trusted_count, const char *peer,
			       const char *forwarded_for, char *out, size_t out_size);

/*
 * Who faces a request's client, for the limits that belong to that layer
 * (per-client pacing and caps): from peer and the client worked out above.
 */
enum proxy_trust_place {
	PROXY_TRUST_DIRECT,	   /* the peer is no trusted proxy: it is the client */
	PROXY_TRUST_BEHIND_PROXY,  /* a trusted proxy faces the client, whom it names */
	PROXY_TRUST_PROXY_ITSELF,  /* the client is a trusted proxy: its own request (a cache's
				      fill, a probe), never limited by that address */
};
enum proxy_trust_place proxy_trust_place(const struct cidr *trusted, size_t trusted_count,
					 const char *peer, const char *client);

/*
 * The 16 bytes a client is counted by (per-client caps), the same however
 * its address is written: an IPv4 address, or an IPv4-mapped IPv6 one, is
 * one client, as ::ffff:a.b.c.d; an IPv6 address is cut to its first
 * ipv6_prefix_bits (1 to 128), the rest zero, since one home network or
 * phone gets a whole prefix (a /64) and may use any address in it. 0, or -1
 * if text is not an address.
 */
int proxy_trust_client_key(const char *text, unsigned ipv6_prefix_bits, uint8_t key[16]);

#endif
