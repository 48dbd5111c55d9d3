/*
 * listener: the listening sockets. Each worker gets its own SO_REUSEPORT
 * socket on the same address so the kernel spreads connections across
 * workers without a shared accept lock.
 */
#ifndef MUSICD_LISTENER_H
#define MUSICD_LISTENER_H

#include <stddef.h>
#include <stdint.h>

/*
 * Fails with a message if anyone (another musicd included) already listens on
 * host:port; SO_REUSEPORT would otherwise let a second instance share it silently.
 */
int listener_check_free(const char *host, uint16_t port, char *error, size_t error_size);

/* A non-blocking, close-on-exec, SO_REUSEPORT, TCP_NODELAY listening socket, or -1 with a message. */
int listener_open(const char *host, uint16_t port, char *error, size_t error_size);

#endif
