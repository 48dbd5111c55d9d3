/*
 * privileges: --user USER[:GROUP]. The user (and group) are looked up at
 * start-up, so a name that does not exist stops musicd before anything is
 * opened; once the listeners are bound and the logs open, musicd becomes that
 * user for good: supplementary groups (initgroups), then the group, then the
 * user, and the drop is proved by failing to become root again.
 */
#ifndef MUSICD_PRIVILEGES_H
#define MUSICD_PRIVILEGES_H

#include <stddef.h>
#include <sys/types.h>

#define PRIVILEGES_NAME_MAX 256
/* The longest message privileges_check_as carries back from its child. */
#define PRIVILEGES_MESSAGE_MAX 512

struct privileges {
	char user[PRIVILEGES_NAME_MAX]; /* for initgroups and the messages */
	uid_t uid;
	gid_t gid; /* GROUP's, or the user's own group */
};

/*
 * Splits "USER" or "USER:GROUP" into its parts (group empty when not given).
 * Returns 0, or -1 for an empty part, a second ':' or a part too long. Pure.
 */
int privileges_parse(const char *spec, char *user, size_t user_size, char *group,
		     size_t group_size);
/*
 * Parses spec and looks the names up; 0, or -1 with "<setting> <spec>: <reason>" in
 * error, where setting names where spec was given ("--user", "FILE:LINE: user").
 */
int privileges_resolve(const char *spec, const char *setting, struct privileges *out, char *error,
		       size_t error_size);
/*
 * Becomes out's user and group; a no-op when already exactly that. 0, or -1
 * with a message (not started as root, or root could be regained after all).
 */
int privileges_drop(const struct privileges *target, char *error, size_t error_size);

/*
 * Runs check(arg, ...) as target, for -t's questions about what musicd may do
 * once it has dropped to --user: in a child process that drops to target
 * (privileges_drop) and then runs check, so permissions, groups and ACLs are
 * the kernel's answer, while the caller stays who it was. For a
 * single-threaded caller (the child looks names up after fork). Returns
 * check's 0, or -1 with its message (or the drop's) in error.
 */
int privileges_check_as(const struct privileges *target,
			int (*check)(const void *arg, char *error, size_t error_size),
			const void *arg, char *error, size_t error_size);

#endif
