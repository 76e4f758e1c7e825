/* The node summary other nodes read, its compact JSON form and its digests, and
 * the one-line record every node publishes. Pure: no I/O. */
#include "llmlaunch/agree.h"
#include "llmlaunch/hash.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <string.h>
#include <sys/socket.h>

static const char *const if_kind_codes[] = {
	[LL_SUMMARY_IF_PHYSICAL] = "p", [LL_SUMMARY_IF_IPOIB] = "i", [LL_SUMMARY_IF_VIRTUAL] = "v",
	[LL_SUMMARY_IF_CONTAINER] = "c", [LL_SUMMARY_IF_LOOPBACK] = "l",
};

/* Summaries without the sixth port field (older llmlaunch) read as unknown. */
static const char *const rdma_class_codes[] = {
	[LL_RDMA_CLASS_UNKNOWN] = "?", [LL_RDMA_CLASS_VERBS] = "v", [LL_RDMA_CLASS_PLUGIN] = "p",
	[LL_RDMA_CLASS_SOFTWARE] = "s", [LL_RDMA_CLASS_UNUSABLE] = "u",
};

static const char *const link_layer_codes[] = {
	[LL_LINK_LAYER_UNKNOWN] = "?", [LL_LINK_LAYER_INFINIBAND] = "IB", [LL_LINK_LAYER_ETHERNET] = "Eth",
};

void ll_summary_free(struct ll_summary *s)
{
	if (!s)
		return;
	free(s->host);
	free(s->gpu_model);
	for (size_t i = 0; i < s->n_ports; i++)
		free(s->ports[i].device);
	free(s->ports);
	free(s->net);
	free(s->ib_hca);
	free(s->qos);
	for (size_t i = 0; i < s->n_ifs; i++) {
		free(s->ifs[i].name);
		free(s->ifs[i].addr);
	}
	free(s->ifs);
	free(s);
}

static json_t *json_string_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

char *ll_summary_serialize(const struct ll_summary *s)
{
	json_t *root = json_object(), *ports = json_array(), *ifs = json_array();
	char *text;

	json_object_set_new(root, "v", json_integer(1));
	json_object_set_new(root, "host", json_string_or_null(s->host));
	json_object_set_new(root, "gpus", json_integer(s->n_gpus));
	json_object_set_new(root, "model", json_string_or_null(s->gpu_model));
	json_object_set_new(root, "nproc", json_integer(s->nproc_per_node));
	if (s->master_port > 0)
		json_object_set_new(root, "mport", json_integer(s->master_port));
	for (size_t i = 0; i < s->n_ports; i++) {
		const struct ll_summary_port *p = &s->ports[i];
		json_array_append_new(ports, json_pack("[s,i,i,s,f,s]", p->device ? p->device : "?", (int)p->port,
						       (int)p->state, link_layer_codes[p->link_layer],
						       p->rate_gbps, rdma_class_codes[p->rdma_class]));
	}
	json_object_set_new(root, "ports", ports);
	json_object_set_new(root, "gid", json_integer(s->gid_index));
	json_object_set_new(root, "gdr", json_integer(s->gdr_ready));
	json_object_set_new(root, "net", json_string_or_null(s->net));
	json_object_set_new(root, "hca", json_string_or_null(s->ib_hca));
	if (s->qos)
		json_object_set_new(root, "qos", json_string(s->qos));
	for (size_t i = 0; i < s->n_ifs; i++) {
		const struct ll_summary_if *f = &s->ifs[i];
		json_array_append_new(ifs, json_pack("[s,s,i,s,i]", f->name, if_kind_codes[f->kind],
						     f->family == AF_INET6 ? 6 : 4, f->addr, (int)f->prefixlen));
	}
	json_object_set_new(root, "if", ifs);
	text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!text)
		abort(); /* only on out-of-memory */
	return text;
}

static int code_index(const char *const *codes, size_t n, const char *code)
{
	for (size_t i = 0; i < n; i++)
		if (codes[i] && strcmp(codes[i], code) == 0)
			return (int)i;
	return -1;
}

static char *dup_or_null(json_t *v)
{
	return json_is_string(v) ? ll_strdup(json_string_value(v)) : NULL;
}

