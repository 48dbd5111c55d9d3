/*
 * reader: one file, one descriptor for the checks, TagLib and the hash, and
 * one first read of its head that the checks and TagLib both read from (most
 * of a short file's reading; an mp3's ID3v2 tag and first frame). The size
 * and time stored are the descriptor's, taken before anything is read, so a
 * file rewritten meanwhile is simply seen as changed on the next run.
 */
#include "reader.h"

#include "hash.h"
#include "rawtags.h"
#include "tags.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEAD_READ (64 * 1024)

int reader_read(const char *path, bool want_hash, struct track *track, char *reason,
		size_t reason_size)
{
	int status = 0;
	struct rawtags raw = {0};
	unsigned char *head = NULL;
	memset(track, 0, sizeof(*track));

	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		snprintf(reason, reason_size, "cannot open: %s", strerror(errno));
		return 1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(reason, reason_size, "not a regular file any more");
		status = 1;
		goto cleanup;
	}
	if ((track->path = strdup(path)) == NULL)
		goto out_of_memory;
	track->size = st.st_size;
	track->mtime_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;

	size_t head_size = st.st_size < HEAD_READ ? (size_t)st.st_size : HEAD_READ;
	if ((head = malloc(head_size ? head_size : 1)) == NULL)
		goto out_of_memory;
	ssize_t head_length = 0;
	while ((size_t)head_length < head_size) {
		ssize_t n = pread(fd, head + head_length, head_size - (size_t)head_length,
				  (off_t)head_length);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0)
				head_length = -errno;
			break;
		}
		head_length += n;
	}
	int read_status = head_length < 0 ? (int)head_length
					  : rawtags_read(fd, path, st.st_size, head,
							 (size_t)head_length, &raw);
	if (read_status == -ENOMEM)
		goto out_of_memory;
	if (read_status < 0) {
		snprintf(reason, reason_size, "cannot read: %s", strerror(-read_status));
		status = 1;
		goto cleanup;
	}
	if (raw.invalid[0] != '\0') {
		snprintf(reason, reason_size, "tag %s is not valid text (UTF-8 or UTF-16)",
			 raw.invalid);
		status = 1;
		goto cleanup;
	}
	if (raw.audio_expected > 0 && raw.audio_present < raw.audio_expected) {
		snprintf(reason, reason_size, "truncated: %lld of the %lld bytes of audio its encoder wrote",
			 (long long)(raw.audio_present > 0 ? raw.audio_present : 0),
			 (long long)raw.audio_expected);
		status = 1;
		goto cleanup;
	}
	if (raw.truncated[0] != '\0') {
		snprintf(reason, reason_size, "truncated: %s", raw.truncated);
		status = 1;
		goto cleanup;
	}
	if (tags_supported(path)) {
		struct tags_source source = {fd, st.st_size, head, (size_t)head_length};
		status = tags_read(path, &source, track, reason, reason_size);
		if (status < 0)
			goto out_of_memory;
		if (status > 0)
			goto cleanup;
	}
	if (raw.duration_ms > 0)
		track->duration_ms = raw.duration_ms;

	if (want_hash) {
		int hashed = hash_file(fd, track->sha256);
		if (hashed == -ENOMEM)
			goto out_of_memory;
		if (hashed < 0) {
			snprintf(reason, reason_size, "cannot read: %s", strerror(-hashed));
			status = 1;
			goto cleanup;
		}
		track->has_sha256 = true;
	}

cleanup:
	free(head);
	close(fd);
	if (status != 0)
		track_free(track);
	return status;

out_of_memory:
	snprintf(reason, reason_size, "out of memory");
	status = -1;
	goto cleanup;
}
