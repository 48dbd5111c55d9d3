/*
 * rawtags: the reading side of id3v2, ogg and vorbis_comment. Reads with
 * pread(2) only as much as the block headers say (never past MAX_TAG_BYTES),
 * so a large cover picture costs one read and a huge or lying header none.
 */
#include "rawtags.h"

#include "content_type.h"
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

static int read_id3v2(int fd, struct rawtags *tags)
{
	unsigned char header[ID3V2_HEADER_SIZE];
	ssize_t n = read_at(fd, header, sizeof(header), 0);
	if (n < 0)
		return (int)n;
	size_t size = n == (ssize_t)sizeof(header) ? id3v2_tag_size(header) : 0;
	if (size == 0)
		return 0;
	tags->id3v2_size = (int64_t)size;
	unsigned char *bytes = NULL;
	size_t got = 0;
	int status = read_block(fd, 0, size < MAX_TAG_BYTES ? size : MAX_TAG_BYTES, &bytes, &got);
	if (status < 0)
		return status;
	struct id3v2_info info;
	status = id3v2_parse(bytes, got, &info) < 0 ? -ENOMEM : 0;
	free(bytes);
	if (status == 0) {
		tags->album_artist = info.album_artist;
		tags->disc = info.disc;
		memcpy(tags->invalid, info.invalid_frame, sizeof(info.invalid_frame));
	}
	return status;
}

static uint32_t little_endian32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Bytes of ID3v1 and APEv2 tags at the end of the file. */
static int64_t tail_tags(int fd, int64_t file_size)
{
	unsigned char bytes[APE_FOOTER_SIZE];
	int64_t tail = 0;
	if (file_size >= ID3V1_SIZE && read_at(fd, bytes, 3, file_size - ID3V1_SIZE) == 3 &&
	    memcmp(bytes, "TAG", 3) == 0)
		tail = ID3V1_SIZE;
	if (file_size - tail >= APE_FOOTER_SIZE &&
	    read_at(fd, bytes, APE_FOOTER_SIZE, file_size - tail - APE_FOOTER_SIZE) ==
		    APE_FOOTER_SIZE &&
	    memcmp(bytes, "APETAGEX", 8) == 0) {
		int64_t size = little_endian32(bytes + 12);
		if (little_endian32(bytes + 20) & APE_HAS_HEADER)
			size += APE_FOOTER_SIZE;
		tail += size;
	}
	return tail;
}

/* The first MPEG frame after the ID3v2 tag: the encoder's audio byte count, if it wrote one. */
static int read_first_frame(int fd, int64_t file_size, struct rawtags *tags)
{
	unsigned char *bytes = malloc(MPEG_SCAN_BYTES + MPEG_FIRST_FRAME_MAX);
	if (bytes == NULL)
		return -ENOMEM;
	ssize_t n = read_at(fd, bytes, MPEG_SCAN_BYTES + MPEG_FIRST_FRAME_MAX, tags->id3v2_size);
	if (n < 0) {
		free(bytes);
		return (int)n;
	}
	for (size_t i = 0; i + 4 <= (size_t)n && i < MPEG_SCAN_BYTES; i++) {
		uint32_t expected;
		if (bytes[i] != 0xFF || !mpeg_is_layer3_header(bytes + i))
			continue;
		if (mpeg_stream_bytes(bytes + i, (size_t)n - i, &expected)) {
			int64_t start = tags->id3v2_size + (int64_t)i;
			tags->audio_expected = expected;
			tags->audio_present = file_size - start - tail_tags(fd, file_size);
		}
		break;
	}
	free(bytes);
	return 0;
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
		int status = read_id3v2(fd, tags);
		return status < 0 ? status : read_first_frame(fd, file_size, tags);
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
