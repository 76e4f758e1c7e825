/* Internet addresses as every layer reads and writes them: numeric text as
 * inet_ntop() writes it, loopback and non-public ranges, netmask prefixes. */
#ifndef LLMLAUNCH_ADDR_H
#define LLMLAUNCH_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <arpa/inet.h>

/* `sa` (AF_INET or AF_INET6; an IPv4-mapped IPv6 address as its IPv4 one) as numeric
 * text into `text` (INET6_ADDRSTRLEN bytes). False for other families. */
bool ll_addr_text(const struct sockaddr *sa, char text[INET6_ADDRSTRLEN]);
/* The address part of `sa` and its length (4 or 16), NULL for other families. */
const void *ll_addr_bytes(const struct sockaddr *sa, size_t *ret_len);
/* 127.0.0.0/8, ::1, or an IPv4-mapped 127.x. */
bool ll_addr_is_loopback(const struct sockaddr *sa);
/* Not reachable from the internet: loopback, private (RFC 1918), link-local, CGNAT
 * (100.64/10), unspecified, IPv6 ULA (fc00::/7); any non-internet family. */
bool ll_addr_is_nonpublic(const struct sockaddr *sa);
/* The prefix length of a netmask (the set bits), 0 for NULL. */
unsigned ll_addr_prefix_len(const struct sockaddr *mask);
/* A numeric address written as inet_ntop() writes it ("fd00:0::1" -> "fd00::1"),
 * anything else (a host name) as given. Malloc'ed. */
char *ll_addr_canonical(const char *text, size_t len);

#endif
