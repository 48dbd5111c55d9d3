/*
 * rawtags: the reading side of id3v2, ogg and vorbis_comment. Reads with
 * pread(2) only as much as the block headers say (never past MAX_TAG_BYTES),
 * so a large cover picture costs one read and a huge or lying header none.
 */
#include "rawtags.h"

#include "flac.h"
#include "http/content_type.h"
#include "id3v2.h"
#include "mp4.h"
#include "mpeg.h"
#include "ogg.h"
#include "vorbis_comment.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_TAG_BYTES (16 * 1024 * 1024)
#define OGG_FIRST_READ (64 * 1024)
#define FLAC_MAX_BLOCKS 64
#define FLAC_STREAMINFO 0
#define FLAC_VORBIS_COMMENT 4
#define FLAC_TAIL_MIN (64 * 1024)
#define FLAC_TAIL_MAX (1024 * 1024)
#define MP4_MAX_BOXES 1024
#define RIFF_MAX_CHUNKS 1024
#define FLAC_LAST_BLOCK 0x80
#define MPEG_SCAN_BYTES 4096 /* padding or junk between the ID3v2 tag and the first frame */
#define MPEG_FIRST_FRAME_MAX 2048
#define ID3V1_SIZE 128
#define APE_FOOTER_SIZE 32
#define APE_HAS_HEADER 0x80000000u
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
		uint64_t samples;
		unsigned rate;
		if (mpeg_playing_samples(bytes + i, length - i, &samples, &rate))
			tags->duration_ms = (unsigned)((samples * 1000 + rate / 2) / rate);
		return;
	}
}

/*
 * An mp3: the file's head (the caller's first read) usually holds the ID3v2
 * tag and the first frame; a larger tag costs one more read.
 */
