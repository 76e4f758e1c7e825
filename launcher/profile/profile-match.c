/* Does a profile's `match` apply to this node's facts? Unknown facts never match:
 * a cloud profile must not apply because the probe could not read the DMI name. */
#include <ctype.h>
#include <fnmatch.h>
#include <string.h>

#include "llmlaunch/profile.h"

char *ll_rdma_driver_of(const char *name)
{
	size_t n = strlen(name);

	/* Kernel RDMA drivers name their devices DRIVER<N> or DRIVER_<N>. */
	while (n > 0 && isdigit((unsigned char)name[n - 1]))
		n--;
	if (n > 0 && n < strlen(name) && name[n - 1] == '_')
		n--;
	return ll_strndup(name, n);
}

static bool glob_any(char *const *globs, size_t n, const char *s)
{
	if (!s)
		return false;
	for (size_t i = 0; i < n; i++)
		if (fnmatch(globs[i], s, FNM_CASEFOLD) == 0)
			return true;
	return false;
}

/* A port counts when it is active, or when its state is unknown (plain lstopo
 * exports know the link layer of some ports but not their state). */
static bool port_usable(const struct ll_rdma_port *p)
{
	return p->state == LL_PORT_ACTIVE || p->state == LL_PORT_ACTIVE_DEFER || p->state == LL_PORT_STATE_UNKNOWN;
}

static void set_why(char **why, char *text)
{
	if (why)
		*why = text;
	else
		free(text);
}

static char *join(char *const *v, size_t n)
{
	struct ll_buf b;

	ll_buf_init(&b);
	for (size_t i = 0; i < n; i++)
		ll_buf_addf(&b, "%s'%s'", i ? ", " : "", v[i]);
	return ll_buf_detach(&b);
}

bool ll_profile_matches(const struct ll_profile *p, const struct ll_facts *f, char **why)
{
	const struct ll_profile_match *m = &p->match;
	_cleanup_free_ char *list = NULL;
	bool ok;

	if (why)
		*why = NULL;
	if (!m->present) {
		set_why(why, ll_strdup("no 'match': applies only when asked for"));
		return false;
	}
	if (!f) {
		set_why(why, ll_strdup("no facts about this node"));
		return false;
	}
	if (m->n_dmi_product_name) {
		if (!glob_any(m->dmi_product_name, m->n_dmi_product_name, f->dmi_product_name)) {
			list = join(m->dmi_product_name, m->n_dmi_product_name);
			set_why(why, ll_asprintf("dmi_product_name: '%s' is not %s",
						 f->dmi_product_name ? f->dmi_product_name : "unknown", list));
			return false;
		}
	}
	if (m->n_hostname && !glob_any(m->hostname, m->n_hostname, f->hostname)) {
		list = join(m->hostname, m->n_hostname);
		set_why(why, ll_asprintf("hostname: '%s' is not %s", f->hostname ? f->hostname : "unknown", list));
		return false;
	}
	if (m->gpu_count >= 0 && (size_t)m->gpu_count != f->n_gpus) {
		set_why(why, ll_asprintf("gpu_count: %zu GPUs, not %d", f->n_gpus, m->gpu_count));
		return false;
	}
	if (m->gpu_count_min >= 0 && f->n_gpus < (size_t)m->gpu_count_min) {
		set_why(why, ll_asprintf("gpu_count_min: %zu GPUs, fewer than %d", f->n_gpus, m->gpu_count_min));
		return false;
	}
	if (m->n_gpu_model) {
		ok = false;
		for (size_t i = 0; i < f->n_gpus && !ok; i++)
			ok = glob_any(m->gpu_model, m->n_gpu_model, f->gpus[i].model);
		if (!ok) {
			list = join(m->gpu_model, m->n_gpu_model);
			set_why(why, ll_asprintf("gpu_model: no GPU model is %s", list));
			return false;
		}
	}
	if (m->rdma != LL_UNKNOWN && (f->n_rdma > 0) != (m->rdma == LL_YES)) {
		set_why(why, ll_asprintf("rdma: the node has %zu RDMA devices", f->n_rdma));
		return false;
	}
	if (m->n_rdma_driver) {
		ok = false;
		for (size_t i = 0; i < f->n_rdma && !ok; i++) {
			_cleanup_free_ char *drv = ll_rdma_driver_of(f->rdma[i].name);
			ok = glob_any(m->rdma_driver, m->n_rdma_driver, drv);
		}
		if (!ok) {
			list = join(m->rdma_driver, m->n_rdma_driver);
			set_why(why, ll_asprintf("rdma_driver: no RDMA device of driver %s", list));
			return false;
		}
	}
	if (m->link_layer != LL_LINK_LAYER_UNKNOWN) {
		ok = false;
		for (size_t i = 0; i < f->n_rdma && !ok; i++)
			for (size_t j = 0; j < f->rdma[i].n_ports && !ok; j++)
				ok = f->rdma[i].ports[j].link_layer == m->link_layer && port_usable(&f->rdma[i].ports[j]);
		if (!ok) {
			set_why(why, ll_asprintf("link_layer: no usable %s port", ll_link_layer_name(m->link_layer)));
			return false;
		}
	}
	return true;
}
