/* libFuzzer harness for the NCCL log scanner: arbitrary bytes, fed in pieces whose
 * sizes come from the input itself (so partial lines, wrapped lines and endless
 * lines all happen), then a verdict and every host's summary line. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "llmlaunch/nccl-scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ll_ncclscan *s;
	struct ll_ncclscan_stream *st;
	const struct ll_nccl_verdict *v;
	size_t off = 0, step;

	if (size == 0)
		return 0;
	s = ll_ncclscan_new((enum ll_net_expect)(data[0] % 4));
	st = ll_ncclscan_stream_new(s, "fuzz");
	step = 1 + data[0] / 4;
	while (off < size) {
		size_t n = size - off < step ? size - off : step;
		ll_ncclscan_feed(s, st, (const char *)data + off, n);
		off += n;
		step = step * 3 % 97 + 1;
	}
	v = ll_ncclscan_result(s);
	ll_ncclscan_flush(s, st);
	v = ll_ncclscan_result(s);
	for (size_t i = 0; i < v->n_hosts; i++) {
		struct ll_buf b;
		ll_buf_init(&b);
		ll_nccl_host_summary(&v->hosts[i], &b);
		if (strlen(b.s) != b.len)
			__builtin_trap();
		ll_buf_release(&b);
	}
	ll_ncclscan_free(s);
	return 0;
}
