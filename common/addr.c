#include "llmlaunch/addr.h"

#include <netinet/in.h>
#include <string.h>

#include "llmlaunch/util.h"

const void *ll_addr_bytes(const struct sockaddr *sa, size_t *ret_len)
{
	if (sa && sa->sa_family == AF_INET) {
		*ret_len = 4;
		return &((const struct sockaddr_in *)sa)->sin_addr;
	}
	if (sa && sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a)) {
			*ret_len = 4;
			return a->s6_addr + 12;
		}
		*ret_len = 16;
		return a;
	}
	*ret_len = 0;
	return NULL;
}

bool ll_addr_text(const struct sockaddr *sa, char text[INET6_ADDRSTRLEN])
{
	size_t len;
	const void *raw = ll_addr_bytes(sa, &len);

	return raw && inet_ntop(len == 4 ? AF_INET : AF_INET6, raw, text, INET6_ADDRSTRLEN);
}

bool ll_addr_is_loopback(const struct sockaddr *sa)
{
	size_t len;
	const unsigned char *a = ll_addr_bytes(sa, &len);

	if (!a)
		return false;
	return len == 4 ? a[0] == 127 : IN6_IS_ADDR_LOOPBACK((const struct in6_addr *)a);
}

bool ll_addr_is_nonpublic(const struct sockaddr *sa)
{
	size_t len;
	const unsigned char *a = ll_addr_bytes(sa, &len);

	if (!a)
		return true; /* not an internet address at all */
	if (len == 4)
		return a[0] == 127 || a[0] == 10 || a[0] == 0 || (a[0] == 172 && (a[1] & 0xf0) == 16) ||
		       (a[0] == 192 && a[1] == 168) || (a[0] == 169 && a[1] == 254) || (a[0] == 100 && (a[1] & 0xc0) == 64);
	return IN6_IS_ADDR_LOOPBACK((const struct in6_addr *)a) || IN6_IS_ADDR_UNSPECIFIED((const struct in6_addr *)a) ||
	       IN6_IS_ADDR_LINKLOCAL((const struct in6_addr *)a) || (a[0] & 0xfe) == 0xfc;
}

unsigned ll_addr_prefix_len(const struct sockaddr *mask)
{
	size_t len;
	const unsigned char *b = ll_addr_bytes(mask, &len);
	unsigned n = 0;

	for (size_t i = 0; b && i < len; i++)
		n += (unsigned)__builtin_popcount(b[i]);
	return n;
}

char *ll_addr_canonical(const char *word, size_t len)
{
	char *w = ll_strndup(word, len);
	unsigned char bin[sizeof(struct in6_addr)];
	char text[INET6_ADDRSTRLEN];
	int family = inet_pton(AF_INET, w, bin) == 1 ? AF_INET : inet_pton(AF_INET6, w, bin) == 1 ? AF_INET6 : 0;

	if (family && inet_ntop(family, bin, text, sizeof(text))) {
		free(w);
		w = ll_strdup(text);
	}
	return w;
}
