/*
 * tagloop: the baseline of scripts/benchmarks/bench-import's first run: TagLib alone
 * reading, one file after another, what musicd-import reads through it (the
 * property map, the audio properties with the length in milliseconds), for
 * the files named one per line on stdin. Prints how many files it read and a
 * checksum of what it read (so nothing is optimised away). Built by
 * scripts/benchmarks/bench-import:
 *   c++ -O2 -o tagloop tagloop.cpp $(pkg-config --cflags --libs taglib)
 */
#include <cstdio>
#include <iostream>
#include <string>

#include <taglib/fileref.h>
#include <taglib/tpropertymap.h>

int main()
{
	unsigned long files = 0, sum = 0;
	std::string line;
	while (std::getline(std::cin, line)) {
		TagLib::FileRef ref(line.c_str(), true, TagLib::AudioProperties::Average);
		if (ref.isNull() || !ref.file()->isValid())
			continue;
		for (const auto &entry : ref.file()->properties())
			for (const auto &value : entry.second)
				for (char c : value.to8Bit(true))
					sum = sum * 31 + (unsigned char)c;
		if (const TagLib::AudioProperties *audio = ref.audioProperties())
			sum += (unsigned long)(audio->lengthInMilliseconds() + audio->bitrate() +
					       audio->sampleRate() + audio->channels());
		files++;
	}
	printf("%lu files, checksum %lx\n", files, sum);
	return 0;
}
