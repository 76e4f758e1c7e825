/* libFuzzer harness for the DCB netlink reply parser (probe/dcbnl.c): arbitrary
 * bytes as a kernel reply. Under --fsroot the reply is a file of the tree, so any
 * bytes can reach it; every answer must be 0 with a state that holds only priorities
 * 0-7, or a negative errno. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../probe/dcbnl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ll_dcb_state st;
	/* A copy of exactly `size` bytes, so that ASan sees any read past the end. */
	uint8_t *copy = malloc(size ? size : 1);
	int r;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	r = ll_dcb_parse_reply(copy, size, &st);
	if (r > 0)
		__builtin_trap();
	if (r == 0)
		for (size_t d = 0; d < 64; d++)
			if (st.dscp_prio[d] < -1 || st.dscp_prio[d] > 7)
				__builtin_trap();
	free(copy);
	return 0;
}