static int read_mp3(int fd, int64_t file_size, const unsigned char *head, size_t head_length,
		    struct rawtags *tags)
{
	const unsigned char *tag = NULL;
	unsigned char *tag_read = NULL, *frame = NULL;
	size_t tag_length = 0, frame_length = 0;
	int status = 0;
	size_t size = head_length >= ID3V2_HEADER_SIZE ? id3v2_tag_size(head) : 0;
	tags->id3v2_size = (int64_t)size;
	if (size > 0) {
		if (size <= head_length) {
			tag = head;
			tag_length = size;
		} else if ((status = read_block(fd, 0, size < MAX_TAG_BYTES ? size : MAX_TAG_BYTES,
						&tag_read, &tag_length)) < 0) {
			goto cleanup;
		} else {
			tag = tag_read;
		}
		struct id3v2_info info;
		if (id3v2_parse(tag, tag_length, &info) < 0) {
			status = -ENOMEM;
			goto cleanup;
		}
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
	free(tag_read);
	free(frame);
	return status;
}

static int take_comments(const unsigned char *bytes, size_t length, struct rawtags *tags)
{
	struct vorbis_comment_info info;
	if (vorbis_comment_parse(bytes, length, &info) < 0)
		return -ENOMEM;
	memcpy(tags->invalid, info.invalid_field, sizeof(tags->invalid));
	return 0;
}

/* The FLAC stream's last frame against STREAMINFO's count; audio starts at offset. */
static int check_flac_end(int fd, int64_t file_size, int64_t offset,
			  const struct flac_streaminfo *info, struct rawtags *tags)
{
	size_t want = info->max_frame > 0 ? 2 * (size_t)info->max_frame : FLAC_TAIL_MIN;
	want = want < FLAC_TAIL_MIN ? FLAC_TAIL_MIN : want > FLAC_TAIL_MAX ? FLAC_TAIL_MAX : want;
	int64_t audio = file_size - offset;
	if (audio <= 0) {
		snprintf(tags->truncated, sizeof(tags->truncated), "no audio frames after the metadata");
		return 0;
	}
	if ((int64_t)want > audio)
		want = (size_t)audio;
	unsigned char *tail = NULL;
	size_t got = 0;
	int status = read_block(fd, file_size - (int64_t)want, want, &tail, &got);
	if (status < 0)
		return status;
	uint64_t end = 0;
	enum flac_tail result = flac_last_frame(tail, got, info, &end);
	free(tail);
	if (result == FLAC_NO_FRAME)
		snprintf(tags->truncated, sizeof(tags->truncated), "no whole FLAC frame at its end");
	else if (result == FLAC_LAST_FRAME_CUT)
		snprintf(tags->truncated, sizeof(tags->truncated),
			 "its last FLAC frame is cut short (STREAMINFO counts %llu samples)",
			 (unsigned long long)info->total_samples);
	else if (info->total_samples > 0 && end < info->total_samples)
		snprintf(tags->truncated, sizeof(tags->truncated),
			 "%llu of the %llu samples STREAMINFO counts", (unsigned long long)end,
			 (unsigned long long)info->total_samples);
	return 0;
}

static int read_flac(int fd, int64_t file_size, struct rawtags *tags)
{
	unsigned char header[4];
	int64_t offset = 4; /* after "fLaC" */
	struct flac_streaminfo info;
	bool have_info = false;
	ssize_t n = read_at(fd, header, 4, 0);
	if (n < 0)
		return (int)n;
	if (n < 4 || memcmp(header, "fLaC", 4) != 0)
		return 0;
	for (int i = 0; i < FLAC_MAX_BLOCKS; i++) {
		if ((n = read_at(fd, header, 4, offset)) < 0)
			return (int)n;
		if (n < 4) {
			snprintf(tags->truncated, sizeof(tags->truncated), "cut inside its metadata");
			return 0;
		}
		size_t length = (size_t)header[1] << 16 | (size_t)header[2] << 8 | header[3];
		offset += 4;
		unsigned type = header[0] & 0x7F;
		if (type == FLAC_STREAMINFO && length >= FLAC_STREAMINFO_SIZE) {
			unsigned char block[FLAC_STREAMINFO_SIZE];
			if ((n = read_at(fd, block, sizeof(block), offset)) < 0)
				return (int)n;
			have_info = n == (ssize_t)sizeof(block) && flac_parse_streaminfo(block, &info);
		} else if (type == FLAC_VORBIS_COMMENT) {
			unsigned char *bytes = NULL;
			size_t got = 0;
			int status = read_block(fd, offset, length < MAX_TAG_BYTES ? length : MAX_TAG_BYTES,
						&bytes, &got);
			if (status < 0)
				return status;
			status = take_comments(bytes, got, tags);
			free(bytes);
			if (status < 0)
				return status;
		}
		offset += (int64_t)length;
		if (header[0] & FLAC_LAST_BLOCK)
			break;
	}
	return have_info ? check_flac_end(fd, file_size, offset, &info, tags) : 0;
}

/* Whether the Ogg file ends with its stream's last page, whole. */
static int check_ogg_end(int fd, int64_t file_size, struct rawtags *tags)
{
	size_t want = file_size < OGG_MAX_PAGE ? (size_t)file_size : OGG_MAX_PAGE;
	unsigned char *tail = NULL;
	size_t got = 0;
	int status = read_block(fd, file_size - (int64_t)want, want, &tail, &got);
	if (status < 0)
		return status;
	uint64_t granule = 0;
	enum ogg_end end = ogg_last_page(tail, got, &granule);
	free(tail);
	if (end == OGG_END_CUT)
		snprintf(tags->truncated, sizeof(tags->truncated), "its last Ogg page is cut short");
	else if (end == OGG_END_NO_EOS)
		snprintf(tags->truncated, sizeof(tags->truncated),
			 "its last Ogg page (granule position %llu) is not the stream's end",
			 (unsigned long long)granule);
	else if (end == OGG_END_NONE)
		snprintf(tags->truncated, sizeof(tags->truncated), "no whole Ogg page at its end");
	return 0;
}

static int read_ogg(int fd, int64_t file_size, struct rawtags *tags)
{
	int checked = check_ogg_end(fd, file_size, tags);
	if (checked < 0)
		return checked;
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

/* The moov box's mvhd (its first child, as encoders write it): the presentation's length. */
static void take_mvhd(int fd, int64_t moov, const struct mp4_box *box, struct rawtags *tags)
{
	unsigned char bytes[MP4_BOX_HEADER_MAX + 32];
	ssize_t n = read_at(fd, bytes, sizeof(bytes), moov + box->header);
	struct mp4_box child;
	uint64_t milliseconds;
	if (n > 0 && mp4_box_header(bytes, (size_t)n, &child) && strcmp(child.type, "mvhd") == 0 &&
	    mp4_mvhd_duration(bytes + child.header, (size_t)n - child.header, &milliseconds) &&
	    milliseconds > 0 && milliseconds <= UINT32_MAX)
		tags->duration_ms = (unsigned)milliseconds;
}

/* Every top-level box must end inside the file, the mdat that holds the audio first of all. */
static int read_mp4(int fd, int64_t file_size, struct rawtags *tags)
{
	int64_t offset = 0;
	for (int i = 0; i < MP4_MAX_BOXES && offset < file_size; i++) {
		unsigned char bytes[MP4_BOX_HEADER_MAX];
		ssize_t n = read_at(fd, bytes, sizeof(bytes), offset);
		if (n < 0)
			return (int)n;
		struct mp4_box box;
		if (!mp4_box_header(bytes, (size_t)n, &box)) {
			snprintf(tags->truncated, sizeof(tags->truncated),
				 "%lld bytes after its last whole box", (long long)(file_size - offset));
			return 0;
		}
		uint64_t size = box.size == 0 ? (uint64_t)(file_size - offset) : box.size;
		if (size > (uint64_t)(file_size - offset)) {
			snprintf(tags->truncated, sizeof(tags->truncated),
				 "its %s box ends at byte %llu of %lld", box.type,
				 (unsigned long long)(offset + size), (long long)file_size);
			return 0;
		}
		if (strcmp(box.type, "moov") == 0)
			take_mvhd(fd, offset, &box, tags);
		offset += (int64_t)size;
	}
	return 0;
}

/* The chunks of a RIFF WAVE file: the data chunk whole, an "id3 " chunk's text valid. */
static int read_wav(int fd, int64_t file_size, struct rawtags *tags)
{
	unsigned char header[12];
	ssize_t n = read_at(fd, header, sizeof(header), 0);
	if (n < 0)
		return (int)n;
	if (n < 12 || memcmp(header, "RIFF", 4) != 0 || memcmp(header + 8, "WAVE", 4) != 0)
		return 0;
	int64_t offset = 12;
	bool data = false;
	for (int i = 0; i < RIFF_MAX_CHUNKS && offset + 8 <= file_size; i++) {
		unsigned char chunk[8];
		if ((n = read_at(fd, chunk, sizeof(chunk), offset)) < 0)
			return (int)n;
		int64_t size = little_endian32(chunk + 4), body = offset + 8;
		if (memcmp(chunk, "data", 4) == 0) {
			data = true;
			if (size > file_size - body) {
				snprintf(tags->truncated, sizeof(tags->truncated),
					 "%lld of the %lld bytes of audio its data chunk declares",
					 (long long)(file_size - body), (long long)size);
				return 0;
			}
		} else if (memcmp(chunk, "id3 ", 4) == 0 || memcmp(chunk, "ID3 ", 4) == 0) {
			unsigned char *bytes = NULL;
			size_t got = 0;
			int64_t length = size < file_size - body ? size : file_size - body;
			int status = read_block(fd, body, length < MAX_TAG_BYTES ? (size_t)length
									   : MAX_TAG_BYTES,
						&bytes, &got);
			if (status < 0)
				return status;
			struct id3v2_info info;
			status = id3v2_parse(bytes, got, &info);
			free(bytes);
			if (status < 0)
				return -ENOMEM;
			memcpy(tags->invalid, info.invalid_frame, sizeof(info.invalid_frame));
		}
		offset = body + size + (size & 1); /* chunks are padded to an even size */
	}
	if (!data)
		snprintf(tags->truncated, sizeof(tags->truncated), "no data chunk");
	return 0;
}

int rawtags_read(int fd, const char *path, int64_t file_size, const unsigned char *head,
		 size_t head_length, struct rawtags *tags)
{
	memset(tags, 0, sizeof(*tags));
	const char *type = content_type_for_path(path);
	if (strcmp(type, "audio/mpeg") == 0)
		return read_mp3(fd, file_size, head, head_length, tags);
	if (strcmp(type, "audio/flac") == 0)
		return read_flac(fd, file_size, tags);
	if (strcmp(type, "audio/ogg") == 0)
		return read_ogg(fd, file_size, tags);
	if (strcmp(type, "audio/mp4") == 0)
		return read_mp4(fd, file_size, tags);
	if (strcmp(type, "audio/wav") == 0)
		return read_wav(fd, file_size, tags);
	return 0;
}
