/* The Prolog's plumbing (launcher/slurm/slurm-prolog.c): where scontrol is looked
 * for, and the state directory's modes. Its bounded children are common/child.c's
 * (tests/unit/test-child.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "llmlaunch/probe.h"
#include "llmlaunch/slurm.h"

static void test_find_scontrol(void **state)
{
	char dir[] = "/tmp/ll-test-scontrol-XXXXXX";
	char *path, *found, *old = getenv("PATH") ? ll_strdup(getenv("PATH")) : NULL;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	path = ll_asprintf("%s/scontrol", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\n", f);
	fclose(f);
	/* Not executable yet: a hint that is no program is refused. */
	assert_null(ll_slurm_find_scontrol(path));
	assert_int_equal(chmod(path, 0755), 0);
	found = ll_slurm_find_scontrol(path);
	assert_string_equal(found, path);
	free(found);
	/* From $PATH; relative entries are never searched (the Prolog's cwd is not ours). */
	assert_int_equal(chdir(dir), 0);
	setenv("PATH", ".:relative/bin", 1);
	found = ll_slurm_find_scontrol(NULL);
	assert_true(found == NULL || strncmp(found, dir, strlen(dir)) != 0);
	free(found);
	setenv("PATH", dir, 1);
	found = ll_slurm_find_scontrol(NULL);
	assert_string_equal(found, path);
	free(found);
	assert_int_equal(chdir("/"), 0);
	if (old)
		setenv("PATH", old, 1);
	free(old);
	unlink(path);
	rmdir(dir);
	free(path);
}

static void test_save_snapshot(void **state)
{
	char dir[] = "/tmp/ll-test-state-XXXXXX";
	char *sub, *path = NULL, *nested;
	hwloc_topology_t topo;
	struct ll_error err = { 0 };
	struct stat st;

	(void)state;
	assert_non_null(mkdtemp(dir));
	sub = ll_asprintf("%s/state", dir);
	assert_int_equal(hwloc_topology_init(&topo), 0);
	assert_int_equal(hwloc_topology_set_synthetic(topo, "pack:1 core:2 pu:1"), 0);
	assert_int_equal(hwloc_topology_load(topo), 0);
	umask(077); /* the modes must not depend on root's umask */
	assert_int_equal(ll_slurm_save_snapshot(topo, sub, &path, &err), 0);
	umask(022);
	nested = ll_asprintf("%s/snapshot.xml", sub);
	assert_string_equal(path, nested);
	free(nested);
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0755);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_true(st.st_size > 100);
	/* A missing parent is not created: the admin named the wrong place. */
	nested = ll_asprintf("%s/no/such", dir);
	assert_int_equal(ll_slurm_save_snapshot(topo, nested, NULL, &err), -ENOENT);
	assert_non_null(strstr(err.message, "cannot create state directory"));
	assert_string_equal(err.hint, "create its parent or pass --state-dir DIR");
	ll_error_clear(&err);
	hwloc_topology_destroy(topo);
	unlink(path);
	rmdir(sub);
	rmdir(dir);
	free(path);
	free(sub);
	free(nested);
}

