/*
 * send: an answer's bytes onto the socket. The bytes are on the connection's
 * output (text by writev, file parts by sendfile); flush_to_socket writes them
 * at once instead of waiting for the loop to find the socket writable, and a
 * head with one small file part goes out straight from the head's text and
 * the file (send_direct), the output untouched. A fill adds the body through
 * exchange_body_add and exchange_body_add_segment: to the output, or to the
 * record of a fed body (feed.h).
 */
#include "wire/send.h"
#include "wire/wire_state.h"

#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>

/* Head writes (head, then each part of a multipart body) before leaving it to the loop. */
#define FLUSH_WRITES_MAX 8

/* Pieces of text sent with MSG_MORE before a small file part; more are left to writev. */
#define HELD_PIECES_MAX 8

/* Sends the first length bytes of output (text only) with MSG_MORE, as far as the socket takes. */
static void send_held_for_file(struct evbuffer *output, evutil_socket_t fd, size_t length)
{
	struct evbuffer_iovec pieces[HELD_PIECES_MAX];
	int count = evbuffer_peek(output, (ev_ssize_t)length, NULL, pieces, HELD_PIECES_MAX);
	if (count <= 0 || count > HELD_PIECES_MAX)
		return; /* more pieces than expected: the usual writev takes them */
	struct iovec vectors[HELD_PIECES_MAX];
	size_t left = length;
	for (int i = 0; i < count; i++) {
		vectors[i].iov_base = pieces[i].iov_base;
		vectors[i].iov_len = pieces[i].iov_len < left ? pieces[i].iov_len : left;
		left -= vectors[i].iov_len;
	}
	struct msghdr message = {.msg_iov = vectors, .msg_iovlen = (size_t)count};
	ssize_t sent = sendmsg(fd, &message, MSG_MORE | MSG_NOSIGNAL);
	if (sent > 0)
		evbuffer_drain(output, (size_t)sent);
	/* A failure is left to the writes that follow, which see it too. */
}

/*
 * Writes what is queued straight to the socket instead of waiting for the
 * loop to report it writable: the head by writev, file parts by sendfile, as
 * far as the socket takes them. If everything went out, the bufferevent's
 * write callback runs now, so evhttp completes the request (and reads the
 * next) in this same loop pass: one wake-up per request, as nginx. What the
 * socket did not take is left to the bufferevent, writing only. The
 * exchange's request may be complete (and freed) when this returns.
 *
 * text_before_file: the bytes of text (the head, a multipart part's header)
 * queued before a small file part (HOLD_FOR_FILE_MAX), or 0. They go out by
 * sendmsg with MSG_MORE, which has the kernel hold them for the sendfile
 * that follows at once, so a head and a body's start leave in one TCP
 * segment instead of two (what nginx gets from tcp_nopush, without its two
 * setsockopt calls): measured on cached 2-byte starts, the second segment
 * and its delivery to the client were a third of musicd's CPU per request.
 * Should the sendfile not follow (the socket full, or failing), the held
 * bytes go with the next write, or after the kernel's 200 ms, and the output
 * still holds the rest.
 */
void flush_to_socket(struct bufferevent *bev, size_t text_before_file)
{
	struct evbuffer *output = bufferevent_get_output(bev);
	evutil_socket_t fd = bufferevent_getfd(bev);

	/* bufferevent_socket_new froze its output's start; it alone drains it, except here. */
	evbuffer_unfreeze(output, 1);
	if (text_before_file > 0)
		send_held_for_file(output, fd, text_before_file);
	for (int attempt = 0; attempt < FLUSH_WRITES_MAX && evbuffer_get_length(output) > 0;
	     attempt++) {
		if (evbuffer_write(output, fd) <= 0)
			break; /* the socket is full, or failed: the bufferevent takes over */
	}
	evbuffer_freeze(output, 1);
	if (evbuffer_get_length(output) == 0)
		bufferevent_trigger(bev, EV_WRITE, 0);
	else
		bufferevent_enable(bev, EV_WRITE);
}

