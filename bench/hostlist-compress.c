/* ll_hostlist_compress() at the size of the largest hostlist llmlaunch writes (the
 * check's exclude file, docs/check.md): N names (default 262,144) in three shapes,
 * each timed once after one warm-up call. Usage: hostlist-compress [N]. One line a shape:
 *   shape names seconds output_bytes
 * one-group: gpu000001.. shuffled (one prefix); racks: r<k>-n<i>, 512 names a rack,
 * shuffled (many prefixes); distinct: names without digits, each its own group (the
 * shape that made the old grouping quadratic). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmlaunch/clock.h"
#include "llmlaunch/hostlist.h"

static void shuffle(char **v, size_t n)
{
	unsigned long long x = 88172645463325252ull;

	for (size_t i = n; i > 1; i--) {
		size_t j;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64: the same order every run */
		j = (size_t)(x % i);
		char *t = v[i - 1];
		v[i - 1] = v[j], v[j] = t;
	}
}

static char *name(const char *shape, size_t i)
{
	if (strcmp(shape, "one-group") == 0)
		return ll_asprintf("gpu%06zu", i + 1);
	if (strcmp(shape, "racks") == 0)
		return ll_asprintf("r%zu-n%03zu", i / 512, i % 512);
	/* letters only: base 26 of i */
	char s[16], *p = s + sizeof(s) - 1;
	*p = '\0';
	do {
		*--p = (char)('a' + i % 26);
		i /= 26;
	} while (i);
	return ll_asprintf("node-%s", p);
}

int main(int argc, char **argv)
{
	static const char *const shapes[] = { "one-group", "racks", "distinct" };
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 262144;

	printf("%-10s %8s %9s %12s\n", "shape", "names", "seconds", "output_bytes");
	for (size_t k = 0; k < LL_ARRAY_SIZE(shapes); k++) {
		char **v = ll_calloc(n ? n : 1, sizeof(char *));
		char *out;
		double t0;

		for (size_t i = 0; i < n; i++)
			v[i] = name(shapes[k], i);
		shuffle(v, n);
		free(ll_hostlist_compress(v, n < 1024 ? n : 1024));
		t0 = ll_now_s();
		out = ll_hostlist_compress(v, n);
		printf("%-10s %8zu %9.3f %12zu\n", shapes[k], n, ll_now_s() - t0, strlen(out));
		free(out);
		ll_strv_free(v, n);
	}
	return 0;
}
