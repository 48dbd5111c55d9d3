/*
 * metrics_listener: an evhttp of its own on its own event_base and thread.
 * GET /metrics (with any query string, which Prometheus may add) answers the
 * text of a fresh snapshot; any other path 404, any other method 405 with
 * "Allow: GET". evhttp sends whatever body it is handed, HEAD or not
 * (libevent 2.1.12's evhttp_make_header), so a HEAD gets none. As for the
 * main listener, an accept error (EMFILE) pauses accepting briefly instead
 * of letting the level-triggered socket spin the loop.
 */
#include "ops/metrics_listener.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "wire/listener.h"
#include "base/log.h"
#include "base/metrics_process.h"

#define METRICS_PATH "/metrics"
/* Scrapes are small GETs; a client idle longer than this is dropped. */
#define METRICS_TIMEOUT_SECONDS 30
#define METRICS_MAX_HEADER_SIZE 8192
#define METRICS_MAX_BODY_SIZE 1024
#define METRICS_TEXT_INITIAL (16 * 1024)
/* At EMFILE and other accept errors: stop accepting this long (and say so at most this often). */
#define ACCEPT_PAUSE_MS 100
#define REPORT_INTERVAL_SECONDS 10

struct metrics_listener {
	struct metrics_sources sources;
	struct event_base *base;
	struct evhttp *http;
	pthread_t thread;
	int thread_running;

	/* The listener's thread only: reused by every scrape. */
	struct metrics_snapshot *snapshot;
	char *text;
	size_t text_size;
};

static void reply_text(struct evhttp_request *req, int status, const char *reason,
		       const char *content_type, const char *body, size_t length)
{
	struct evkeyvalq *headers = evhttp_request_get_output_headers(req);
	evhttp_add_header(headers, "Content-Type", content_type);
	struct evbuffer *buffer = NULL;
	if (evhttp_request_get_command(req) != EVHTTP_REQ_HEAD) {
		buffer = evbuffer_new();
		if (buffer == NULL || evbuffer_add(buffer, body, length) < 0) {
			/* No body then: say so rather than send an empty 200. */
			if (buffer != NULL)
				evbuffer_free(buffer);
			buffer = NULL;
			status = 500;
			reason = "Internal Server Error";
		}
	}
	evhttp_send_reply(req, status, reason, buffer);
	if (buffer != NULL)
		evbuffer_free(buffer);
}

static void reply_error(struct evhttp_request *req, int status, const char *reason)
{
	char body[64];
	int length = snprintf(body, sizeof(body), "%d %s\n", status, reason);
	reply_text(req, status, reason, "text/plain; charset=utf-8", body, (size_t)length);
}

/* The snapshot's text in listener->text; its length, or 0 if out of memory. */
static size_t format_snapshot(struct metrics_listener *listener)
{
	const struct metrics_sources *sources = &listener->sources;
	struct metrics_snapshot *snapshot = listener->snapshot;
	metrics_collect(sources->metrics, snapshot);
	struct cache_stats lookups = lookup_cache_stats(sources->lookup_cache);
	struct cache_stats files = file_cache_stats(sources->file_cache);
	snapshot->lookup_cache = (struct metrics_cache_snapshot){
		lookups.hits, lookups.misses, lookups.evictions, lookups.entries};
	snapshot->file_cache =
		(struct metrics_cache_snapshot){files.hits, files.misses, files.evictions, files.entries};
	snapshot->connections_open = atomic_load(sources->open_connections);
	snapshot->version = sources->version;
	snapshot->have_process = metrics_process_read(&snapshot->process) == 0;

	for (;;) {
		size_t length = metrics_text_format(snapshot, listener->text, listener->text_size);
		if (length < listener->text_size)
			return length;
		char *grown = realloc(listener->text, length + 1);
		if (grown == NULL)
			return 0;
		listener->text = grown;
		listener->text_size = length + 1;
	}
}

static void on_request(struct evhttp_request *req, void *arg)
{
	struct metrics_listener *listener = arg;
	const char *target = evhttp_request_get_uri(req);
	size_t path_length = strcspn(target, "?");
	if (path_length != strlen(METRICS_PATH) || strncmp(target, METRICS_PATH, path_length) != 0) {
		reply_error(req, 404, "Not Found");
		return;
	}
	if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET");
		reply_error(req, 405, "Method Not Allowed");
		return;
	}
	size_t length = format_snapshot(listener);
	if (length == 0) {
		log_error("metrics: out of memory formatting a scrape");
		reply_error(req, 500, "Internal Server Error");
		return;
	}
	reply_text(req, 200, "OK", METRICS_TEXT_CONTENT_TYPE, listener->text, length);
}

