/*
 * privileges: looking up --user and dropping to it. The order matters and is
 * the usual one (nginx, OpenSSH): supplementary groups and the group while
 * still root, the user last; after setuid, setuid(0) must fail, which proves
 * that neither the real, effective nor saved user id is root any more. glibc
 * applies setuid/setgid to every thread of the process, including those
 * already running (the open-file cache's lease thread).
 */
#include "ops/privileges.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* getpwnam_r/getgrnam_r scratch space; NSS entries are small, and ERANGE is reported. */
#define LOOKUP_BUFFER_SIZE 16384

int privileges_parse(const char *spec, char *user, size_t user_size, char *group,
		     size_t group_size)
{
	const char *colon = strchr(spec, ':');
	size_t user_length = colon == NULL ? strlen(spec) : (size_t)(colon - spec);
	const char *group_start = colon == NULL ? "" : colon + 1;
	size_t group_length = strlen(group_start);

	if (user_length == 0 || user_length >= user_size || group_length >= group_size)
		return -1;
	if (colon != NULL && (group_length == 0 || strchr(group_start, ':') != NULL))
		return -1;
	memcpy(user, spec, user_length);
	user[user_length] = '\0';
	memcpy(group, group_start, group_length);
	group[group_length] = '\0';
	return 0;
}

int privileges_resolve(const char *spec, const char *setting, struct privileges *out, char *error,
		       size_t error_size)
{
	char group[PRIVILEGES_NAME_MAX];
	char *buffer = NULL;
	int status = -1;

	if (privileges_parse(spec, out->user, sizeof(out->user), group, sizeof(group)) < 0) {
		snprintf(error, error_size, "%s %s: not USER or USER:GROUP", setting, spec);
		return -1;
	}
	if ((buffer = malloc(LOOKUP_BUFFER_SIZE)) == NULL) {
		snprintf(error, error_size, "%s %s: out of memory", setting, spec);
		return -1;
	}
	struct passwd passwd, *found_user = NULL;
	int failed = getpwnam_r(out->user, &passwd, buffer, LOOKUP_BUFFER_SIZE, &found_user);
	if (found_user == NULL) {
		snprintf(error, error_size, "%s %s: %s", setting, spec,
			 failed != 0 ? strerror(failed) : "no such user");
		goto cleanup;
	}
	out->uid = passwd.pw_uid;
	out->gid = passwd.pw_gid;
	if (group[0] != '\0') {
		struct group entry, *found_group = NULL;
		failed = getgrnam_r(group, &entry, buffer, LOOKUP_BUFFER_SIZE, &found_group);
		if (found_group == NULL) {
			snprintf(error, error_size, "%s %s: %s", setting, spec,
				 failed != 0 ? strerror(failed) : "no such group");
			goto cleanup;
		}
		out->gid = entry.gr_gid;
	}
	status = 0;
cleanup:
	free(buffer);
	return status;
}

static int already(const struct privileges *target)
{
	uid_t real, effective, saved;
	gid_t real_group, effective_group, saved_group;
	if (getresuid(&real, &effective, &saved) < 0 ||
	    getresgid(&real_group, &effective_group, &saved_group) < 0)
		return 0;
	return real == target->uid && effective == target->uid && saved == target->uid &&
	       real_group == target->gid && effective_group == target->gid &&
	       saved_group == target->gid;
}

int privileges_drop(const struct privileges *target, char *error, size_t error_size)
{
	if (already(target))
		return 0;
	const char *step;
	if (initgroups(target->user, target->gid) < 0) {
		step = "initgroups";
		goto failed;
	}
	if (setgid(target->gid) < 0) {
		step = "setgid";
		goto failed;
	}
	if (setuid(target->uid) < 0) {
		step = "setuid";
		goto failed;
	}
	if (target->uid != 0 && setuid(0) != -1) {
		snprintf(error, error_size,
			 "--user %s: root could be regained after setuid(%u); refusing to run",
			 target->user, (unsigned)target->uid);
		return -1;
	}
	return 0;

failed: {
	int saved = errno;
	snprintf(error, error_size, "--user %s: %s: %s%s", target->user, step, strerror(saved),
		 saved == EPERM ? " (only root can change user; start musicd as root or leave "
				  "--user out)"
				: "");
	return -1;
}
}

int privileges_check_as(const struct privileges *target,
			int (*check)(const void *arg, char *error, size_t error_size),
			const void *arg, char *error, size_t error_size)
{
	int message_pipe[2];
	if (pipe2(message_pipe, O_CLOEXEC) < 0) {
		snprintf(error, error_size, "--user %s: pipe: %s", target->user, strerror(errno));
		return -1;
	}
	fflush(NULL); /* nothing buffered is written twice */
	pid_t child = fork();
	if (child < 0) {
		snprintf(error, error_size, "--user %s: fork: %s", target->user, strerror(errno));
		close(message_pipe[0]);
		close(message_pipe[1]);
		return -1;
	}
	if (child == 0) {
		/* The message, or nothing; _exit: none of the parent's exit handlers run twice. */
		close(message_pipe[0]);
		char message[PRIVILEGES_MESSAGE_MAX];
		int failed = privileges_drop(target, message, sizeof(message)) < 0 ||
			     check(arg, message, sizeof(message)) < 0;
		if (failed && write(message_pipe[1], message, strnlen(message, sizeof(message))) < 0)
			_exit(1);
		_exit(failed ? 1 : 0);
	}
	close(message_pipe[1]);
	size_t length = 0; /* error_size > 0, as for every caller's message buffer */
	while (length + 1 < error_size) {
		ssize_t got = read(message_pipe[0], error + length, error_size - 1 - length);
		if (got > 0)
			length += (size_t)got;
		else if (got == 0 || errno != EINTR)
			break;
	}
	close(message_pipe[0]);
	error[length] = '\0';
	int status;
	while (waitpid(child, &status, 0) < 0) {
		if (errno != EINTR) {
			snprintf(error, error_size, "--user %s: waitpid: %s", target->user,
				 strerror(errno));
			return -1;
		}
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (length == 0)
		snprintf(error, error_size, "--user %s: the check as that user did not finish",
			 target->user);
	return -1;
}
