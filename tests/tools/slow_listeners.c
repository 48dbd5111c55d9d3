/*
 * slow_listeners: a benchmark client holding many slow HTTP/1.1 streams at once.
 *
 * Opens N connections to http://HOST:PORT/PATH (ramped up at a bounded rate),
 * and on each one reads the body at about RATE bytes/s (a token bucket per
 * connection, refilled every tick) through a small SO_RCVBUF, so that the
 * server is paced by the reading. Every body byte is compared with the local
 * FILE (mmapped) at its offset. After DURATION seconds it prints a summary.
 *
 * One thread, epoll, edge-triggered: a connection is read only while it has
 * tokens; "readable" is remembered between ticks, so no epoll_ctl is needed
 * after the connection is established.
 *
 * Usage: slow_listeners [-s FIRST,COUNT] [-m MIN_READ] [-M MSS]
 *                       HOST PORT PATH FILE N DURATION [RATE] [RCVBUF] [RAMP_PER_S]
 *   -s  bind the sockets to COUNT source addresses from FIRST (in 127.0.0.0/8),
 *       round-robin, with IP_BIND_ADDRESS_NO_PORT: each address has its own
 *       ephemeral ports toward HOST:PORT (one address has ~28,000 of them)
 *   -m  read a connection only once it has MIN_READ bytes of tokens (default 1):
 *       fewer, larger reads, as a player filling its buffer does (the bucket
 *       then holds MIN_READ more); RCVBUF must hold them
 *   -M  advertise this MSS (TCP_MAXSEG before connect): the server's send
 *       buffer autotuning grows with its peer's MSS, up to megabytes a socket
 *       with loopback's 64 KiB one; with thousands of slow sockets that is
 *       the machine's whole TCP memory (net.ipv4.tcp_mem)
 * Output: "ready ..." once every connection has its response head (or failed),
 * "end ..." when the duration is over (before closing), then "result key=value ...",
 * with the client's own CPU (cpu_s) and its worst tick (tick_max_ms: above
 * TICK_MS the client fell behind its schedule); "ready" and "end" also say
 * its CPU, its time waiting for a CPU (wait_s) and the body bytes verified
 * so far (bytes), for figures over the time between them. Exit status 0 when every stream is
 * correct, 1 otherwise, 2 on bad usage.
 *
 * Build: cc -O2 -o slow_listeners slow_listeners.c
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define TICK_MS 50		/* token refill and bookkeeping interval */
#define BURST_SECONDS 0.25	/* a bucket holds at most this much of the rate */
#define HEAD_MAX 2048		/* response head bytes kept per connection */
#define READ_CHUNK 65536
#define MAX_EVENTS 1024
#define CONNECT_TIMEOUT_S 10.0	/* connect + response head */
#define MAX_SOURCES 65536	/* -s: source addresses at most */
#define SLOW_FRACTION 0.9	/* a stream averaging under this share of RATE is counted slow */

enum state { ST_IDLE, ST_CONNECTING, ST_HEAD, ST_BODY, ST_DONE, ST_FAILED };

enum failure {
	F_NONE,
	F_CONNECT,	/* connect() or the handshake failed */
	F_TIMEOUT,	/* no response head within CONNECT_TIMEOUT_S */
	F_STATUS,	/* not "200" or a Content-Length other than the file's size */
	F_MISMATCH,	/* a body byte differs from the file */
	F_EOF,		/* closed before the whole body */
	F_RESET,	/* read error */
	F_COUNT
};

static const char *failure_names[F_COUNT] = {"none",	 "connect", "timeout", "status",
					     "mismatch", "eof",	    "reset"};

