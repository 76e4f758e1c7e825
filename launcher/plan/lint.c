/* Lint of values the user brought (environment, profile, --set): device lists that
 * match more or other devices than meant, settings that contradict the node, and
 * debugging switches left on. The planner's own values are right by construction
 * and are not linted. */
#include <stdio.h>
#include <string.h>

#include "plan-internal.h"

/* A value of the plan that came from outside the probe, or NULL. */
static const char *user_value(const struct plan_state *s, const char *name, enum ll_source *src)
{
	const struct ll_setting *st = ll_plan_get(s->p, name);

	if (st && st->value && st->source != LL_SOURCE_PROBE && st->source != LL_SOURCE_DEFAULT) {
		if (src)
			*src = st->source;
		return st->value;
	}
	if (st)
		return NULL;
	return plan_input_value(s, name, src, NULL);
}

/* A value inherited from the environment, or NULL: debugging switches are linted only
 * there, since a profile that turns a transport off (network-only) means it. */
static const char *inherited_value(const struct plan_state *s, const char *name)
{
	enum ll_source src;
	const char *v = user_value(s, name, &src);

	return v && src == LL_SOURCE_ENVIRONMENT ? v : NULL;
}

typedef const char *(*name_at_fn)(const struct ll_facts *f, size_t i);

static const char *rdma_name_at(const struct ll_facts *f, size_t i)
{
	return i < f->n_rdma ? f->rdma[i].name : NULL;
}

static const char *netif_name_at(const struct ll_facts *f, size_t i)
{
	return i < f->n_netifs ? f->netifs[i].name : NULL;
}

/* NCCL's list syntax: [^][=]name[:port],... Without '=' each name is a prefix, so
 * "mlx5_1" also selects mlx5_10..mlx5_19. `with_ports` for NCCL_IB_HCA. */
static void lint_device_list(struct plan_state *s, const char *var, const char *value, name_at_fn name_at,
			     bool with_ports, const char *what)
{
	const struct ll_facts *f = s->f;
	const char *v = value;
	bool exclude = false, exact = false;
	_cleanup_free_ char *copy = NULL;
	char *save = NULL;

	/* NCCL ignores values of one character or less. */
	if (strlen(value) <= 1)
		return;
	if (*v == '^') {
		exclude = true;
		v++;
	}
	if (*v == '=') {
		exact = true;
		v++;
	}
	copy = ll_strdup(v);
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = with_ports ? strchr(tok, ':') : NULL;
		const char *name;
		struct ll_buf others;
		size_t matches = 0;
		bool exists = false;
		long port = -1;

		if (colon) {
			*colon = '\0';
			port = strtol(colon + 1, NULL, 10);
		}
		ll_buf_init(&others);
		for (size_t i = 0; (name = name_at(f, i)); i++) {
			if (strcmp(name, tok) == 0) {
				exists = true;
				matches++;
			} else if (!exact && ll_startswith(name, tok)) {
				ll_buf_addf(&others, "%s%s", others.len ? ", " : "", name);
				matches++;
			}
		}
		if (matches == 0) {
			plan_lint(s, exclude ? LL_LINT_INFO : LL_LINT_WARNING, var, "'%s' %s no %s on this node", tok,
				  exact ? "names" : "matches", what);
		} else if (exists && others.len) {
			plan_lint(s, LL_LINT_WARNING, var,
				  "'%s' also %s %s: without '=' NCCL reads names as prefixes; write '%s=%s'", tok,
				  exclude ? "excludes" : "selects", others.s, exclude ? "^" : "", v);
		} else if (!exists && others.len && !exclude) {
			plan_lint(s, LL_LINT_INFO, var, "prefix '%s' selects %s", tok, others.s);
		}
		if (exists && with_ports && !exclude) {
			const struct ll_rdma_device *d = ll_facts_rdma(f, tok);

			/* Named on purpose: a software device is the user's choice (soft-RoCE
			 * on request); a plugin-only or unusable one is a mistake. */
			if (d && d->rdma_class == LL_RDMA_CLASS_SOFTWARE)
				plan_lint(s, LL_LINT_INFO, var, "'%s' is %s; used because %s names it", tok,
					  d->class_why, var);
			else if (d && (d->rdma_class == LL_RDMA_CLASS_PLUGIN || d->rdma_class == LL_RDMA_CLASS_UNUSABLE))
				plan_lint(s, LL_LINT_WARNING, var, "'%s' is not a device NCCL's IB transport drives: %s",
					  tok, d->class_why);
		}
		if (exists && port > 0 && with_ports) {
			const struct ll_rdma_device *d = ll_facts_rdma(f, tok);
			bool has = false;

			for (size_t p = 0; d && p < d->n_ports; p++)
				if (d->ports[p].number == (unsigned)port) {
					has = true;
					if (!exclude && d->ports[p].state != LL_PORT_STATE_UNKNOWN &&
					    d->ports[p].state != LL_PORT_ACTIVE && d->ports[p].state != LL_PORT_ACTIVE_DEFER)
						plan_lint(s, LL_LINT_WARNING, var, "port %s:%ld is %s", tok, port,
							  ll_port_state_name(d->ports[p].state));
				}
			if (d && !has)
				plan_lint(s, LL_LINT_WARNING, var, "'%s' has no port %ld", tok, port);
		}
		ll_buf_release(&others);
	}
}

