/* The per-boot probe cache (probe/cache.c) on this machine's live /sys, in a
 * private $LLMLAUNCH_CACHE_DIR: every part of the validity key that differs makes
 * the probe start over and rewrite the file; a hit gives the same facts as a full
 * probe. And the dynamic refresh (ll_annotate_dynamic) on fake /sys trees:
 * what changed in the tree since the first load is what the topology says after.
 * And the live load's capabilities: what it lowers for hwloc is back after it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

#include "llmlaunch/file.h"
#include "llmlaunch/probe.h"
#include "../../probe/annotate.h"
#include "../../probe/annotations.h"
#include "../../probe/cache.h"

struct tmpdir {
	char dir[64];
	char *file; /* DIR/topology.xml */
};

static int tmp_setup(void **state)
{
	struct tmpdir *t = ll_calloc(1, sizeof(*t));

	snprintf(t->dir, sizeof(t->dir), "%s/ll-cache-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(t->dir)) {
		free(t);
		return -1;
	}
	t->file = ll_asprintf("%s/%s", t->dir, LL_CACHE_FILE);
	setenv("LLMLAUNCH_CACHE_DIR", t->dir, 1);
	unsetenv("LLMLAUNCH_NVML_LIBRARY");
	*state = t;
	return 0;
}

static int tmp_teardown(void **state)
{
	struct tmpdir *t = *state;
	char *cmd = ll_asprintf("rm -rf '%s'", t->dir);
	int r = system(cmd);

	unsetenv("LLMLAUNCH_CACHE_DIR");
	free(cmd);
	free(t->file);
	free(t);
	return r == 0 ? 0 : -1;
}


/* What the last load said (struct ll_probe_report): every probe below fills it. */
static struct ll_probe_report report;
/* One live probe; returns its facts as JSON-free text: the cache status is the
 * observable, the facts are compared by the callers that need them. */
static struct ll_facts *probe_live(const char *expect_status_prefix)
{
	struct ll_probe_options opts = { .report = &report, .skip_nvml = true };
	struct ll_error err = { 0 };
	struct ll_facts *f = NULL;
	const char *status;

	if (ll_probe(&opts, NULL, &f, &err) < 0)
		fail_msg("ll_probe: %s", err.message);
	status = report.cache_status;
	assert_non_null(status);
	if (!ll_startswith(status, expect_status_prefix))
		fail_msg("cache status '%s', expected it to start with '%s'", status, expect_status_prefix);
	return f;
}

/* noinline: GCC 12 at -O2 otherwise takes the returned buffer for a pointer to the
 * local out-parameter (a -Wdangling-pointer false positive). */
__attribute__((noinline)) static char *slurp(const char *path)
{
	char *text = NULL;
	int r = ll_read_file(path, 64u << 20, &text);

	assert_int_equal(r, 0);
	return text;
}

static void spew(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	assert_int_equal(fputs(text, fp) >= 0, 1);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(chmod(path, 0600), 0);
}

/* Replace the value of root info `name` in the cache file's text. */
static void tamper(const char *path, const char *name, const char *value)
{
	char *text = slurp(path), *needle = ll_asprintf("<info name=\"%s\" value=\"", name);
	char *at = strstr(text, needle), *end, *out;

	if (!at)
		fail_msg("no info '%s' in the cache file", name);
	at += strlen(needle);
	end = strchr(at, '"');
	assert_non_null(end);
	out = ll_asprintf("%.*s%s%s", (int)(at - text), text, value, end);
	spew(path, out);
	free(out);
	free(needle);
	free(text);
}

static void expect_info_in_file(const char *path, const char *name, const char *value)
{
	char *text = slurp(path), *want = ll_asprintf("<info name=\"%s\" value=\"%s\"/>", name, value);

	if (!strstr(text, want))
		fail_msg("cache file lacks %s", want);
	free(want);
	free(text);
}

