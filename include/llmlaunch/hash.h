/* The one hash of the project: 64-bit FNV-1a (Fowler, Noll, Vo), for keys that must
 * be the same on every node and every run (digests the agreement compares, the probe
 * cache's key, the rendezvous token, port bases). Not for anything an attacker picks
 * to collide: nothing here trusts a match of it. */
#ifndef LLMLAUNCH_HASH_H
#define LLMLAUNCH_HASH_H

#include <stddef.h>
#include <stdint.h>

#define LL_HASH_INIT UINT64_C(0xcbf29ce484222325)

/* Fold n bytes into h (start from LL_HASH_INIT). */
uint64_t ll_hash_add(uint64_t h, const void *data, size_t n);
/* Fold a string and its terminating NUL, so that ("ab", "c") and ("a", "bc") differ;
 * NULL folds as the one byte 0x01 and its NUL. */
uint64_t ll_hash_add_part(uint64_t h, const char *s);
static inline uint64_t ll_hash(const void *data, size_t n) { return ll_hash_add(LL_HASH_INIT, data, n); }

#endif