/* Multi-node NVLink faults (slurm-health-fabric.c): the exact drain reasons. */
static void test_fabric_health(void **state)
{
	struct ll_gpu gpus[2] = { 0 };
	struct ll_facts f = { .gpus = gpus, .n_gpus = 2, .gpus_known = true, .imex_channels = 1 };
	struct ll_health h = { 0 };
	char dir[] = "/tmp/ll-test-imex-XXXXXX";
	char *line;

	(void)state;
	gpus[0].busid = "0000:01:00.0";
	gpus[1].busid = "0000:02:00.0";
	for (int i = 0; i < 2; i++) {
		gpus[i].vendor = LL_GPU_VENDOR_NVIDIA;
		gpus[i].nvfabric.state = LL_FABRIC_COMPLETED;
	}
	/* Healthy: checked, nothing to say. */
	ll_health_check_fabric(&f, 1, false, &h);
	assert_int_equal(h.n_faults, 0);
	assert_int_equal(h.n_notes, 0);
	assert_int_equal(h.n_checked, 2);
	ll_health_release(&h);

	/* Registration failed on one GPU, still running on the other, channels gone. */
	gpus[0].nvfabric.status = 999;
	gpus[1].nvfabric.state = LL_FABRIC_IN_PROGRESS;
	f.imex_channels = 0;
	ll_health_check_fabric(&f, 1, false, &h);
	assert_int_equal(h.n_faults, 2);
	line = ll_health_faults_line(&h);
	assert_string_equal(line, "NVLink fabric registration failed on GPU 0000:01:00.0 (NVML status 999); "
				  "IMEX channels missing: /dev/nvidia-caps-imex-channels had 1 this boot, now none");
	free(line);
	assert_int_equal(h.n_notes, 1);
	assert_string_equal(h.notes[0], "NVLink fabric registration not completed on GPU 0000:02:00.0 (in-progress): "
					"multi-node NVLink is off until it is");
	ll_health_release(&h);

	/* A node that never had channels (or whose channels are unknown) is not drained for them. */
	gpus[0].nvfabric.status = 0;
	ll_health_check_fabric(&f, -1, false, &h);
	assert_int_equal(h.n_faults, 0);
	ll_health_release(&h);
	f.imex_channels = -1;
	ll_health_check_fabric(&f, 1, false, &h);
	assert_int_equal(h.n_faults, 0);
	ll_health_release(&h);

	/* The mark an earlier Prolog leaves in the state directory. */
	assert_non_null(mkdtemp(dir));
	assert_int_equal(ll_slurm_imex_before(dir), -1);
	f.imex_channels = 0;
	assert_int_equal(ll_slurm_imex_remember(dir, &f), 0);
	assert_int_equal(ll_slurm_imex_before(dir), -1);
	f.imex_channels = 2;
	assert_int_equal(ll_slurm_imex_remember(dir, &f), 0);
	assert_int_equal(ll_slurm_imex_before(dir), 2);
	{
		char *path = ll_asprintf("%s/imex-channels", dir);
		unlink(path);
		free(path);
	}
	rmdir(dir);
}

/* Slurm's switch/nvidia_imex empties the host's channel directory and gives each job
 * its own channel: no IMEX drain, and a note that says why. */
static void test_fabric_health_slurm_imex(void **state)
{
	struct ll_gpu gpu = { .busid = "0000:01:00.0", .vendor = LL_GPU_VENDOR_NVIDIA };
	struct ll_facts f = { .gpus = &gpu, .n_gpus = 1, .gpus_known = true, .imex_channels = 0 };
	struct ll_health h = { 0 };

	(void)state;
	gpu.nvfabric.state = LL_FABRIC_COMPLETED;
	ll_health_check_fabric(&f, 1, true, &h);
	assert_int_equal(h.n_faults, 0);
	assert_int_equal(h.n_notes, 1);
	assert_string_equal(h.notes[0], "IMEX channels are Slurm's (SwitchType=switch/nvidia_imex): one per job, "
					"inside the job; the host's /dev/nvidia-caps-imex-channels is not checked");
	ll_health_release(&h);
}

static void test_slurm_conf(void **state)
{
	char path[] = "/tmp/ll-test-slurmconf-XXXXXX";
	int fd = mkstemp(path);
	char *v = NULL;
	static const char conf[] = "# SwitchType=switch/none in a comment\n"
				   "ClusterName=c1\n"
				   "  switchtype=switch/none   # an earlier value\n"
				   "NodeName=n[1-4] CPUs=8 State=UNKNOWN\n"
				   "SwitchType=switch/nvidia_imex SwitchParameters=imex_channel_count=2048\n";

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, conf, sizeof(conf) - 1), (ssize_t)(sizeof(conf) - 1));
	close(fd);
	assert_int_equal(ll_slurm_conf_get(path, "SwitchType", &v), 0);
	assert_string_equal(v, "switch/nvidia_imex");
	free(v);
	assert_int_equal(ll_slurm_conf_get(path, "SwitchParameters", &v), 0);
	assert_string_equal(v, "imex_channel_count=2048");
	free(v);
	assert_int_equal(ll_slurm_conf_get(path, "State", &v), 0); /* a key inside a NodeName line */
	free(v);
	assert_int_equal(ll_slurm_conf_get(path, "MpiDefault", &v), -ENOENT);
	assert_null(v);
	assert_true(ll_slurm_conf_imex_switch(path));
	unlink(path);
	assert_false(ll_slurm_conf_imex_switch(path));
	assert_false(ll_slurm_conf_imex_switch(NULL));
	assert_int_equal(ll_slurm_conf_get(path, "SwitchType", &v), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find_scontrol),
		cmocka_unit_test(test_save_snapshot),
		cmocka_unit_test(test_fabric_health),
		cmocka_unit_test(test_fabric_health_slurm_imex),
		cmocka_unit_test(test_slurm_conf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
