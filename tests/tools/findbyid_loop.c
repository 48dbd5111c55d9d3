/*
 * findbyid_loop: the cost of the database itself, for comparing with musicd's
 * cold lookups. THREADS threads share one mongoc_client_pool_t (as musicd's
 * lookup pool does); each runs the same findById musicd runs ({_id: oid},
 * projection {PATH_FIELD: 1}, limit 1, singleBatch) on random ids from IDS_FILE
 * (one 24-hex-digit id a line) for SECONDS seconds, then it prints
 * "result lookups=N errors=N not_found=N seconds=S lookups_per_s=R".
 *
 * Usage: findbyid_loop URI DATABASE COLLECTION IDS_FILE THREADS SECONDS [PATH_FIELD]
 * Build: cc -O2 -o findbyid_loop findbyid_loop.c $(pkg-config --cflags --libs libmongoc-1.0)
 */
#include <mongoc/mongoc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 256

static mongoc_client_pool_t *pool;
static const char *database, *collection, *path_field;
static char (*ids)[25];
static size_t id_count;
static double deadline;
static atomic_ullong lookups, errors, not_found;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *run(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u;
	mongoc_client_t *client = mongoc_client_pool_pop(pool);
	mongoc_collection_t *coll = mongoc_client_get_collection(client, database, collection);
	bson_t options = BSON_INITIALIZER, projection;
	BSON_APPEND_DOCUMENT_BEGIN(&options, "projection", &projection);
	BSON_APPEND_INT32(&projection, path_field, 1);
	bson_append_document_end(&options, &projection);
	BSON_APPEND_INT64(&options, "limit", 1);
	BSON_APPEND_BOOL(&options, "singleBatch", true);

	while (now_s() < deadline) {
		bson_oid_t oid;
		bson_t filter = BSON_INITIALIZER;
		const bson_t *doc;
		bson_error_t error;
		bson_oid_init_from_string(&oid, ids[rand_r(&seed) % id_count]);
		BSON_APPEND_OID(&filter, "_id", &oid);
		mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(coll, &filter, &options, NULL);
		if (mongoc_cursor_next(cursor, &doc))
			atomic_fetch_add(&lookups, 1);
		else if (mongoc_cursor_error(cursor, &error))
			atomic_fetch_add(&errors, 1);
		else
			atomic_fetch_add(&not_found, 1);
		mongoc_cursor_destroy(cursor);
		bson_destroy(&filter);
	}
	bson_destroy(&options);
	mongoc_collection_destroy(coll);
	mongoc_client_pool_push(pool, client);
	return NULL;
}

static void load_ids(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[128];
	size_t capacity = 1024;
	if (f == NULL) {
		perror(path);
		exit(2);
	}
	ids = malloc(capacity * sizeof(*ids));
	while (ids != NULL && fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\r\n")] = '\0';
		if (!bson_oid_is_valid(line, strlen(line)) || strlen(line) != 24)
			continue;
		if (id_count == capacity)
			ids = realloc(ids, (capacity *= 2) * sizeof(*ids));
		if (ids != NULL)
			memcpy(ids[id_count++], line, 25);
	}
	fclose(f);
	if (ids == NULL || id_count == 0) {
		fprintf(stderr, "findbyid_loop: no ids in %s\n", path);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	if (argc < 7) {
		fprintf(stderr,
			"usage: %s URI DATABASE COLLECTION IDS_FILE THREADS SECONDS [PATH_FIELD]\n",
			argv[0]);
		return 2;
	}
	database = argv[2];
	collection = argv[3];
	load_ids(argv[4]);
	int threads = atoi(argv[5]);
	double seconds = atof(argv[6]);
	path_field = argc > 7 ? argv[7] : "path";
	if (threads < 1 || threads > MAX_THREADS || seconds <= 0) {
		fprintf(stderr, "findbyid_loop: bad THREADS or SECONDS\n");
		return 2;
	}

	mongoc_init();
	bson_error_t error;
	mongoc_uri_t *uri = mongoc_uri_new_with_error(argv[1], &error);
	if (uri == NULL) {
		fprintf(stderr, "findbyid_loop: %s\n", error.message);
		return 2;
	}
	if (!mongoc_uri_has_option(uri, MONGOC_URI_MAXPOOLSIZE))
		mongoc_uri_set_option_as_int32(uri, MONGOC_URI_MAXPOOLSIZE, threads);
	mongoc_uri_set_option_as_bool(uri, MONGOC_URI_RETRYREADS, false);
	pool = mongoc_client_pool_new(uri);
	mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
	mongoc_uri_destroy(uri);

	pthread_t tids[MAX_THREADS];
	double start = now_s();
	deadline = start + seconds;
	for (int i = 0; i < threads; i++)
		pthread_create(&tids[i], NULL, run, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	double elapsed = now_s() - start;

	mongoc_client_pool_destroy(pool);
	mongoc_cleanup();
	unsigned long long n = atomic_load(&lookups);
	printf("result lookups=%llu errors=%llu not_found=%llu seconds=%.2f lookups_per_s=%.1f\n", n,
	       (unsigned long long)atomic_load(&errors), (unsigned long long)atomic_load(&not_found),
	       elapsed, (double)n / elapsed);
	return atomic_load(&errors) == 0 ? 0 : 1;
}
