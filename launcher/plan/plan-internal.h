/* Shared between the planner's files (plan.c, plan-net.c, plan-placement.c, lint.c).
 * Not a public interface: other modules use include/llmlaunch/plan.h. */
#ifndef LLMLAUNCH_PLAN_INTERNAL_H
#define LLMLAUNCH_PLAN_INTERNAL_H

#include "llmlaunch/plan.h"

/* What the network rules decided, kept for the rules that depend on it (GDR level,
 * GID index, LLMLAUNCH_NET, lint). */
struct plan_net {
	/* Chosen RDMA ports: device index into facts->rdma and port index into its ports. */
	size_t *chosen_dev, *chosen_port;
	size_t n_chosen;
	enum ll_link_layer link_layer;  /* of the chosen ports */
	bool link_layer_inferred;       /* some link layer came from LID/netdev, not sysfs */
	bool states_unknown;            /* no ACTIVE port, but some ports of unknown state */
	bool devices_unknown;           /* the topology cannot tell which RDMA devices exist */
	int active_ib_ports;            /* ACTIVE InfiniBand ports on the node (lint) */
	bool class_unknown;             /* an ACTIVE port of a device of unknown class, none chosen */
	/* A fabric NCCL reaches only through a net plugin, when no verbs port is chosen:
	 * "efa" (AWS EFA devices) or "cxi" (HPE Slingshot NICs); NULL none. */
	const char *plugin_fabric;
	char *plugin_devices;           /* their names, "rdmap16s27, rdmap32s27" */
	enum ll_tristate plugin_installed; /* aws-ofi-nccl where NCCL's dlopen finds it */
	int plugin_index;               /* facts->net_plugins[] NCCL should load, -1 none */
	const char *plugin_prefix;      /* "libnccl-net" (NCCL) or "librccl-net" (RCCL) */
	bool plugin_is_default;         /* it is the libnccl-net.so NCCL loads unasked */
	double plugin_gbps;             /* summed rate of the fabric's ports, -1 unknown */
	/* Needed GDR class: the loosest over GPUs of the class to their nearest chosen NIC. */
	enum ll_path gdr_needed;
	const struct ll_netif *socket_if; /* chosen socket interface, NULL if none */
};

struct plan_state {
	const struct ll_plan_input *in;
	const struct ll_facts *f;
	struct ll_plan *p;
	/* The vendor whose GPUs the workers use (NVIDIA or AMD), and its GPUs as
	 * indices into facts->gpus: what visibility indices count. */
	enum ll_gpu_vendor vendor;
	int *pool;
	size_t n_pool;
	/* GPUs the workers get, as indices into facts->gpus, in CUDA's visible order. */
	int *gpus;
	size_t n_gpus;
	struct plan_net net;
	int cores_per_rank;             /* from --set/profile 'cores-per-rank', 0 = even share */
};

/* The reasons every rule gives when the topology cannot tell (llmlaunch/facts.h,
 * gpus_known and netdevs_known): one wording, so explain reads the same everywhere. */
#define LL_PLAN_NETDEVS_UNKNOWN \
	"network and RDMA devices unknown: the topology has no network OS devices (an export without I/O)"
#define LL_PLAN_NVLINK_UNKNOWN_EXPORT \
	"NVLink unknown: this export has no NVML data (no NVLinkBandwidth matrix, no NVLink counts)"
#define LL_PLAN_XGMI_UNKNOWN \
	"XGMI unknown: no ROCm SMI or KFD data (no XGMIBandwidth matrix)"
#define LL_PLAN_NVLINK_UNKNOWN_LIVE \
	"NVLink unknown: NVML gave no answer on this node (no NVIDIA driver, or its library failed)"

/* Append a decided value with source probe/default. value NULL: left unset. */
void plan_decide(struct plan_state *s, const char *name, const char *value, enum ll_source source,
		 bool exported, const char *reason_fmt, ...) LL_PRINTF(6, 7);
/* Record the origin (profile file:line, --set) of a setting decided from an input layer. */
void plan_origin(struct plan_state *s, const char *name, const char *origin);
void plan_lint(struct plan_state *s, enum ll_lint_level level, const char *variable, const char *fmt, ...)
	LL_PRINTF(4, 5);

/* Value of NAME from the highest layer that sets it (cli > environment > profile),
 * ignoring profile "auto"; NULL if none. *ret_source / *ret_origin when non-NULL. */
const char *plan_input_value(const struct plan_state *s, const char *name, enum ll_source *ret_source,
			     const char **ret_origin);
/* NAME from the inherited environment only. */
const char *plan_environ_get(const struct ll_plan_input *in, const char *name);

/* The setting named `name`, NULL when the plan has none. */
struct ll_setting *plan_find(const struct ll_plan *p, const char *name);
/* NAME is an environment variable name (capitals, digits, '_'), not a setting. */
bool plan_is_variable_name(const char *name);

int plan_gpus_decide(struct plan_state *s, struct ll_error *err);
int plan_net_decide(struct plan_state *s, struct ll_error *err);
int plan_placement_decide(struct plan_state *s, struct ll_error *err);
void plan_lint_all(struct plan_state *s);
/* What turns multi-node NVLink off or breaks it (lint-mnnvl.c), called by plan_lint_all(). */
void plan_lint_mnnvl(struct plan_state *s);
/* The NCCL version rules (plan-nccl.c): whether rule `id` holds for the NCCL the
 * workers load (LL_UNKNOWN: version unknown), and the release note that says so. */
enum ll_tristate plan_nccl_has(const struct plan_state *s, const char *id, const char **ret_since);
const char *plan_nccl_version_text(const struct plan_state *s, char *buf, size_t size); /* NULL unknown */
void plan_nccl_decide(struct plan_state *s);
void plan_lint_nccl(struct plan_state *s);
/* A RoCE plan's class against the host's QoS state (lint-roce.c), called by plan_lint_all(). */
void plan_lint_roce(struct plan_state *s);
/* NCCL's configuration files against the plan (plan-conf.c), after every layer. */
void plan_conf_apply(struct plan_state *s);

/* Natural comparison: "mlx5_2" < "mlx5_10". */

#endif
