/* Facts extracted from lstopo exports. The project's own fixture
 * ($LL_FIXTURES/hwloc/two-socket-4gpu-2hca.xml) always runs and gives exactly its
 * known facts. The real exports (../shared/realdata/hwloc_xml): every hwloc 1.x/2.x
 * file loads and yields facts, hwloc 3.x files fail with one clear message, and the
 * machines we know by heart give exactly their known facts; those cases skip one by
 * one when LL_REALDATA points nowhere. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "llmlaunch/file.h"
#include "llmlaunch/probe.h"

#include "realdata.h"

static char *xml_path(const char *rel)
{
	return ll_asprintf("%s/hwloc_xml/%s", realdata, rel);
}

/* The project's own fixture: a plain lstopo-style hwloc 2 export. */
static char *fixture_path(void)
{
	const char *fixtures = getenv("LL_FIXTURES");

	if (!fixtures)
		fail_msg("%s", "LL_FIXTURES is not set (tests/CMakeLists.txt sets it to tests/fixtures)");
	return ll_asprintf("%s/hwloc/two-socket-4gpu-2hca.xml", fixtures);
}

/* Load a snapshot through the same path as --topology. */
static struct ll_facts *facts_at(const char *path, hwloc_topology_t *ret_topo)
{
	struct ll_probe_options opts = { .topology_file = path };
	struct ll_error err = { 0 };
	struct ll_facts *f = NULL;
	hwloc_topology_t topo = NULL;
	int r;

	r = ll_probe(&opts, &topo, &f, &err);
	if (r < 0)
		fail_msg("%s: %s", path, err.message);
	assert_non_null(f);
	if (ret_topo)
		*ret_topo = topo;
	else
		hwloc_topology_destroy(topo);
	return f;
}

static struct ll_facts *facts_of(const char *rel, hwloc_topology_t *ret_topo)
{
	_cleanup_free_ char *path = xml_path(rel);

	return facts_at(path, ret_topo);
}

static int file_major(const char *path)
{
	_cleanup_free_ char *buf = NULL;
	const char *t, *v;

	if (ll_read_file(path, 64 << 20, &buf) < 0)
		return -1;
	t = strstr(buf, "<topology");
	if (!t)
		return -1;
	v = strstr(t, "version=\"");
	if (!v || v > strchr(t, '>'))
		return 1;
	return atoi(v + 9);
}

static void check_one_file(const char *path, int *n_ok, int *n_v3)
{
	struct ll_probe_options opts = { .topology_file = path };
	struct ll_error err = { 0 };
	struct ll_facts *f = NULL;
	hwloc_topology_t topo = NULL;
	int major = file_major(path);
	int r;

	r = ll_probe(&opts, &topo, &f, &err);
	if (major > 2) {
		assert_int_equal(r, -EPROTONOSUPPORT);
		assert_non_null(strstr(err.message, path));
		assert_non_null(strstr(err.message, "hwloc 3.x XML format"));
		assert_null(f);
		(*n_v3)++;
	} else {
		if (r < 0)
			fail_msg("%s: %s", path, err.message);
		assert_true(f->n_pus > 0);
		assert_true(f->n_numa_nodes > 0);
		assert_true(f->n_cores > 0);
		for (size_t i = 0; i < f->n_gpus; i++)
			assert_non_null(f->gpus[i].busid);
		/* Ports may be missing (hwloc-v2x-24em64t exports mlx4_0 bare). */
		for (size_t i = 0; i < f->n_rdma; i++)
			assert_non_null(f->rdma[i].name);
		ll_facts_free(f);
		hwloc_topology_destroy(topo);
		(*n_ok)++;
	}
	ll_error_clear(&err);
}

static void test_every_file(void **state)
{
	if (realdata_absent(__func__))
		skip();
	static const char *const dirs[] = { "", "psmgmt", "mpibind" };
	int n_ok = 0, n_v3 = 0;

	(void)state;
	for (size_t d = 0; d < LL_ARRAY_SIZE(dirs); d++) {
		_cleanup_free_ char *dir = xml_path(dirs[d]);
		DIR *dh = opendir(dir);
		struct dirent *e;

		assert_non_null(dh);
		while ((e = readdir(dh))) {
			_cleanup_free_ char *p = NULL;
			size_t len = strlen(e->d_name);

			if (len < 4 || strcmp(e->d_name + len - 4, ".xml") != 0)
				continue;
			p = ll_asprintf("%s/%s", dir, e->d_name);
			check_one_file(p, &n_ok, &n_v3);
		}
		closedir(dh);
	}
	/* 6 hwloc-v2x-*, 11 psmgmt, 5 mpibind load; 10 hwloc-*.xml are hwloc 3. */
	assert_int_equal(n_ok, 22);
	assert_int_equal(n_v3, 10);
}

