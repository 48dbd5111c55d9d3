/*
 * settings: reference-counted snapshots and the per-worker slots they are
 * offered through. The counts are atomic (a request may end on any worker
 * while the main thread publishes); nothing here takes a lock.
 */
#include "config/settings.h"
#include "config/url_keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct settings_log {
	atomic_uint refs;
	struct access_log *log; /* NULL when off */
};

struct settings_board {
	struct settings *current; /* the board's reference to the newest */
	size_t slot_count;
	struct settings_slot slots[];
};

static struct settings_log *log_ref(struct settings_log *log)
{
	atomic_fetch_add_explicit(&log->refs, 1, memory_order_relaxed);
	return log;
}

static void log_unref(struct settings_log *log)
{
	if (log == NULL || atomic_fetch_sub_explicit(&log->refs, 1, memory_order_acq_rel) != 1)
		return;
	access_log_close(log->log);
	free(log);
}

static int same_text(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* The previous snapshot's log when the target is unchanged, else a new one; NULL with a message. */
static struct settings_log *log_for(const struct config *config, const struct settings *previous,
				    char *error, size_t error_size)
{
	if (previous != NULL && same_text(previous->config.access_log, config->access_log))
		return log_ref(previous->log);
	struct settings_log *log = calloc(1, sizeof(*log));
	if (log == NULL) {
		snprintf(error, error_size, "out of memory for the settings");
		return NULL;
	}
	atomic_init(&log->refs, 1);
	if (config->access_log != NULL &&
	    (log->log = access_log_open(config->access_log, error, error_size)) == NULL) {
		free(log);
		return NULL;
	}
	return log;
}

struct settings *settings_new(const struct config *config, const struct settings *previous,
			      char *error, size_t error_size)
{
	struct settings *settings = calloc(1, sizeof(*settings));
	if (settings == NULL || config_copy(&settings->config, config) < 0) {
		free(settings);
		snprintf(error, error_size, "out of memory for the settings");
		return NULL;
	}
	for (size_t i = 0; i < config->trusted_proxy_count; i++) {
		if (cidr_parse(config->trusted_proxies[i], &settings->trusted_proxies[i]) < 0) {
			snprintf(error, error_size, "trusted-proxy: '%s' is not an address or CIDR",
				 config->trusted_proxies[i]);
			goto fail;
		}
	}
	settings->trusted_proxy_count = config->trusted_proxy_count;
	if (config->url_signing_key_file != NULL &&
	    url_keys_load(config->url_signing_key_file, &settings->url_keys, error, error_size) < 0)
		goto fail;
	if ((settings->log = log_for(config, previous, error, error_size)) == NULL)
		goto fail;
	settings->access_log = settings->log->log;
	settings->generation = previous ? previous->generation + 1 : 1;
	settings->file_lines_generation =
		previous != NULL && same_text(previous->config.cache_control, config->cache_control)
			? previous->file_lines_generation
			: settings->generation;
	atomic_init(&settings->refs, 1);
	return settings;
fail:
	url_keys_clear(&settings->url_keys);
	config_free(&settings->config);
	free(settings);
	return NULL;
}

struct settings *settings_ref(struct settings *settings)
{
	atomic_fetch_add_explicit(&settings->refs, 1, memory_order_relaxed);
	return settings;
}

void settings_unref(struct settings *settings)
{
	/* Release orders this holder's reads before the free; acquire, the free after them all. */
	if (settings == NULL ||
	    atomic_fetch_sub_explicit(&settings->refs, 1, memory_order_acq_rel) != 1)
		return;
	log_unref(settings->log);
	url_keys_clear(&settings->url_keys);
	config_free(&settings->config);
	free(settings);
}

struct settings *settings_slot_current(struct settings_slot *slot)
{
	if (atomic_load_explicit(&slot->offered, memory_order_relaxed) != NULL) {
		/* Acquire: the snapshot's contents, written before the board's release exchange. */
		struct settings *next =
			atomic_exchange_explicit(&slot->offered, NULL, memory_order_acquire);
		if (next != NULL) {
			settings_unref(slot->held);
			slot->held = next;
		}
	}
	return slot->held;
}

struct settings_board *settings_board_new(struct settings *initial, size_t slot_count)
{
	struct settings_board *board =
		calloc(1, sizeof(*board) + slot_count * sizeof(board->slots[0]));
	if (board == NULL) {
		settings_unref(initial);
		return NULL;
	}
	board->current = initial;
	board->slot_count = slot_count;
	for (size_t i = 0; i < slot_count; i++) {
		atomic_init(&board->slots[i].offered, NULL);
		board->slots[i].held = settings_ref(initial);
	}
	return board;
}

struct settings_slot *settings_board_slot(struct settings_board *board, size_t index)
{
	return &board->slots[index];
}

const struct settings *settings_board_current(const struct settings_board *board)
{
	return board->current;
}

void settings_board_publish(struct settings_board *board, struct settings *next)
{
	for (size_t i = 0; i < board->slot_count; i++) {
		/* Release: next's contents before the pointer. An offer never adopted is ours. */
		struct settings *unadopted = atomic_exchange_explicit(
			&board->slots[i].offered, settings_ref(next), memory_order_acq_rel);
		settings_unref(unadopted);
	}
	settings_unref(board->current);
	board->current = next;
}

void settings_board_free(struct settings_board *board)
{
	if (board == NULL)
		return;
	for (size_t i = 0; i < board->slot_count; i++) {
		settings_unref(atomic_exchange(&board->slots[i].offered, NULL));
		settings_unref(board->slots[i].held);
	}
	settings_unref(board->current);
	free(board);
}
