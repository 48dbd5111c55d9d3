/*
 * ttfb_probe: time to first byte of track starts, one at a time, for a benchmark.
 *
 * N times, at most one every INTERVAL_MS: picks a random line of LIST (a request path),
 * opens a new TCP connection to HOST:PORT, sends
 *   GET PATH HTTP/1.1 / Host / Range: bytes=0-1
 * and measures the time from just before connect() to the first byte of the response
 * (what a player starting a track waits for). The whole response is then read (framed by
 * Content-Length) and checked: status 206 and a body equal to EXPECT_HEX (the first two
 * bytes of the file, in hex). The client closes the connection.
 *
 * Usage: ttfb_probe HOST PORT LIST N INTERVAL_MS EXPECT_HEX [SEED [SECONDS]]
 * SECONDS: no new start after that many seconds, and a start whose time went by while the
 * previous one was waiting is skipped, not made up for (a probe of a stalling server answers
 * fewer starts, as a player would see); without it, every one of the N starts is made, late
 * ones at once.
 * Output: one line "result probes=N ok=K errors=E p50_us=... p90_us=... p99_us=...
 * max_us=... mean_us=... connect_p50_us=... seconds=... worst=US@S,..." (microseconds;
 * percentiles of the correct answers; worst: the 5 slowest starts and when they began, in
 * seconds from the first, to tell a periodic stall from noise). Exit status 0 when every
 * answer was correct, 1 otherwise, 2 on bad usage.
 *
 * Build: cc -O2 -o ttfb_probe ttfb_probe.c
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_PATHS 1000000
#define MAX_PATH_LEN 512
#define HEAD_MAX 8192
#define IO_TIMEOUT_S 10

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct sample {
	double ttfb;
	double at; /* seconds after the first start */
};

static int cmp_sample_desc(const void *a, const void *b)
{
	double x = ((const struct sample *)a)->ttfb, y = ((const struct sample *)b)->ttfb;
	return (x < y) - (x > y);
}

static double percentile(const double *sorted, size_t n, double p)
{
	if (n == 0)
		return 0;
	size_t i = (size_t)(p * (double)n);
	return sorted[i >= n ? n - 1 : i];
}

/* Reads the rest of one response after `have` bytes in buf; 1 if it is 206 with body `want`. */
static int read_and_check(int fd, char *buf, size_t have, const unsigned char *want,
			  size_t want_len)
{
	char *end;
	while ((end = memmem(buf, have, "\r\n\r\n", 4)) == NULL) {
		if (have >= HEAD_MAX - 1)
			return 0;
		ssize_t n = recv(fd, buf + have, HEAD_MAX - 1 - have, 0);
		if (n <= 0)
			return 0;
		have += (size_t)n;
	}
	size_t head_len = (size_t)(end - buf) + 4;
	buf[head_len - 1] = '\0';
	if (strncmp(buf, "HTTP/1.1 206 ", 13) != 0 && strncmp(buf, "HTTP/1.0 206 ", 13) != 0)
		return 0;
	const char *cl = strcasestr(buf, "\r\nContent-Length:");
	if (cl == NULL || strtoul(cl + 17, NULL, 10) != want_len)
		return 0;
	size_t body = have - head_len;
	while (body < want_len) {
		ssize_t n = recv(fd, buf + have, HEAD_MAX - 1 - have, 0);
		if (n <= 0)
			return 0;
		have += (size_t)n;
		body += (size_t)n;
	}
	return body == want_len && memcmp(buf + head_len, want, want_len) == 0;
}