struct conn {
	int fd;
	enum state state;
	enum failure failure;
	int readable;		/* an edge said readable and we have not drained it */
	double tokens;
	double started;		/* when the head arrived */
	double done_at;		/* when the last body byte arrived */
	uint64_t offset;	/* body bytes received and verified */
	size_t head_len;
	char *head;		/* HEAD_MAX bytes while reading the head */
};

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static struct {
	const unsigned char *file;
	uint64_t file_size;
	struct sockaddr_in addr;
	uint32_t source_first;	/* -s: host order; 0 when the kernel picks the source */
	unsigned source_count, source_next;
	int mss;		/* -M: 0 when the kernel's */
	double read_min;	/* -m */
	char request[1024];
	size_t request_len;
	double rate, burst;
	int rcvbuf;
	int epoll_fd;
	uint64_t bytes_verified;
	unsigned established, heads_ok;
	unsigned failures[F_COUNT];
	int connect_errno;	/* the last connect failure's errno, for the summary */
} g;

static void fail(struct conn *c, enum failure why)
{
	c->state = ST_FAILED;
	c->failure = why;
	g.failures[why]++;
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
	free(c->head);
	c->head = NULL;
}

static void connect_failed(struct conn *c)
{
	g.connect_errno = errno;
	fail(c, F_CONNECT);
}

/* Binds to the next source address; the port is left to connect() (IP_BIND_ADDRESS_NO_PORT),
 * which picks it per destination, so every address has all of its ephemeral ports. */
static int bind_source(int fd)
{
	int one = 1;
	struct sockaddr_in source = {.sin_family = AF_INET};
	source.sin_addr.s_addr = htonl(g.source_first + g.source_next);
	g.source_next = (g.source_next + 1) % g.source_count;
	if (setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one)) < 0)
		return -1;
	return bind(fd, (struct sockaddr *)&source, sizeof(source));
}

static void start_connect(struct conn *c)
{
	c->state = ST_CONNECTING;
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		connect_failed(c);
		return;
	}
	setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &g.rcvbuf, sizeof(g.rcvbuf));
	if ((g.mss > 0 && setsockopt(c->fd, IPPROTO_TCP, TCP_MAXSEG, &g.mss, sizeof(g.mss)) < 0) ||
	    (g.source_count > 0 && bind_source(c->fd) < 0)) {
		connect_failed(c);
		return;
	}
	if (connect(c->fd, (struct sockaddr *)&g.addr, sizeof(g.addr)) < 0 &&
	    errno != EINPROGRESS) {
		connect_failed(c);
		return;
	}
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
				 .data.ptr = c};
	if (epoll_ctl(g.epoll_fd, EPOLL_CTL_ADD, c->fd, &ev) < 0)
		die("epoll_ctl");
}

/* Compares body bytes with the file at the connection's offset. */
static int verify(struct conn *c, const char *data, size_t len)
{
	if (c->offset + len > g.file_size ||
	    memcmp(data, g.file + c->offset, len) != 0) {
		fail(c, F_MISMATCH);
		return -1;
	}
	c->offset += len;
	g.bytes_verified += len;
	if (c->offset == g.file_size) {
		c->state = ST_DONE;
		c->done_at = now_s();
		close(c->fd);
		c->fd = -1;
	}
	return 0;
}

/* Parses the head once complete; the body bytes that came with it are verified. */
static void on_head_bytes(struct conn *c, double now)
{
	c->head[c->head_len] = '\0';
	char *end = strstr(c->head, "\r\n\r\n");
	if (end == NULL) {
		if (c->head_len >= HEAD_MAX - 1)
			fail(c, F_STATUS);
		return;
	}
	size_t head_size = (size_t)(end - c->head) + 4;
	unsigned long long length = 0;
	const char *cl = strcasestr(c->head, "\r\ncontent-length:");
	if (strncmp(c->head, "HTTP/1.1 200 ", 13) != 0 || cl == NULL || cl > end ||
	    sscanf(cl + 17, " %llu", &length) != 1 || length != g.file_size) {
		fail(c, F_STATUS);
		return;
	}
	g.heads_ok++;
	c->state = ST_BODY;
	c->started = now;
	size_t extra = c->head_len - head_size;
	char rest[HEAD_MAX];
	memcpy(rest, c->head + head_size, extra);
	free(c->head);
	c->head = NULL;
	if (extra > 0) {
		c->tokens -= (double)extra;
		verify(c, rest, extra);
	}
}

