/*
 * file_cache: FILE_CACHE_SHARDS LRU tables of open files keyed by the path
 * the database gave. Each entry owns one reference to its file segment (which
 * owns the descriptor) and a count of borrowers; an entry removed from its
 * table while borrowed is freed by its last release.
 */
#include "file_cache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "content_type.h"
#include "head.h"
#include "lru.h"
#include "validators.h"

#define FILE_CACHE_SHARDS 16

struct file_cache_entry {
	struct lru_node node;
	char *path;		/* the key: the path as the database has it */
	char *resolved_path;	/* where it really is; response.resolved_path points here */
	char *file_lines;	/* response.file_lines points here */
	unsigned borrowers;	/* guarded by the shard lock */
	int in_table;		/* guarded by the shard lock */
	int64_t validated_at;	/* cache_now_seconds() of the last check against the disk */
	int64_t used_at;
	dev_t device;
	ino_t inode;
	struct timespec mtime;
	int fd;			/* owned by the segment; for fstat */
	struct response_file response; /* owns one segment reference */
};

struct file_cache {
	int enabled;
	unsigned valid_seconds, inactive_seconds;
	_Atomic size_t entries; /* in every shard */
	struct lru_shard shards[FILE_CACHE_SHARDS];
};

struct file_cache *file_cache_new(size_t max_entries, unsigned valid_seconds,
				  unsigned inactive_seconds)
{
	struct file_cache *cache = calloc(1, sizeof(*cache));
	if (cache == NULL)
		return NULL;
	cache->enabled = max_entries > 0;
	cache->valid_seconds = valid_seconds;
	cache->inactive_seconds = inactive_seconds;
	if (lru_shards_init(cache->shards, FILE_CACHE_SHARDS, max_entries, &cache->entries) < 0) {
		file_cache_free(cache);
		return NULL;
	}
	return cache;
}

static void free_entry(struct file_cache_entry *entry)
{
	if (entry->response.segment != NULL)
		evbuffer_file_segment_free(entry->response.segment);
	free(entry->file_lines);
	free(entry->resolved_path);
	free(entry->path);
	free(entry);
}

/* Takes entry out of its table; frees it unless borrowed. Shard lock held. */
static void evict(struct lru_shard *shard, struct file_cache_entry *entry)
{
	lru_remove(&shard->table, &entry->node);
	entry->in_table = 0;
	if (entry->borrowers == 0)
		free_entry(entry);
}

static void evict_node(struct lru_shard *shard, struct lru_node *node)
{
	evict(shard, lru_entry(node, struct file_cache_entry, node));
}

void file_cache_free(struct file_cache *cache)
{
	if (cache == NULL)
		return;
	lru_shards_destroy(cache->shards, FILE_CACHE_SHARDS, evict_node);
	free(cache);
}

static struct lru_shard *shard_for(struct file_cache *cache, uint64_t hash)
{
	return lru_shard_for(cache->shards, FILE_CACHE_SHARDS, hash);
}

static int same_file(const struct file_cache_entry *entry, const struct stat *info)
{
	return info->st_dev == entry->device && info->st_ino == entry->inode &&
	       (uint64_t)info->st_size == entry->response.size &&
	       info->st_mtim.tv_sec == entry->mtime.tv_sec &&
	       info->st_mtim.tv_nsec == entry->mtime.tv_nsec;
}

/* Whether the path still names the very file the entry holds: catches a replaced file. */
static int path_unchanged(const struct file_cache_entry *entry)
{
	struct stat info;
	return stat(entry->path, &info) == 0 && same_file(entry, &info);
}

/*
 * Whether the open file is as it was when cached: catches a file rewritten in
 * place, whose old length and validators would otherwise go out with new bytes.
 */
static int descriptor_unchanged(const struct file_cache_entry *entry)
{
	struct stat info;
	return fstat(entry->fd, &info) == 0 && same_file(entry, &info);
}

struct file_cache_entry *file_cache_get(struct file_cache *cache, const char *path)
{
	if (!cache->enabled)
		return NULL;
	uint64_t hash = lru_hash(path);
	struct lru_shard *shard = shard_for(cache, hash);
	struct file_cache_entry *found = NULL;
	int64_t now = cache_now_seconds();