static void on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	evconnlistener_enable(arg);
}

/* The listener's thread only. */
static void on_accept_error(struct evconnlistener *accepting, void *unused)
{
	static time_t last_report;
	int error_number = errno;
	(void)unused;
	evconnlistener_disable(accepting);
	time_t now = time(NULL);
	if (now - last_report >= REPORT_INTERVAL_SECONDS) {
		last_report = now;
		log_error("metrics: cannot accept connections: %s; pausing accepts for %d ms",
			  strerror(error_number), ACCEPT_PAUSE_MS);
	}
	struct timeval pause = {.tv_sec = 0, .tv_usec = ACCEPT_PAUSE_MS * 1000};
	/* Freed with the base if the loop stops first. */
	event_base_once(evconnlistener_get_base(accepting), -1, EV_TIMEOUT, on_accept_resume,
			accepting, &pause);
}

static void *listener_thread(void *arg)
{
	struct metrics_listener *listener = arg;
	event_base_dispatch(listener->base);
	return NULL;
}

struct metrics_listener *metrics_listener_start(const char *host, uint16_t port,
						const struct metrics_sources *sources, char *error,
						size_t error_size)
{
	char reason[256];
	int fd = -1;
	struct metrics_listener *listener = calloc(1, sizeof(*listener));
	if (listener == NULL || (listener->snapshot = calloc(1, sizeof(*listener->snapshot))) == NULL ||
	    (listener->text = malloc(METRICS_TEXT_INITIAL)) == NULL ||
	    (listener->base = event_base_new()) == NULL ||
	    (listener->http = evhttp_new(listener->base)) == NULL) {
		snprintf(error, error_size, "metrics-listen: out of memory");
		goto fail;
	}
	listener->sources = *sources;
	listener->text_size = METRICS_TEXT_INITIAL;
	int shared = listener_probe(host, port, reason, sizeof(reason));
	if (shared < 0 || (fd = listener_open(host, port, reason, sizeof(reason))) < 0) {
		snprintf(error, error_size, "metrics-%s", reason);
		goto fail;
	}
	if (shared) /* a musicd being replaced: scrapes reach either until it stops */
		log_warn("metrics port %s:%u is already served with SO_REUSEPORT by another process "
			 "of this user: the two share it until that one stops",
			 host, port);
	evhttp_set_gencb(listener->http, on_request, listener);
	/* Every method reaches on_request, so that the others get 405 rather than evhttp's 501. */
	evhttp_set_allowed_methods(listener->http,
				   EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST |
					   EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
					   EVHTTP_REQ_TRACE | EVHTTP_REQ_PATCH | EVHTTP_REQ_CONNECT);
	evhttp_set_default_content_type(listener->http, NULL);
	evhttp_set_timeout(listener->http, METRICS_TIMEOUT_SECONDS);
	evhttp_set_max_headers_size(listener->http, METRICS_MAX_HEADER_SIZE);
	evhttp_set_max_body_size(listener->http, METRICS_MAX_BODY_SIZE);
	struct evhttp_bound_socket *bound = evhttp_accept_socket_with_handle(listener->http, fd);
	if (bound == NULL) {
		snprintf(error, error_size, "metrics-listen: cannot accept on %s port %u", host, port);
		goto fail;
	}
	fd = -1; /* evhttp_free closes it */
	/* evhttp_bind_listener sets only the accept callback. */
	evconnlistener_set_error_cb(evhttp_bound_socket_get_listener(bound), on_accept_error);
	listener->snapshot->process.start_time_seconds = metrics_process_start_time();
	if (pthread_create(&listener->thread, NULL, listener_thread, listener) != 0) {
		snprintf(error, error_size, "metrics-listen: cannot start its thread");
		goto fail;
	}
	listener->thread_running = 1;
	return listener;

fail:
	if (fd >= 0)
		close(fd);
	metrics_listener_stop(listener);
	return NULL;
}

void metrics_listener_stop(struct metrics_listener *listener)
{
	if (listener == NULL)
		return;
	if (listener->thread_running) {
		/*
		 * An event the loop runs (event_base_once), so it is not lost if the
		 * loop has not started yet, as event_base_loopbreak's flag would be.
		 */
		event_base_loopexit(listener->base, NULL);
		pthread_join(listener->thread, NULL);
	}
	if (listener->http != NULL)
		evhttp_free(listener->http); /* closes the socket and every connection */
	if (listener->base != NULL)
		event_base_free(listener->base);
	free(listener->text);
	free(listener->snapshot);
	free(listener);
}
