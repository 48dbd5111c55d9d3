/*
 * exchange: request lifecycle around evhttp. evhttp tells us a request ended
 * in one of two ways: on_complete (every byte written) or the connection's
 * close callback (client gone, write error, timeout, shutdown). Exactly one of
 * them ends the request side; both write the access-log line.
 */
#include "exchange.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http_struct.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "log.h"
#include "worker.h"

/* nginx's status for a client that closed the connection before the response. */
#define STATUS_CLIENT_CLOSED 499

const char *exchange_method(const struct exchange *exchange)
{
	switch (evhttp_request_get_command(exchange->req)) {
	case EVHTTP_REQ_GET:
		return "GET";
	case EVHTTP_REQ_HEAD:
		return "HEAD";
	case EVHTTP_REQ_POST:
		return "POST";
	case EVHTTP_REQ_PUT:
		return "PUT";
	case EVHTTP_REQ_DELETE:
		return "DELETE";
	case EVHTTP_REQ_OPTIONS:
		return "OPTIONS";
	case EVHTTP_REQ_TRACE:
		return "TRACE";
	case EVHTTP_REQ_CONNECT:
		return "CONNECT";
	case EVHTTP_REQ_PATCH:
		return "PATCH";
	}
	return "-";
}

static double seconds_since(const struct timespec *start)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

static void log_access(struct exchange *exchange, int status, uint64_t body_bytes)
{
	struct access_log *log = exchange->worker->service->access_log;
	struct evhttp_request *req = exchange->req;
	if (log == NULL || req == NULL)
		return;
	struct evkeyvalq *headers = evhttp_request_get_input_headers(req);
	const struct service *service = exchange->worker->service;
	char *peer_address = NULL;
	ev_uint16_t peer_port = 0;
	char forwarded_client[PROXY_TRUST_ADDRESS_MAX];
	evhttp_connection_get_peer(exchange->connection, &peer_address, &peer_port);

	struct access_entry entry = {
		.client = proxy_trust_client(service->trusted_proxies, service->trusted_proxy_count,
					     peer_address, evhttp_find_header(headers, "X-Forwarded-For"),
					     forwarded_client, sizeof(forwarded_client)),
		.time = exchange->started_wall,
		.method = exchange_method(exchange),
		.target = evhttp_request_get_uri(req),
		.http_major = req->major,
		.http_minor = req->minor,
		.status = status,
		.body_bytes = body_bytes,
		.referer = evhttp_find_header(headers, "Referer"),
		.user_agent = evhttp_find_header(headers, "User-Agent"),
		.seconds = seconds_since(&exchange->started),
	};
	access_log_write(log, &entry);
}

/* Stops watching (before responding, or when the awaited work is done). */
static void stop_waiting(struct exchange *exchange)
{
	if (exchange->client_gone != NULL) {
		event_free(exchange->client_gone);
		exchange->client_gone = NULL;
	}
	if (exchange->deadline != NULL) {
		event_free(exchange->deadline);
		exchange->deadline = NULL;
	}
}

static struct bufferevent *connection_bufferevent(struct exchange *exchange)
{
	return evhttp_connection_get_bufferevent(exchange->connection);
}

/* Every byte was written: evhttp is about to reuse or close the connection. */
static void on_complete(struct evhttp_request *req, void *arg)
{
	struct exchange *exchange = arg;
	(void)req;
	log_access(exchange, exchange->status, exchange->body_length);
	struct bufferevent *bev = connection_bufferevent(exchange);
	bufferevent_set_timeouts(bev, &exchange->worker->idle_timeout,
				 &exchange->worker->idle_timeout);
	/* evhttp then reads end-of-file and frees the connection. */
	if (exchange->close_after)
		shutdown(bufferevent_getfd(bev), SHUT_RDWR);
	evhttp_connection_set_closecb(exchange->connection, NULL, NULL);
	stop_waiting(exchange);
	exchange->req = NULL;
	exchange->connection = NULL;
	exchange_release(exchange);
}

/* The connection is being freed before the response completed. */
static void on_connection_close(struct evhttp_connection *connection, void *arg)
{
	struct exchange *exchange = arg;
	int status = exchange->status ? exchange->status : STATUS_CLIENT_CLOSED;
	uint64_t sent = 0;
	if (exchange->status != 0) {
		size_t unsent = evbuffer_get_length(bufferevent_get_output(
			evhttp_connection_get_bufferevent(connection)));
		sent = exchange->body_length > unsent ? exchange->body_length - unsent : 0;
	}
	log_access(exchange, status, sent);
	stop_waiting(exchange);

	/* evhttp detaches a request it has not seen answered; then it is ours to free. */
	if (exchange->req != NULL && evhttp_request_get_connection(exchange->req) == NULL)
		evhttp_request_free(exchange->req);
	exchange->req = NULL;
	exchange->connection = NULL;
	exchange_release(exchange);
}