int ll_summary_parse(const char *text, const char *who, struct ll_summary **ret, struct ll_error *err)
{
	_cleanup_(ll_summary_freep) struct ll_summary *s = ll_calloc(1, sizeof(*s));
	json_error_t jerr;
	json_t *root, *ports, *ifs, *v;
	size_t i;
	int version = 0, gdr = LL_UNKNOWN;

	root = json_loads(text, 0, &jerr);
	if (!root)
		return ll_error_set(err, -EINVAL, "summary from node '%s' is not JSON: %s", who, jerr.text);
	if (json_unpack_ex(root, &jerr, 0, "{s:i,s:i,s:i,s:o,s:i,s:i,s:o}", "v", &version, "gpus", &s->n_gpus,
			   "nproc", &s->nproc_per_node, "ports", &ports, "gid", &s->gid_index, "gdr", &gdr, "if",
			   &ifs) < 0 ||
	    version != 1 || !json_is_array(ports) || !json_is_array(ifs)) {
		json_decref(root);
		return ll_error_set(err, -EINVAL, "summary from node '%s' is not a version 1 summary", who);
	}
	s->gdr_ready = gdr < 0 ? LL_UNKNOWN : gdr ? LL_YES : LL_NO;
	s->host = dup_or_null(json_object_get(root, "host"));
	s->gpu_model = dup_or_null(json_object_get(root, "model"));
	s->net = dup_or_null(json_object_get(root, "net"));
	s->ib_hca = dup_or_null(json_object_get(root, "hca"));
	/* Absent in summaries of older llmlaunch: no RoCE QoS compared. */
	s->qos = dup_or_null(json_object_get(root, "qos"));
	v = json_object_get(root, "mport");
	s->master_port = json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= 65535
				 ? (int)json_integer_value(v)
				 : 0;

	json_array_foreach(ports, i, v) {
		struct ll_summary_port *p = ll_array_push(&s->ports, &s->n_ports, sizeof(*p));
		const char *dev, *ll;
		int port, state, layer;

		if (json_unpack(v, "[s,i,i,s,F]", &dev, &port, &state, &ll, &p->rate_gbps) < 0 ||
		    (layer = code_index(link_layer_codes, LL_ARRAY_SIZE(link_layer_codes), ll)) < 0 || port < 0 ||
		    state < 0 || state > LL_PORT_ACTIVE_DEFER) {
			json_decref(root);
			return ll_error_set(err, -EINVAL, "summary from node '%s': bad RDMA port entry %zu", who, i);
		}
		{
			json_t *cls = json_array_get(v, 5);
			int c = json_is_string(cls) ? code_index(rdma_class_codes, LL_ARRAY_SIZE(rdma_class_codes),
								  json_string_value(cls))
						    : 0;

			p->rdma_class = c > 0 ? (enum ll_rdma_class)c : LL_RDMA_CLASS_UNKNOWN;
		}
		p->device = ll_strdup(dev);
		p->port = (unsigned)port;
		p->state = (enum ll_port_state)state;
		p->link_layer = (enum ll_link_layer)layer;
	}
	json_array_foreach(ifs, i, v) {
		struct ll_summary_if *f = ll_array_push(&s->ifs, &s->n_ifs, sizeof(*f));
		const char *name, *kind, *addr;
		int family, prefix, k;

		if (json_unpack(v, "[s,s,i,s,i]", &name, &kind, &family, &addr, &prefix) < 0 ||
		    (k = code_index(if_kind_codes, LL_ARRAY_SIZE(if_kind_codes), kind)) < 0 ||
		    (family != 4 && family != 6) || prefix < 0 || prefix > (family == 4 ? 32 : 128)) {
			json_decref(root);
			return ll_error_set(err, -EINVAL, "summary from node '%s': bad interface entry %zu", who, i);
		}
		f->name = ll_strdup(name);
		f->kind = (enum ll_summary_if_kind)k;
		f->family = family == 6 ? AF_INET6 : AF_INET;
		f->addr = ll_strdup(addr);
		f->prefixlen = (unsigned)prefix;
	}
	json_decref(root);
	*ret = LL_TAKE(s);
	return 0;
}

/* The digests are llmlaunch/hash.h's: stable across builds and machines, good enough
 * to tell summaries apart (a collision only skips a report, never merges two plans). */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int ll_summary_active_ports(const struct ll_summary *s)
{
	int n = 0;

	for (size_t i = 0; i < s->n_ports; i++)
		if (s->ports[i].state == LL_PORT_ACTIVE || s->ports[i].state == LL_PORT_ACTIVE_DEFER)
			n++;
	return n;
}

