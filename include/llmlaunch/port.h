/* TCP ports for a rendezvous: one that is free now, and whether a given one is. */
#ifndef LLMLAUNCH_PORT_H
#define LLMLAUNCH_PORT_H

#include <stdbool.h>
#include <sys/socket.h>
#include "llmlaunch/util.h"

/* `addr` ("192.0.2.1", "fd00::1") and `port` as a socket address: 0, or -EINVAL when
 * the text is not a numeric address. */
int ll_sockaddr_numeric(const char *addr, int port, struct sockaddr_storage *ret, socklen_t *ret_len);

/* A TCP port nobody has bound on numeric address `addr` ("127.0.0.1", "::",
 * "0.0.0.0"), found by binding port 0 and releasing it. The kernel's choice is
 * randomised, so two launches at once get different ports. 0 or -errno (err set). */
int ll_free_port(const char *addr, int *ret, struct ll_error *err);

/* A port free on every local address, both families where the kernel allows (what
 * a rendezvous master needs: it listens on whichever address was agreed). */
int ll_free_port_any(int *ret, struct ll_error *err);

/* True when binding `port` on the wildcard address fails with EADDRINUSE in some
 * family: someone listens on it. False when it is free or cannot be checked. */
bool ll_port_in_use(int port);

/* Listen on `port` (0: one the kernel picks) of the wildcard address, IPv6 with IPv4
 * mapped where the kernel has IPv6, else IPv4; non-blocking, close-on-exec,
 * SO_REUSEADDR. 0 with *ret_fd, -EADDRINUSE at once when the port is taken, else the
 * last -errno. */
int ll_listen_any(int port, int *ret_fd);

#endif
