/*
 * Fuzzes request_scan with any bytes, cut into reads at places the input's
 * first byte chooses. Whatever the bytes: no memory error; the same refusal,
 * heads and output however they are cut; the output never longer than the
 * input, and equal to it outside chunked bodies; nothing consumed after a
 * refusal.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/request_scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct outcome {
	int refusal;
	unsigned heads;
	size_t produced;
	int rewrote; /* the scan was in a chunked body at some point */
};

static struct outcome scan(const char *in, size_t length, size_t piece, char *out)
{
	struct request_scan scan;
	struct request_scan_limits limits = {512, 256};
	struct outcome result = {0, 0, 0, 0};
	request_scan_init(&scan, &limits);
	size_t done = 0;
	while (done < length) {
		size_t step_size = piece == 0 || length - done < piece ? length - done : piece;
		size_t fed = 0;
		while (fed < step_size) {
			result.rewrote |= request_scan_rewrites(&scan);
			struct scan_step step = request_scan_feed(&scan, in + done + fed, step_size - fed,
								  out + result.produced);
			fed += step.consumed;
			result.produced += step.produced;
			if (step.produced > step.consumed)
				abort();
			if (step.event == SCAN_HEAD_DONE)
				result.heads++;
			if (step.event == SCAN_REFUSED) {
				result.refusal = scan.refusal;
				if (request_scan_feed(&scan, in, length, NULL).consumed != 0)
					abort();
				return result;
			}
			if (step.consumed == 0)
				abort(); /* no progress without a refusal */
		}
		done += step_size;
	}
	return result;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t piece = data[0] % 9; /* 0: one read */
	const char *in = (const char *)data + 1;
	size_t length = size - 1;
	char *whole_out = malloc(length + 1), *cut_out = malloc(length + 1);
	struct outcome whole = scan(in, length, 0, whole_out);
	struct outcome cut = scan(in, length, piece, cut_out);
	if (whole.refusal != cut.refusal || whole.heads != cut.heads ||
	    whole.produced != cut.produced || memcmp(whole_out, cut_out, whole.produced) != 0)
		abort();
	if (!whole.rewrote && memcmp(whole_out, in, whole.produced) != 0)
		abort();
	free(whole_out);
	free(cut_out);
	return 0;
}
