/*
 * client_limits: the place of the client (proxy_trust_place over the
 * request's peer and client, as the access log names it), then each limit
 * where it belongs.
 */
#include "respond/client_limits.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "respond/answer.h"

static enum proxy_trust_place place_of(const struct request *request)
{
	const struct settings *settings = request->settings;
	return proxy_trust_place(settings->trusted_proxies, settings->trusted_proxy_count,
				 request->peer, request->client);
}

int client_limits_admit(struct exchange *exchange, const struct request *request)
{
	const struct config *config = request->config;
	if (config->limit_rate == 0 && config->max_streams_per_client == 0)
		return 0;
	enum proxy_trust_place place = place_of(request);
	if (place == PROXY_TRUST_PROXY_ITSELF)
		return 0;
	if (config->max_streams_per_client > 0) {
		/* An IPv6 client is counted by its first --client-ipv6-prefix bits. */
		uint8_t key[ADDRESS_KEY_SIZE];
		if (proxy_trust_client_key(request->client, config->client_ipv6_prefix, key) < 0)
			memset(key, 0, sizeof(key)); /* no address tells them apart: one count */
		switch (exchange_hold_client_place(exchange, key, config->max_streams_per_client)) {
		case ADDRESS_TAKEN:
			break;
		case ADDRESS_AT_CAP:
			log_debug("client %s has %u answers in flight (--max-streams-per-client): 429",
				  request->client, config->max_streams_per_client);
			metrics_count_stream_refused(request->metrics);
			answer_error(exchange, request, 429);
			return -1;
		case ADDRESS_NO_MEMORY:
			log_error("out of memory counting client %s's streams", request->client);
			answer_error(exchange, request, 503);
			return -1;
		}
	}
	if (config->limit_rate > 0 && place == PROXY_TRUST_DIRECT)
		exchange_pace(exchange, config->limit_rate, config->limit_rate_after);
	return 0;
}

static void add_field(struct response_head *head, const char *name, const char *value)
{
	if (response_head_add(head, name, value) < 0)
		log_error("response head has no room for %s", name);
}

void client_limits_add_fields(const struct request *request, struct response_head *head,
			      int offloaded, struct client_limits_text *text)
{
	const struct config *config = request->config;
	if (config->limit_rate == 0)
		return;
	enum proxy_trust_place place = place_of(request);
	if (place == PROXY_TRUST_PROXY_ITSELF || (place == PROXY_TRUST_DIRECT && !offloaded))
		return;
	snprintf(text->rate, sizeof(text->rate), "%" PRIu64, config->limit_rate);
	add_field(head, "X-Accel-Limit-Rate", text->rate);
	if (config->limit_rate_after > 0) {
		/* nginx has no header of its own for it: the shipped sites read this one. */
		snprintf(text->after, sizeof(text->after), "%" PRIu64, config->limit_rate_after);
		add_field(head, "X-Accel-Limit-Rate-After", text->after);
	}
	if (!offloaded)
		add_field(head, "X-Accel-Buffering", "yes"); /* unbuffered, nginx ignores the rate */
}
