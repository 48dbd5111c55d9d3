/*
 * listener: socket, options, bind, listen. TCP_NODELAY is set on the listening
 * socket because Linux copies it to every accepted socket: small responses
 * (ranges, errors, headers) must not wait for a delayed ACK.
 */
#include "wire/listener.h"

#include <errno.h>
#include <event2/util.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define LISTEN_BACKLOG 4096

static int resolve(const char *host, uint16_t port, struct sockaddr_storage *address,
		   socklen_t *length, char *error, size_t error_size)
{
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
				 .ai_socktype = SOCK_STREAM};
	struct addrinfo *found = NULL;
	char service[8];
	snprintf(service, sizeof(service), "%u", port);
	int status = getaddrinfo(host, service, &hints, &found);
	if (status != 0) {
		snprintf(error, error_size, "listen: '%s' is not an IP address: %s", host,
			 gai_strerror(status));
		return -1;
	}
	memcpy(address, found->ai_addr, found->ai_addrlen);
	*length = found->ai_addrlen;
	freeaddrinfo(found);
	return 0;
}

static int bind_socket(const char *host, uint16_t port, int reuse_port, char *error,
		       size_t error_size)
{
	struct sockaddr_storage address;
	socklen_t length;
	int one = 1;
	if (resolve(host, port, &address, &length, error, error_size) < 0)
		return -1;

	int fd = socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(error, error_size, "listen: socket: %s", strerror(errno));
		return -1;
	}
	/*
	 * "::" (also what ":PORT" means) takes IPv4 connections too, as IPv4-mapped
	 * addresses, whatever net.ipv6.bindv6only says; a specific IPv6 address cannot.
	 */
	int zero = 0;
	const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)&address;
	if (address.ss_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&v6->sin6_addr) &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) < 0) {
		snprintf(error, error_size, "listen: IPV6_V6ONLY: %s", strerror(errno));
		goto fail;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    (reuse_port && evutil_make_listen_socket_reuseable_port(fd) < 0) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0) {
		snprintf(error, error_size, "listen: socket options: %s", strerror(errno));
		goto fail;
	}
	if (bind(fd, (struct sockaddr *)&address, length) < 0) {
		snprintf(error, error_size, "listen: cannot bind %s port %u: %s", host, port,
			 errno == EADDRINUSE ? "address already in use" : strerror(errno));
		goto fail;
	}
	return fd;
fail: {
	int error_number = errno;
	close(fd);
	errno = error_number;
	return -1;
}
}

int listener_probe(const char *host, uint16_t port, char *error, size_t error_size)
{
	int fd = bind_socket(host, port, 0, error, error_size);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno != EADDRINUSE)
		return -1;
	/*
	 * Only sockets that all set SO_REUSEPORT, owned by this same user, let
	 * this bind succeed: the kernel would spread connections between them.
	 */
	char ignored[64];
	fd = bind_socket(host, port, 1, ignored, sizeof(ignored));
	if (fd < 0)
		return -1; /* the first message, naming the port in use, stands */
	close(fd);
	return 1;
}

int listener_open(const char *host, uint16_t port, char *error, size_t error_size)
{
	int fd = bind_socket(host, port, 1, error, error_size);
	if (fd < 0)
		return -1;
	if (listen(fd, LISTEN_BACKLOG) < 0) {
		snprintf(error, error_size, "listen: %s port %u: %s", host, port, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}
