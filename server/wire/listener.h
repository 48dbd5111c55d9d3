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
 * Who listens on host:port already: 0 nobody; 1 sockets of this same user
 * that all set SO_REUSEPORT (a musicd being replaced: the kernel would share
 * the port with it, which the caller says rather than doing silently); -1
 * with a message when it is taken otherwise or cannot be bound.
 */
int listener_probe(const char *host, uint16_t port, char *error, size_t error_size);

/* A non-blocking, close-on-exec, SO_REUSEPORT, TCP_NODELAY listening socket, or -1 with a message. */
int listener_open(const char *host, uint16_t port, char *error, size_t error_size);

#endif