struct exchange *exchange_begin(struct worker *worker, struct evhttp_request *req)
{
	struct exchange *exchange = calloc(1, sizeof(*exchange));
	if (exchange == NULL)
		return NULL;
	exchange->worker = worker;
	exchange->req = req;
	exchange->connection = evhttp_request_get_connection(req);
	clock_gettime(CLOCK_MONOTONIC, &exchange->started);
	exchange->started_wall = time(NULL);
	/* One for the request side (ended by evhttp), one for the caller. */
	exchange->refs = 2;
	evhttp_request_set_on_complete_cb(req, on_complete, exchange);
	evhttp_connection_set_closecb(exchange->connection, on_connection_close, exchange);
	worker_exchange_started(worker);
	return exchange;
}

/* True while a response may still be sent: the client is there and nothing was sent yet. */
static int can_respond(const struct exchange *exchange)
{
	return exchange->req != NULL && exchange->status == 0;
}

int exchange_is_head(const struct exchange *exchange)
{
	return exchange->req != NULL && evhttp_request_get_command(exchange->req) == EVHTTP_REQ_HEAD;
}

static void on_client_gone(evutil_socket_t fd, short what, void *arg)
{
	struct exchange *exchange = arg;
	(void)fd;
	(void)what;
	stop_waiting(exchange);
	if (exchange->connection != NULL) {
		log_debug("client left while its request was pending; closing the connection");
		/* Runs on_connection_close, which drops the request side. */
		evhttp_connection_free(exchange->connection);
	}
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct exchange *exchange = arg;
	(void)fd;
	(void)what;
	stop_waiting(exchange);
	if (can_respond(exchange) && exchange->on_deadline != NULL)
		exchange->on_deadline(exchange);
}

/*
 * Waits for something that will respond later: watches for the client
 * leaving (then the connection is closed and the request dropped) and calls
 * on_deadline_cb after timeout_ms if no response was started. Takes a
 * reference for the pending work. Returns -1 on failure.
 */
static int wait_for_answer(struct exchange *exchange, unsigned timeout_ms,
			   void (*on_deadline_cb)(struct exchange *exchange))
{
	struct event_base *base = exchange->worker->base;
	evutil_socket_t fd = bufferevent_getfd(connection_bufferevent(exchange));
	struct timeval timeout = {.tv_sec = timeout_ms / 1000,
				  .tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000};

	exchange->on_deadline = on_deadline_cb;
	exchange->client_gone = event_new(base, fd, EV_CLOSED, on_client_gone, exchange);
	exchange->deadline = evtimer_new(base, on_deadline, exchange);
	if (exchange->client_gone == NULL || exchange->deadline == NULL ||
	    event_add(exchange->client_gone, NULL) < 0 ||
	    evtimer_add(exchange->deadline, &timeout) < 0) {
		stop_waiting(exchange);
		return -1;
	}
	exchange->refs++; /* for the pending work */
	return 0;
}

#define exchange_of_job(job_pointer)                                                              \
	((struct exchange *)((char *)(job_pointer) - offsetof(struct exchange, job)))

/* On the worker's loop: the lookup thread handed the job back. */
static void on_lookup_done(struct lookup_job *job)
{
	struct exchange *exchange = exchange_of_job(job);
	if (can_respond(exchange)) {
		stop_waiting(exchange);
		exchange->on_lookup_result(exchange);
	}
	exchange_release(exchange);
}

int exchange_lookup(struct exchange *exchange, enum lookup_kind kind, const char *mid,
		    void (*on_result)(struct exchange *exchange),
		    void (*on_deadline_cb)(struct exchange *exchange))
{
	const struct service *service = exchange->worker->service;
	unsigned timeout_ms = service->config->lookup_timeout_ms;
	struct lookup_job *job = &exchange->job;
	job->kind = kind;
	snprintf(job->mid, sizeof(job->mid), "%s", mid);
	job->deadline = lookup_deadline_after(timeout_ms);
	job->reply_base = exchange->worker->base;
	job->on_done = on_lookup_done;
	exchange->on_lookup_result = on_result;

	if (wait_for_answer(exchange, timeout_ms, on_deadline_cb) < 0)
		return -1;
	if (lookup_submit(service->lookups, job) < 0) {
		stop_waiting(exchange);
		exchange_release(exchange); /* the reference wait_for_answer took for the lookup */
		return -1;
	}
	return 0;
}

void exchange_close_after_response(struct exchange *exchange)
{
	exchange->close_after = 1;
	evhttp_add_header(evhttp_request_get_output_headers(exchange->req), "Connection", "close");
}

void exchange_responding(struct exchange *exchange, int status, uint64_t body_length)
{
	exchange->status = status;
	exchange->body_length = body_length;
}

void exchange_body_started(struct exchange *exchange)
{
	bufferevent_set_timeouts(connection_bufferevent(exchange), NULL,
				 &exchange->worker->send_timeout);
}

void exchange_release(struct exchange *exchange)
{
	if (--exchange->refs > 0)
		return;
	stop_waiting(exchange);
	free(exchange->job.path);
	struct worker *worker = exchange->worker;
	free(exchange);
	worker_exchange_ended(worker);
}