/* JURECA-DC: each A100 shares a Broadcom PCIe switch with one ConnectX-6. */
static void test_jureca(void **state)
{
	if (realdata_absent(__func__))
		skip();
	static const char *const busids[] = { "0000:03:00.0", "0000:44:00.0", "0000:84:00.0", "0000:c4:00.0" };
	static const int gpu_numa[] = { 3, 1, 7, 5 };
	static const int nearest[] = { 0, 1, 2, 3 };
	static const long lids[] = { 0x154, 0x153, 0x14f, 0x150 };
	struct ll_facts *f = facts_of("psmgmt/topo.jrc0323.xml", NULL);

	(void)state;
	assert_int_equal(f->n_packages, 2);
	assert_int_equal(f->n_numa_nodes, 8);
	assert_int_equal(f->n_cores, 128);
	assert_int_equal(f->n_pus, 256);
	assert_int_equal(f->numa_nodes[0].n_cores, 16);
	assert_string_equal(f->numa_nodes[0].cpuset, "0-15,128-143");
	assert_string_equal(f->cores[0].cpuset, "0,128");
	assert_int_equal(f->cores[0].numa_node, 0);
	assert_string_equal(f->hostname, "jrc0323");

	assert_int_equal(f->n_gpus, 4);
	assert_int_equal(f->n_nvswitches, 0);
	for (size_t i = 0; i < 4; i++) {
		const struct ll_gpu *g = &f->gpus[i];

		assert_string_equal(g->busid, busids[i]);
		assert_int_equal(g->vendor, LL_GPU_VENDOR_NVIDIA);
		assert_int_equal(g->vendor_id, 0x10de);
		assert_int_equal(g->device_id, 0x20b0);
		assert_int_equal(g->numa_node, gpu_numa[i]);
		assert_null(g->uuid);
		assert_int_equal(g->n_nvlinks, 0);
		assert_int_equal(g->nvlinks_active, -1);
	}
	assert_string_equal(f->gpus[0].cpuset, "48-63,176-191");

	assert_int_equal(f->n_rdma, 4);
	for (size_t j = 0; j < 4; j++) {
		const struct ll_rdma_device *d = &f->rdma[j];
		char name[16], ib[8];

		snprintf(name, sizeof(name), "mlx5_%zu", j);
		snprintf(ib, sizeof(ib), "ib%zu", j);
		assert_string_equal(d->name, name);
		assert_int_equal(d->vendor_id, 0x15b3);
		assert_int_equal(d->device_id, 0x101b);
		assert_int_equal(d->n_netdevs, 1);
		assert_string_equal(d->netdevs[0], ib);
		assert_int_equal(d->n_ports, 1);
		assert_int_equal(d->ports[0].number, 1);
		assert_int_equal(d->ports[0].state, LL_PORT_ACTIVE);
		assert_int_equal(d->ports[0].lid, lids[j]);
		/* A LID proves InfiniBand even without our annotations. */
		assert_int_equal(d->ports[0].link_layer, LL_LINK_LAYER_INFINIBAND);
		assert_null(d->ports[0].rate);
		assert_int_equal(d->ports[0].n_gids, 1);
		assert_true(d->ports[0].gids[0].link_local);
		assert_false(d->ports[0].gids[0].ipv4_mapped);
		assert_int_equal(d->ports[0].gids[0].type, LL_GID_TYPE_UNKNOWN);
	}
	assert_string_equal(f->rdma[0].busid, "0000:04:00.0");
	assert_string_equal(f->rdma[0].node_guid, "0800:3803:00bb:38ee");
	assert_string_equal(f->rdma[0].ports[0].gids[0].gid, "fe80:0000:0000:0000:0800:3803:00bb:38ee");

	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(ll_facts_nearest_rdma(f, i), nearest[i]);
		for (size_t j = 0; j < 4; j++)
			assert_int_equal(ll_facts_gpu_nic(f, i, j), j == (size_t)nearest[i] ? LL_PATH_PIX : LL_PATH_SYS);
	}

	const struct ll_netif *ib0 = ll_facts_netif(f, "ib0");
	assert_non_null(ib0);
	assert_int_equal(ib0->kind, LL_NETIF_INFINIBAND);
	assert_false(ib0->virtual_);
	assert_string_equal(ib0->rdma_device, "mlx5_0");
	assert_string_equal(ib0->busid, "0000:04:00.0");
	assert_int_equal(ib0->numa_node, 3);
	assert_int_equal(ib0->mtu, -1);
	assert_int_equal(ib0->up, LL_UNKNOWN);
	assert_false(ib0->addrs_known);
	const struct ll_netif *eth = ll_facts_netif(f, "enp225s0f0");
	assert_non_null(eth);
	/* A plain export: the kind comes from the 6-byte MAC on a PCI function. */
	assert_int_equal(eth->kind, eth->mac && strlen(eth->mac) == 17 ? LL_NETIF_ETHERNET : LL_NETIF_UNKNOWN);
	assert_int_equal(eth->kind_inferred, eth->kind != LL_NETIF_UNKNOWN);
	assert_null(eth->rdma_device);
	assert_int_equal(f->n_netifs, 6);
	assert_string_equal(f->netifs[0].name, "enp225s0f0");
	assert_string_equal(f->netifs[5].name, "ib3");

	assert_int_equal(f->gdr_ready, LL_UNKNOWN);
	/* PCI devices only: the links of these SXM4 GPUs are not in the export. */
	assert_false(f->gpus[0].links_known);
	assert_int_equal(ll_facts_gpu_domain(f, NULL, 0), -1);
	assert_true(f->gpus_known);
	assert_true(f->netdevs_known);
	assert_null(ll_facts_rdma(f, "mlx5_4"));
	ll_facts_free(f);
}

