/* SHA-256 for the fetch module: cache file names and `#sha256=` pins. */
#ifndef LLMLAUNCH_MODULES_SHA256_H
#define LLMLAUNCH_MODULES_SHA256_H

#include <stddef.h>

void ll_sha256(const void *data, size_t len, unsigned char out[32]);
/* Lowercase hex, NUL-terminated. */
void ll_sha256_hex(const void *data, size_t len, char out[65]);

#endif
