/*
 * statwalk: the baseline of scripts/benchmarks/bench-import's unchanged run: a plain
 * walk of a tree (nftw, symbolic links not followed) that stats every
 * entry, as `find DIR -printf '%s %T@'` would. Prints how many regular
 * files it saw and their total size. Built by scripts/benchmarks/bench-import:
 *   cc -O2 -o statwalk statwalk.c
 */
#define _GNU_SOURCE
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>

static unsigned long files;
static unsigned long long bytes;

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	if (type == FTW_F && S_ISREG(st->st_mode)) {
		files++;
		bytes += (unsigned long long)st->st_size + (unsigned long long)st->st_mtim.tv_nsec % 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (nftw(argv[i], visit, 64, FTW_PHYS) != 0) {
			perror(argv[i]);
			return 1;
		}
	}
	printf("%lu files, %llu bytes\n", files, bytes);
	return 0;
}