static void lint_gdr_level(struct plan_state *s)
{
	const char *v = user_value(s, "NCCL_NET_GDR_LEVEL", NULL);
	enum ll_path level;
	bool loc = false;

	if (!v)
		return;
	if (strcmp(v, "LOC") == 0 || strcmp(v, "0") == 0) {
		loc = true;
		level = LL_PATH_UNKNOWN;
	} else if (strspn(v, "0123456789") == strlen(v)) {
		/* Old integer form: 1 PIX, 2 PXB, 3 PHB, 4 and above SYS. */
		long n = strtol(v, NULL, 10);

		level = n == 1 ? LL_PATH_PIX : n == 2 ? LL_PATH_PXB : n == 3 ? LL_PATH_PHB : LL_PATH_SYS;
	} else {
		level = ll_path_from_name(v);
		if (level == LL_PATH_UNKNOWN || level == LL_PATH_NODE) {
			plan_lint(s, LL_LINT_WARNING, "NCCL_NET_GDR_LEVEL",
				  "'%s' is not a level NCCL knows (LOC, PIX, PXB, PHB, SYS)", v);
			return;
		}
	}
	if (ll_facts_gdr_usable(s->f) == LL_NO) {
		plan_lint(s, LL_LINT_WARNING, "NCCL_NET_GDR_LEVEL",
			  "set to %s but GPUDirect RDMA is not ready (nvidia_peermem not loaded, DMA-BUF not usable)", v);
		return;
	}
	if (s->net.gdr_needed == LL_PATH_UNKNOWN)
		return;
	{
		/* NCCL compares with NODE counted as PHB. */
		enum ll_path needed = s->net.gdr_needed == LL_PATH_NODE ? LL_PATH_PHB : s->net.gdr_needed;

		if (loc || level < needed)
			plan_lint(s, LL_LINT_WARNING, "NCCL_NET_GDR_LEVEL",
				  "%s is stricter than this node needs: some GPU's nearest NIC is %s away, so "
				  "GPUDirect RDMA stays off for it; use %s",
				  v, ll_path_name(s->net.gdr_needed), ll_path_name(needed));
	}
}

static void lint_debug(struct plan_state *s)
{
	const char *dbg = inherited_value(s, "NCCL_DEBUG");
	const char *subsys = inherited_value(s, "NCCL_DEBUG_SUBSYS");
	const char *file = inherited_value(s, "NCCL_DEBUG_FILE");
	const char *v;

	if (dbg && strcasecmp(dbg, "TRACE") == 0)
		plan_lint(s, LL_LINT_WARNING, "NCCL_DEBUG",
			  "TRACE is for debugging NCCL itself: very verbose and slow; use WARN or INFO");
	else if (dbg && strcasecmp(dbg, "INFO") == 0 && subsys && strcasestr(subsys, "ALL"))
		plan_lint(s, LL_LINT_WARNING, "NCCL_DEBUG_SUBSYS",
			  "INFO with NCCL_DEBUG_SUBSYS=%s logs every subsystem: a debugging leftover?", subsys);
	else if (dbg && strcasecmp(dbg, "INFO") == 0)
		plan_lint(s, LL_LINT_INFO, "NCCL_DEBUG", "INFO logging is on (fine for 'llmlaunch logs', noisy otherwise)");
	if (file && (!strstr(file, "%h") || !strstr(file, "%p")))
		plan_lint(s, LL_LINT_WARNING, "NCCL_DEBUG_FILE",
			  "'%s' lacks %s: NCCL truncates the file, so ranks overwrite each other's log", file,
			  !strstr(file, "%p") && !strstr(file, "%h") ? "%h and %p"
			  : !strstr(file, "%p")			  ? "%p"
								  : "%h");
	if ((v = inherited_value(s, "NCCL_P2P_DISABLE")) && strcmp(v, "1") == 0 && s->f->n_gpus > 1)
		plan_lint(s, LL_LINT_WARNING, "NCCL_P2P_DISABLE",
			  "peer-to-peer between GPUs is off (NVLink/PCIe P2P unused): a debugging leftover?");
	if ((v = inherited_value(s, "NCCL_SHM_DISABLE")) && strcmp(v, "1") == 0)
		plan_lint(s, LL_LINT_WARNING, "NCCL_SHM_DISABLE", "shared-memory transport is off: a debugging leftover?");
	if (inherited_value(s, "NCCL_TOPO_DUMP_FILE"))
		plan_lint(s, LL_LINT_INFO, "NCCL_TOPO_DUMP_FILE", "NCCL writes its topology on every start");
}

