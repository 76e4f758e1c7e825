/* The agreement's entry (launcher/agree/agree-run.c) on the project's own fixture
 * (tests/fixtures/hwloc/two-socket-4gpu-2hca.xml): the single-node backend, which
 * every path shares (run, env, explain), with and without the user's own torchrun
 * rendezvous flags, the provenance it writes into the plan, and the one view of
 * interface kinds that the planner and the node summary share. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "llmlaunch/agree.h"
#include "llmlaunch/probe.h"

static char *const no_environ[] = { NULL };

struct node {
	hwloc_topology_t topo;
	struct ll_facts *facts;
	struct ll_plan *plan;
};

static hwloc_topology_t load_fixture(void)
{
	const char *fixtures = getenv("LL_FIXTURES");
	_cleanup_free_ char *path = NULL;
	struct ll_probe_options opts = { 0 };
	struct ll_error err = { 0 };
	hwloc_topology_t topo = NULL;

	assert_non_null(fixtures);
	path = ll_asprintf("%s/hwloc/two-socket-4gpu-2hca.xml", fixtures);
	opts.topology_file = path;
	if (ll_probe_load(&opts, &topo, &err) < 0)
		fail_msg("cannot load the fixture: %s", err.message);
	return topo;
}

/* The plan with these command-line values (torchrun's flags as run passes them),
 * under `launcher` (NULL: none). */
static int node_plan_with(struct node *n, const struct ll_assignment *cli, size_t n_cli, const char *launcher,
			  struct ll_error *err)
{
	struct ll_plan_input in = {
		.facts = n->facts, .environ = no_environ, .nnodes = 1, .cli = cli, .n_cli = n_cli, .launcher = launcher,
	};

	ll_plan_free(n->plan);
	n->plan = NULL;
	return ll_plan_build(&in, &n->plan, err);
}

static void node_plan(struct node *n)
{
	struct ll_error err = { 0 };

	if (node_plan_with(n, NULL, 0, NULL, &err) < 0)
		fail_msg("ll_plan_build: %s", err.message);
}

static void node_load(struct node *n)
{
	struct ll_error err = { 0 };

	n->topo = load_fixture();
	if (ll_probe_facts(n->topo, "fixture", &n->facts, &err) < 0)
		fail_msg("ll_probe_facts: %s", err.message);
	node_plan(n);
}

static void node_release(struct node *n)
{
	ll_plan_free(n->plan);
	ll_facts_free(n->facts);
	hwloc_topology_destroy(n->topo);
}

static void assert_setting(const struct ll_plan *p, const char *name, const char *value, enum ll_source source,
			   const char *reason_part)
{
	const struct ll_setting *s = ll_plan_get(p, name);

	if (!s)
		fail_msg("no setting '%s'", name);
	if (value && !ll_streq(s->value, value))
		fail_msg("%s = '%s', expected '%s'", name, s->value ? s->value : "(unset)", value);
	if (s->source != source)
		fail_msg("%s comes from %s, expected %s", name, ll_source_name(s->source), ll_source_name(source));
	if (!s->reason || !strstr(s->reason, reason_part))
		fail_msg("%s: reason '%s' does not say '%s'", name, s->reason ? s->reason : "", reason_part);
}