static void read_head(struct conn *c, double now)
{
	for (;;) {
		ssize_t n = recv(c->fd, c->head + c->head_len, HEAD_MAX - 1 - c->head_len, 0);
		if (n > 0) {
			c->head_len += (size_t)n;
			on_head_bytes(c, now);
			if (c->state != ST_HEAD)
				return;
			continue;
		}
		if (n == 0)
			fail(c, F_EOF);
		else if (errno != EAGAIN && errno != EWOULDBLOCK)
			fail(c, F_RESET);
		return;
	}
}

/* Reads while tokens last (from MIN_READ of them on); clears readable once the socket is
 * drained. */
static void read_body(struct conn *c)
{
	static char buf[READ_CHUNK];
	if (c->tokens < g.read_min)
		return;
	while (c->state == ST_BODY && c->readable && c->tokens >= 1.0) {
		size_t want = c->tokens < READ_CHUNK ? (size_t)c->tokens : READ_CHUNK;
		ssize_t n = recv(c->fd, buf, want, 0);
		if (n > 0) {
			c->tokens -= (double)n;
			if (verify(c, buf, (size_t)n) < 0)
				return;
			if ((size_t)n < want)
				c->readable = 0; /* drained: wait for the next edge */
			continue;
		}
		if (n == 0)
			fail(c, F_EOF);
		else if (errno == EAGAIN || errno == EWOULDBLOCK)
			c->readable = 0;
		else
			fail(c, F_RESET);
		return;
	}
}

static void on_event(struct conn *c, uint32_t events, double now)
{
	if (c->state == ST_CONNECTING) {
		int err = 0;
		socklen_t len = sizeof(err);
		if ((events & (EPOLLERR | EPOLLHUP)) ||
		    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err != 0) {
			errno = err;
			connect_failed(c);
			return;
		}
		if (!(events & EPOLLOUT))
			return;
		g.established++;
		if (send(c->fd, g.request, g.request_len, MSG_NOSIGNAL) != (ssize_t)g.request_len) {
			fail(c, F_RESET);
			return;
		}
		c->state = ST_HEAD;
		c->head = malloc(HEAD_MAX);
		if (c->head == NULL)
			die("malloc");
		c->head_len = 0;
	}
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		c->readable = 1;
	if (c->state == ST_HEAD && c->readable)
		read_head(c, now);
	if (c->state == ST_BODY)
		read_body(c);
}

static void raise_fd_limit(unsigned needed)
{
	struct rlimit lim;
	if (getrlimit(RLIMIT_NOFILE, &lim) < 0)
		die("getrlimit");
	if (lim.rlim_cur < lim.rlim_max) {
		lim.rlim_cur = lim.rlim_max;
		setrlimit(RLIMIT_NOFILE, &lim);
	}
	if (lim.rlim_cur < needed + 16) {
		fprintf(stderr, "slow_listeners: %u connections need %u descriptors, the limit is %llu\n",
			needed, needed + 16, (unsigned long long)lim.rlim_cur);
		exit(2);
	}
}

#define USAGE                                                                              \
	"usage: %s [-s FIRST,COUNT] [-m MIN_READ] [-M MSS] HOST PORT PATH FILE N DURATION "   \
	"[RATE] [RCVBUF] [RAMP_PER_S]\n"

/* -s FIRST,COUNT: COUNT addresses from FIRST, all inside 127.0.0.0/8; -1 if not. */
static int parse_sources(const char *text)
{
	char first[INET_ADDRSTRLEN];
	const char *comma = strchr(text, ',');
	struct in_addr addr;
	if (comma == NULL || (size_t)(comma - text) >= sizeof(first))
		return -1;
	memcpy(first, text, (size_t)(comma - text));
	first[comma - text] = '\0';
	char *end;
	unsigned long count = strtoul(comma + 1, &end, 10);
	if (inet_pton(AF_INET, first, &addr) != 1 || *end != '\0' || count == 0 ||
	    count > MAX_SOURCES)
		return -1;
	uint32_t from = ntohl(addr.s_addr);
	if ((from >> 24) != 127 || ((from + (uint32_t)count - 1) >> 24) != 127)
		return -1;
	g.source_first = from;
	g.source_count = (unsigned)count;
	return 0;
}

