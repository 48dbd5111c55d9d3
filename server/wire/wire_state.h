/*
 * wire_state: what the wire's own files share, and nothing outside wire/
 * includes: the server, connection and exchange structures, and the
 * functions each file offers the ones above it.
 *
 * Calls run one way, down this list (a file calls only files below it); where
 * a lower part must tell a higher one, it calls a callback it was given (the
 * server's check_drained and end_request_side, the feed's sink, the linger
 * set's and unsent's done), as the includes run:
 *
 *   server.c      accepting (EMFILE paused, not spun on), the server's life, draining
 *   connection.c  a connection's life: set-up and the connection cap, every byte scanned
 *                 (request_scan.h) and what the scan refused answered, the head
 *                 deadline (408), the lingering close
 *   exchange.c    a request and its answer on the wire: evhttp's request, the access-log
 *                 line and counters, the head and body written (whole or streamed); the
 *                 one file that uses evhttp's private structures (event2/http_struct.h)
 *   wait.c        the wait for work finishing elsewhere, watching the client meanwhile
 *                 (beside server.c: it uses the exchange, nothing uses it)
 *   exchange.c    (above)
 *   client.c      who a request's client is (its place under --max-streams-per-client is
 *                 exchange.c's: taken, given back and kept with the connection there)
 *   send.c        an answer's bytes onto the socket (writev, sendfile, a head held for a part)
 *   connection.c  (above)
 *   linger.c      lingering closes
 *   unsent.c      a written answer's client place, kept until the client has the bytes
 *   feed.c        a body moved to the output a part at a time (pacing, the disk's windows)
 *   pacing.c      the pacing allowance, pure
 */
#ifndef MUSICD_WIRE_STATE_H
#define MUSICD_WIRE_STATE_H

#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <time.h>

#include "base/clock.h"
#include "config/settings.h"
#include "http/http_date.h"
#include "http/proxy_trust.h"
#include "http/request_scan.h"
#include "wire/feed.h"
#include "wire/server_settings.h"
#include "wire/linger.h"
#include "wire/unsent.h"

/* exchange.h's callback types, written out: that header is the wire's face, this its inside. */
struct exchange;
struct exchange_settings;
typedef void (*wire_request_cb)(struct exchange *exchange, void *arg);
typedef void (*wire_wait_cb)(struct exchange *exchange, void *arg);
typedef void (*wire_side_ended_cb)(struct exchange *exchange, struct evhttp_connection *evcon);

/* Bodies evhttp reads (a GET may carry one) are read and ignored up to this. */
#define MAX_BODY_SIZE (16 * 1024)
/* Idle scans a server keeps for reuse (the rest are freed): a few heads' worth at once. */
#define SPARE_SCANS_MAX 16

/* Something worth a log line, reported at most once per interval with a count. */
struct report {
	time_t last; /* monotonic seconds of the last report; 0: never */
	unsigned count;
};

struct connection {
	struct exchange_server *server;
	struct evhttp_connection *evcon; /* NULL until set up */
	struct bufferevent *bev;
	evutil_socket_t fd;
	struct event *timer;		       /* the set-up, then the head deadline */
	int set_up;
	int timer_armed;		       /* cheaper to keep than to ask event_pending */
	int head_in_progress;		       /* from a head's first byte to its end */
	struct timespec head_started;	       /* that first byte (CLOCK_MONOTONIC) */
	struct evbuffer_cb_entry *input_watch; /* scans every byte added to the input */
	struct request_scan *scan;	       /* what those bytes are (request_scan.h); NULL
						  between requests (connection.c says why) */
	struct request_scan_limits scan_limits; /* each scan's, fixed at the set-up */
	unsigned messages_before;	       /* requests begun under scans let go since */
	uint64_t fed;			       /* bytes the scan handed on into the input */
	uint64_t message_start;		       /* where the scan's current request began (in fed) */
	unsigned scan_began;		       /* requests begun (messages_before + the scan's) then */
	int editing_input;		       /* the watch is rewriting the input: ignore it */
	unsigned handed;		       /* requests evhttp handed over */
	int refusal_answered;		       /* the scan's refusal has gone out */
	struct exchange *current;	       /* the exchange being answered, or NULL */
	struct event *reader;		       /* reads the socket for evhttp (connection.c) */
	int reader_paused;		       /* the input is full: nothing read until it drains */
	size_t input_limit;		       /* the most the input holds: a head and a body */
	int peer_closed;		       /* the client's FIN arrived while evhttp was not reading */
	int counted;			       /* holds a place under --max-connections */
	struct event *last_call;	       /* draining: the wait for a request on its way */
	struct unsent *unsent;		       /* the last answer's client place, until the
						  client has the bytes (unsent.h); NULL: none */
};

