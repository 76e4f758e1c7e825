/* The Prolog's verdict: the node's facts against the `expect` rules of its
 * profiles. A fault drains the node, so only what the facts really show counts:
 * anything unknown becomes a note, never a fault. */
#include <string.h>

#include "llmlaunch/slurm.h"

static void add(char ***v, size_t *n, char *s)
{
	*(char **)ll_array_push(v, n, sizeof(char *)) = s;
}

static bool port_active(const struct ll_rdma_port *p)
{
	return p->state == LL_PORT_ACTIVE || p->state == LL_PORT_ACTIVE_DEFER;
}

/* Ports of devices NCCL cannot use (usNIC, a bridge) or uses only on request
 * (software RDMA) are no RDMA ports for the job: they never make up the count. */
static bool device_counts(const struct ll_rdma_device *d)
{
	return d->rdma_class != LL_RDMA_CLASS_UNUSABLE && d->rdma_class != LL_RDMA_CLASS_SOFTWARE;
}

/* "mlx5_3:1 DOWN, mlx5_5:1 Ethernet": the ports that did not count, so the admin
 * sees which cable or switch port to look at. At most `max` are named. */
static void describe_missing(const struct ll_facts *f, enum ll_link_layer want, struct ll_buf *out)
{
	const size_t max = 4;
	size_t shown = 0, more = 0;

	for (size_t i = 0; i < f->n_rdma; i++)
		for (size_t j = 0; j < f->rdma[i].n_ports; j++) {
			const struct ll_rdma_port *p = &f->rdma[i].ports[j];
			const char *why;

			if (!device_counts(&f->rdma[i]))
				why = ll_rdma_class_name(f->rdma[i].rdma_class);
			else if (!port_active(p))
				why = ll_port_state_name(p->state) ? ll_port_state_name(p->state) : "state unknown";
			else if (want != LL_LINK_LAYER_UNKNOWN && p->link_layer != want && p->link_layer != LL_LINK_LAYER_UNKNOWN)
				why = ll_link_layer_name(p->link_layer);
			else
				continue;
			if (shown == max) {
				more++;
				continue;
			}
			ll_buf_addf(out, "%s%s:%u %s", shown ? ", " : " (", f->rdma[i].name, p->number, why);
			shown++;
		}
	if (more)
		ll_buf_addf(out, " and %zu more", more);
	if (shown)
		ll_buf_addc(out, ')');
}

static void check_ports(const struct ll_facts *f, const struct ll_profile_expect *e, struct ll_health *h)
{
	enum ll_link_layer want = e->link_layer;
	const char *layer = ll_link_layer_name(want);
	size_t matched = 0, unknown_layer = 0, needed;
	struct ll_buf b;

	if (e->active_rdma_ports < 0 && want == LL_LINK_LAYER_UNKNOWN)
		return;
	h->n_stated += (e->active_rdma_ports >= 0) + (want != LL_LINK_LAYER_UNKNOWN);
	if (!f->netdevs_known) {
		add(&h->notes, &h->n_notes,
		    ll_strdup("RDMA devices are unknown (a topology without network OS devices): ports not checked"));
		return;
	}
	for (size_t i = 0; i < f->n_rdma; i++)
		for (size_t j = 0; j < f->rdma[i].n_ports; j++) {
			const struct ll_rdma_port *p = &f->rdma[i].ports[j];

			if (!port_active(p) || !device_counts(&f->rdma[i]))
				continue;
			if (want == LL_LINK_LAYER_UNKNOWN || p->link_layer == want)
				matched++;
			else if (p->link_layer == LL_LINK_LAYER_UNKNOWN)
				unknown_layer++;
		}
	needed = e->active_rdma_ports >= 0 ? (size_t)e->active_rdma_ports : 1;
	if (matched >= needed) {
		h->n_checked += (e->active_rdma_ports >= 0) + (want != LL_LINK_LAYER_UNKNOWN);
		return;
	}
	if (matched + unknown_layer >= needed) {
		/* Enough active ports, but the snapshot does not say their link layer
		 * (a plain lstopo export): cannot tell, so do not drain. */
		add(&h->notes, &h->n_notes,
		    ll_asprintf("%zu active RDMA port(s) have no known link layer: cannot check that %zu are %s",
				unknown_layer, needed, layer));
		return;
	}
	h->n_checked += (e->active_rdma_ports >= 0) + (want != LL_LINK_LAYER_UNKNOWN);
	ll_buf_init(&b);
	if (e->active_rdma_ports >= 0)
		ll_buf_addf(&b, "expected at least %d active %s%sRDMA port%s, found %zu", e->active_rdma_ports,
			    layer ? layer : "", layer ? " " : "", e->active_rdma_ports == 1 ? "" : "s", matched);
	else
		ll_buf_addf(&b, "expected an active %s RDMA port, found none", layer);
	describe_missing(f, want, &b);
	add(&h->faults, &h->n_faults, ll_buf_detach(&b));
	ll_buf_release(&b);
}

/* The RDMA ports a profile expects must be usable from user space: the uverbs device
 * exists (rdma-core opens /dev/infiniband/uverbsN). The Prolog runs as root on the
 * host, so "missing" is a node fault (ib_uverbs not loaded, udev not creating the
 * node); access rights of one user are no node fault and are not judged here. */
