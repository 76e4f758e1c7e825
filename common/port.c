#include "llmlaunch/port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int ll_sockaddr_numeric(const char *addr, int port, struct sockaddr_storage *ret, socklen_t *ret_len)
{
	memset(ret, 0, sizeof(*ret));
	if (inet_pton(AF_INET, addr, &((struct sockaddr_in *)ret)->sin_addr) == 1) {
		ret->ss_family = AF_INET;
		((struct sockaddr_in *)ret)->sin_port = htons((uint16_t)port);
		*ret_len = sizeof(struct sockaddr_in);
		return 0;
	}
	if (inet_pton(AF_INET6, addr, &((struct sockaddr_in6 *)ret)->sin6_addr) == 1) {
		ret->ss_family = AF_INET6;
		((struct sockaddr_in6 *)ret)->sin6_port = htons((uint16_t)port);
		*ret_len = sizeof(struct sockaddr_in6);
		return 0;
	}
	return -EINVAL;
}

int ll_free_port(const char *addr, int *ret, struct ll_error *err)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, r, port;

	if (ll_sockaddr_numeric(addr, 0, &ss, &len) < 0)
		return ll_error_set(err, -EINVAL, "cannot find a free port on '%s': not a numeric address", addr);

	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return ll_error_set(err, -errno, "cannot find a free port on '%s': socket: %s", addr, strerror(errno));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
		r = -errno;
		close(fd);
		return ll_error_set(err, r, "cannot find a free port on '%s': %s", addr, strerror(-r));
	}
	port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
					     : ((struct sockaddr_in6 *)&ss)->sin6_port);
	close(fd);
	*ret = port;
	return 0;
}

int ll_free_port_any(int *ret, struct ll_error *err)
{
	/* "::" covers IPv4 too unless the kernel has bindv6only; without IPv6 at all,
	 * the IPv4 wildcard. */
	if (ll_free_port("::", ret, NULL) == 0)
		return 0;
	return ll_free_port("0.0.0.0", ret, err);
}

bool ll_port_in_use(int port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *ai = NULL;
	char service[16];
	bool busy = false;

	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(NULL, service, &hints, &ai) != 0)
		return false;
	for (struct addrinfo *a = ai; a; a = a->ai_next) {
		int one = 1, fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);

		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, a->ai_addr, a->ai_addrlen) < 0 && errno == EADDRINUSE)
			busy = true;
		close(fd);
	}
	freeaddrinfo(ai);
	return busy;
}

int ll_listen_any(int port, int *ret_fd)
{
	static const int families[] = { AF_INET6, AF_INET };
	int last = -EADDRNOTAVAIL;

	for (size_t f = 0; f < LL_ARRAY_SIZE(families); f++) {
		struct sockaddr_storage ss = { 0 };
		socklen_t len;
		int one = 1, zero = 0, fd = socket(families[f], SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

		if (fd < 0) {
			last = -errno;
			continue;
		}
		/* As torchrun's store listens: the wildcard address, both families. */
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (families[f] == AF_INET6) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
			a->sin6_family = AF_INET6;
			a->sin6_addr = in6addr_any;
			a->sin6_port = htons((uint16_t)port);
			len = sizeof(*a);
		} else {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;
			a->sin_family = AF_INET;
			a->sin_addr.s_addr = htonl(INADDR_ANY);
			a->sin_port = htons((uint16_t)port);
			len = sizeof(*a);
		}
		if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, SOMAXCONN) < 0) {
			last = -errno;
			close(fd);
			/* A port in use in one family is in use: do not try the other. */
			if (last == -EADDRINUSE)
				return last;
			continue;
		}
		*ret_fd = fd;
		return 0;
	}
	return last;
}