/* Seconds this process was runnable but waiting for a CPU (/proc/self/schedstat; -1 without it):
 * on a busy machine, what a late tick was waiting for. */
static double wait_seconds(void)
{
	unsigned long long on_cpu, waiting;
	FILE *f = fopen("/proc/self/schedstat", "r");
	if (f == NULL)
		return -1;
	int n = fscanf(f, "%llu %llu", &on_cpu, &waiting);
	fclose(f);
	return n == 2 ? (double)waiting / 1e9 : -1;
}

static double cpu_seconds(void)
{
	struct rusage usage;
	if (getrusage(RUSAGE_SELF, &usage) < 0)
		return -1;
	return (double)usage.ru_utime.tv_sec + (double)usage.ru_utime.tv_usec / 1e6 +
	       (double)usage.ru_stime.tv_sec + (double)usage.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	g.read_min = 1.0;
	for (int opt; (opt = getopt(argc, argv, "+s:m:M:")) != -1;) {
		if (opt == 's' && parse_sources(optarg) == 0)
			continue;
		if (opt == 'm' && (g.read_min = atof(optarg)) >= 1.0 && g.read_min <= READ_CHUNK)
			continue;
		if (opt == 'M' && (g.mss = atoi(optarg)) > 0)
			continue;
		fprintf(stderr, USAGE, argv[0]);
		return 2;
	}
	argc -= optind - 1;
	argv += optind - 1;
	if (argc < 7) {
		fprintf(stderr, USAGE, argv[0]);
		return 2;
	}
	const char *host = argv[1], *path = argv[3];
	int port = atoi(argv[2]);
	unsigned count = (unsigned)strtoul(argv[5], NULL, 10);
	double duration = atof(argv[6]);
	g.rate = argc > 7 ? atof(argv[7]) : 16000.0;
	g.rcvbuf = argc > 8 ? atoi(argv[8]) : 4096;
	double ramp = argc > 9 ? atof(argv[9]) : 2000.0;
	g.burst = g.rate * BURST_SECONDS + (g.read_min > 1.0 ? g.read_min : 0.0);
	if (count == 0 || duration <= 0 || g.rate <= 0 || ramp <= 0)
		return fprintf(stderr, "slow_listeners: bad arguments\n"), 2;

	int file_fd = open(argv[4], O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (file_fd < 0 || fstat(file_fd, &st) < 0)
		die(argv[4]);
	g.file_size = (uint64_t)st.st_size;
	g.file = mmap(NULL, g.file_size, PROT_READ, MAP_PRIVATE, file_fd, 0);
	if (g.file == MAP_FAILED)
		die("mmap");

	g.addr.sin_family = AF_INET;
	g.addr.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &g.addr.sin_addr) != 1)
		return fprintf(stderr, "slow_listeners: HOST must be an IPv4 address\n"), 2;
	g.request_len = (size_t)snprintf(g.request, sizeof(g.request),
					 "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: slow_listeners\r\n\r\n",
					 path, host, port);
	raise_fd_limit(count);

	struct conn *conns = calloc(count, sizeof(*conns));
	if (conns == NULL)
		die("calloc");
	for (unsigned i = 0; i < count; i++)
		conns[i].fd = -1;
	g.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (g.epoll_fd < 0)
		die("epoll_create1");

	double start = now_s(), last_tick = start, end = start + duration;
	double ready_at = 0, tick_max = 0;
	unsigned opened = 0;
	struct epoll_event events[MAX_EVENTS];

	for (;;) {
		double now = now_s();
		if (now >= end)
			break;
		/* Ramp: open connections at `ramp` per second. */
		unsigned due = (unsigned)((now - start) * ramp) + 1;
		while (opened < count && opened < due)
			start_connect(&conns[opened++]);

		int timeout = (int)((last_tick + TICK_MS / 1000.0 - now) * 1000.0) + 1;
		if (timeout < 0)
			timeout = 0;
		int n = epoll_wait(g.epoll_fd, events, MAX_EVENTS, timeout);
		if (n < 0 && errno != EINTR)
			die("epoll_wait");
		now = now_s();
		for (int i = 0; i < n; i++)
			on_event(events[i].data.ptr, events[i].events, now);

		if (now - last_tick >= TICK_MS / 1000.0) {
			double dt = now - last_tick;
			last_tick = now;
			if (dt > tick_max)
				tick_max = dt;
			for (unsigned i = 0; i < opened; i++) {
				struct conn *c = &conns[i];
				if ((c->state == ST_CONNECTING || c->state == ST_HEAD) &&
				    now - start > (double)i / ramp + CONNECT_TIMEOUT_S) {
					fail(c, F_TIMEOUT);
					continue;
				}
				if (c->state != ST_BODY)
					continue;
				c->tokens += g.rate * dt;
				if (c->tokens > g.burst)
					c->tokens = g.burst;
				read_body(c);
			}
			if (ready_at == 0 && opened == count) {
				unsigned pending = 0;
				for (unsigned i = 0; i < count; i++)
					pending += conns[i].state == ST_CONNECTING ||
						   conns[i].state == ST_HEAD;
				if (pending == 0) {
					ready_at = now;
					printf("ready connections=%u heads_ok=%u after_s=%.2f cpu_s=%.2f "
					       "wait_s=%.2f bytes=%llu\n",
					       count, g.heads_ok, now - start, cpu_seconds(),
					       wait_seconds(), (unsigned long long)g.bytes_verified);
					fflush(stdout);
				}
			}
		}
	}

	double finished = now_s();
	double cpu_at_end = cpu_seconds();
	/* before the connections close */
	printf("end after_s=%.2f cpu_s=%.2f wait_s=%.2f bytes=%llu\n", finished - start,
	       cpu_at_end, wait_seconds(), (unsigned long long)g.bytes_verified);
	fflush(stdout);
	unsigned correct = 0, open_streams = 0, slow = 0;
	double min_rate = 1e18, sum_rate = 0;
	for (unsigned i = 0; i < count; i++) {
		struct conn *c = &conns[i];
		if (c->state == ST_BODY || c->state == ST_DONE) {
			correct++;
			double secs = (c->state == ST_DONE ? c->done_at : finished) - c->started;
			double r = secs > 0 ? (double)c->offset / secs : 0;
			if (r < min_rate)
				min_rate = r;
			sum_rate += r;
			slow += secs >= 2.0 && r < SLOW_FRACTION * g.rate;
		}
		if (c->state == ST_BODY)
			open_streams++;
		if (c->fd >= 0)
			close(c->fd);
		free(c->head);
	}
	unsigned errors = 0;
	for (int f = F_CONNECT; f < F_COUNT; f++)
		errors += g.failures[f];
	printf("result connections=%u established=%u heads_ok=%u streams_correct=%u open_at_end=%u "
	       "errors=%u bytes_verified=%llu seconds=%.1f ready_s=%.2f "
	       "rate_avg=%.0f rate_min=%.0f slow=%u cpu_s=%.2f tick_max_ms=%.0f connect_errno=%s",
	       count, g.established, g.heads_ok, correct, open_streams, errors,
	       (unsigned long long)g.bytes_verified, finished - start,
	       ready_at > 0 ? ready_at - start : -1.0, correct ? sum_rate / correct : 0.0,
	       correct ? min_rate : 0.0, slow, cpu_at_end, tick_max * 1000.0,
	       g.connect_errno ? strerrorname_np(g.connect_errno) : "none");
	for (int f = F_CONNECT; f < F_COUNT; f++)
		printf(" %s=%u", failure_names[f], g.failures[f]);
	printf("\n");
	free(conns);
	return correct == count && errors == 0 ? 0 : 1;
}
