/* A bare PMIx exchange, the yardstick for bench/agree.sh: init, put one small string,
 * commit, one fence collecting data, read every peer's string, finalize. Prints the
 * seconds from before PMIx_Init to after PMIx_Finalize as one JSON line per process.
 * Build: cc -O2 pmix-fence.c $(pkg-config --cflags --libs pmix) (tests/cmake/agree.cmake). */
#include <pmix.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
	pmix_proc_t me, wild, peer;
	pmix_value_t v, *got = NULL;
	pmix_info_t info;
	bool yes = true;
	uint32_t size = 0;
	char text[64];
	double t0 = now(), t_fence0, t_fence1;
	pmix_status_t rc;

	rc = PMIx_Init(&me, NULL, 0);
	if (rc != PMIX_SUCCESS) {
		fprintf(stderr, "pmix-fence: PMIx_Init: %s\n", PMIx_Error_string(rc));
		return 1;
	}
	PMIX_LOAD_PROCID(&wild, me.nspace, PMIX_RANK_WILDCARD);
	if (PMIx_Get(&wild, PMIX_JOB_SIZE, NULL, 0, &got) == PMIX_SUCCESS) {
		size = got->type == PMIX_UINT32 ? got->data.uint32 : got->data.uint16;
		PMIX_VALUE_RELEASE(got);
	}
	snprintf(text, sizeof(text), "rank %u is here", me.rank);
	PMIX_VALUE_CONSTRUCT(&v);
	v.type = PMIX_STRING;
	v.data.string = text;
	PMIx_Put(PMIX_GLOBAL, "bench.k", &v);
	PMIx_Commit();
	PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
	t_fence0 = now();
	rc = PMIx_Fence(NULL, 0, &info, 1);
	t_fence1 = now();
	if (rc != PMIX_SUCCESS) {
		fprintf(stderr, "pmix-fence: PMIx_Fence: %s\n", PMIx_Error_string(rc));
		return 1;
	}
	for (uint32_t r = 0; r < size; r++) {
		PMIX_LOAD_PROCID(&peer, me.nspace, r);
		if (PMIx_Get(&peer, "bench.k", NULL, 0, &got) == PMIX_SUCCESS)
			PMIX_VALUE_RELEASE(got);
	}
	PMIx_Finalize(NULL, 0);
	printf("{\"rank\":%u,\"size\":%u,\"seconds\":%.6f,\"fence\":%.6f}\n", me.rank, size, now() - t0,
	       t_fence1 - t_fence0);
	return 0;
}
