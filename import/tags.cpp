/*
 * tags: TagLib's C++ interface, behind the C functions of tags.h. Its C
 * binding (libtag_c 1.13, bookworm) has no property interface and gives the
 * duration in whole seconds; this file is the binding musicd-import needs:
 * every field from the property map, alike for every format (MP4's aART and
 * disk become ALBUMARTIST and DISCNUMBER as ID3v2's TPE2 and TPOS do; for
 * WAV its RIFF "id3 " chunk first and LIST INFO for what that lacks), and
 * the audio properties with the length in milliseconds. TagLib picks the format by extension, as
 * musicd picks the content type, and reads the file through the reader's descriptor and the head
 * it has read already (SourceStream), not by opening the path again. No C++ exception leaves this
 * file.
 */
#include "tags.h"

#include <bson/bson.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <cerrno>
#include <strings.h>
#include <unistd.h>

#include <taglib/fileref.h>
#include <taglib/tiostream.h>
#include <taglib/tpropertymap.h>
#include <taglib/wavfile.h>

namespace {

/*
 * The file as reader.c opened it, read-only: what lies in the head it read
 * is copied from there, the rest read with pread(2) (the descriptor's offset
 * is left alone). Its name is the path, for TagLib's choice by extension.
 */
class SourceStream : public TagLib::IOStream {
public:
	SourceStream(const char *path, const struct tags_source &source)
		: path_(path), source_(source)
	{
	}

	TagLib::FileName name() const override { return path_; }

	TagLib::ByteVector readBlock(unsigned long length) override
	{
		if (position_ >= source_.size || length == 0)
			return TagLib::ByteVector();
		int64_t left = source_.size - position_;
		unsigned int want = (unsigned int)(int64_t(length) < left ? int64_t(length) : left);
		if (uint64_t(position_) + want <= source_.head_length) {
			position_ += want;
			return TagLib::ByteVector((const char *)source_.head + position_ - want, want);
		}
		TagLib::ByteVector bytes(want, 0);
		unsigned int done = 0;
		while (done < want) {
			ssize_t n = pread(source_.fd, bytes.data() + done, want - done,
					  (off_t)(position_ + done));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break; /* an error or a file cut meanwhile: TagLib sees its end */
			done += (unsigned int)n;
		}
		bytes.resize(done);
		position_ += done;
		return bytes;
	}

	void writeBlock(const TagLib::ByteVector &) override {}
	void insert(const TagLib::ByteVector &, unsigned long, unsigned long) override {}
	void removeBlock(unsigned long, unsigned long) override {}
	bool readOnly() const override { return true; }
	bool isOpen() const override { return true; }

	void seek(long offset, Position from) override
	{
		int64_t base = from == Beginning ? 0 : from == Current ? position_ : source_.size;
		if (base + offset >= 0)
			position_ = base + offset;
	}

	long tell() const override { return long(position_); }
	long length() override { return long(source_.size); }
	void truncate(long) override {}

private:
	const char *path_;
	const struct tags_source &source_;
	int64_t position_ = 0;
};

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

int read_file(const char *path, const struct tags_source &source, struct track *track,
	      char *reason, size_t reason_size)
{
	SourceStream stream(path, source); /* outlives ref, which reads from it */
	TagLib::FileRef ref(&stream, true, TagLib::AudioProperties::Average);
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

int tags_read(const char *path, const struct tags_source *source, struct track *track,
	      char *reason, size_t reason_size)
{
	try {
		return read_file(path, *source, track, reason, reason_size);
	} catch (const std::bad_alloc &) {
		snprintf(reason, reason_size, "out of memory");
		return -1;
	} catch (...) {
		snprintf(reason, reason_size, "TagLib failed reading it");
		return 1;
	}
}
