/*
 * client: who a request's client is (its peer, or the client a
 * --trusted-proxy names in X-Forwarded-For), and its place under
 * --max-streams-per-client. Part of the exchange's face (exchange.h
 * includes it).
 */
#ifndef MUSICD_CLIENT_H
#define MUSICD_CLIENT_H

#include "base/address_counts.h"

struct exchange;

/* The peer's address ("-" when it is not known). */
const char *exchange_peer(const struct exchange *exchange);

/*
 * The client's address, as the access log names it: the peer, or the client
 * a --trusted-proxy names in X-Forwarded-For (proxy_trust.h).
 */
const char *exchange_client(struct exchange *exchange);

/*
 * Holds one of the client's places in the workers' table under cap until
 * the client has the answer's last byte, or is gone (unsent.h), at most one
 * per exchange (a second call is ADDRESS_TAKEN, holding nothing more). The
 * client is counted by proxy_trust_client_key (an IPv6 client by its first
 * ipv6_prefix_bits). Without a table, ADDRESS_TAKEN and nothing is held.
 */
enum address_take exchange_hold_client_place(struct exchange *exchange, unsigned cap,
					     unsigned ipv6_prefix_bits);

#endif
