/* libFuzzer harness for the profile loader: arbitrary bytes through the YAML tree,
 * the schema checks and, when a profile loads, `match` against a small node. Any
 * crash, leak or sanitizer report is a bug. Seeds: tests/fuzz/seed-profile.sh. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "llmlaunch/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ll_gpu gpus[2] = { { .model = "NVIDIA H100 80GB HBM3" }, { .model = NULL } };
	static struct ll_rdma_port port = { .number = 1, .state = LL_PORT_ACTIVE,
					    .link_layer = LL_LINK_LAYER_INFINIBAND };
	static struct ll_rdma_device rdma = { .name = "mlx5_0", .ports = &port, .n_ports = 1 };
	static const struct ll_facts facts = { .hostname = "gpu-1", .dmi_product_name = "Virtual Machine",
					       .gpus = gpus, .n_gpus = 2, .rdma = &rdma, .n_rdma = 1 };
	/* Both policies: local (loader variables refused) and remote with the flag. */
	static const struct ll_profile_load_opts variants[2] = { { 0 }, { .remote = true, .allow_loader_vars = true } };

	if (size > LL_PROFILE_MAX_BYTES)
		return 0;
	for (size_t v = 0; v < 2; v++) {
		struct ll_profile_diags diags = { 0 };
		struct ll_profile *p = NULL;
		struct ll_error err = { 0 };
		char *why = NULL;

		if (ll_profile_parse("fuzz.yaml", (const char *)data, size, &variants[v], &p, &diags, &err) == 0) {
			ll_profile_matches(p, &facts, &why);
			free(why);
			ll_profile_free(p);
		} else if (!err.message || diags.n == 0) {
			__builtin_trap(); /* every failure must say why */
		}
		ll_profile_diags_release(&diags);
		ll_error_clear(&err);
	}
	return 0;
}
