/*
 * pool: reads the files that are new or changed on --jobs threads, while the
 * main thread takes the results in walk order (sorted by path) and writes
 * them. Readers stay at most a window of items ahead of what the main thread
 * has released, so memory is bounded whatever the library's size.
 */
#ifndef MUSICD_IMPORT_POOL_H
#define MUSICD_IMPORT_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "document.h"
#include "options.h"
#include "plan.h"

#define POOL_REASON_MAX 256
/*
 * When the main thread has caught up with the readers, it sleeps until this
 * many more items are read too: one wake-up per file cost it a context
 * switch per file (its own work per file is a fraction of a reader's).
 */
#define POOL_WAKE_AHEAD 64

struct pool_item {
	const char *path;	 /* the walk's; not owned */
	enum plan_action action; /* PLAN_ADD or PLAN_UPDATE */
	const struct known_entry *known; /* its document, for an update (may be NULL); not owned */
	bson_oid_t id;		 /* the _id given to an added file's document */
	struct track track;	 /* filled when status is 0; freed by pool_release */
	int status;		 /* reader_read's: 0, 1 (skipped, reason set), -1 */
	char reason[POOL_REASON_MAX];
	bool done;
};

struct pool {
	pthread_t threads[IMPORT_MAX_JOBS];
	unsigned thread_count;
	struct pool_item *items; /* not owned */
	size_t count;
	size_t next;	 /* the next item a reader takes */
	size_t released; /* items [0, released) are freed */
	size_t window;	 /* how far past released readers may go */
	size_t awaited;	 /* the item the main thread sleeps on, or SIZE_MAX */
	size_t awaited_last; /* and the later one it sleeps until too (POOL_WAKE_AHEAD) */
	bool want_hash;
	bool stopping;
	pthread_mutex_t lock;
	pthread_cond_t item_done;
	pthread_cond_t room; /* released moved on, or stopping */
};

/*
 * Starts jobs readers over items[0..count), never more than window items past
 * the last pool_release. Returns 0, or -1 (no thread could start).
 */
int pool_start(struct pool *pool, struct pool_item *items, size_t count, unsigned jobs,
	       size_t window, bool want_hash);

/* Waits until items[index] is read, at most timeout_ms; returns it, or NULL on timeout. */
struct pool_item *pool_wait(struct pool *pool, size_t index, unsigned timeout_ms);

/* Frees the tracks of items [released, up_to) and lets readers go further. */
void pool_release(struct pool *pool, size_t up_to);

/* Stops the readers (those reading finish their file) and joins them; frees what is left. */
void pool_stop(struct pool *pool);

#endif
