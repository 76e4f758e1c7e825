/* Real public data (../shared/realdata, named by LL_REALDATA) is an extra layer of
 * tests: a case that needs it skips, saying so, when it is absent, while the cases on
 * the project's own fixtures always run. Set `realdata` from LL_REALDATA in main(). */
#ifndef LLMLAUNCH_TESTS_REALDATA_H
#define LLMLAUNCH_TESTS_REALDATA_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>

static const char *realdata;

/* True (and said on stderr) when the real data is absent: the case skips. */
static inline bool realdata_absent(const char *test)
{
	struct stat st;

	if (realdata && stat(realdata, &st) == 0)
		return false;
	fprintf(stderr, "%s: skipped, real data not found (LL_REALDATA=%s)\n", test, realdata ? realdata : "");
	return true;
}

#endif
