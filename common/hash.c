#include "llmlaunch/hash.h"

#include <string.h>

uint64_t ll_hash_add(uint64_t h, const void *data, size_t n)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

uint64_t ll_hash_add_part(uint64_t h, const char *s)
{
	if (!s)
		s = "\x01";
	return ll_hash_add(h, s, strlen(s) + 1);
}