struct exchange_server {
	struct event_base *base;
	struct evhttp *http;
	struct evhttp_bound_socket *bound; /* NULL once accepting stopped */
	struct evconnlistener *listener;   /* evhttp's, for its error callback */
	const struct exchange_settings *settings;
	wire_request_cb on_request;
	void *arg;
	struct http_date_cache date;
	struct timeval keepalive_timeout, send_timeout, header_timeout;

	struct connection **by_fd; /* this server's connections by socket */
	size_t by_fd_size;
	unsigned connections;	   /* struct connections not yet freed */
	unsigned live;		   /* exchanges not yet ended */
	struct linger_set lingering; /* connections ended, closing (each counted as open) */
	int draining;
	int freeing;
	struct event *backlog_pass; /* draining: accepting what is queued, then closing */
	unsigned backlog_passes;
	void (*on_drained)(void *arg);
	void *on_drained_arg;
	/* Set by server.c, called by the parts below it (connection.c, exchange.c). */
	void (*check_drained)(struct exchange_server *server); /* draining: done when nothing is left */
	wire_side_ended_cb end_request_side; /* a connection went before its answer completed */

	struct event *accept_resume;
	struct report accept_errors, refused;

	/* Scans let go between requests, kept for the next head (connection.c). */
	struct request_scan *spare_scans[SPARE_SCANS_MAX];
	unsigned spare_scan_count;
};

struct exchange {
	struct exchange_server *server;
	struct connection *connection; /* NULL once the request side ended */
	struct evhttp_request *req;    /* NULL once evhttp freed it */
	struct settings *snapshot;     /* one reference, from the start to the release */
	struct timespec started;
	time_t started_wall;
	int status;	      /* 0 until a response is under way */
	uint64_t body_length; /* body bytes the response promised */
	int refs;
	int close_after;
	int closes;	      /* the connection ends after the response (as evhttp_send_done decides) */
	int send_timeouts;    /* the bufferevent has the send timeouts: on_complete restores them */
	char *origin_target; /* an absolute-form target's path and query; NULL: none */

	/* While waiting for work finishing elsewhere (exchange_wait). */
	struct event *deadline;
	struct event *delivery;	    /* activated by whoever does the work; made once, reused */
	wire_wait_cb on_deadline;
	wire_wait_cb on_done;
	void *wait_arg;
	int waiting;		    /* a wait is pending: its delivery holds a reference */

	/* A body streamed as it arrives (exchange_stream_start). */
	int streaming;		    /* from the head until the last byte is queued */
	uint64_t body_appended;	    /* body bytes queued so far */
	bufferevent_data_cb evhttp_write_cb; /* put back when the last byte is queued */
	struct evbuffer_cb_entry *drain_watch; /* on the output while streaming */
	struct event *drained;	    /* activated when the output fell to drain_low, or a fed
				       body has room for its next part (feed_wants_run) */
	int feed_wants_run;
	size_t drain_low;
	wire_wait_cb on_drained; /* pending exchange_stream_when_drained; holds a reference */
	void *drain_arg;

	/* The client's limits (exchange_pace, exchange_hold_client_place) and the disk's windows. */
	uint64_t pace_rate, pace_after;	    /* rate 0: the body goes at full speed */
	struct feed_gate gate;		    /* exchange_feed_windows'; gate.ready NULL: none */
	struct feed *feed;		    /* the body being fed (feed.h); NULL: none */
	struct address_count *client_place; /* held until the request side ends; NULL: none */
	char client[PROXY_TRUST_ADDRESS_MAX]; /* exchange_client's answer once worked out; "" before */
};

/* Where a fill puts the body (exchange_body_add*): one of the two. */
struct exchange_body {
	struct evbuffer *output; /* not fed: the connection's output */
	struct feed *feed;	 /* fed (paced, or through the disk's windows): the record */
	/* Not fed: the text added before the first file segment, and the file bytes added. */
	size_t text_before_file;
	uint64_t file_bytes;
	/*
	 * Not paced, the output empty: the head, kept off the output until the
	 * body is known, and a small file part kept with it, to go out directly
	 * (exchange.c, send_direct). head is NULL once both are on the output.
	 */
	const char *head;
	size_t head_length;
	struct evbuffer_file_segment *kept_segment; /* NULL: no part kept */
	int kept_fd;
	uint64_t kept_offset, kept_length;
};