/* The same JURECA-DC hardware exported by hwloc 1.11: hwloc 2.9 imports it. */
static void test_jureca_hwloc1(void **state)
{
	if (realdata_absent(__func__))
		skip();
	struct ll_facts *f = facts_of("psmgmt/topo.jrc0386.xml", NULL);

	(void)state;
	assert_int_equal(f->n_gpus, 4);
	assert_int_equal(f->n_rdma, 4);
	for (size_t i = 0; i < 4; i++) {
		int n = ll_facts_nearest_rdma(f, i);

		assert_true(n >= 0);
		assert_int_equal(ll_facts_gpu_nic(f, i, (size_t)n), LL_PATH_PIX);
	}
	ll_facts_free(f);
}

/* LLNL Lassen (POWER9): IPoIB interfaces named hsi0..3, one PCIe domain per device. */
static void test_lassen(void **state)
{
	if (realdata_absent(__func__))
		skip();
	struct ll_facts *f = facts_of("mpibind/coral-lassen.xml", NULL);

	(void)state;
	assert_int_equal(f->n_gpus, 4);
	assert_string_equal(f->gpus[0].busid, "0004:04:00.0");
	assert_string_equal(f->gpus[0].model, "Tesla V100-SXM2-16GB");
	assert_int_equal(f->gpus[0].numa_node, 0);
	assert_int_equal(f->gpus[2].numa_node, 8);
	assert_int_equal(f->n_rdma, 4);
	for (size_t j = 0; j < 4; j++) {
		char name[16], hsi[8];

		snprintf(name, sizeof(name), "mlx5_%zu", j);
		snprintf(hsi, sizeof(hsi), "hsi%zu", j);
		assert_string_equal(f->rdma[j].name, name);
		assert_int_equal(f->rdma[j].n_netdevs, 1);
		assert_string_equal(f->rdma[j].netdevs[0], hsi);
		assert_string_equal(ll_facts_netif(f, hsi)->rdma_device, name);
		assert_int_equal(ll_facts_netif(f, hsi)->kind, LL_NETIF_INFINIBAND);
	}
	/* Separate host bridges: NODE on the GPU's socket, SYS across. */
	assert_int_equal(ll_facts_gpu_nic(f, 0, 0), LL_PATH_NODE);
	assert_int_equal(ll_facts_gpu_nic(f, 0, 1), LL_PATH_NODE);
	assert_int_equal(ll_facts_gpu_nic(f, 0, 2), LL_PATH_SYS);
	assert_int_equal(ll_facts_gpu_nic(f, 2, 2), LL_PATH_NODE);
	assert_int_equal(ll_facts_gpu_nic(f, 2, 0), LL_PATH_SYS);
	assert_int_equal(ll_facts_nearest_rdma(f, 0), 0);
	assert_int_equal(ll_facts_nearest_rdma(f, 3), 2);
	/* The ASPEED VGA of the BMC is no GPU. */
	for (size_t i = 0; i < f->n_gpus; i++)
		assert_int_equal(f->gpus[i].vendor_id, 0x10de);
	ll_facts_free(f);
}

