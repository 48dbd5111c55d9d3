/*
 * rawtags: what musicd-import reads from an open audio file itself, where
 * TagLib cannot answer: whether the tag text is valid (TagLib drops invalid
 * text silently: ID3v2 in mp3 and in WAV's "id3 " chunk, VORBIS_COMMENT in
 * FLAC, the comment header in Ogg Vorbis and Opus), and each container's own
 * length facts (mp3: the Xing/Info byte count; FLAC: STREAMINFO's samples
 * against its last frame; Ogg: its last page; MP4: its boxes against the
 * file's size; WAV: its data chunk), with the duration that plays where the
 * container knows it better than TagLib (mp3's encoder delay and padding,
 * MP4's movie header).
 */
#ifndef MUSICD_IMPORT_RAWTAGS_H
#define MUSICD_IMPORT_RAWTAGS_H

#include <stddef.h>
#include <stdint.h>

struct rawtags {
	char invalid[32];     /* "" or the frame/comment whose text is not valid */
	int64_t id3v2_size;   /* mp3: bytes of the ID3v2 tag at the start (0 when none) */
	int64_t audio_expected; /* mp3: audio bytes its encoder wrote (0 when not known) */
	int64_t audio_present;	/* mp3: audio bytes in the file, tags at either end excluded */
	char truncated[160];	/* flac, ogg, mp4, wav: "" or how the file falls short */
	unsigned duration_ms;	/* mp3, mp4: what plays, when the file says better than TagLib */
};

/*
 * Reads what the file's type (by path's extension) holds, head being its
 * first head_length bytes (the whole file if shorter than what the caller
 * reads first); returns 0 or a negative errno.
 */
int rawtags_read(int fd, const char *path, int64_t file_size, const unsigned char *head,
		 size_t head_length, struct rawtags *tags);

#endif
