/* The pure agreement decision on N synthetic nodes (default 10,000): 8-GPU nodes
 * with 8 InfiniBand ports, 40 leaf switches interleaved in launcher order, one
 * node with a port down (a soft difference to find and report). Prints one JSON
 * line: the median and worst of R runs of ll_agree_decide() in milliseconds, and the
 * full summaries it had to fetch. Usage: agree-logic [N [R]] */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "llmlaunch/agree.h"

static struct ll_summary **sums;

static struct ll_summary *node(size_t i)
{
	struct ll_summary *s = ll_calloc(1, sizeof(*s));
	struct ll_summary_if *f;

	s->host = ll_asprintf("gpu%05zu", i + 1);
	s->n_gpus = 8;
	s->gpu_model = ll_strdup("NVIDIA H100 80GB HBM3");
	s->nproc_per_node = 8;
	for (int k = 0; k < 8; k++) {
		struct ll_summary_port *p = ll_array_push(&s->ports, &s->n_ports, sizeof(*p));
		p->device = ll_asprintf("mlx5_%d", k);
		p->port = 1;
		p->state = LL_PORT_ACTIVE;
		p->link_layer = LL_LINK_LAYER_INFINIBAND;
		p->rate_gbps = 400;
	}
	s->gid_index = -1;
	s->gdr_ready = LL_YES;
	s->net = ll_strdup("ib");
	f = ll_array_push(&s->ifs, &s->n_ifs, sizeof(*f));
	f->name = ll_strdup("lo");
	f->kind = LL_SUMMARY_IF_LOOPBACK;
	f->family = AF_INET;
	f->addr = ll_strdup("127.0.0.1");
	f->prefixlen = 8;
	f = ll_array_push(&s->ifs, &s->n_ifs, sizeof(*f));
	f->name = ll_strdup("eno1");
	f->kind = LL_SUMMARY_IF_PHYSICAL;
	f->family = AF_INET;
	f->addr = ll_asprintf("10.%zu.%zu.%zu", (i + 1) / 65536, (i + 1) / 256 % 256, (i + 1) % 256);
	f->prefixlen = 8;
	return s;
}

static int fetch(void *data, size_t i, const struct ll_summary **ret, struct ll_error *err)
{
	(void)data;
	(void)err;
	*ret = sums[i];
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000;
	int runs = argc > 2 ? atoi(argv[2]) : 21;
	struct ll_agree_node *nodes = ll_calloc(n, sizeof(*nodes));
	double *ms = ll_calloc((size_t)runs, sizeof(double));
	size_t fetched = 0;
	struct ll_error err = { 0 };

	if (n < 1 || runs < 1)
		return 2;
	sums = ll_calloc(n, sizeof(*sums));
	for (size_t i = 0; i < n; i++) {
		sums[i] = node(i);
		if (i == n / 2)
			sums[i]->ports[3].state = LL_PORT_DOWN;
		nodes[i].name = ll_strdup(sums[i]->host);
		nodes[i].topology_addr = ll_asprintf("core.leaf%02zu.%s", i % 40, sums[i]->host);
		nodes[i].hw_digest = ll_summary_hw_digest(sums[i]);
		nodes[i].net_digest = ll_summary_net_digest(sums[i]);
		nodes[i].host_key = 1000 + i;
		nodes[i].port = 29500;
	}
	for (int r = 0; r < runs; r++) {
		struct ll_agree_input in = { .nodes = nodes, .n_nodes = n, .self = n - 1, .fetch = fetch };
		struct ll_agree_result res = { 0 };
		double t0 = now_ms();

		if (ll_agree_decide(&in, &res, &err) < 0) {
			fprintf(stderr, "agree-logic: %s\n", err.message);
			return 1;
		}
		ms[r] = now_ms() - t0;
		fetched = res.n_fetched;
		ll_agree_result_release(&res);
	}
	qsort(ms, (size_t)runs, sizeof(double), cmp_double);
	printf("{\"nodes\":%zu,\"runs\":%d,\"median_ms\":%.3f,\"max_ms\":%.3f,\"fetched\":%zu}\n", n, runs,
	       ms[runs / 2], ms[runs - 1], fetched);
	for (size_t i = 0; i < n; i++) {
		ll_agree_node_release(&nodes[i]);
		ll_summary_free(sums[i]);
	}
	free(sums);
	free(nodes);
	free(ms);
	return 0;
}