/* DGX-2: 16 V100 each with 6 NVLinks to the 6 NVSwitches of its baseboard. */
static void test_dgx2(void **state)
{
	if (realdata_absent(__func__))
		skip();
	struct ll_facts *f = facts_of("hwloc-v2x-nvidiaDGX2.xml", NULL);

	(void)state;
	assert_int_equal(f->n_gpus, 16);
	assert_int_equal(f->n_nvswitches, 12);
	assert_string_equal(f->dmi_product_name, "NVIDIA DGX-2H");
	assert_string_equal(f->gpus[0].busid, "0000:34:00.0");
	assert_string_equal(f->gpus[0].model, "Tesla V100-SXM3-32GB-H");
	assert_string_equal(f->gpus[0].uuid, "GPU-d3977428-7a30-086b-2e20-5c1eeed647c6");
	for (size_t i = 0; i < 16; i++) {
		assert_int_equal(f->gpus[i].n_nvlinks, 6);
		for (size_t k = 0; k < 6; k++) {
			assert_int_equal(f->gpus[i].nvlinks[k].remote, LL_NVLINK_REMOTE_NVSWITCH);
			assert_int_equal(f->gpus[i].nvlinks[k].remote_gpu, -1);
			assert_int_equal(f->gpus[i].nvlinks[k].bandwidth_mbps, 25000);
			assert_non_null(f->gpus[i].nvlinks[k].remote_busid);
		}
	}
	assert_int_equal(ll_facts_gpu_domain(f, NULL, 0), 16);
	{
		int two[] = { 3, 9 };

		/* Any two GPUs of the NVSwitch fabric are one domain of two. */
		assert_int_equal(ll_facts_gpu_domain(f, two, 2), 2);
	}
	assert_int_equal(f->n_rdma, 0);
	/* PCI objects, but not one network OS device: NICs were not exported. */
	assert_true(f->gpus_known);
	assert_false(f->netdevs_known);
	assert_null(f->gpu_nic);
	assert_int_equal(ll_facts_nearest_rdma(f, 0), -1);
	ll_facts_free(f);
}

/* POWER8 Minsky: GPU pairs joined by NVLink, each GPU also linked to its CPU. */
static void test_power8(void **state)
{
	if (realdata_absent(__func__))
		skip();
	struct ll_facts *f = facts_of("hwloc-v2x-power8gpudistances.xml", NULL);
	size_t gpu = 0, cpu = 0;

	(void)state;
	assert_int_equal(f->n_gpus, 4);
	for (size_t k = 0; k < f->gpus[0].n_nvlinks; k++) {
		const struct ll_nvlink *l = &f->gpus[0].nvlinks[k];

		assert_int_equal(l->bandwidth_mbps, 40000);
		if (l->remote == LL_NVLINK_REMOTE_GPU) {
			assert_int_equal(l->remote_gpu, 1);
			gpu++;
		} else {
			assert_int_equal(l->remote, LL_NVLINK_REMOTE_CPU);
			assert_null(l->remote_busid);
			cpu++;
		}
	}
	assert_int_equal(gpu, 1);
	assert_int_equal(cpu, 1);
	assert_int_equal(ll_facts_gpu_domain(f, NULL, 0), 2);
	ll_facts_free(f);
}

/* Cisco usNIC: OpenFabrics devices that are not Mellanox. */
static void test_usnic(void **state)
{
	if (realdata_absent(__func__))
		skip();
	struct ll_facts *f = facts_of("hwloc-v2x-16intel64-manyVFs.xml", NULL);

	(void)state;
	assert_int_equal(f->n_gpus, 0);
	assert_int_equal(f->n_rdma, 3);
	for (size_t j = 0; j < 3; j++) {
		char name[16];

		snprintf(name, sizeof(name), "usnic_%zu", j);
		assert_string_equal(f->rdma[j].name, name);
		assert_int_equal(f->rdma[j].vendor_id, 0x1137);
	}
	assert_int_equal(ll_facts_gpu_domain(f, NULL, 0), 0);
	ll_facts_free(f);
}

