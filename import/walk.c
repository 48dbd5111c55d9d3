/*
 * walk: depth first, each directory's names sorted (a deterministic order),
 * every file looked at with fstatat(AT_SYMLINK_NOFOLLOW) from its directory's
 * descriptor and subdirectories opened with O_NOFOLLOW, so a path component
 * swapped for a symbolic link during the walk is not followed either.
 */
#include "walk.h"

#include "media/containment.h"
#include "http/content_type.h"

#include <bson/bson.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WALK_INITIAL_CAPACITY 1024
#define WALK_MAX_DEPTH 256

struct name {
	char *text;
	unsigned char type; /* d_type */
};

struct walker {
	const char *const *roots;
	size_t root_count;
	struct walk *out;
	struct console *console;
	int failed; /* out of memory */
};

int walk_is_audio_name(const char *name)
{
	return strncmp(content_type_for_path(name), "audio/", 6) == 0;
}

static int64_t mtime_ms(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
}

static int add_entry(struct walker *walker, const char *path, const struct stat *st)
{
	struct walk *out = walker->out;
	if (out->count == out->capacity) {
		size_t capacity = out->capacity ? out->capacity * 2 : WALK_INITIAL_CAPACITY;
		struct walk_entry *grown = realloc(out->entries, capacity * sizeof(*grown));
		if (grown == NULL)
			return -1;
		out->entries = grown;
		out->capacity = capacity;
	}
	char *copy = strdup(path);
	if (copy == NULL)
		return -1;
	out->entries[out->count++] =
		(struct walk_entry){.path = copy, .size = st->st_size, .mtime_ms = mtime_ms(st)};
	return 0;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(((const struct name *)a)->text, ((const struct name *)b)->text);
}

/* Reads and sorts a directory's names (not "." and ".."); -1 with errno set. */
static int read_names(DIR *dir, struct name **names_out, size_t *count_out)
{
	struct name *names = NULL;
	size_t count = 0, capacity = 0;
	struct dirent *entry;
	errno = 0;
	while ((entry = readdir(dir)) != NULL) {
		if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
			continue;
		if (count == capacity) {
			capacity = capacity ? capacity * 2 : 64;
			struct name *grown = realloc(names, capacity * sizeof(*grown));
			if (grown == NULL)
				goto fail;
			names = grown;
		}
		if ((names[count].text = strdup(entry->d_name)) == NULL)
			goto fail;
		names[count++].type = entry->d_type;
	}
	if (errno != 0)
		goto fail;
	if (count > 1)
		qsort(names, count, sizeof(*names), compare_names);
	*names_out = names;
	*count_out = count;
	return 0;
fail: {
	int saved = errno ? errno : ENOMEM;
	for (size_t i = 0; i < count; i++)
		free(names[i].text);
	free(names);
	errno = saved;
	return -1;
}
}

/* A symbolic link to a file: its target, if inside a root and an audio file. */
static void take_symlink(struct walker *walker, const char *path)
{
	char *target = realpath(path, NULL);
	if (target == NULL)
		return; /* dangling: nothing to import */
	struct stat st;
	if (containment_find_root(walker->roots, walker->root_count, target) >= 0 &&
	    walk_is_audio_name(target) && stat(target, &st) == 0 && S_ISREG(st.st_mode)) {
		if (!bson_utf8_validate(target, strlen(target), false))
			console_skip(walker->console, target, "name is not valid UTF-8");
		else if (add_entry(walker, target, &st) < 0)
			walker->failed = 1;
	}
	free(target);
}

static void walk_directory(struct walker *walker, int fd, char *path, size_t length,
			   unsigned depth);

/*
 * A name whose path would be PATH_MAX bytes or more: no call can open it by
 * name, so an audio file or a directory (with all it holds) is reported.
 */
static void take_too_long(struct walker *walker, int fd, const struct name *name,
			  const char *path, size_t length)
{
	bool directory = name->type == DT_DIR;
	struct stat st;
	if (name->type == DT_UNKNOWN && fstatat(fd, name->text, &st, AT_SYMLINK_NOFOLLOW) == 0)
		directory = S_ISDIR(st.st_mode);
	if (!directory && !walk_is_audio_name(name->text))
		return;
	char *full = malloc(length + 1 + strlen(name->text) + 1);
	if (full == NULL) {
		walker->failed = 1;
		return;
	}
	sprintf(full, "%.*s/%s", (int)length, path, name->text);
	console_skip(walker->console, full, "the path is %zu bytes, PATH_MAX (%d) or more%s",
		     strlen(full), PATH_MAX,
		     directory ? ": skipped with its contents" : ": it cannot be opened");
	free(full);
}

