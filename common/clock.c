#include "llmlaunch/clock.h"

#include <limits.h>
#include <time.h>

double ll_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int ll_poll_ms_until(double deadline)
{
	double left = deadline - ll_now_s();

	if (left <= 0)
		return 0;
	if (left * 1000 >= INT_MAX - 1)
		return INT_MAX - 1;
	return (int)(left * 1000) + 1;
}