/* Supermicro with three Tesla K40m, an AMD Radeon and a ConnectX-4. */
static void test_k40_wholeio(void **state)
{
	if (realdata_absent(__func__))
		skip();
	struct ll_facts *f = facts_of("hwloc-v2x-32em64t-2n8c2t-pci-wholeio.xml", NULL);
	size_t nvidia = 0, amd = 0;

	(void)state;
	for (size_t i = 0; i < f->n_gpus; i++) {
		nvidia += f->gpus[i].vendor == LL_GPU_VENDOR_NVIDIA;
		amd += f->gpus[i].vendor == LL_GPU_VENDOR_AMD;
	}
	assert_int_equal(nvidia, 3);
	assert_int_equal(amd, 1);
	assert_int_equal(f->n_rdma, 1);
	assert_string_equal(f->rdma[0].name, "mlx5_0");
	assert_string_equal(f->rdma[0].netdevs[0], "ib0");
	ll_facts_free(f);
}

/* The project's own fixture: two sockets, each with two H100 and one ConnectX-6 in
 * InfiniBand mode, one of the GPUs on the HCA's PCIe switch (PIX), the other on
 * another root port (PHB); an Intel I350 (eno1) on socket 0. A plain export: no
 * NetKind annotations, so every interface kind is inferred from its MAC. */
