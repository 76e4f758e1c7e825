/* SHA-256 for pinned profile URLs and cache keys, from OpenSSL's libcrypto (already
 * loaded with libcurl's OpenSSL build, so it costs no extra library). */
#include <openssl/evp.h>
#include <stdlib.h>

#include "sha256.h"

void ll_sha256(const void *data, size_t len, unsigned char out[32])
{
	unsigned int n = 32;

	/* EVP_Digest only fails on allocation failure: treat it like ll_malloc does. */
	if (!EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) || n != 32)
		abort();
}

void ll_sha256_hex(const void *data, size_t len, char out[65])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char digest[32];

	ll_sha256(data, len, digest);
	for (int i = 0; i < 32; i++) {
		out[2 * i] = hex[digest[i] >> 4];
		out[2 * i + 1] = hex[digest[i] & 0xf];
	}
	out[64] = '\0';
}
