/*
 * client: who a request's client is (its peer, or the client a
 * --trusted-proxy names in X-Forwarded-For). Part of the exchange's face
 * (exchange.h includes it).
 */
#ifndef MUSICD_CLIENT_H
#define MUSICD_CLIENT_H

struct exchange;

/* The peer's address ("-" when it is not known). */
const char *exchange_peer(const struct exchange *exchange);

/*
 * The client's address, as the access log names it: the peer, or the client
 * a --trusted-proxy names in X-Forwarded-For (proxy_trust.h).
 */
const char *exchange_client(struct exchange *exchange);

#endif