static void size_text(unsigned long long bytes, char *buf, size_t n)
{
	if (bytes >= (1ULL << 30) && bytes % (1ULL << 30) == 0)
		snprintf(buf, n, "%llu GiB", bytes >> 30);
	else if (bytes >= (1ULL << 20) && bytes % (1ULL << 20) == 0)
		snprintf(buf, n, "%llu MiB", bytes >> 20);
	else if (bytes >= 1024 && bytes % 1024 == 0)
		snprintf(buf, n, "%llu KiB", bytes >> 10);
	else
		snprintf(buf, n, "%llu bytes", bytes);
}

/* The plumbing RDMA needs below NCCL, checked where RDMA is planned: the pinned
 * memory the workers may register, the devices user space opens, and the way
 * GPU memory reaches the NIC. Each message says the fix. */
static void lint_plumbing(struct plan_state *s)
{
	const struct ll_facts *f = s->f;
	const struct plan_net *net = &s->net;
	const struct ll_process_limits *lim = &s->in->limits;
	bool plugin = net->plugin_fabric && net->plugin_installed == LL_YES;
	struct ll_buf none, missing, denied;

	if (net->n_chosen == 0 && !plugin)
		return;
	/* ib_umem_get() pins registered memory against RLIMIT_MEMLOCK unless the process
	 * has CAP_IPC_LOCK; NCCL registers its buffers (NCCL docs,
	 * troubleshooting/networking_troubleshooting.rst: "Call to ibv_reg_mr failed",
	 * memlock unlimited; runtime_and_mpi_issues.rst: docker --ulimit memlock=-1). */
	if (lim->known && !lim->memlock_unlimited && lim->ipc_lock != LL_YES) {
		char size[48];
		bool tiny = lim->memlock_bytes < (1ULL << 30);
		struct ll_lint *l;

		size_text(lim->memlock_bytes, size, sizeof(size));
		plan_lint(s, tiny ? LL_LINT_ERROR : LL_LINT_WARNING, "RLIMIT_MEMLOCK",
			  "the locked-memory limit is %s (ulimit -l %llu) and this process lacks CAP_IPC_LOCK: "
			  "%s; raise it to unlimited: '* soft memlock unlimited' and '* hard memlock unlimited' in "
			  "/etc/security/limits.conf (then log in again), 'docker run --ulimit memlock=-1', or "
			  "LimitMEMLOCK=infinity in slurmd's systemd unit",
			  size, lim->memlock_bytes >> 10,
			  tiny ? "NCCL's RDMA memory registration will fail ('NCCL WARN Call to ibv_reg_mr failed')"
			       : "large jobs may fail to register NCCL's buffers (ibv_reg_mr)");
		l = &s->p->lints[s->p->n_lints - 1];
		l->blocking = tiny;
	} else if (lim->known && !lim->memlock_unlimited && lim->memlock_bytes < (1ULL << 30)) {
		char size[48];

		size_text(lim->memlock_bytes, size, sizeof(size));
		plan_lint(s, LL_LINT_INFO, "RLIMIT_MEMLOCK",
			  "the locked-memory limit is %s (ulimit -l %llu), which would stop RDMA memory registration, "
			  "but this process has CAP_IPC_LOCK: workers started as another user would fail",
			  size, lim->memlock_bytes >> 10);
	}
	ll_buf_init(&none);
	ll_buf_init(&missing);
	ll_buf_init(&denied);
	for (size_t d = 0; d < f->n_rdma; d++) {
		const struct ll_rdma_device *dev = &f->rdma[d];
		bool used = dev->rdma_class == LL_RDMA_CLASS_PLUGIN && plugin;

		for (size_t i = 0; !used && i < net->n_chosen; i++)
			used = net->chosen_dev[i] == d;
		if (!used)
			continue;
		if (dev->uverbs && !*dev->uverbs)
			ll_buf_addf(&none, "%s%s", none.len ? ", " : "", dev->name);
		else if (dev->uverbs_access == LL_UVERBS_MISSING)
			ll_buf_addf(&missing, "%s/dev/infiniband/%s (%s)", missing.len ? ", " : "", dev->uverbs, dev->name);
		else if (dev->uverbs_access == LL_UVERBS_DENIED)
			ll_buf_addf(&denied, "%s/dev/infiniband/%s (%s)", denied.len ? ", " : "", dev->uverbs, dev->name);
	}
	/* rdma-core opens /dev/infiniband/uverbsN (libibverbs/init.c); without it NCCL
	 * sees no device and uses TCP sockets. */
	if (none.len)
		plan_lint(s, LL_LINT_WARNING, "NCCL_IB_HCA",
			  "%s: no user-space verbs device (the kernel module ib_uverbs is not loaded): NCCL finds no "
			  "RDMA device and uses TCP sockets; load it: modprobe ib_uverbs",
			  none.s);
	if (missing.len)
		plan_lint(s, LL_LINT_WARNING, "NCCL_IB_HCA",
			  "%s missing: a container without the RDMA devices; NCCL finds none and uses TCP sockets; "
			  "pass them in: docker run --device=/dev/infiniband (or each uverbs device), or an RDMA "
			  "device plugin on Kubernetes",
			  missing.s);
	if (denied.len)
		plan_lint(s, LL_LINT_WARNING, "NCCL_IB_HCA",
			  "%s not readable and writable by this user: NCCL cannot open the device and uses TCP "
			  "sockets; give the user the device's group (often 'rdma') or fix its udev rule",
			  denied.s);
	ll_buf_release(&none);
	ll_buf_release(&missing);
	ll_buf_release(&denied);

	/* NCCL docs, troubleshooting/gpu_troubleshooting.rst: GPUDirect RDMA needs
	 * nvidia-peermem, or DMA-BUF with the open driver. */
	if (s->n_gpus > 0 && ll_facts_gdr_usable(f) == LL_NO)
		plan_lint(s, LL_LINT_WARNING, "NCCL_NET_GDR_LEVEL",
			  "GPUDirect RDMA is off: nvidia_peermem is not loaded and DMA-BUF is not usable (%s): NCCL "
			  "copies every transfer through host memory; load the module: sudo modprobe nvidia-peermem",
			  f->nvidia_open_module == LL_NO ? "NVIDIA's proprietary kernel module exports no DMA-BUF"
			  : f->dmabuf == LL_NO	       ? "it needs Linux 5.12 or later"
							: "DMA-BUF not usable");
}