uint64_t ll_summary_hw_digest(const struct ll_summary *s)
{
	struct ll_buf b;
	char **ports = ll_calloc(s->n_ports, sizeof(char *));
	uint64_t h;

	ll_buf_init(&b);
	ll_buf_addf(&b, "gpus=%d;model=%s;nproc=%d;mport=%d;gid=%d;gdr=%d;net=%s;hca=%s;qos=%s;ports=", s->n_gpus,
		    s->gpu_model ? s->gpu_model : "", s->nproc_per_node, s->master_port, s->gid_index,
		    (int)s->gdr_ready, s->net ? s->net : "", s->ib_hca ? s->ib_hca : "", s->qos ? s->qos : "");
	for (size_t i = 0; i < s->n_ports; i++)
		ports[i] = ll_asprintf("%s:%u:%d:%d:%.1f:%d", s->ports[i].device ? s->ports[i].device : "",
				       s->ports[i].port, (int)s->ports[i].state, (int)s->ports[i].link_layer,
				       s->ports[i].rate_gbps, (int)s->ports[i].rdma_class);
	qsort(ports, s->n_ports, sizeof(char *), cmp_str);
	for (size_t i = 0; i < s->n_ports; i++) {
		ll_buf_add(&b, ports[i]);
		ll_buf_addc(&b, ',');
		free(ports[i]);
	}
	free(ports);
	h = ll_hash(b.s, b.len);
	ll_buf_release(&b);
	return h;
}

static void mask_add(struct ll_buf *b, int mask)
{
	bool any = false;

	if (mask < 0) {
		ll_buf_add(b, "?");
		return;
	}
	for (int p = 0; p < 8; p++)
		if (mask & (1 << p)) {
			ll_buf_addf(b, "%s%d", any ? "," : "", p);
			any = true;
		}
	if (!any)
		ll_buf_add(b, "none");
}

char *ll_summary_qos_text(const struct ll_facts *f, const struct ll_plan *plan)
{
	const char *tc = plan ? ll_plan_value(plan, "NCCL_IB_TC") : NULL;
	char **texts = NULL;
	size_t n = 0;
	struct ll_buf b;
	char *ret;

	for (size_t d = 0; d < f->n_rdma; d++)
		for (size_t k = 0; k < f->rdma[d].n_ports; k++) {
			const struct ll_rdma_port *p = &f->rdma[d].ports[k];
			const struct ll_port_qos *q = &p->qos;
			struct ll_buf t;
			bool seen = false;

			if (p->link_layer != LL_LINK_LAYER_ETHERNET ||
			    (p->state != LL_PORT_ACTIVE && p->state != LL_PORT_ACTIVE_DEFER))
				continue;
			ll_buf_init(&t);
			if (!q->read)
				ll_buf_add(&t, "not read");
			else if (q->forced_tclass >= 0)
				ll_buf_addf(&t, "forced %d", q->forced_tclass);
			else
				ll_buf_add(&t, q->forced_tclass == -1 ? "forced none" : "forced ?");
			if (q->read) {
				ll_buf_addf(&t, ", trust %s, PFC ", q->trust == LL_QOS_TRUST_DSCP ? "dscp"
								    : q->trust == LL_QOS_TRUST_PCP ? "pcp" : "?");
				mask_add(&t, q->pfc_mask);
				ll_buf_add(&t, ", ECN ");
				mask_add(&t, q->ecn_rp_mask);
			}
			if (q->active_mtu > 0)
				ll_buf_addf(&t, ", RoCE MTU %d", q->active_mtu);
			else
				ll_buf_add(&t, ", RoCE MTU ?");
			for (size_t i = 0; i < n && !seen; i++)
				seen = strcmp(texts[i], t.s) == 0;
			if (seen)
				ll_buf_release(&t);
			else
				*(char **)ll_array_push(&texts, &n, sizeof(char *)) = ll_buf_detach(&t);
		}
	if (n == 0)
		return NULL;
	qsort(texts, n, sizeof(char *), cmp_str);
	ll_buf_init(&b);
	ll_buf_addf(&b, "class %s;", tc ? tc : "unset");
	for (size_t i = 0; i < n; i++) {
		ll_buf_addf(&b, "%s %s", i ? " /" : "", texts[i]);
		free(texts[i]);
	}
	free(texts);
	ret = ll_buf_detach(&b);
	ll_buf_release(&b);
	return ret;
}