static void check_uverbs(const struct ll_facts *f, const struct ll_profile_expect *e, struct ll_health *h)
{
	struct ll_buf b;

	if (e->active_rdma_ports < 0 && e->link_layer == LL_LINK_LAYER_UNKNOWN)
		return;
	ll_buf_init(&b);
	for (size_t i = 0; i < f->n_rdma; i++) {
		const struct ll_rdma_device *d = &f->rdma[i];
		bool active = false;

		for (size_t j = 0; j < d->n_ports; j++)
			active |= port_active(&d->ports[j]);
		if (!active || !device_counts(d))
			continue;
		if (d->uverbs && !*d->uverbs)
			ll_buf_addf(&b, "%s%s has no uverbs device (ib_uverbs not loaded)", b.len ? ", " : "", d->name);
		else if (d->uverbs_access == LL_UVERBS_MISSING)
			ll_buf_addf(&b, "%s/dev/infiniband/%s of %s is missing (udev)", b.len ? ", " : "", d->uverbs, d->name);
	}
	if (b.len)
		add(&h->faults, &h->n_faults, ll_asprintf("RDMA devices unusable from user space: %s", b.s));
	ll_buf_release(&b);
}

/* A fabric reached only through aws-ofi-nccl without the plugin: jobs still run,
 * over TCP sockets, so an image problem to report, never a drain. */
static void check_plugin(const struct ll_facts *f, struct ll_health *h)
{
	struct ll_buf names;

	if (!f->net_plugins_known)
		return;
	for (size_t i = 0; i < f->n_net_plugins; i++)
		if (ll_facts_net_plugin_is_ofi(f, i))
			return;
	ll_buf_init(&names);
	for (size_t i = 0; i < f->n_rdma; i++)
		if (f->rdma[i].rdma_class == LL_RDMA_CLASS_PLUGIN)
			ll_buf_addf(&names, "%s%s", names.len ? ", " : "", f->rdma[i].name);
	for (size_t i = 0; i < f->n_netifs; i++)
		if (f->netifs[i].slingshot)
			ll_buf_addf(&names, "%s%s", names.len ? ", " : "", f->netifs[i].name);
	if (names.len)
		add(&h->notes, &h->n_notes,
		    ll_asprintf("%s need the aws-ofi-nccl net plugin, which is not on the library path: NCCL jobs "
				"here fall back to TCP sockets",
				names.s));
	ll_buf_release(&names);
}

static void health_check_one(const struct ll_facts *f, const struct ll_profile_expect *e, struct ll_health *h)
{
	*h = (struct ll_health){ 0 };

	if (e->gpus >= 0 && !f->gpus_known) {
		h->n_stated++;
		add(&h->notes, &h->n_notes,
		    ll_asprintf("GPUs are unknown, %s: the GPU count is not checked",
				ll_facts_gpus_unknown_why(f)));
	} else if (e->gpus >= 0) {
		h->n_stated++;
		h->n_checked++;
		if (f->n_gpus < (size_t)e->gpus)
			add(&h->faults, &h->n_faults,
			    ll_asprintf("expected %d GPU%s, found %zu", e->gpus, e->gpus == 1 ? "" : "s", f->n_gpus));
	}
	check_ports(f, e, h);
	check_uverbs(f, e, h);
	check_plugin(f, h);
	if (e->gdr_required == LL_YES) {
		h->n_stated++;
		enum ll_tristate usable = ll_facts_gdr_usable(f);

		if (usable == LL_UNKNOWN) {
			add(&h->notes, &h->n_notes,
			    ll_strdup("GPUDirect RDMA readiness is unknown (a snapshot without it): not checked"));
		} else {
			h->n_checked++;
			/* DMA-BUF (Linux 5.12+, NVIDIA's open module) does without the module. */
			if (usable != LL_YES)
				add(&h->faults, &h->n_faults,
				    ll_strdup("GPUDirect RDMA is required but neither nvidia_peermem nor nv_peer_mem "
					      "is loaded, and DMA-BUF is not usable"));
		}
	}
}

static bool in_strv(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

void ll_health_check(const struct ll_facts *f, const struct ll_profile_expect *e, struct ll_health *h)
{
	struct ll_profile_expect local = *e;
	struct ll_health all;

	/* Only what local profiles and the site's config state may drain the node. */
	if (!e->fetched) {
		health_check_one(f, e, h);
		return;
	}
	if (e->fetched & LL_EXPECT_GPUS)
		local.gpus = -1;
	if (e->fetched & LL_EXPECT_ACTIVE_RDMA_PORTS)
		local.active_rdma_ports = -1;
	if (e->fetched & LL_EXPECT_LINK_LAYER)
		local.link_layer = LL_LINK_LAYER_UNKNOWN;
	if (e->fetched & LL_EXPECT_GDR_REQUIRED)
		local.gdr_required = LL_UNKNOWN;
	health_check_one(f, &local, h);
	/* What a fetched profile adds is said, never acted on. */
	health_check_one(f, e, &all);
	for (size_t i = 0; i < all.n_faults; i++)
		if (!in_strv(h->faults, h->n_faults, all.faults[i]))
			add(&h->notes, &h->n_notes,
			    ll_asprintf("%s (stated by a profile fetched over the network: a warning, it cannot drain the "
					"node)",
					all.faults[i]));
	for (size_t i = 0; i < all.n_notes; i++)
		if (!in_strv(h->notes, h->n_notes, all.notes[i]))
			add(&h->notes, &h->n_notes, ll_strdup(all.notes[i]));
	h->n_stated = all.n_stated;
	h->n_checked = all.n_checked;
	ll_health_release(&all);
}

void ll_health_release(struct ll_health *h)
{
	ll_strv_free(h->faults, h->n_faults);
	ll_strv_free(h->notes, h->n_notes);
	*h = (struct ll_health){ 0 };
}

char *ll_health_faults_line(const struct ll_health *h)
{
	struct ll_buf b;

	if (h->n_faults == 0)
		return NULL;
	ll_buf_init(&b);
	for (size_t i = 0; i < h->n_faults; i++)
		ll_buf_addf(&b, "%s%s", i ? "; " : "", h->faults[i]);
	return ll_buf_detach(&b);
}
