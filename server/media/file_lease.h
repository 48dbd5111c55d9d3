/*
 * file_lease: being told, before it happens, that an open file is about to be
 * written. A read lease (fcntl F_SETLEASE, F_RDLCK) on a descriptor makes the
 * kernel hold back anyone's open of that file for writing, and any truncate,
 * until the lease is given up (or lease-break-time, 45 s by default, passes).
 * One thread per watch waits for the kernel's notices (a real-time signal
 * directed at that thread alone), sets the holder's flag, then gives the lease
 * up, so the writer proceeds only after the flag is set: whoever reads the
 * flag after a write completed sees it. It is what lets file_cache trust an
 * open file without an fstat per hit.
 *
 * Leases are taken only on local filesystems (ext2/3/4, XFS, Btrfs, F2FS,
 * tmpfs), where every writer goes through this kernel; on others (NFS, FUSE,
 * overlay, ...) a change made elsewhere would break no lease. The kernel also
 * refuses them on files already open for writing, on files this process's
 * user does not own (without CAP_LEASE), and when fs.leases-enable is 0.
 */
#ifndef MUSICD_FILE_LEASE_H
#define MUSICD_FILE_LEASE_H

#include <stdbool.h>

struct file_lease_watch;

enum file_lease_result {
	FILE_LEASE_HELD,  /* until file_lease_end, or *broken is set first */
	FILE_LEASE_BUSY,  /* the file is open for writing now: may be tried again later */
	FILE_LEASE_NEVER, /* not on this file (filesystem, ownership, kernel setting) */
};

/* Starts the watching thread; NULL if it cannot (then take no leases). */
struct file_lease_watch *file_lease_watch_new(void);
/* Stops the thread. Every lease must have been ended. */
void file_lease_watch_free(struct file_lease_watch *watch);

/*
 * Takes a read lease on fd (opened read-only). While it is HELD, nobody opens
 * the file for writing or truncates it unless *broken has been set to true
 * first; *broken (set false here) must stay valid until file_lease_end.
 */
enum file_lease_result file_lease_begin(struct file_lease_watch *watch, int fd,
					_Atomic bool *broken);
/* Gives up fd's lease if it is still held, before fd is closed. Idempotent. */
void file_lease_end(struct file_lease_watch *watch, int fd);

#endif
