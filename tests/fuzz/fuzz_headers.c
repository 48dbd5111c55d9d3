/*
 * Fuzzes the parsers of client-supplied header values: entity-tag lists,
 * HTTP dates, If-Range, X-Forwarded-For, a client's key. Each must terminate
 * without a memory error; a parsed date must format back to a parseable date.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "http/cond.h"
#include "http/proxy_trust.h"
#include "http/etag.h"
#include "http/http_date.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = strndup((const char *)data, size);
	struct cond_validators validators = {.etag = "\"5f5e1000-2a\"", .last_modified = 784111777};
	struct cond_request request = {text, text, text, text};

	cond_etag_list_matches(text, validators.etag, true);
	cond_etag_list_matches(text, validators.etag, false);
	cond_if_range_allows(text, &validators);
	cond_evaluate(&request, &validators);

	time_t parsed;
	if (http_date_parse(text, &parsed) == 0) {
		char formatted[HTTP_DATE_MAX];
		time_t again;
		http_date_format(formatted, parsed);
		if (parsed >= 0 && parsed < 253402300800 && http_date_parse(formatted, &again) != 0)
			abort();
	}

	struct cidr trusted[2];
	cidr_parse("127.0.0.0/8", &trusted[0]);
	cidr_parse("::1", &trusted[1]);
	char client[PROXY_TRUST_ADDRESS_MAX];
	const char *chosen = proxy_trust_client(trusted, 2, "127.0.0.1", text, client, sizeof(client));
	if (chosen == NULL || strlen(chosen) >= PROXY_TRUST_ADDRESS_MAX)
		abort();
	struct cidr any;
	cidr_parse(text, &any);
	/*
	 * A client's key: an IPv4 (or mapped) address's whatever the prefix, an
	 * IPv6 address's first bits of it and zeros past them.
	 */
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	uint8_t key[16], whole[16];
	unsigned bits = size > 0 ? 32 + (unsigned)data[0] % 97 : 64;
	if (proxy_trust_client_key(text, bits, key) == 0) {
		if (proxy_trust_client_key(text, 128, whole) != 0)
			abort();
		int ipv4 = memcmp(whole, mapped, sizeof(mapped)) == 0;
		for (unsigned bit = 0; bit < 128; bit++) {
			int in_key = (key[bit / 8] >> (7 - bit % 8)) & 1;
			int in_whole = (whole[bit / 8] >> (7 - bit % 8)) & 1;
			if (in_key != (ipv4 || bit < bits ? in_whole : 0))
				abort();
		}
	}
	free(text);
	return 0;
}
