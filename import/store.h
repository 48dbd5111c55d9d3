/*
 * store: musicd-import's side of MongoDB (libmongoc): the connection, the
 * unique index on the path field, the documents already under the given
 * directories (and, after a failed write, the documents of given paths), and
 * the deletes of --prune; the other writes are batch's. Every function
 * returns 0, or -1 with a one-line message in error.
 */
#ifndef MUSICD_IMPORT_STORE_H
#define MUSICD_IMPORT_STORE_H

#include <mongoc/mongoc.h>
#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"
#include "console.h"
#include "document.h"
#include "known.h"

/* Owns the URI, the client and the collection; released by store_close. */
struct store {
	mongoc_uri_t *uri;	  /* kept: a lookup after a failure connects afresh with it */
	mongoc_client_t *client;
	mongoc_collection_t *collection;
	char *database, *collection_name, *path_field;
	int64_t max_document_size; /* the server's maxBsonObjectSize */
};

/* Connects (and checks the server answers) with config's URI, database and collection. */
int store_open(struct store *store, const struct config *config, char *error, size_t error_size);
void store_close(struct store *store);

/* Creates the unique index on the path field unless it exists. */
int store_ensure_index(struct store *store, char *error, size_t error_size);

/*
 * Adds to known every document whose path starts with one of roots followed
 * by '/': the fields the plan compares (size, mtime, sha256, the duration's
 * type), and with listing the ones --print-urls prints (_id, artist, title).
 * The console's progress line counts them as they come.
 */
int store_load_known(struct store *store, const char *const *roots, size_t root_count,
		     bool listing, struct known *known, struct console *console, char *error,
		     size_t error_size);

/*
 * After a write whose outcome the database did not report: adds to known the
 * documents of these paths (with their _id), through a new connection, trying
 * again until the database answers or wait_ms pass.
 */
int store_look_up(struct store *store, const char *const *paths, size_t count, unsigned wait_ms,
		  struct known *known, char *error, size_t error_size);

/*
 * Deletes the documents of these paths (files that are gone), in one command;
 * *deleted is what the database says it deleted.
 */
int store_delete_paths(struct store *store, const char *const *paths, size_t count,
		       size_t *deleted, char *error, size_t error_size);

#endif