	pthread_mutex_lock(&shard->lock);
	struct lru_node *node = lru_find(&shard->table, path, hash);
	if (node != NULL) {
		struct file_cache_entry *entry = lru_entry(node, struct file_cache_entry, node);
		/* Under the lock, and cheap: an fstat per hit, a stat of the path once per interval. */
		int path_due = now - entry->validated_at >= (int64_t)cache->valid_seconds;
		if (!descriptor_unchanged(entry) || (path_due && !path_unchanged(entry))) {
			evict(shard, entry);
			shard->stats.evictions++;
		} else {
			if (path_due)
				entry->validated_at = now;
			entry->used_at = now;
			entry->borrowers++;
			lru_touch(&shard->table, node);
			found = entry;
		}
	}
	if (found != NULL)
		shard->stats.hits++;
	else
		shard->stats.misses++;
	pthread_mutex_unlock(&shard->lock);
	return found;
}

static struct file_cache_entry *new_entry(const char *path, const struct media_file *file,
					  const char *cache_control)
{
	struct file_cache_entry *entry = calloc(1, sizeof(*entry));
	if (entry == NULL || (entry->path = strdup(path)) == NULL ||
	    (entry->resolved_path = strdup(file->resolved_path)) == NULL)
		goto fail;
	entry->response.segment = evbuffer_file_segment_new(file->fd, 0, (ev_off_t)file->size,
							    EVBUF_FS_CLOSE_ON_FREE);
	if (entry->response.segment == NULL)
		goto fail;
	entry->node.key = entry->path;
	entry->node.hash = lru_hash(entry->path);
	entry->validated_at = entry->used_at = cache_now_seconds();
	entry->fd = file->fd;
	entry->device = file->device;
	entry->inode = file->inode;
	entry->mtime = file->mtime;
	entry->borrowers = 1;
	entry->response.size = file->size;
	entry->response.mtime = file->mtime.tv_sec;
	entry->response.content_type = content_type_for_path(file->resolved_path);
	entry->response.cache_control = cache_control;
	entry->response.resolved_path = entry->resolved_path;
	entry->response.root_index = file->root_index;
	etag_format(entry->response.etag, file->mtime, file->size);
	http_date_format(entry->response.last_modified, file->mtime.tv_sec);
	size_t lines_size = 128 + (cache_control ? strlen(cache_control) : 0);
	if ((entry->file_lines = malloc(lines_size)) == NULL ||
	    head_file_lines(entry->file_lines, lines_size, entry->response.last_modified,
			    entry->response.etag, cache_control) == 0) {
		free_entry(entry);
		return NULL;
	}
	entry->response.file_lines = entry->file_lines;
	return entry;
fail:
	close(file->fd);
	if (entry != NULL) {
		free(entry->resolved_path);
		free(entry->path);
	}
	free(entry);
	return NULL;
}

struct file_cache_entry *file_cache_insert(struct file_cache *cache, const char *path,
					   const struct media_file *file,
					   const char *cache_control)
{
	struct file_cache_entry *entry = new_entry(path, file, cache_control);
	if (entry == NULL || !cache->enabled)
		return entry;

	struct lru_shard *shard = shard_for(cache, entry->node.hash);
	pthread_mutex_lock(&shard->lock);
	/* When every other shard is busy this instant, the file stays the caller's alone. */
	entry->in_table = lru_shard_insert_bounded(cache->shards, FILE_CACHE_SHARDS, shard,
						   &entry->node, evict_node);
	pthread_mutex_unlock(&shard->lock);
	return entry;
}

const struct response_file *file_cache_response(const struct file_cache_entry *entry)
{
	return &entry->response;
}

void file_cache_release(struct file_cache *cache, struct file_cache_entry *entry)
{
	struct lru_shard *shard = shard_for(cache, entry->node.hash);
	pthread_mutex_lock(&shard->lock);
	int last = --entry->borrowers == 0 && !entry->in_table;
	pthread_mutex_unlock(&shard->lock);
	if (last)
		free_entry(entry);
}

void file_cache_expire(struct file_cache *cache)
{
	if (!cache->enabled)
		return;
	int64_t now = cache_now_seconds();
	for (size_t i = 0; i < FILE_CACHE_SHARDS; i++) {
		struct lru_shard *shard = &cache->shards[i];
		pthread_mutex_lock(&shard->lock);
		struct lru_node *node;
		while ((node = lru_oldest(&shard->table)) != NULL) {
			struct file_cache_entry *entry =
				lru_entry(node, struct file_cache_entry, node);
			if (now - entry->used_at < (int64_t)cache->inactive_seconds)
				break;
			evict(shard, entry);
			shard->stats.evictions++;
		}
		pthread_mutex_unlock(&shard->lock);
	}
}

struct cache_stats file_cache_stats(struct file_cache *cache)
{
	return lru_shards_stats(cache->shards, FILE_CACHE_SHARDS);
}