int exchange_body_add(struct exchange_body *body, const void *data, size_t length)
{
	if (body->feed != NULL)
		return feed_add_text(body->feed, data, length);
	if (exchange_body_queue_kept(body) < 0)
		return -1;
	if (body->file_bytes == 0)
		body->text_before_file += length;
	return evbuffer_add(body->output, data, length);
}

int exchange_body_add_segment(struct exchange_body *body, struct evbuffer_file_segment *segment,
			      int fd, uint64_t offset, uint64_t length)
{
	if (body->feed != NULL)
		return feed_add_segment(body->feed, segment, fd, offset, length);
	int kept = exchange_body_keep_part(body, segment, fd, offset, length);
	if (kept < 0) {
		evbuffer_file_segment_free(segment); /* as a failed add would */
		return -1;
	}
	body->file_bytes += length;
	if (kept)
		return 0;
	return evbuffer_add_file_segment(body->output, segment, (ev_off_t)offset, (ev_off_t)length);
}

int exchange_body_queue_kept(struct exchange_body *body)
{
	if (body->head == NULL)
		return 0;
	const char *head = body->head;
	body->head = NULL;
	if (evbuffer_add(body->output, head, body->head_length) < 0)
		return -1;
	struct evbuffer_file_segment *segment = body->kept_segment;
	body->kept_segment = NULL;
	if (segment != NULL &&
	    evbuffer_add_file_segment(body->output, segment, (ev_off_t)body->kept_offset,
				      (ev_off_t)body->kept_length) < 0)
		return -1;
	return 0;
}

int exchange_body_keep_part(struct exchange_body *body, struct evbuffer_file_segment *segment,
			    int fd, uint64_t offset, uint64_t length)
{
	if (body->head != NULL && body->kept_segment == NULL && fd >= 0 && length > 0 &&
	    length <= HOLD_FOR_FILE_MAX) {
		body->kept_segment = segment;
		body->kept_fd = fd;
		body->kept_offset = offset;
		body->kept_length = length;
		return 1;
	}
	return exchange_body_queue_kept(body) < 0 ? -1 : 0;
}

/*
 * A head and one small file part, the whole response, sent straight from
 * the head's text and the file: the head by sendmsg with MSG_MORE (as
 * send_held_for_file), then the part by sendfile, as evbuffer_write would
 * send a file segment. What the socket took never touches the output, so a
 * cached start costs no evbuffer chain (two mallocs and frees, counted on
 * warm starts) and none of the evbuffer work around it; what it did
 * not take (a full socket, an error) is queued as it would have been, head
 * first, for flush_to_socket. 0, or -1 if out of memory queueing the rest.
 */
int send_direct(struct exchange_body *body, evutil_socket_t fd)
{
	struct iovec vector = {.iov_base = (void *)body->head, .iov_len = body->head_length};
	struct msghdr message = {.msg_iov = &vector, .msg_iovlen = 1};
	ssize_t sent = sendmsg(fd, &message, MSG_MORE | MSG_NOSIGNAL);
	size_t head_sent = sent > 0 ? (size_t)sent : 0;
	if (head_sent == body->head_length) {
		off_t offset = (off_t)body->kept_offset;
		ssize_t file_sent = sendfile(fd, body->kept_fd, &offset, (size_t)body->kept_length);
		if (file_sent > 0) {
			body->kept_offset += (uint64_t)file_sent;
			body->kept_length -= (uint64_t)file_sent;
		}
	}
	body->head += head_sent;
	body->head_length -= head_sent;
	if (body->kept_length == 0)
		body->kept_segment = NULL;
	if (body->head_length == 0 && body->kept_segment == NULL) {
		body->head = NULL;
		return 0;
	}
	/* A failure is left to the writes that follow, which see it too. */
	return exchange_body_queue_kept(body);
}
