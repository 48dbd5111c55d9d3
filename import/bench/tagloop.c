/*
 * tagloop: the baseline of scripts/bench-import's first run: TagLib alone
 * reading, one file after another, the same tags and audio properties
 * musicd-import reads, for the files named one per line on stdin. Prints
 * how many files it read and a checksum of what it read (so nothing is
 * optimised away). Built by scripts/bench-import:
 *   cc -O2 -o tagloop tagloop.c $(pkg-config --cflags --libs taglib_c)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tag_c.h>

static unsigned long checksum(unsigned long sum, char *text)
{
	if (text == NULL)
		return sum;
	for (const char *p = text; *p != '\0'; p++)
		sum = sum * 31 + (unsigned char)*p;
	taglib_free(text);
	return sum;
}

int main(void)
{
	char line[8192];
	unsigned long files = 0, sum = 0;
	taglib_set_strings_unicode(1);
	taglib_set_string_management_enabled(0);
	while (fgets(line, sizeof(line), stdin) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		TagLib_File *file = taglib_file_new(line);
		if (file == NULL)
			continue;
		if (taglib_file_is_valid(file)) {
			TagLib_Tag *tag = taglib_file_tag(file);
			const TagLib_AudioProperties *properties = taglib_file_audioproperties(file);
			if (tag != NULL) {
				sum = checksum(sum, taglib_tag_title(tag));
				sum = checksum(sum, taglib_tag_artist(tag));
				sum = checksum(sum, taglib_tag_album(tag));
				sum = checksum(sum, taglib_tag_genre(tag));
				sum = checksum(sum, taglib_tag_comment(tag));
				sum += taglib_tag_year(tag) + taglib_tag_track(tag);
			}
			if (properties != NULL)
				sum += (unsigned long)taglib_audioproperties_length(properties) +
				       (unsigned long)taglib_audioproperties_bitrate(properties) +
				       (unsigned long)taglib_audioproperties_samplerate(properties) +
				       (unsigned long)taglib_audioproperties_channels(properties);
			files++;
		}
		taglib_file_free(file);
	}
	printf("%lu files, checksum %lx\n", files, sum);
	return 0;
}