/* --- shared by all: reports --- */

/* Accept errors and refused connections are reported at most this often. */
#define REPORT_INTERVAL_SECONDS 10

/* Counts one more; true when a report is due (then the caller logs report->count and it restarts). */
static inline int report_due(struct report *report)
{
	report->count++;
	time_t now = clock_now().tv_sec;
	if (report->last != 0 && now - report->last < REPORT_INTERVAL_SECONDS)
		return 0;
	report->last = now;
	return 1;
}

/* What the server's own log lines begin with ("" or "metrics: "). */
static inline const char *server_log_prefix(const struct exchange_server *server)
{
	return server->settings->log_prefix != NULL ? server->settings->log_prefix : "";
}

/* --- connection.c --- */

/* evhttp's bufferevent callback (evhttp_set_bevcb): a new connection's. */
struct bufferevent *connection_new(struct event_base *base, void *arg);

/* The connection evcon is, if it was set up. */
struct connection *connection_of(struct exchange_server *server, struct evhttp_connection *evcon);

/* A head began: its deadline runs from now. */
void connection_head_begins(struct connection *connection);

/* The socket is kept for a lingering close when evhttp frees the bufferevent. */
void connection_linger_after(struct exchange_server *server, struct bufferevent *bev);

/* Closes the connection with a lingering close. */
void connection_linger_and_close(struct connection *connection);

/* The linger set's callback: one socket less. */
void connection_on_lingered(void *arg);

/* After an answer: the scan's refusal, if due now, is answered on the next loop pass. */
void connection_schedule_refusal(struct connection *connection);

/* True between a head's first byte and its end, as the scan saw them. */
int connection_in_head(const struct connection *connection);

/* Frees the scans kept for reuse (the server is going). */
void connection_free_spare_scans(struct exchange_server *server);

/* Draining: an idle connection gets a last call, then a lingering close. */
void connection_start_last_call(struct connection *connection);

/* --- exchange.c --- */

/* evhttp's request callback (evhttp_set_gencb): a head is complete. */
void exchange_on_request(struct evhttp_request *req, void *arg);

/* The connection goes before the answer completed. */
void exchange_end_request_side(struct exchange *exchange, struct evhttp_connection *evcon);

/* Drops a reference; the last frees the exchange. */
void exchange_release(struct exchange *exchange);

/*
 * A file part a fill adds while body->head is kept off the output: 1 when
 * kept to go out directly with the head; else 0, with the head (and a part
 * kept before) now on the output, or -1 if out of memory.
 */
int exchange_body_keep_part(struct exchange_body *body, struct evbuffer_file_segment *segment,
			    int fd, uint64_t offset, uint64_t length);

/* Puts a kept head, and the part kept with it, on the output; 0, or -1 if out of memory. */
int exchange_body_queue_kept(struct exchange_body *body);

/* Stops the wait's deadline (before answering, or when the work is done): wait.c's timer. */
void exchange_stop_waiting(struct exchange *exchange);

/* --- client.c --- */

/* The client as the request names it (proxy_trust.h), worked out once and kept; evcon its connection. */
const char *client_of_connection(struct exchange *exchange, struct evhttp_connection *evcon);

/* --- send.c --- */

/*
 * The largest file part a head is held for. Measured in scripts/benchmarks/bench: held
 * for a 2-byte start it saves a segment and a third of the CPU a request
 * costs; held for a 64 KiB range, the requests ran at two thirds of the
 * rate unheld (b: 23,000/s against 34,000/s), and one segment more among
 * the ~45 of such a body is nothing to save.
 */
#define HOLD_FOR_FILE_MAX (16 * 1024)

/*
 * Writes what is queued on bev's output straight to the socket (send.c says
 * how); text_before_file: the text queued before a small file part, or 0.
 * The request may be complete (and freed) when this returns.
 */
void flush_to_socket(struct bufferevent *bev, size_t text_before_file);

/*
 * A head and one small file part kept with it (body->head, body->kept_*), sent
 * straight to fd; what the socket did not take is queued on the output. 0, or
 * -1 if out of memory queueing the rest.
 */
int send_direct(struct exchange_body *body, evutil_socket_t fd);

#endif
