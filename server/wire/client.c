/*
 * client: who the client of a request is (its peer, or the client a
 * --trusted-proxy names in X-Forwarded-For, proxy_trust.h), worked out once
 * per request.
 */
#include "wire/client.h"
#include "wire/wire_state.h"

#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <string.h>

/* X-Forwarded-For lines read as one list for the access log. */
#define FORWARDED_LINES_MAX 32

/*
 * The X-Forwarded-For lines, in order (RFC 9110 reads repeated lines as one
 * list); past FORWARDED_LINES_MAX the last ones, which name the nearest hops.
 */
static size_t forwarded_for_lines(struct evhttp_request *req, const char **lines)
{
	struct evkeyvalq *headers = evhttp_request_get_input_headers(req);
	size_t count = 0;
	for (struct evkeyval *header = headers->tqh_first; header != NULL;
	     header = header->next.tqe_next) {
		if (evutil_ascii_strcasecmp(header->key, "X-Forwarded-For") != 0)
			continue;
		if (count == FORWARDED_LINES_MAX) {
			memmove(lines, lines + 1, (FORWARDED_LINES_MAX - 1) * sizeof(*lines));
			count--;
		}
		lines[count++] = header->value;
	}
	return count;
}

static const char *peer_of(struct evhttp_connection *evcon)
{
	char *address = NULL;
	ev_uint16_t port = 0;
	if (evcon != NULL)
		evhttp_connection_get_peer(evcon, &address, &port);
	return address != NULL ? address : "-";
}

const char *exchange_peer(const struct exchange *exchange)
{
	return peer_of(exchange->req != NULL ? evhttp_request_get_connection(exchange->req) : NULL);
}

/* The client as the request names it (proxy_trust.h), worked out once and kept. */
const char *client_of_connection(struct exchange *exchange, struct evhttp_connection *evcon)
{
	if (exchange->client[0] != '\0' || exchange->req == NULL)
		return exchange->client[0] != '\0' ? exchange->client : "-";
	const struct settings *settings = exchange->snapshot;
	const char *forwarded[FORWARDED_LINES_MAX];
	char forwarded_client[PROXY_TRUST_ADDRESS_MAX];
	size_t count = settings->trusted_proxy_count > 0 ? forwarded_for_lines(exchange->req, forwarded)
						       : 0;
	const char *client = proxy_trust_client_lines(settings->trusted_proxies,
						      settings->trusted_proxy_count, peer_of(evcon),
						      forwarded, count, forwarded_client,
						      sizeof(forwarded_client));
	snprintf(exchange->client, sizeof(exchange->client), "%s", client);
	return exchange->client;
}

const char *exchange_client(struct exchange *exchange)
{
	return client_of_connection(exchange,
			 exchange->req != NULL ? evhttp_request_get_connection(exchange->req) : NULL);
}