/* Binding the wildcard address (both families when the kernel allows) works. */
static bool free_on_wildcard(int port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port), .sin6_addr = in6addr_any };
	struct sockaddr_in b = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET6, SOCK_STREAM, 0), ok;

	if (fd >= 0) {
		ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
		close(fd);
		return ok;
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ok = fd >= 0 && bind(fd, (struct sockaddr *)&b, sizeof(b)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

/* No launcher, no flags: one node, a port chosen on the wildcard address, and every
 * value in the plan with where it came from. */
static void test_single_node_defaults(void **state)
{
	struct ll_agree_options o = { .environ = no_environ };
	struct ll_cluster c = { 0 };
	struct ll_error err = { 0 };
	struct node n = { 0 };

	(void)state;
	node_load(&n);
	assert_int_equal(ll_agree(n.plan, n.facts, &o, &c, &err), 0);
	assert_int_equal(c.backend, LL_AGREE_SINGLE);
	assert_int_equal(c.nnodes, 1);
	assert_int_equal(c.node_rank, 0);
	assert_string_equal(c.master_addr, "127.0.0.1");
	assert_true(c.master_port > 0 && c.master_port < 65536);
	assert_true(free_on_wildcard(c.master_port));
	assert_int_equal(c.n_notes, 0);
	assert_setting(n.plan, "torchrun.nnodes", "1", LL_SOURCE_CLUSTER, "one node");
	assert_setting(n.plan, "torchrun.master_addr", "127.0.0.1", LL_SOURCE_CLUSTER, "this node");
	assert_setting(n.plan, "torchrun.master_port", NULL, LL_SOURCE_CLUSTER, "free on every address of this node");
	assert_setting(n.plan, "agreement", NULL, LL_SOURCE_DEFAULT, "no launcher");
	/* Nothing for hand-written multi-node launches: there are no other nodes. */
	assert_null(ll_plan_get(n.plan, "MASTER_ADDR"));
	ll_cluster_release(&c);
	node_release(&n);
}

/* The user's own torchrun flags: kept as given, marked as coming from the command
 * line, and no port of ours chosen for a rendezvous that spans nodes. */
static void test_single_node_user_flags(void **state)
{
	const struct ll_assignment flags[] = {
		{ "torchrun.nnodes", "2", "--nnodes" },
		{ "torchrun.node_rank", "1", "--node-rank" },
		{ "torchrun.master_addr", "203.0.113.7", "--master-addr" },
		{ "torchrun.master_port", "29511", "--master-port" },
	};
	const struct ll_assignment standalone[] = { { "torchrun.standalone", "1", "--standalone" } };
	struct ll_agree_options o = { .environ = no_environ };
	struct ll_cluster c = { 0 };
	struct ll_error err = { 0 };
	struct node n = { 0 };

	(void)state;
	node_load(&n);
	assert_int_equal(node_plan_with(&n, flags, 4, NULL, &err), 0);
	assert_int_equal(ll_agree(n.plan, n.facts, &o, &c, &err), 0);
	assert_int_equal(c.nnodes, 2);
	assert_int_equal(c.node_rank, 1);
	assert_string_equal(c.master_addr, "203.0.113.7");
	assert_int_equal(c.master_port, 29511);
	assert_setting(n.plan, "torchrun.nnodes", "2", LL_SOURCE_CLI, "--nnodes");
	assert_setting(n.plan, "torchrun.node_rank", "1", LL_SOURCE_CLI, "--node-rank");
	assert_setting(n.plan, "torchrun.master_addr", "203.0.113.7", LL_SOURCE_CLI, "--master-addr");
	assert_setting(n.plan, "torchrun.master_port", "29511", LL_SOURCE_CLI, "--master-port");
	assert_setting(n.plan, "agreement", NULL, LL_SOURCE_CLI, "--nnodes on the command line: you run the rendezvous");
	ll_cluster_release(&c);

	/* Several nodes without a master address: torchrun's default, said plainly. */
	assert_int_equal(node_plan_with(&n, flags, 2, NULL, &err), 0);
	assert_int_equal(ll_agree(n.plan, n.facts, &o, &c, &err), 0);
	assert_null(c.master_addr);
	assert_int_equal(c.master_port, 0);
	assert_int_equal(c.n_notes, 1);
	assert_non_null(strstr(c.notes[0], "--nnodes 2 without --master-addr"));
	assert_null(ll_plan_value(n.plan, "torchrun.master_port"));
	ll_cluster_release(&c);

	/* One node with --standalone: torchrun finds its own port. */
	assert_int_equal(node_plan_with(&n, standalone, 1, NULL, &err), 0);
	assert_int_equal(ll_agree(n.plan, n.facts, &o, &c, &err), 0);
	assert_int_equal(c.nnodes, 1);
	assert_int_equal(c.master_port, 0);
	ll_cluster_release(&c);
	node_release(&n);
}

/* Under a launcher's environment the user's rendezvous flags still mean "by hand",
 * and the plan says the launcher's world is not used. */
static void test_flags_beat_launcher(void **state)
{
	char *const slurm[] = { "SLURM_JOB_ID=7", "SLURM_JOB_NODELIST=localhost", "SLURM_NNODES=1", NULL };
	const struct ll_assignment flags[] = { { "torchrun.nnodes", "1", "--nnodes" } };
	const char *why = NULL;
	struct ll_agree_options o = { .environ = slurm };
	struct ll_cluster c = { 0 };
	struct ll_error err = { 0 };
	struct node n = { 0 };

	(void)state;
	node_load(&n);
	assert_int_equal(ll_agree_detect(slurm), LL_AGREE_SLURM);
	assert_string_equal(ll_agree_launcher(slurm, &why), "slurm");
	assert_non_null(strstr(why, "SLURM_JOB_ID"));
	assert_int_equal(node_plan_with(&n, flags, 1, "slurm", &err), 0);
	assert_setting(n.plan, "agreement", NULL, LL_SOURCE_CLI, "the slurm launcher's world is not used");
	assert_int_equal(ll_agree(n.plan, n.facts, &o, &c, &err), 0);
	assert_int_equal(c.backend, LL_AGREE_SINGLE);
	ll_cluster_release(&c);
	node_release(&n);
}

/* Under a launcher the world is the agreement's: a value from the command line or a
 * local profile that would replace it is a usage error naming it, its origin and what
 * it would replace; a fetched profile sets none of it, launcher or not; the master
 * port and the workers per node are inputs the agreement proves. */
static void test_world_owned_by_agreement(void **state)
{
	const struct ll_assignment rank[] = { { "torchrun.node_rank", "3", "--node-rank" } };
	const struct ll_assignment port[] = { { "torchrun.master_port", "29555", "--set" } };
	const struct ll_assignment local[] = { { "torchrun.rdzv_endpoint", "203.0.113.66:29400", "site.yaml:4" } };
	const struct ll_assignment fetched[] = {
		{ "torchrun.rdzv_endpoint", "203.0.113.66:29400", "https://example.test/p.yaml:3", true },
	};
	const struct ll_assignment bad[] = { { "torchrun.redirects", "foo", "--set" } };
	struct ll_plan_input in = { .environ = no_environ, .nnodes = 1 };
	struct ll_error err = { 0 };
	struct node n = { 0 };

	(void)state;
	node_load(&n);
	assert_int_equal(node_plan_with(&n, rank, 1, "pmix", &err), -EINVAL);
	assert_non_null(strstr(err.message, "torchrun.node_rank=3 (--node-rank) would replace this node's rank, which the "
					    "pmix agreement decides"));
	ll_error_clear(&err);
	/* The port: an input, kept with its source, proved by the agreement. */
	assert_int_equal(node_plan_with(&n, port, 1, "pmix", &err), 0);
	assert_setting(n.plan, "torchrun.master_port", "29555", LL_SOURCE_CLI, "--set");
	assert_setting(n.plan, "agreement", "pmix", LL_SOURCE_ENVIRONMENT, "the nodes agree");

	/* A local profile's rendezvous: under a launcher, refused; alone, used. */
	in.facts = n.facts;
	in.profile = local;
	in.n_profile = 1;
	in.launcher = "slurm";
	ll_plan_free(n.plan);
	n.plan = NULL;
	assert_int_equal(ll_plan_build(&in, &n.plan, &err), -EINVAL);
	assert_non_null(strstr(err.message, "(site.yaml:4) would replace the rendezvous endpoint"));
	ll_error_clear(&err);
	in.launcher = NULL;
	assert_int_equal(ll_plan_build(&in, &n.plan, &err), 0);
	assert_setting(n.plan, "torchrun.rdzv_endpoint", "203.0.113.66:29400", LL_SOURCE_PROFILE, "site.yaml:4");
	ll_plan_free(n.plan);
	n.plan = NULL;

	/* A fetched one: never, even alone. */
	in.profile = fetched;
	assert_int_equal(ll_plan_build(&in, &n.plan, &err), -EINVAL);
	assert_non_null(strstr(err.message, "a profile fetched over the network may not set the rendezvous endpoint"));
	ll_error_clear(&err);

	/* A value torchrun would crash on is our usage error. */
	assert_int_equal(node_plan_with(&n, bad, 1, NULL, &err), -EINVAL);
	assert_non_null(strstr(err.message, "torchrun.redirects=foo (--set): expected 0-3"));
	ll_error_clear(&err);
	node_release(&n);
}

static hwloc_obj_t find_osdev(hwloc_topology_t topo, const char *name)
{
	for (hwloc_obj_t o = hwloc_get_next_osdev(topo, NULL); o; o = hwloc_get_next_osdev(topo, o))
		if (o->name && strcmp(o->name, name) == 0)
			return o;
	fail_msg("no OS device '%s' in the fixture", name);
	return NULL;
}

/* A snapshot whose interfaces carry addresses but no kind (written by hand, or by
 * another tool): docker0 is a container bridge for the planner and for the summary
 * the other nodes see alike. They used to differ (planner: docker, skipped;
 * summary: physical). */
static void test_one_interface_view(void **state)
{
	struct ll_summary *s = NULL;
	struct ll_error err = { 0 };
	const struct ll_netif *docker, *eno1;
	struct node n = { 0 };
	hwloc_obj_t o;
	bool saw_docker = false;

	(void)state;
	n.topo = load_fixture();
	o = hwloc_topology_insert_misc_object(n.topo, hwloc_get_root_obj(n.topo), "docker0");
	assert_non_null(o);
	hwloc_obj_add_info(o, "LLMLaunchStandIn", "Network");
	hwloc_obj_add_info(o, "NetAddrsKnown", "1");
	hwloc_obj_add_info(o, "NetAddr", "203.0.113.1/24");
	o = find_osdev(n.topo, "eno1");
	hwloc_obj_add_info(o, "NetAddrsKnown", "1");
	hwloc_obj_add_info(o, "NetAddr", "198.51.100.10/24");
	if (ll_probe_facts(n.topo, "fixture", &n.facts, &err) < 0)
		fail_msg("ll_probe_facts: %s", err.message);

	docker = ll_facts_netif(n.facts, "docker0");
	assert_non_null(docker);
	assert_int_equal(docker->kind, LL_NETIF_DOCKER);
	assert_true(docker->kind_inferred);
	eno1 = ll_facts_netif(n.facts, "eno1");
	assert_int_equal(eno1->kind, LL_NETIF_ETHERNET);
	assert_true(eno1->kind_inferred);
	assert_int_equal(ll_netif_role(docker->kind, docker->virtual_), LL_NETIF_ROLE_CONTAINER);

	node_plan(&n);
	/* ib0 (IPoIB on mlx5_0's ACTIVE port) is first; docker0 is skipped as docker. */
	assert_string_equal(ll_plan_value(n.plan, "NCCL_SOCKET_IFNAME"), "=ib0");
	assert_non_null(strstr(ll_plan_get(n.plan, "NCCL_SOCKET_IFNAME")->reason, "skipped docker0 (docker)"));

	assert_int_equal(ll_summary_build(n.facts, n.plan, &s, &err), 0);
	for (size_t i = 0; i < s->n_ifs; i++) {
		if (strcmp(s->ifs[i].name, "docker0") == 0) {
			assert_int_equal(s->ifs[i].kind, LL_SUMMARY_IF_CONTAINER);
			saw_docker = true;
		} else if (strcmp(s->ifs[i].name, "eno1") == 0) {
			assert_int_equal(s->ifs[i].kind, LL_SUMMARY_IF_PHYSICAL);
		}
	}
	assert_true(saw_docker);
	ll_summary_free(s);
	node_release(&n);
}

/* The kinds inferred from a bare record, for every source that has one. */
static void test_kind_infer(void **state)
{
	(void)state;
	assert_int_equal(ll_netif_kind_infer("lo", NULL, false), LL_NETIF_LOOPBACK);
	assert_int_equal(ll_netif_kind_infer("docker0", NULL, false), LL_NETIF_DOCKER);
	assert_int_equal(ll_netif_kind_infer("br-3f2a9c1d7e60", NULL, false), LL_NETIF_DOCKER);
	assert_int_equal(ll_netif_kind_infer("veth9a1", NULL, false), LL_NETIF_VETH);
	assert_int_equal(ll_netif_kind_infer("virbr0", NULL, false), LL_NETIF_VIRBR);
	assert_int_equal(ll_netif_kind_infer("eth0", "3c:ec:ef:10:20:30", true), LL_NETIF_ETHERNET);
	/* A 6-byte address without a PCI device says nothing (a veth has one too). */
	assert_int_equal(ll_netif_kind_infer("eth0", "3c:ec:ef:10:20:30", false), LL_NETIF_UNKNOWN);
	assert_int_equal(ll_netif_kind_infer("ibp5s0", "00:00:10:87:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:a1:b2:c3",
					     true),
			 LL_NETIF_INFINIBAND);
	/* A name alone never makes IPoIB: "ib" is only a naming habit. */
	assert_int_equal(ll_netif_kind_infer("ib0", NULL, false), LL_NETIF_UNKNOWN);
	assert_int_equal(ll_netif_role(LL_NETIF_BRIDGE, true), LL_NETIF_ROLE_VIRTUAL);
	assert_int_equal(ll_netif_role(LL_NETIF_UNKNOWN, false), LL_NETIF_ROLE_PHYSICAL);
	assert_int_equal(ll_netif_role(LL_NETIF_UNKNOWN, true), LL_NETIF_ROLE_VIRTUAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_node_defaults),
		cmocka_unit_test(test_single_node_user_flags),
		cmocka_unit_test(test_flags_beat_launcher),
		cmocka_unit_test(test_world_owned_by_agreement),
		cmocka_unit_test(test_one_interface_view),
		cmocka_unit_test(test_kind_infer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
