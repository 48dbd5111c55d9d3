/*
 * client_limits: which layer applies each per-client limit to a track's
 * body, decided once per answer from who faces the client
 * (proxy_trust_place), so that only the layer facing clients paces them and
 * nothing slows a cache's fill:
 *
 *   musicd faces the client (its peer is no --trusted-proxy): musicd caps
 *     the client's bodies in flight (--max-streams-per-client, 429 beyond)
 *     and paces the body itself (--limit-rate after --limit-rate-after);
 *   a --trusted-proxy faces it (nginx): the cap counts the client the proxy
 *     names; the rate is handed to the proxy (X-Accel-Limit-Rate,
 *     X-Accel-Limit-Rate-After, and X-Accel-Buffering: yes, since nginx
 *     paces only a buffered answer) and musicd sends at full speed;
 *   the client is a trusted proxy itself (a cache's fill, a probe: the
 *     shipped VCLs send a fill without the client's X-Forwarded-For):
 *     neither, whatever the settings.
 *
 * Offloaded answers (X-Accel-Redirect) carry no body of musicd's: nginx
 * sends the file, so the rate is handed to it whoever faces the client
 * (unless the client is a trusted proxy), and there is nothing of musicd's
 * to cap.
 */
#ifndef MUSICD_CLIENT_LIMITS_H
#define MUSICD_CLIENT_LIMITS_H

#include "http/response_head.h"
#include "respond/request.h"
#include "wire/exchange.h"

/*
 * Before a body is sent for request: 0 to send it (the exchange's pacing set
 * when musicd paces it), or -1 when the client holds its cap of bodies in
 * flight already (or none could be counted), answered here with 429 (503 out
 * of memory), logged and counted.
 */
int client_limits_admit(struct exchange *exchange, const struct request *request);

/* The values of the fields that hand a rate on, which must outlive the head. */
struct client_limits_text {
	char rate[24], after[24];
};

/*
 * Adds the fields that hand --limit-rate to the proxy in front to head, when
 * that proxy faces the client; offloaded: the answer is an X-Accel-Redirect
 * (the proxy sends the body itself, buffering is not asked for).
 */
void client_limits_add_fields(const struct request *request, struct response_head *head,
			      int offloaded, struct client_limits_text *text);

#endif