static void test_fixture(void **state)
{
	static const char *const busids[] = { "0000:03:00.0", "0000:05:00.0", "0000:83:00.0", "0000:85:00.0" };
	static const int gpu_numa[] = { 0, 0, 1, 1 };
	static const char *const gpu_cpus[] = { "0-3", "0-3", "4-7", "4-7" };
	static const int nearest[] = { 0, 0, 1, 1 };
	static const enum ll_path paths[4][2] = {
		{ LL_PATH_PIX, LL_PATH_SYS },
		{ LL_PATH_PHB, LL_PATH_SYS },
		{ LL_PATH_SYS, LL_PATH_PIX },
		{ LL_PATH_SYS, LL_PATH_PHB },
	};
	_cleanup_free_ char *path = fixture_path();
	_cleanup_free_ char *source = ll_asprintf("snapshot:%s", path);
	struct ll_facts *f = facts_at(path, NULL);
	const struct ll_netif *n;

	(void)state;
	assert_string_equal(f->hostname, "fx-gpu-ib");
	assert_string_equal(f->dmi_product_name, "Fixture Server 2S");
	assert_string_equal(f->source, source);
	assert_int_equal(f->n_packages, 2);
	assert_int_equal(f->n_cores, 8);
	assert_int_equal(f->n_pus, 8);
	assert_int_equal(f->n_numa_nodes, 2);
	assert_int_equal(f->numa_nodes[0].os_index, 0);
	assert_string_equal(f->numa_nodes[0].cpuset, "0-3");
	assert_int_equal(f->numa_nodes[0].n_cores, 4);
	assert_int_equal(f->numa_nodes[1].os_index, 1);
	assert_string_equal(f->numa_nodes[1].cpuset, "4-7");
	assert_int_equal(f->numa_nodes[1].n_cores, 4);
	assert_string_equal(f->cores[3].cpuset, "3");
	assert_int_equal(f->cores[3].numa_node, 0);
	assert_string_equal(f->cores[4].cpuset, "4");
	assert_int_equal(f->cores[4].numa_node, 1);

	assert_int_equal(f->n_gpus, 4);
	assert_int_equal(f->n_nvswitches, 0);
	for (size_t i = 0; i < 4; i++) {
		const struct ll_gpu *g = &f->gpus[i];

		assert_string_equal(g->busid, busids[i]);
		assert_int_equal(g->vendor, LL_GPU_VENDOR_NVIDIA);
		assert_int_equal(g->vendor_id, 0x10de);
		assert_int_equal(g->device_id, 0x2330);
		assert_string_equal(g->model, "GH100 [H100 SXM5 80GB]");
		assert_int_equal(g->numa_node, gpu_numa[i]);
		assert_string_equal(g->cpuset, gpu_cpus[i]);
		assert_null(g->uuid);
		assert_int_equal(g->n_nvlinks, 0);
		assert_int_equal(g->nvlinks_active, -1);
		assert_false(g->links_known);
	}
	assert_int_equal(ll_facts_gpu_domain(f, NULL, 0), -1);
	assert_true(f->gpus_known);
	assert_true(f->netdevs_known);

	assert_int_equal(f->n_rdma, 2);
	for (size_t j = 0; j < 2; j++) {
		const struct ll_rdma_device *d = &f->rdma[j];
		char name[16], ib[8];

		snprintf(name, sizeof(name), "mlx5_%zu", j);
		snprintf(ib, sizeof(ib), "ib%zu", j);
		assert_string_equal(d->name, name);
		assert_int_equal(d->vendor_id, 0x15b3);
		assert_int_equal(d->device_id, 0x101b);
		assert_string_equal(d->model, "MT28908 Family [ConnectX-6]");
		assert_int_equal(d->numa_node, (int)j);
		assert_int_equal(d->n_netdevs, 1);
		assert_string_equal(d->netdevs[0], ib);
		assert_int_equal(d->n_ports, 1);
		assert_int_equal(d->ports[0].number, 1);
		assert_int_equal(d->ports[0].state, LL_PORT_ACTIVE);
		assert_int_equal(d->ports[0].lid, 0x11 + (long)j);
		/* No Port1LinkLayer in the export: the LID tells InfiniBand. */
		assert_int_equal(d->ports[0].link_layer, LL_LINK_LAYER_INFINIBAND);
		assert_null(d->ports[0].rate);
		assert_null(d->ports[0].phys_state);
		assert_null(d->ports[0].netdev);
		assert_int_equal(d->ports[0].n_gids, 1);
		assert_int_equal(d->ports[0].gids[0].index, 0);
		assert_true(d->ports[0].gids[0].link_local);
		assert_false(d->ports[0].gids[0].ipv4_mapped);
		assert_int_equal(d->ports[0].gids[0].type, LL_GID_TYPE_UNKNOWN);
	}
	assert_string_equal(f->rdma[0].busid, "0000:04:00.0");
	assert_string_equal(f->rdma[1].busid, "0000:84:00.0");
	assert_string_equal(f->rdma[0].node_guid, "0c42:a103:00a1:b2c3");
	assert_string_equal(f->rdma[1].node_guid, "0c42:a103:00a1:b2d4");
	assert_string_equal(f->rdma[0].ports[0].gids[0].gid, "fe80:0000:0000:0000:0c42:a103:00a1:b2c3");
	assert_string_equal(f->rdma[1].ports[0].gids[0].gid, "fe80:0000:0000:0000:0c42:a103:00a1:b2d4");

	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(ll_facts_nearest_rdma(f, i), nearest[i]);
		for (size_t j = 0; j < 2; j++)
			assert_int_equal(ll_facts_gpu_nic(f, i, j), paths[i][j]);
	}

	assert_int_equal(f->n_netifs, 3);
	assert_string_equal(f->netifs[0].name, "eno1");
	assert_string_equal(f->netifs[1].name, "ib0");
	assert_string_equal(f->netifs[2].name, "ib1");
	n = ll_facts_netif(f, "eno1");
	assert_non_null(n);
	/* 6-byte MAC on a PCI function: Ethernet, and the facts say it was inferred. */
	assert_int_equal(n->kind, LL_NETIF_ETHERNET);
	assert_true(n->kind_inferred);
	assert_false(n->virtual_);
	assert_string_equal(n->mac, "3c:ec:ef:10:20:30");
	assert_string_equal(n->busid, "0000:0a:00.0");
	assert_int_equal(n->numa_node, 0);
	assert_null(n->rdma_device);
	assert_null(n->operstate);
	assert_int_equal(n->up, LL_UNKNOWN);
	assert_int_equal(n->running, LL_UNKNOWN);
	assert_int_equal(n->mtu, -1);
	assert_int_equal(n->speed_mbps, -1);
	assert_false(n->addrs_known);
	assert_int_equal(n->n_addrs, 0);
	for (size_t j = 0; j < 2; j++) {
		static const char *const hca_busids[] = { "0000:04:00.0", "0000:84:00.0" };
		char ib[8], name[16];

		snprintf(ib, sizeof(ib), "ib%zu", j);
		snprintf(name, sizeof(name), "mlx5_%zu", j);
		n = ll_facts_netif(f, ib);
		assert_non_null(n);
		/* 20-byte MAC: IPoIB, inferred too. */
		assert_int_equal(n->kind, LL_NETIF_INFINIBAND);
		assert_true(n->kind_inferred);
		assert_false(n->virtual_);
		assert_int_equal(strlen(n->mac), 59);
		assert_string_equal(n->rdma_device, name);
		assert_string_equal(n->busid, hca_busids[j]);
		assert_int_equal(n->numa_node, (int)j);
		assert_false(n->addrs_known);
	}
	assert_string_equal(ll_facts_netif(f, "ib1")->mac, "00:00:10:87:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:a1:b2:d4");
	assert_null(ll_facts_netif(f, "eth0"));

	assert_int_equal(f->gdr_ready, LL_UNKNOWN);
	assert_null(f->gdr_module);
	assert_null(ll_facts_rdma(f, "mlx5_2"));
	ll_facts_free(f);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(ll_path_name(LL_PATH_PIX), "PIX");
	assert_string_equal(ll_path_name(LL_PATH_SYS), "SYS");
	assert_string_equal(ll_path_name(LL_PATH_UNKNOWN), "?");
	assert_int_equal(ll_path_from_name("node"), LL_PATH_NODE);
	assert_int_equal(ll_path_from_name("PXB"), LL_PATH_PXB);
	assert_int_equal(ll_path_from_name("?"), LL_PATH_UNKNOWN);
	assert_int_equal(ll_path_from_name(NULL), LL_PATH_UNKNOWN);
	assert_string_equal(ll_link_layer_name(LL_LINK_LAYER_ETHERNET), "Ethernet");
	assert_null(ll_link_layer_name(LL_LINK_LAYER_UNKNOWN));
	assert_string_equal(ll_gid_type_name(LL_GID_TYPE_ROCE_V2), "RoCE v2");
	assert_string_equal(ll_port_state_name(LL_PORT_ACTIVE), "ACTIVE");
	assert_string_equal(ll_netif_kind_name(LL_NETIF_DOCKER), "docker");
	assert_string_equal(ll_nvlink_remote_name(LL_NVLINK_REMOTE_NVSWITCH), "nvswitch");
	assert_string_equal(ll_gpu_vendor_name(LL_GPU_VENDOR_AMD), "amd");
	ll_facts_free(NULL);
}