void plan_lint_all(struct plan_state *s)
{
	const char *v;

	if ((v = user_value(s, "NCCL_IB_HCA", NULL)))
		lint_device_list(s, "NCCL_IB_HCA", v, rdma_name_at, true, "RDMA device");
	if ((v = user_value(s, "NCCL_SOCKET_IFNAME", NULL)))
		lint_device_list(s, "NCCL_SOCKET_IFNAME", v, netif_name_at, false, "network interface");
	if ((v = user_value(s, "GLOO_SOCKET_IFNAME", NULL)) && s->f->n_netifs > 0 && !ll_facts_netif(s->f, v))
		plan_lint(s, LL_LINT_WARNING, "GLOO_SOCKET_IFNAME", "'%s' names no network interface on this node", v);
	if ((v = user_value(s, "NCCL_IB_DISABLE", NULL)) && strcmp(v, "1") == 0 && s->net.active_ib_ports > 0)
		plan_lint(s, LL_LINT_WARNING, "NCCL_IB_DISABLE",
			  "InfiniBand is disabled while %d InfiniBand port%s ACTIVE: NCCL falls back to TCP sockets",
			  s->net.active_ib_ports, s->net.active_ib_ports == 1 ? " is" : "s are");
	lint_gdr_level(s);
	lint_debug(s);
	lint_plumbing(s);
	plan_lint_mnnvl(s);
	plan_lint_roce(s);
	plan_lint_nccl(s);
}