/* One name in the directory open as fd; path[0..length) is that directory's path. */
static void take_name(struct walker *walker, int fd, const struct name *name, char *path,
		      size_t length, unsigned depth)
{
	size_t name_length = strlen(name->text);
	if (length + 1 + name_length >= PATH_MAX) {
		take_too_long(walker, fd, name, path, length);
		return;
	}
	path[length] = '/';
	memcpy(path + length + 1, name->text, name_length + 1);
	size_t full = length + 1 + name_length;

	bool maybe_directory = name->type == DT_DIR || name->type == DT_UNKNOWN;
	if (!maybe_directory && !walk_is_audio_name(name->text))
		goto done; /* not audio, and certainly not a directory: no stat needed */

	struct stat st;
	if (fstatat(fd, name->text, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			console_skip(walker->console, path, "vanished during the walk");
		else
			console_skip(walker->console, path, "cannot stat: %s", strerror(errno));
		goto done;
	}
	if (S_ISDIR(st.st_mode)) {
		if (!bson_utf8_validate(path, full, false)) {
			console_skip(walker->console, path,
				     "directory name is not valid UTF-8; skipped with its contents");
			goto done;
		}
		if (depth >= WALK_MAX_DEPTH) {
			console_skip(walker->console, path, "more than %d directories deep",
				     WALK_MAX_DEPTH);
			goto done;
		}
		int child = openat(fd, name->text, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (child < 0) {
			if (errno == ENOENT)
				console_skip(walker->console, path, "directory vanished during the walk");
			else if (errno != ELOOP && errno != ENOTDIR) /* became a symlink or a file */
				console_skip(walker->console, path, "cannot open directory: %s",
					     strerror(errno));
			goto done;
		}
		walk_directory(walker, child, path, full, depth + 1);
	} else if (!walk_is_audio_name(name->text)) {
		/* a file of another kind */
	} else if (S_ISREG(st.st_mode)) {
		if (!bson_utf8_validate(path, full, false))
			console_skip(walker->console, path, "name is not valid UTF-8");
		else if (add_entry(walker, path, &st) < 0)
			walker->failed = 1;
	} else if (S_ISLNK(st.st_mode)) {
		take_symlink(walker, path);
	}
done:
	path[length] = '\0';
}

/* Walks the directory open as fd (owned: closed here). */
static void walk_directory(struct walker *walker, int fd, char *path, size_t length,
			   unsigned depth)
{
	DIR *dir = fdopendir(fd);
	if (dir == NULL) {
		close(fd);
		console_skip(walker->console, path, "cannot read directory: %s", strerror(errno));
		return;
	}
	struct name *names;
	size_t count;
	if (read_names(dir, &names, &count) < 0) {
		if (errno == ENOMEM)
			walker->failed = 1;
		else if (errno == ENOENT)
			console_skip(walker->console, path, "directory vanished during the walk");
		else
			console_skip(walker->console, path, "cannot read directory: %s",
				     strerror(errno));
		closedir(dir);
		return;
	}
	for (size_t i = 0; i < count && !walker->failed; i++) {
		take_name(walker, dirfd(dir), &names[i], path, length, depth);
		console_walk_progress(walker->console, walker->out->count, path, length);
	}
	for (size_t i = 0; i < count; i++)
		free(names[i].text);
	free(names);
	closedir(dir);
}

static int compare_entries(const void *a, const void *b)
{
	return strcmp(((const struct walk_entry *)a)->path, ((const struct walk_entry *)b)->path);
}

/* Sorts and drops duplicates (nested roots, a symlink and its target). */
static void sort_unique(struct walk *walk)
{
	if (walk->count < 2)
		return;
	qsort(walk->entries, walk->count, sizeof(*walk->entries), compare_entries);
	size_t kept = 1;
	for (size_t i = 1; i < walk->count; i++) {
		if (strcmp(walk->entries[i].path, walk->entries[kept - 1].path) == 0)
			free(walk->entries[i].path);
		else
			walk->entries[kept++] = walk->entries[i];
	}
	walk->count = kept;
}

int walk_roots(const char *const *roots, size_t root_count, struct walk *out,
	       struct console *console)
{
	struct walker walker = {roots, root_count, out, console, 0};
	char *path = malloc(PATH_MAX);
	if (path == NULL)
		return -1;
	for (size_t i = 0; i < root_count && !walker.failed; i++) {
		size_t length = strlen(roots[i]);
		if (length >= PATH_MAX) {
			console_skip(console, roots[i], "the path is PATH_MAX (%d) bytes or more",
				     PATH_MAX);
			continue;
		}
		memcpy(path, roots[i], length + 1);
		if (length == 1)
			length = 0; /* the root directory: children are "/name" */
		int fd = open(roots[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			console_skip(console, roots[i], "cannot open directory: %s", strerror(errno));
			continue;
		}
		walk_directory(&walker, fd, path, length, 0);
	}
	free(path);
	sort_unique(out);
	if (walker.failed)
		console_error(console, "out of memory during the walk");
	return walker.failed ? -1 : 0;
}

void walk_free(struct walk *walk)
{
	for (size_t i = 0; i < walk->count; i++)
		free(walk->entries[i].path);
	free(walk->entries);
	walk->entries = NULL;
	walk->count = walk->capacity = 0;
}
