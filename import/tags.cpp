/*
 * tags: TagLib's C++ interface, behind the C functions of tags.h. Its C
 * binding (libtag_c 1.13, bookworm) has no property interface and gives the
 * duration in whole seconds; this file is the binding musicd-import needs:
 * every field from the property map, alike for every format (MP4's aART and
 * disk become ALBUMARTIST and DISCNUMBER as ID3v2's TPE2 and TPOS do; for
 * WAV its RIFF "id3 " chunk first and LIST INFO for what that lacks), and
 * the audio properties with the length in milliseconds. TagLib picks the format by extension, as
 * musicd picks the content type. No C++ exception leaves this file.
 */
#include "tags.h"

#include <bson/bson.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <strings.h>

#include <taglib/fileref.h>
#include <taglib/tpropertymap.h>
#include <taglib/wavfile.h>

namespace {

/* The extensions musicd serves as audio (server/content_type.c) that TagLib 1.13 reads. */
const char *const supported[] = {"mp3", "m4a", "mp4", "ogg", "oga", "opus", "flac", "wav"};

/* 0, 1 (not valid UTF-8: TagLib's conversion should prevent it; BSON requires it), -1 (memory). */
int take_string(const TagLib::String &value, char **field)
{
	if (value.isEmpty())
		return 0;
	std::string utf8 = value.to8Bit(true);
	if (!bson_utf8_validate(utf8.c_str(), utf8.size(), false))
		return 1;
	*field = strdup(utf8.c_str());
	return *field == nullptr ? -1 : 0;
}

/* The leading digits of "2/3", "2" or "2001-05-03", as TagLib's own number fields read them. */
unsigned leading_number(const TagLib::String &value)
{
	std::string text = value.to8Bit(true);
	unsigned number = 0;
	for (const char *p = text.c_str(); *p >= '0' && *p <= '9' && number < 100000; p++)
		number = number * 10 + unsigned(*p - '0');
	return number;
}

/* A WAV file's properties: its id3 chunk's, then LIST INFO's for the names it lacks. */
TagLib::PropertyMap properties_of(TagLib::File *file)
{
	auto *wav = dynamic_cast<TagLib::RIFF::WAV::File *>(file);
	if (wav == nullptr)
		return file->properties();
	TagLib::PropertyMap map;
	if (wav->hasID3v2Tag())
		map = wav->ID3v2Tag()->properties();
	if (wav->hasInfoTag()) {
		TagLib::PropertyMap info = wav->InfoTag()->properties();
		for (const auto &entry : info)
			if (!map.contains(entry.first))
				map.insert(entry.first, entry.second);
	}
	return map;
}

/* The first value of a property, or "". */
TagLib::String first(const TagLib::PropertyMap &properties, const char *key)
{
	auto found = properties.find(key);
	return found == properties.end() || found->second.isEmpty() ? TagLib::String()
								   : found->second.front();
}

unsigned positive(int value)
{
	return value > 0 ? unsigned(value) : 0;
}

int read_file(const char *path, struct track *track, char *reason, size_t reason_size)
{
	TagLib::FileRef ref(path, true, TagLib::AudioProperties::Average);
	if (ref.isNull() || !ref.file()->isValid()) {
		snprintf(reason, reason_size, "not a readable %s file", strrchr(path, '.') + 1);
		return 1;
	}
	const TagLib::AudioProperties *audio = ref.audioProperties();
	if (audio == nullptr || audio->sampleRate() <= 0 || audio->channels() <= 0) {
		snprintf(reason, reason_size, "no audio found (corrupt or truncated)");
		return 1;
	}
	track->duration_ms = positive(audio->lengthInMilliseconds());
	track->bitrate = positive(audio->bitrate());
	track->sample_rate = positive(audio->sampleRate());
	track->channels = positive(audio->channels());

	/* One map for every format (TagLib's Tag of a WAV file is its id3 chunk alone). */
	TagLib::PropertyMap properties = properties_of(ref.file());
	struct {
		const char *name, *key;
		char **field;
	} strings[] = {
		{"title", "TITLE", &track->title},
		{"artist", "ARTIST", &track->artist},
		{"album", "ALBUM", &track->album},
		{"album artist", "ALBUMARTIST", &track->album_artist},
		{"genre", "GENRE", &track->genre},
		{"comment", "COMMENT", &track->comment},
	};
	for (const auto &string : strings) {
		TagLib::String value = first(properties, string.key);
		/* Vorbis comments say DESCRIPTION where others say COMMENT (TagLib reads either). */
		if (value.isEmpty() && strcmp(string.key, "COMMENT") == 0)
			value = first(properties, "DESCRIPTION");
		int status = take_string(value, string.field);
		if (status > 0)
			snprintf(reason, reason_size, "tag %s is not valid UTF-8", string.name);
		if (status != 0)
			return status;
	}
	track->year = leading_number(first(properties, "DATE"));
	track->number = leading_number(first(properties, "TRACKNUMBER"));
	track->disc = leading_number(first(properties, "DISCNUMBER"));
	return 0;
}

} // namespace

void tags_init(void)
{
	/* TagLib's frame factories are made on first use: made here, before threads read. */
	TagLib::FileRef none;
	(void)none;
}

bool tags_supported(const char *path)
{
	const char *name = strrchr(path, '/');
	const char *dot = strrchr(name ? name : path, '.');
	if (dot == nullptr)
		return false;
	for (const char *extension : supported) {
		if (strcasecmp(dot + 1, extension) == 0)
			return true;
	}
	return false;
}

int tags_read(const char *path, struct track *track, char *reason, size_t reason_size)
{
	try {
		return read_file(path, track, reason, reason_size);
	} catch (const std::bad_alloc &) {
		snprintf(reason, reason_size, "out of memory");
		return -1;
	} catch (...) {
		snprintf(reason, reason_size, "TagLib failed reading it");
		return 1;
	}
}