/* An export without I/O objects: nothing about GPUs or NICs can be said. */
static void test_no_io(void **state)
{
	if (realdata_absent(__func__))
		skip();
	struct ll_facts *f = facts_of("mpibind-2/cascade-lake-ap-snl-hwloc1.xml", NULL);

	(void)state;
	assert_false(f->gpus_known);
	assert_false(f->netdevs_known);
	assert_int_equal(f->n_gpus, 0);
	assert_int_equal(ll_facts_gpu_domain(f, NULL, 0), -1);
	assert_int_equal(f->n_numa_nodes, 4);
	ll_facts_free(f);
}

/* AMD MI300A (tuo, hwloc 2.12.2): processing accelerators of class 1200, one rsmiN
 * each, joined by XGMI (XGMIBandwidth, 100000 MB/s); CPX mode splits each APU into
 * six ROCm devices, which are GPUs of their own. */
static void test_amd_mi300a(void **state)
{
	if (realdata_absent(__func__))
		skip();
	struct ll_facts *f = facts_of("flux-core/tuo.SPX.xml", NULL);

	(void)state;
	assert_int_equal(f->n_gpus, 4);
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(f->gpus[i].vendor, LL_GPU_VENDOR_AMD);
		assert_int_equal(f->gpus[i].device_id, 0x74a0);
		assert_int_equal(f->gpus[i].partition, 0);
		assert_int_equal(f->gpus[i].numa_node, (int)i);
		assert_true(f->gpus[i].links_known);
		assert_int_equal(f->gpus[i].n_nvlinks, 3);
		assert_int_equal(f->gpus[i].nvlinks[0].fabric, LL_GPU_FABRIC_XGMI);
		assert_int_equal(f->gpus[i].nvlinks[0].bandwidth_mbps, 100000);
		/* ROCm SMI's all-zero unique id means none. */
		assert_null(f->gpus[i].uuid);
	}
	assert_string_equal(f->gpus[0].model, "Aqua Vanjaram [Instinct MI300A]");
	assert_int_equal(ll_facts_gpu_domain(f, NULL, 0), 4);
	assert_int_equal(ll_facts_gpu_fabric(f, NULL, 0), LL_GPU_FABRIC_XGMI);
	ll_facts_free(f);

	f = facts_of("flux-core/tuo.CPX.xml", NULL);
	assert_int_equal(f->n_gpus, 24);
	assert_string_equal(f->gpus[5].busid, "0000:02:00.0");
	assert_int_equal(f->gpus[5].partition, 6);
	assert_string_equal(f->gpus[6].busid, "0001:02:00.0");
	assert_int_equal(f->gpus[6].partition, 1);
	/* An empty GPUModel on a partition: the device's name stands for it. */
	assert_non_null(f->gpus[1].model);
	assert_int_equal(ll_facts_gpu_domain(f, NULL, 0), 24);
	{
		int two[] = { 0, 5 };

		/* Two partitions of one APU share its package. */
		assert_int_equal(ll_facts_gpu_domain(f, two, 2), 2);
	}
	ll_facts_free(f);
}

