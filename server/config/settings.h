/*
 * settings: the immutable snapshot of the settings a request reads from its
 * start to its end, and how a new one reaches every worker without a lock on
 * the request path.
 *
 * A snapshot (struct settings) is a private copy of the configuration, the
 * trusted proxies parsed, and the access log it writes to; it is never
 * changed after settings_new, and is freed by its last settings_unref.
 * Snapshots are numbered: each one's generation is its predecessor's + 1, so
 * what a cache precomputed from one can be told apart from a newer one's.
 *
 * Publishing: the main thread owns a settings_board, which holds the newest
 * snapshot and one settings_slot per worker. settings_board_publish offers
 * the new snapshot (with a reference for the slot) to every slot by an
 * atomic exchange; a worker adopts what was offered at its next
 * settings_slot_current (one atomic load when nothing is offered). Whoever's
 * exchange takes a pointer out of the slot owns that reference, so nothing
 * is freed while a worker could still be about to use it, and a request
 * holds a reference of its own (settings_ref) until it ends.
 */
#ifndef MUSICD_SETTINGS_H
#define MUSICD_SETTINGS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/access_log.h"
#include "config/config.h"
#include "http/url_token.h"
#include "http/proxy_trust.h"

struct settings_log; /* an access log shared by the snapshots that name the same target */

struct settings {
	atomic_uint refs;
	uint64_t generation;
	/*
	 * What per-file values precomputed from these settings (the open-file
	 * cache's header lines, with Cache-Control) are keyed by: the generation of
	 * the oldest snapshot since which cache-control is unchanged, so a reload
	 * of other settings leaves cached files as they are.
	 */
	uint64_t file_lines_generation;
	struct config config; /* owned copy */
	struct cidr trusted_proxies[CONFIG_MAX_TRUSTED_PROXIES];
	size_t trusted_proxy_count;
	struct access_log *access_log; /* NULL when off; valid while the snapshot is */
	struct settings_log *log;      /* what owns access_log */
	/*
	 * --url-signing-key-file's keys as read when the snapshot was made (each
	 * SIGHUP reads the file again); count 0: signed URLs are off. Wiped when freed.
	 */
	struct url_keys url_keys;
};

/*
 * A snapshot of config (copied; trusted proxies already validated), one
 * reference held by the caller, generation previous's + 1 (1 without one).
 * Its access log is previous's when the target is the same, else opened here
 * (so on the calling thread); the URL-signing key file is read here, always.
 * NULL with a message in error.
 */
struct settings *settings_new(const struct config *config, const struct settings *previous,
			      char *error, size_t error_size);

/* One more reference, from any thread; returns settings. */
struct settings *settings_ref(struct settings *settings);

/* Gives a reference back, from any thread; the last one frees the snapshot. NULL is nothing. */
void settings_unref(struct settings *settings);

/* One worker's view: touched by its own thread, except for the offers the board makes. */
struct settings_slot {
	_Atomic(struct settings *) offered; /* a reference waiting to be adopted, or NULL */
	struct settings *held;		    /* the owner thread's reference */
};

/*
 * The slot's current snapshot, after adopting an offered one (the old one's
 * reference is given back). Only from the slot's owner thread (before that
 * thread starts, its creator). Borrowed: valid until the owner's next call;
 * a request keeps it with settings_ref.
 */
struct settings *settings_slot_current(struct settings_slot *slot);

struct settings_board;

/* A board of slot_count slots, each holding initial; takes over the caller's reference. */
struct settings_board *settings_board_new(struct settings *initial, size_t slot_count);

/* Slot index (below slot_count), for one worker. */
struct settings_slot *settings_board_slot(struct settings_board *board, size_t index);

/* The newest published snapshot. Main thread. */
const struct settings *settings_board_current(const struct settings_board *board);

/* Makes next (the caller's reference, taken over) the newest and offers it to every slot. */
void settings_board_publish(struct settings_board *board, struct settings *next);

/* Gives back every reference the board and its slots hold, once no owner runs. */
void settings_board_free(struct settings_board *board);

#endif