static void expect_same_facts(const struct ll_facts *a, const struct ll_facts *b)
{
	assert_string_equal(a->hostname, b->hostname);
	assert_int_equal(a->n_pus, b->n_pus);
	assert_int_equal(a->n_cores, b->n_cores);
	assert_int_equal(a->n_numa_nodes, b->n_numa_nodes);
	assert_int_equal(a->n_gpus, b->n_gpus);
	assert_int_equal(a->n_rdma, b->n_rdma);
	assert_int_equal(a->n_netifs, b->n_netifs);
	for (size_t i = 0; i < a->n_netifs; i++) {
		assert_string_equal(a->netifs[i].name, b->netifs[i].name);
		assert_int_equal(a->netifs[i].kind, b->netifs[i].kind);
		assert_int_equal(a->netifs[i].mtu, b->netifs[i].mtu);
		assert_int_equal(a->netifs[i].addrs_known, b->netifs[i].addrs_known);
		assert_int_equal(a->netifs[i].n_addrs, b->netifs[i].n_addrs);
	}
	assert_int_equal(a->gdr_ready, b->gdr_ready);
}

static void test_miss_then_hit(void **state)
{
	struct tmpdir *t = *state;
	struct ll_facts *miss, *hit;
	struct stat st;

	miss = probe_live("miss");
	assert_non_null(strstr(report.cache_status, "(no cache file yet); written"));
	assert_int_equal(lstat(t->file, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	hit = probe_live("hit");
	expect_same_facts(miss, hit);
	assert_string_equal(hit->source, "live");
	ll_facts_free(miss);
	ll_facts_free(hit);
}

/* Each part of the key, changed in the file: a miss naming that part, then the
 * file holds this boot's key again and the next probe hits. */
static void test_key_parts(void **state)
{
	static const struct {
		const char *info, *reason;
	} parts[] = {
		{ LL_INFO_CACHE_BOOT_ID, "(written before the last boot)" },
		{ LL_INFO_CACHE_VERSION, "(written by another llmlaunch or hwloc version)" },
		{ LL_INFO_CACHE_DEVICES, "(the set of devices changed)" },
		{ LL_INFO_CACHE_CONTEXT, "(written under another cgroup" },
	};
	struct ll_probe_options opts = { .report = &report, .skip_nvml = true };
	struct ll_cache_key key = { 0 };
	struct tmpdir *t = *state;

	assert_int_equal(ll_cache_key_compute(&opts, &key), 0);
	ll_facts_free(probe_live("miss"));
	for (size_t i = 0; i < LL_ARRAY_SIZE(parts); i++) {
		const char *want = *(char **)((char *)&key + (i == 0   ? offsetof(struct ll_cache_key, boot_id)
							       : i == 1 ? offsetof(struct ll_cache_key, version)
							       : i == 2 ? offsetof(struct ll_cache_key, devices)
									: offsetof(struct ll_cache_key, context)));

		tamper(t->file, parts[i].info, "0123456789abcdef");
		ll_facts_free(probe_live("miss"));
		if (!strstr(report.cache_status, parts[i].reason))
			fail_msg("status '%s' does not say '%s'", report.cache_status, parts[i].reason);
		assert_non_null(strstr(report.cache_status, "; written"));
		expect_info_in_file(t->file, parts[i].info, want);
		ll_facts_free(probe_live("hit"));
	}
	/* The version names this build and whether NVML was asked. */
	assert_non_null(strstr(key.version, "NVML off"));
	assert_int_equal(strlen(key.devices), 16);
	ll_cache_key_release(&key);
}

/* A file without the key (a snapshot copied in, say) is no cache file. */
static void test_no_key(void **state)
{
	struct tmpdir *t = *state;
	char *text;

	ll_facts_free(probe_live("miss"));
	text = slurp(t->file);
	for (char *p; (p = strstr(text, "LLMLaunchCache"));)
		memcpy(p, "SomethingElse1", 14);
	spew(t->file, text);
	free(text);
	ll_facts_free(probe_live("miss '"));
	assert_non_null(strstr(report.cache_status, "(not a cache file (no key)); written"));
	ll_facts_free(probe_live("hit"));
}

static void test_corrupt(void **state)
{
	struct tmpdir *t = *state;
	char *text;

	ll_facts_free(probe_live("miss"));
	text = slurp(t->file);
	text[strlen(text) / 2] = '\0';
	spew(t->file, text);
	free(text);
	ll_facts_free(probe_live("miss"));
	assert_non_null(strstr(report.cache_status, "invalid or truncated hwloc XML"));
	ll_facts_free(probe_live("hit"));

	spew(t->file, "");
	ll_facts_free(probe_live("miss"));
	assert_non_null(strstr(report.cache_status, "the file is empty"));
	ll_facts_free(probe_live("hit"));
}

/* A symlink at the cache file's place is not followed, and the rewrite replaces
 * the link, not what it points to. */
static void test_symlink(void **state)
{
	struct tmpdir *t = *state;
	char *target = ll_asprintf("%s/elsewhere.xml", t->dir), *before, *after;
	struct stat st;

	ll_facts_free(probe_live("miss"));
	assert_int_equal(rename(t->file, target), 0);
	assert_int_equal(symlink(target, t->file), 0);
	before = slurp(target);
	ll_facts_free(probe_live("miss"));
	assert_non_null(strstr(report.cache_status, "(the cache file is a symbolic link, not followed); written"));
	assert_int_equal(lstat(t->file, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	after = slurp(target);
	assert_string_equal(before, after);
	ll_facts_free(probe_live("hit"));
	free(before);
	free(after);
	free(target);
}

static void test_writable_by_others(void **state)
{
	struct tmpdir *t = *state;

	ll_facts_free(probe_live("miss"));
	assert_int_equal(chmod(t->file, 0666), 0);
	ll_facts_free(probe_live("miss"));
	assert_non_null(strstr(report.cache_status, "another user's or writable by others"));
	ll_facts_free(probe_live("hit"));
	if (geteuid() == 0) {
		assert_int_equal(chown(t->file, 4242, 4242), 0);
		ll_facts_free(probe_live("miss"));
		assert_non_null(strstr(report.cache_status, "another user's or writable by others"));
		ll_facts_free(probe_live("hit"));
	}
}

/* A directory others may write is not used at all; the probe still works. */
static void test_unsafe_dir(void **state)
{
	struct tmpdir *t = *state;
	struct stat st;

	assert_int_equal(chmod(t->dir, 0777), 0);
	ll_facts_free(probe_live("off (cannot use '"));
	assert_non_null(strstr(report.cache_status, "owned by another user or writable by others"));
	assert_int_equal(lstat(t->file, &st), -1);
	assert_int_equal(chmod(t->dir, 0700), 0);
	/* A missing directory is created, 0700. */
	char *sub = ll_asprintf("%s/sub", t->dir);
	setenv("LLMLAUNCH_CACHE_DIR", sub, 1);
	ll_facts_free(probe_live("miss"));
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	setenv("LLMLAUNCH_CACHE_DIR", t->dir, 1);
	free(sub);
}

static void test_off(void **state)
{
	struct ll_probe_options opts = { .report = &report, .skip_nvml = true, .no_cache = true };
	struct ll_error err = { 0 };
	struct tmpdir *t = *state;
	hwloc_topology_t topo = NULL;
	struct stat st;

	assert_int_equal(ll_probe_load(&opts, &topo, &err), 0);
	assert_string_equal(report.cache_status, "off (--no-cache)");
	hwloc_topology_destroy(topo);
	assert_int_equal(lstat(t->file, &st), -1);

	/* A library named on purpose (under test) is asked every time. */
	opts.no_cache = false;
	opts.skip_nvml = false;
	opts.nvml_library = "/nonexistent/libnvidia-ml.so.1";
	assert_int_equal(ll_probe_load(&opts, &topo, &err), 0);
	assert_string_equal(report.cache_status, "off (an NVML library is named explicitly)");
	hwloc_topology_destroy(topo);
	assert_int_equal(lstat(t->file, &st), -1);
}

/* ---- the dynamic refresh on fake /sys trees ---- */

static void gen(const char *root, const char *script)
{
	const char *fixtures = getenv("LL_FIXTURES");
	char *cmd;

	if (!fixtures)
		skip();
	cmd = ll_asprintf("R='%s' bash -euc '. \"%s/sysfs/fake-sysfs.sh\"; %s'", root, fixtures, script);
	assert_int_equal(system(cmd), 0);
	free(cmd);
}

static const struct ll_rdma_port *port_of(const struct ll_facts *f, const char *dev, unsigned n)
{
	for (size_t i = 0; i < f->n_rdma; i++)
		for (size_t k = 0; ll_streq(f->rdma[i].name, dev) && k < f->rdma[i].n_ports; k++)
			if (f->rdma[i].ports[k].number == n)
				return &f->rdma[i].ports[k];
	fail_msg("no port %s/%u", dev, n);
	return NULL;
}

static const struct ll_netif *netif_of(const struct ll_facts *f, const char *name)
{
	for (size_t i = 0; i < f->n_netifs; i++)
		if (ll_streq(f->netifs[i].name, name))
			return &f->netifs[i];
	fail_msg("no interface %s", name);
	return NULL;
}

static unsigned info_count(hwloc_obj_t o, const char *name)
{
	unsigned n = 0;

	for (unsigned i = 0; i < o->infos_count; i++)
		n += ll_streq(o->infos[i].name, name);
	return n;
}

static struct ll_facts *facts_of(hwloc_topology_t topo)
{
	struct ll_error err = { 0 };
	struct ll_facts *f = NULL;

	if (ll_probe_facts(topo, "test", &f, &err) < 0)
		fail_msg("ll_probe_facts: %s", err.message);
	return f;
}

static void test_refresh(void **state)
{
	struct tmpdir *t = *state;
	char *root = ll_asprintf("%s/root", t->dir);
	struct ll_probe_options opts = { .report = &report, .fsroot = root, .skip_nvml = true };
	struct ll_error err = { 0 };
	hwloc_topology_t topo = NULL;
	const struct ll_rdma_port *p;
	const struct ll_netif *n;
	struct ll_facts *f;
	hwloc_obj_t o;

	gen(root, "scenario_roce \"$R\"; rm -rf \"$R/sys/module/nvidia_peermem\"");
	assert_int_equal(ll_probe_load(&opts, &topo, &err), 0);
	/* Not a live probe: the cache is not involved. */
	assert_null(report.cache_status);
	f = facts_of(topo);
	p = port_of(f, "mlx5_0", 1);
	assert_int_equal(p->state, LL_PORT_ACTIVE);
	assert_string_equal(p->phys_state, "5: LinkUp");
	assert_int_equal(p->n_gids, 4);
	n = netif_of(f, "enp2s0f0");
	assert_string_equal(n->operstate, "up");
	assert_int_equal(n->mtu, 9000);
	assert_int_equal(f->gdr_ready, LL_NO);
	ll_facts_free(f);

	/* The link goes down, a GID comes, the MTU changes, the module loads,
	 * the docker bridge comes up, the MAC of the RoCE netdev changes. */
	gen(root, "P=\"$R/sys/class/infiniband/mlx5_0/ports/1\"; "
		  "echo \"1: DOWN\" > $P/state; echo \"3: Disabled\" > $P/phys_state; "
		  "echo \"40 Gb/sec (4X QDR)\" > $P/rate; "
		  "fake_gid \"$R\" mlx5_0 1 4 0000:0000:0000:0000:0000:ffff:0a00:0002 \"RoCE v2\" enp2s0f0; "
		  "D=\"$R/sys/class/net/enp2s0f0\"; echo down > $D/operstate; echo 0x1002 > $D/flags; "
		  "echo 1500 > $D/mtu; echo b8:ce:f6:a1:b2:c1 > $D/address; "
		  "echo up > \"$R/sys/class/net/docker0/operstate\"; "
		  "fake_module \"$R\" nvidia_peermem");
	assert_int_equal(ll_annotate_dynamic(topo, root, &err), 0);
	assert_null(err.message);
	f = facts_of(topo);
	p = port_of(f, "mlx5_0", 1);
	assert_int_equal(p->state, LL_PORT_DOWN);
	assert_string_equal(p->phys_state, "3: Disabled");
	assert_string_equal(p->rate, "40 Gb/sec (4X QDR)");
	assert_int_equal(p->n_gids, 5);
	n = netif_of(f, "enp2s0f0");
	assert_string_equal(n->operstate, "down");
	assert_int_equal(n->mtu, 1500);
	assert_int_equal(n->up, LL_NO);
	assert_string_equal(n->mac, "b8:ce:f6:a1:b2:c1");
	assert_string_equal(netif_of(f, "docker0")->operstate, "up");
	assert_int_equal(f->gdr_ready, LL_YES);
	assert_string_equal(f->gdr_module, "nvidia_peermem");
	/* The unchanged rest is as before. */
	assert_int_equal(port_of(f, "mlx5_10", 1)->state, LL_PORT_ACTIVE);
	assert_int_equal(port_of(f, "mlx5_1", 1)->state, LL_PORT_DOWN);
	ll_facts_free(f);

	/* Replaced, never duplicated. */
	for (o = NULL; (o = hwloc_get_next_osdev(topo, o));) {
		if (ll_streq(o->name, "mlx5_0")) {
			assert_int_equal(info_count(o, "Port1State"), 1);
			assert_int_equal(info_count(o, "Port1StateName"), 1);
			assert_int_equal(info_count(o, "Port1GID0"), 1);
			assert_int_equal(info_count(o, "NodeGUID"), 1);
		}
		if (ll_streq(o->name, "enp2s0f0")) {
			assert_int_equal(info_count(o, "Address"), 1);
			assert_int_equal(info_count(o, "NetOperState"), 1);
			assert_int_equal(info_count(o, "NetKind"), 1);
		}
	}
	assert_int_equal(info_count(hwloc_get_root_obj(topo), LL_INFO_GDR_MODULE), 1);

	/* Refreshing twice without a change gives the same infos. */
	{
		unsigned before = 0, after = 0;

		for (o = NULL; (o = hwloc_get_next_osdev(topo, o));)
			before += o->infos_count;
		assert_int_equal(ll_annotate_dynamic(topo, root, &err), 0);
		for (o = NULL; (o = hwloc_get_next_osdev(topo, o));)
			after += o->infos_count;
		assert_int_equal(before, after);
	}
	hwloc_topology_destroy(topo);
	free(root);
}

/* Stand-ins (a platform RDMA device hwloc makes no OS device of): their port
 * infos are refreshed as well. */
static void test_refresh_standin(void **state)
{
	struct tmpdir *t = *state;
	char *root = ll_asprintf("%s/root", t->dir);
	struct ll_probe_options opts = { .report = &report, .fsroot = root, .skip_nvml = true };
	struct ll_error err = { 0 };
	hwloc_topology_t topo = NULL;
	struct ll_facts *f;

	gen(root, "fake_machine \"$R\" 1; fake_ib \"$R\" scif0 platform; "
		  "fake_ib_port \"$R\" scif0 1 \"4: ACTIVE\" \"5: LinkUp\" \"56 Gb/sec (4X FDR)\" InfiniBand 0x7");
	assert_int_equal(ll_probe_load(&opts, &topo, &err), 0);
	f = facts_of(topo);
	assert_int_equal(port_of(f, "scif0", 1)->state, LL_PORT_ACTIVE);
	ll_facts_free(f);
	gen(root, "echo \"2: INIT\" > \"$R/sys/class/infiniband/scif0/ports/1/state\"");
	assert_int_equal(ll_annotate_dynamic(topo, root, &err), 0);
	f = facts_of(topo);
	assert_int_equal(port_of(f, "scif0", 1)->state, LL_PORT_INIT);
	assert_int_equal(port_of(f, "scif0", 1)->lid, 7);
	ll_facts_free(f);
	hwloc_topology_destroy(topo);
	free(root);
}

/* Each load reports to its caller's record: a second probe leaves the first one's
 * warnings alone (they were file-scope buffers, overwritten by the next probe). */
static void test_reports_are_the_callers(void **state)
{
	struct ll_probe_report first = { 0 }, second = { 0 };
	struct ll_probe_options a = { .report = &first, .no_cache = true,
				      .nvml_library = "/nonexistent/libnvidia-ml.so.1" };
	struct ll_probe_options b = { .report = &second, .no_cache = true, .skip_nvml = true };
	struct ll_error err = { 0 };
	hwloc_topology_t topo = NULL;

	(void)state;
	assert_int_equal(ll_probe_load(&a, &topo, &err), 0);
	hwloc_topology_destroy(topo);
	assert_non_null(first.nvml_warning);
	assert_true(ll_startswith(first.nvml_warning, "cannot load NVML library '/nonexistent/libnvidia-ml.so.1': "));
	assert_int_equal(ll_probe_load(&b, &topo, &err), 0);
	hwloc_topology_destroy(topo);
	assert_null(second.nvml_warning);
	assert_string_equal(second.cache_status, "off (--no-cache)");
	assert_true(ll_startswith(first.nvml_warning, "cannot load NVML library '/nonexistent/libnvidia-ml.so.1': "));
	assert_string_equal(first.cache_status, "off (--no-cache)");
	/* A load into a used record replaces what it held. */
	assert_int_equal(ll_probe_load(&(struct ll_probe_options){ .report = &first, .no_cache = true, .skip_nvml = true },
				       &topo, &err),
			 0);
	hwloc_topology_destroy(topo);
	assert_null(first.nvml_warning);
	ll_probe_report_release(&first);
	ll_probe_report_release(&second);
}

static bool sys_admin_in(bool permitted)
{
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	unsigned i = CAP_TO_INDEX(CAP_SYS_ADMIN);

	assert_int_equal(syscall(SYS_capget, &header, data), 0);
	return (permitted ? data[i].permitted : data[i].effective) & CAP_TO_MASK(CAP_SYS_ADMIN);
}

static bool sys_admin_effective(void)
{
	return sys_admin_in(false);
}

static void set_sys_admin_effective(bool on)
{
	struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	assert_int_equal(syscall(SYS_capget, &header, data), 0);
	if (on)
		data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective |= CAP_TO_MASK(CAP_SYS_ADMIN);
	else
		data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
	assert_int_equal(syscall(SYS_capset, &header, data), 0);
}

/* The live load lowers CAP_SYS_ADMIN for hwloc only (load.c): the process has
 * what it had before, raised or not, after a probe. */
static void test_sys_admin_restored(void **state)
{
	struct ll_probe_options opts = { .no_cache = true, .skip_nvml = true };
	struct ll_error err = { 0 };
	hwloc_topology_t topo = NULL;

	(void)state;
	if (!sys_admin_in(true)) {
		skip(); /* not root: nothing is lowered */
		return;
	}
	/* Every probe of the tests before this one ran in this process. */
	assert_true(sys_admin_effective());
	assert_int_equal(ll_probe_load(&opts, &topo, &err), 0);
	hwloc_topology_destroy(topo);
	assert_true(sys_admin_effective());
	/* Permitted but not effective: the probe must not raise it. */
	set_sys_admin_effective(false);
	assert_int_equal(ll_probe_load(&opts, &topo, &err), 0);
	hwloc_topology_destroy(topo);
	assert_false(sys_admin_effective());
	set_sys_admin_effective(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_miss_then_hit, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_key_parts, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_no_key, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_corrupt, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_symlink, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_writable_by_others, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_unsafe_dir, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_off, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_refresh, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_refresh_standin, tmp_setup, tmp_teardown),
		cmocka_unit_test(test_reports_are_the_callers),
		cmocka_unit_test_setup_teardown(test_sys_admin_restored, tmp_setup, tmp_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
