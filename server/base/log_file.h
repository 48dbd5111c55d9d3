/*
 * log_file: opening a log file (the error log, the access log) as root may
 * safely do it in a directory someone else owns. musicd started as root with
 * --user opens its logs before the drop, in a directory the user owns (it must
 * create them again after a rotation), so whatever that user could plant there
 * must not make root write elsewhere: no symbolic link is followed unless only
 * root could have made it, the file must be a regular file with one name,
 * owned by root or by the user musicd runs as, and a new one is made 0640.
 * Every refusal says why; the caller keeps what it had.
 */
#ifndef MUSICD_LOG_FILE_H
#define MUSICD_LOG_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* Mode of a log file musicd creates (before the umask): the adm group may read it, others not. */
#define LOG_FILE_MODE 0640

/*
 * The user whose files a log may be besides root's: --user's when musicd will
 * drop to it. Until this is called, the effective user (then and at each open).
 * Call before the first log is opened, before any thread starts.
 */
void log_file_set_owner(uid_t uid);

/*
 * Opens path for appending (O_APPEND, O_CLOEXEC, created LOG_FILE_MODE if
 * missing), refusing what is not safe to append to as root:
 *   - a symbolic link as the file, or on the way to it in a directory that
 *     anyone but root may write (root's own links, in root's directories, are
 *     followed);
 *   - anything but a regular file (a FIFO, a device, a socket), without
 *     waiting for a FIFO's reader;
 *   - a file owned by anyone but root and log_file_set_owner's user;
 *   - a file with more than one name (a hard link), or one whose name no
 *     longer leads to it once open.
 * 0, or -1 with "<path>: <reason>" in error.
 */
int log_file_open(const char *path, int *fd, char *error, size_t error_size);

/*
 * Opens path again as log_file_open does (after a rotation renamed it) and
 * swaps it in under the descriptor fd already in use (dup3: one atomic swap, a
 * write in progress finishes in the old file). On failure fd is untouched:
 * -1 with "<path>: <reason>".
 */
int log_file_reopen(const char *path, int fd, char *error, size_t error_size);

/*
 * For -t: whether log_file_open would succeed, creating nothing: the way to
 * the file passes the same checks, and the file passes them and is writable,
 * or is missing and its directory writable (access(2): by the real user).
 * 0, or -1 with "<path>: <reason>".
 */
int log_file_check(const char *path, char *error, size_t error_size);

#endif
