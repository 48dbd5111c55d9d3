/*
 * disk_gate: the disk's say on a streaming file body (wire/feed.h's gate).
 * Before each window of the file goes to the output, one residency check on
 * the loop (disk_residency); a window not in the page cache is brought in by
 * the disk pool (a continuation: never refused, never queued behind starts),
 * and the body goes on once it is there. While a window is sent, the next
 * one is read ahead, so a stream on a slow disk has one window on the wire
 * and one coming. A window read ahead and found evicted before its send is
 * counted (musicd_disk_evicted_sends_total) and read again; evicted a third
 * time, the range is read into memory on the pool and sent from there
 * (musicd_disk_copied_sends_total), so the loop never reads the storage.
 *
 * Ownership: the gate is held by the response's feed (released when the
 * response ends) and by its read in flight (until the read's delivery has
 * run); the last of the two frees it, and only then lets the file go, so a
 * read never outlives the descriptor it reads.
 */
#ifndef MUSICD_DISK_GATE_H
#define MUSICD_DISK_GATE_H

#include <stdint.h>

#include "media/disk_io.h"
#include "respond/file_plan.h"
#include "wire/exchange.h"

/*
 * Puts the next answer of exchange through a gate reading lane of io, window
 * bytes at a time (exchange_feed_windows), its residency checks on file
 * (disk_residency). The gate holds the file through
 * keeper (a reference taken here, given back once neither the feed nor a read
 * needs it): the feed keeps no segment reference of its own. -1 if out of
 * memory (the answer then goes out ungated).
 */
int disk_gate_attach(struct exchange *exchange, struct disk_io *io, unsigned lane,
		     struct disk_file *file, uint64_t window, const struct file_keeper *keeper);

#endif
