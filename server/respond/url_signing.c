/*
 * url_signing: the snapshot's keys and settings, the wall clock, and the
 * verdict turned into an answer, a log line and a count.
 */
#include "respond/url_signing.h"

#include <time.h>

#include "base/log.h"
#include "http/url_token.h"
#include "respond/answer.h"

/* Each refusal's counter; VALID is never counted. */
static const enum metrics_url_refusal refusal_counter[URL_TOKEN_VERDICT_COUNT] = {
	[URL_TOKEN_MISSING] = METRICS_URL_MISSING,
	[URL_TOKEN_MALFORMED] = METRICS_URL_MALFORMED,
	[URL_TOKEN_BAD_SIGNATURE] = METRICS_URL_BAD_SIGNATURE,
	[URL_TOKEN_EXPIRED] = METRICS_URL_EXPIRED,
	[URL_TOKEN_NOT_YET_VALID] = METRICS_URL_NOT_YET_VALID,
	[URL_TOKEN_WRONG_TRACK] = METRICS_URL_WRONG_TRACK,
};

int url_signing_admits(struct exchange *exchange, const struct request *request)
{
	const struct settings *settings = request->settings;
	if (settings->url_keys.count == 0)
		return 1;
	const struct config *config = request->config;
	const char *mid = request->route.mid;
	enum url_token_verdict verdict = url_token_check(&request->token, &settings->url_keys,
							 (int64_t)time(NULL), config->url_signing_leeway,
							 mid);
	if (verdict == URL_TOKEN_VALID)
		return 1;
	log_info("mid=%s: 403, signed-URL token %s", mid, url_token_verdict_words(verdict));
	metrics_count_url_refusal(request->metrics, refusal_counter[verdict]);
	answer_forbidden(exchange, request);
	return 0;
}
