/*
 * rawtags: the reading side of id3v2, ogg and vorbis_comment. Reads with
 * pread(2) only as much as the block headers say (never past MAX_TAG_BYTES),
 * so a large cover picture costs one read and a huge or lying header none.
 */
#include "rawtags.h"

#include "http/content_type.h"
#include "id3v2.h"
#include "mpeg.h"
#include "ogg.h"
#include "vorbis_comment.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_TAG_BYTES (16 * 1024 * 1024)
#define OGG_FIRST_READ (64 * 1024)
#define FLAC_MAX_BLOCKS 64
#define FLAC_VORBIS_COMMENT 4
#define FLAC_LAST_BLOCK 0x80
#define MPEG_SCAN_BYTES 4096 /* padding or junk between the ID3v2 tag and the first frame */
#define MPEG_FIRST_FRAME_MAX 2048
#define ID3V1_SIZE 128
#define APE_FOOTER_SIZE 32
#define APE_HAS_HEADER 0x80000000u
#define MP3_HEAD_READ (64 * 1024)
#define TAIL_READ (ID3V1_SIZE + APE_FOOTER_SIZE)

/* Reads exactly length bytes at offset, or fewer at the end of the file; returns the count. */
static ssize_t read_at(int fd, void *buffer, size_t length, int64_t offset)
{
	size_t done = 0;
	while (done < length) {
		ssize_t n = pread(fd, (char *)buffer + done, length - done, (off_t)(offset + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* Reads length bytes at offset into a malloc'd buffer (*out), *got of them there. */
static int read_block(int fd, int64_t offset, size_t length, unsigned char **out, size_t *got)
{
	unsigned char *buffer = malloc(length ? length : 1);
	if (buffer == NULL)
		return -ENOMEM;
	ssize_t n = read_at(fd, buffer, length, offset);
	if (n < 0) {
		free(buffer);
		return (int)n;
	}
	*out = buffer;
	*got = (size_t)n;
	return 0;
}

static uint32_t little_endian32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Bytes of ID3v1 and APEv2 tags at the end of the file, from one read of its last bytes. */
static int64_t tail_tags(int fd, int64_t file_size)
{
	unsigned char bytes[TAIL_READ];
	int64_t offset = file_size > TAIL_READ ? file_size - TAIL_READ : 0;
	ssize_t n = read_at(fd, bytes, (size_t)(file_size - offset), offset);
	if (n < 0 || n != file_size - offset)
		return 0;
	int64_t tail = 0;
	if (n >= ID3V1_SIZE && memcmp(bytes + n - ID3V1_SIZE, "TAG", 3) == 0)
		tail = ID3V1_SIZE;
	if (n - tail >= APE_FOOTER_SIZE) {
		const unsigned char *footer = bytes + n - tail - APE_FOOTER_SIZE;
		if (memcmp(footer, "APETAGEX", 8) == 0) {
			int64_t size = little_endian32(footer + 12);
			if (little_endian32(footer + 20) & APE_HAS_HEADER)
				size += APE_FOOTER_SIZE;
			tail += size;
		}
	}
	return tail;
}

/* The first MPEG frame in bytes (at file offset start): the encoder's audio byte count. */
static void take_first_frame(int fd, int64_t file_size, const unsigned char *bytes, size_t length,
			     int64_t start, struct rawtags *tags)
{
	for (size_t i = 0; i + 4 <= length && i < MPEG_SCAN_BYTES; i++) {
		uint32_t expected;
		if (bytes[i] != 0xFF || !mpeg_is_layer3_header(bytes + i))
			continue;
		if (mpeg_stream_bytes(bytes + i, length - i, &expected)) {
			tags->audio_expected = expected;
			tags->audio_present = file_size - (start + (int64_t)i) - tail_tags(fd, file_size);
		}
		return;
	}
}

/*
 * An mp3: one read of its first MP3_HEAD_READ bytes usually holds the ID3v2
 * tag and the first frame; a larger tag costs one more read.
 */
static int read_mp3(int fd, int64_t file_size, struct rawtags *tags)
{
	unsigned char *head = NULL, *tag = NULL, *frame = NULL;
	size_t head_length = 0, tag_length = 0, frame_length = 0;
	int status = read_block(fd, 0, MP3_HEAD_READ, &head, &head_length);
	if (status < 0)
		return status;
	size_t size = head_length >= ID3V2_HEADER_SIZE ? id3v2_tag_size(head) : 0;
	tags->id3v2_size = (int64_t)size;
	if (size > 0) {
		if (size <= head_length) {
			tag = head;
			tag_length = size;
		} else if ((status = read_block(fd, 0, size < MAX_TAG_BYTES ? size : MAX_TAG_BYTES,
						&tag, &tag_length)) < 0) {
			goto cleanup;
		}
		struct id3v2_info info;
		if (id3v2_parse(tag, tag_length, &info) < 0) {
			status = -ENOMEM;
			goto cleanup;
		}
		tags->album_artist = info.album_artist;
		tags->disc = info.disc;
		memcpy(tags->invalid, info.invalid_frame, sizeof(info.invalid_frame));
	}
	if (size + MPEG_SCAN_BYTES + MPEG_FIRST_FRAME_MAX <= head_length ||
	    (int64_t)head_length == file_size) {
		size_t at = size < head_length ? size : head_length;
		take_first_frame(fd, file_size, head + at, head_length - at, (int64_t)size, tags);
	} else {
		if ((status = read_block(fd, (int64_t)size, MPEG_SCAN_BYTES + MPEG_FIRST_FRAME_MAX,
					 &frame, &frame_length)) < 0)
			goto cleanup;
		take_first_frame(fd, file_size, frame, frame_length, (int64_t)size, tags);
	}
cleanup:
	if (tag != head)
		free(tag);
	free(head);
	free(frame);
	return status;
}

static int take_comments(const unsigned char *bytes, size_t length, struct rawtags *tags)
{
	struct vorbis_comment_info info;
	if (vorbis_comment_parse(bytes, length, &info) < 0)
		return -ENOMEM;
	tags->album_artist = info.album_artist;
	tags->disc = info.disc;
	memcpy(tags->invalid, info.invalid_field, sizeof(tags->invalid));
	return 0;
}

static int read_flac(int fd, struct rawtags *tags)
{
	unsigned char header[4];
	int64_t offset = 4; /* after "fLaC" */
	ssize_t n = read_at(fd, header, 4, 0);
	if (n < 0)
		return (int)n;
	if (n < 4 || memcmp(header, "fLaC", 4) != 0)
		return 0;
	for (int i = 0; i < FLAC_MAX_BLOCKS; i++) {
		if ((n = read_at(fd, header, 4, offset)) < 0)
			return (int)n;
		if (n < 4)
			return 0;
		size_t length = (size_t)header[1] << 16 | (size_t)header[2] << 8 | header[3];
		offset += 4;
		if ((header[0] & 0x7F) == FLAC_VORBIS_COMMENT) {
			unsigned char *bytes = NULL;
			size_t got = 0;
			int status = read_block(fd, offset, length < MAX_TAG_BYTES ? length : MAX_TAG_BYTES,
						&bytes, &got);
			if (status < 0)
				return status;
			status = take_comments(bytes, got, tags);
			free(bytes);
			return status;
		}
		if (header[0] & FLAC_LAST_BLOCK)
			return 0;
		offset += (int64_t)length;
	}
	return 0;
}

static int read_ogg(int fd, int64_t file_size, struct rawtags *tags)
{
	size_t want = OGG_FIRST_READ;
	while (1) {
		unsigned char *bytes = NULL;
		size_t got = 0;
		int status = read_block(fd, 0, want, &bytes, &got);
		if (status < 0)
			return status;
		unsigned char *packet = NULL;
		size_t length = 0;
		enum ogg_result result = ogg_packet(bytes, got, 1, &packet, &length);
		free(bytes);
		if (result == OGG_NO_MEMORY)
			return -ENOMEM;
		if (result == OGG_NEED_MORE && (int64_t)got == (int64_t)want && want < MAX_TAG_BYTES &&
		    (int64_t)want < file_size) {
			want *= 4;
			continue;
		}
		if (result != OGG_FOUND)
			return 0;
		status = 0;
		if (length >= 7 && memcmp(packet, "\x03vorbis", 7) == 0)
			status = take_comments(packet + 7, length - 7, tags);
		else if (length >= 8 && memcmp(packet, "OpusTags", 8) == 0)
			status = take_comments(packet + 8, length - 8, tags);
		free(packet);
		return status;
	}
}

int rawtags_read(int fd, const char *path, int64_t file_size, struct rawtags *tags)
{
	memset(tags, 0, sizeof(*tags));
	const char *type = content_type_for_path(path);
	if (strcmp(type, "audio/mpeg") == 0) {
		return read_mp3(fd, file_size, tags);
	}
	if (strcmp(type, "audio/flac") == 0)
		return read_flac(fd, tags);
	if (strcmp(type, "audio/ogg") == 0)
		return read_ogg(fd, file_size, tags);
	return 0;
}

void rawtags_free(struct rawtags *tags)
{
	free(tags->album_artist);
	tags->album_artist = NULL;
}