/* AMD GPUs and their XGMI facts in exports without XGMIBandwidth. MI50 with rsmi
 * devices whose XGMIHiveID is 0 (corona.xml: an hwloc 1.x-format file written by
 * hwloc 2.7; epyc-corona-p2.xml, hwloc 2.5): in no XGMI hive, so no XGMI link, a
 * fact (PCIe, domain 1). Vega 20 with OpenCL devices only (epyc-corona.xml): links
 * unknown. */
static void test_amd_links_unknown(void **state)
{
	if (realdata_absent(__func__))
		skip();
	struct ll_facts *f = facts_of("flux-core/corona.xml", NULL);

	(void)state;
	assert_int_equal(f->n_gpus, 8);
	assert_int_equal(f->gpus[0].vendor, LL_GPU_VENDOR_AMD);
	assert_true(f->gpus[0].links_known);
	assert_int_equal(f->gpus[0].n_nvlinks, 0);
	assert_int_equal(ll_facts_gpu_domain(f, NULL, 0), 1);
	ll_facts_free(f);
	f = facts_of("mpibind-2/epyc-corona-p2.xml", NULL);
	assert_int_equal(f->n_gpus, 8);
	assert_true(f->gpus[7].links_known);
	assert_int_equal(ll_facts_gpu_domain(f, NULL, 0), 1);
	ll_facts_free(f);
	f = facts_of("mpibind-2/epyc-corona.xml", NULL);
	assert_int_equal(f->n_gpus, 4);
	assert_int_equal(f->gpus[0].device_id, 0x66a1);
	assert_false(f->gpus[0].links_known);
	assert_int_equal(ll_facts_gpu_domain(f, NULL, 0), -1);
	ll_facts_free(f);
}

/* The XGMI hive rule on the project's MI250X fixture, always run: without its
 * XGMIBandwidth matrix the links are unknown; with ROCm SMI's hive id 0 on every
 * rsmi device they are known absent; a non-zero hive id without a matrix says
 * nothing about the peers (unknown). */
static void test_amd_xgmi_hive(void **state)
{
	static const char *const hives[] = { NULL, "0", "9f3c0a12b4d1e6a7" };
	const char *fixtures = getenv("LL_FIXTURES");
	static const int domain[] = { -1, 1, -1 };

	(void)state;
	assert_non_null(fixtures);
	for (size_t h = 0; h < LL_ARRAY_SIZE(hives); h++) {
		_cleanup_free_ char *path = ll_asprintf("%s/hwloc/mi250x-slingshot.xml", fixtures);
		struct ll_probe_options opts = { .topology_file = path };
		struct ll_error err = { 0 };
		struct ll_facts *f = NULL;
		hwloc_topology_t topo = NULL;

		if (ll_probe_load(&opts, &topo, &err) < 0)
			fail_msg("cannot load the fixture: %s", err.message);
		{
			struct hwloc_distances_s *d[2];
			unsigned nr = 2;

			assert_int_equal(hwloc_distances_get_by_name(topo, "XGMIBandwidth", &nr, d, 0), 0);
			assert_int_equal(nr, 1);
			assert_int_equal(hwloc_distances_release_remove(topo, d[0]), 0);
		}
		for (hwloc_obj_t o = hwloc_get_next_osdev(topo, NULL); hives[h] && o; o = hwloc_get_next_osdev(topo, o))
			if (ll_startswith(o->name, "rsmi"))
				hwloc_obj_add_info(o, "XGMIHiveID", hives[h]);
		if (ll_probe_facts(topo, "fixture", &f, &err) < 0)
			fail_msg("ll_probe_facts: %s", err.message);
		assert_int_equal(f->n_gpus, 8);
		assert_int_equal(f->gpus[3].n_nvlinks, 0);
		assert_int_equal(f->gpus[3].links_known, domain[h] == 1);
		assert_int_equal(ll_facts_gpu_domain(f, NULL, 0), domain[h]);
		ll_facts_free(f);
		hwloc_topology_destroy(topo);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_fixture),
		cmocka_unit_test(test_every_file),
		cmocka_unit_test(test_jureca),
		cmocka_unit_test(test_jureca_hwloc1),
		cmocka_unit_test(test_lassen),
		cmocka_unit_test(test_dgx2),
		cmocka_unit_test(test_power8),
		cmocka_unit_test(test_usnic),
		cmocka_unit_test(test_k40_wholeio),
		cmocka_unit_test(test_no_io),
		cmocka_unit_test(test_amd_mi300a),
		cmocka_unit_test(test_amd_links_unknown),
		cmocka_unit_test(test_amd_xgmi_hive),
	};

	realdata = getenv("LL_REALDATA");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