int main(int argc, char **argv)
{
	if (argc < 7) {
		fprintf(stderr, "usage: %s HOST PORT LIST N INTERVAL_MS EXPECT_HEX [SEED [SECONDS]]\n",
			argv[0]);
		return 2;
	}
	const char *host = argv[1];
	int port = atoi(argv[2]);
	long count = atol(argv[4]);
	double interval = atof(argv[5]) / 1000.0;
	const char *hex = argv[6];
	unsigned seed = argc > 7 ? (unsigned)strtoul(argv[7], NULL, 10) : (unsigned)time(NULL);
	double seconds = argc > 8 ? atof(argv[8]) : 0;
	size_t want_len = strlen(hex) / 2;
	unsigned char want[64];
	if (count <= 0 || interval < 0 || seconds < 0 || want_len == 0 || want_len > sizeof(want) ||
	    strlen(hex) % 2)
		return fprintf(stderr, "ttfb_probe: bad arguments\n"), 2;
	for (size_t i = 0; i < want_len; i++) {
		unsigned v;
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return fprintf(stderr, "ttfb_probe: EXPECT_HEX is not hex\n"), 2;
		want[i] = (unsigned char)v;
	}

	FILE *list = fopen(argv[3], "r");
	if (list == NULL)
		return perror(argv[3]), 2;
	char **paths = calloc(MAX_PATHS, sizeof(*paths));
	size_t npaths = 0;
	char line[MAX_PATH_LEN];
	while (paths != NULL && npaths < MAX_PATHS && fgets(line, sizeof(line), list)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (line[0] != '\0')
			paths[npaths++] = strdup(line);
	}
	fclose(list);
	if (npaths == 0)
		return fprintf(stderr, "ttfb_probe: no paths in %s\n", argv[3]), 2;

	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	if (inet_pton(AF_INET, host, &addr.sin_addr) != 1)
		return fprintf(stderr, "ttfb_probe: HOST must be an IPv4 address\n"), 2;

	double *ttfb = calloc((size_t)count, sizeof(double));
	double *conn_t = calloc((size_t)count, sizeof(double));
	struct sample *samples = calloc((size_t)count, sizeof(*samples));
	if (ttfb == NULL || conn_t == NULL || samples == NULL)
		return fprintf(stderr, "ttfb_probe: out of memory\n"), 2;
	srandom(seed);
	size_t ok = 0;
	long errors = 0;
	double sum = 0, start = now_s();
	char req[MAX_PATH_LEN + 256];
	char buf[HEAD_MAX];
	struct timeval tv = {.tv_sec = IO_TIMEOUT_S};

	long made = 0;
	for (long i = 0; i < count; i++) {
		double due = start + (double)i * interval, t = now_s();
		if (seconds > 0) {
			if (t - start >= seconds)
				break;
			if (due < t && interval > 0) /* the next tick from now: missed ones are skipped */
				due = start + (double)((long)((t - start) / interval) + 1) * interval;
			if (due - start >= seconds)
				break;
		}
		made++;
		if (due > t) {
			struct timespec ts = {.tv_sec = (time_t)(due - t),
					      .tv_nsec = (long)((due - t - (double)(time_t)(due - t)) * 1e9)};
			nanosleep(&ts, NULL);
		}
		const char *path = paths[(size_t)random() % npaths];
		int len = snprintf(req, sizeof(req),
				   "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: ttfb_probe\r\n"
				   "Range: bytes=0-1\r\n\r\n", path, host, port);
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			errors++;
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		double t0 = now_s();
		int good = 0;
		if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0) {
			double t1 = now_s();
			if (send(fd, req, (size_t)len, MSG_NOSIGNAL) == len) {
				ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
				double t2 = now_s();
				if (n > 0 && read_and_check(fd, buf, (size_t)n, want, want_len)) {
					ttfb[ok] = t2 - t0;
					conn_t[ok] = t1 - t0;
					samples[ok].ttfb = t2 - t0;
					samples[ok].at = t0 - start;
					sum += t2 - t0;
					ok++;
					good = 1;
				}
			}
		}
		if (!good)
			errors++;
		close(fd);
	}
	qsort(ttfb, ok, sizeof(double), cmp_double);
	qsort(conn_t, ok, sizeof(double), cmp_double);
	qsort(samples, ok, sizeof(*samples), cmp_sample_desc);
	printf("result probes=%ld ok=%zu errors=%ld p50_us=%.0f p90_us=%.0f p99_us=%.0f "
	       "max_us=%.0f mean_us=%.0f connect_p50_us=%.0f seconds=%.1f worst=",
	       made, ok, errors, percentile(ttfb, ok, 0.50) * 1e6, percentile(ttfb, ok, 0.90) * 1e6,
	       percentile(ttfb, ok, 0.99) * 1e6, ok ? ttfb[ok - 1] * 1e6 : 0.0,
	       ok ? sum / (double)ok * 1e6 : 0.0, percentile(conn_t, ok, 0.50) * 1e6,
	       now_s() - start);
	for (size_t i = 0; i < ok && i < 5; i++)
		printf("%s%.0f@%.2f", i ? "," : "", samples[i].ttfb * 1e6, samples[i].at);
	printf("\n");
	for (size_t i = 0; i < npaths; i++)
		free(paths[i]);
	free(paths);
	free(ttfb);
	free(conn_t);
	free(samples);
	return errors == 0 ? 0 : 1;
}