char *ll_subnet_of(int family, const char *addr, unsigned prefixlen)
{
	unsigned char bytes[16];
	char text[INET6_ADDRSTRLEN];
	unsigned len = family == AF_INET6 ? 16 : 4;

	if (!addr || (family != AF_INET && family != AF_INET6) || prefixlen > len * 8 ||
	    inet_pton(family, addr, bytes) != 1)
		return NULL;
	for (unsigned i = 0; i < len; i++) {
		unsigned keep = prefixlen > i * 8 ? prefixlen - i * 8 : 0;
		if (keep < 8)
			bytes[i] &= (unsigned char)(0xff00u >> keep);
	}
	if (!inet_ntop(family, bytes, text, sizeof(text)))
		return NULL;
	return ll_asprintf("%s/%u", text, prefixlen);
}

uint64_t ll_summary_net_digest(const struct ll_summary *s)
{
	char **nets = ll_calloc(s->n_ifs, sizeof(char *));
	size_t n = 0;
	struct ll_buf b;
	uint64_t h;

	for (size_t i = 0; i < s->n_ifs; i++) {
		char *net;
		if (s->ifs[i].kind == LL_SUMMARY_IF_LOOPBACK || s->ifs[i].kind == LL_SUMMARY_IF_CONTAINER)
			continue;
		/* A host prefix (/32, /128: a cloud VM's address, a management path) is one
		 * node's alone, never a subnet two nodes share: it cannot change the choice,
		 * and counting it would give every node a digest of its own. */
		if (s->ifs[i].prefixlen == (s->ifs[i].family == AF_INET6 ? 128u : 32u))
			continue;
		net = ll_subnet_of(s->ifs[i].family, s->ifs[i].addr, s->ifs[i].prefixlen);
		if (net)
			nets[n++] = net;
	}
	qsort(nets, n, sizeof(char *), cmp_str);
	ll_buf_init(&b);
	for (size_t i = 0; i < n; i++) {
		/* A set: two addresses in one subnet count once. */
		if (i == 0 || strcmp(nets[i], nets[i - 1]) != 0) {
			ll_buf_add(&b, nets[i]);
			ll_buf_addc(&b, ',');
		}
	}
	for (size_t i = 0; i < n; i++)
		free(nets[i]);
	free(nets);
	h = ll_hash(b.s, b.len);
	ll_buf_release(&b);
	return h;
}

char *ll_agree_node_format(const struct ll_agree_node *n)
{
	/* Nodes in no clique (most of the world) publish the record as before. */
	_cleanup_free_ char *clique = n->clique.state != LL_CLIQUE_NONE ? ll_agree_clique_format(&n->clique) : NULL;

	return ll_asprintf("%016" PRIx64 " %016" PRIx64 " %016" PRIx64 " %d %s%s%s", n->hw_digest, n->net_digest,
			   n->host_key, n->port,
			   n->topology_addr && *n->topology_addr ? n->topology_addr : "-", clique ? " " : "",
			   clique ? clique : "");
}

int ll_agree_node_parse(const char *text, const char *who, struct ll_agree_node *ret, struct ll_error *err)
{
	uint64_t hw, net, host;
	int port, used = 0, used_clique = 0;
	char topo[256], clique[300] = "-";

	/* The clique field is newer: a record without it is a node without a clique. */
	if (!text || sscanf(text, "%" SCNx64 " %" SCNx64 " %" SCNx64 " %d %255s%n", &hw, &net, &host, &port, topo,
			    &used) != 5 ||
	    (text[used] != '\0' && (sscanf(text + used, " %299s%n", clique, &used_clique) != 1 ||
				     text[used + used_clique] != '\0')) ||
	    port < 0 || port > 65535 || ll_agree_clique_parse(clique, &ret->clique) < 0)
		return ll_error_set(err, -EINVAL, "record from node '%s' is malformed: '%.80s'", who,
				    text ? text : "");
	ret->hw_digest = hw;
	ret->net_digest = net;
	ret->host_key = host;
	ret->port = port;
	free(ret->topology_addr);
	ret->topology_addr = strcmp(topo, "-") == 0 ? NULL : ll_strdup(topo);
	return 0;
}

void ll_agree_node_release(struct ll_agree_node *n)
{
	free(n->name);
	free(n->topology_addr);
	n->name = n->topology_addr = NULL;
	ll_agree_clique_release(&n->clique);
}
