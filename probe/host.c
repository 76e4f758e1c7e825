/* Machine-level facts hwloc does not record (GPUDirect RDMA kernel module) or
 * records only sometimes (host name, DMI product name). */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "annotate.h"
#include "annotations.h"
#include "sysfs.h"

/* The peer-memory modules that let an RDMA NIC read GPU memory: nvidia_peermem
 * (in the NVIDIA driver since 465) and its predecessor nv_peer_mem (Mellanox). */
static const char *const gdr_modules[] = { "nvidia_peermem", "nv_peer_mem" };

int ll_annotate_host(hwloc_topology_t topo, const char *fsroot, struct ll_error *err)
{
	hwloc_obj_t root = hwloc_get_root_obj(topo);
	_cleanup_free_ char *moddir = ll_sysfs_path(fsroot, "/sys/module");

	(void)err;
	/* Without /sys/module (a gathered tree that did not copy it) nothing can
	 * be said; with it, a missing module directory means not loaded. */
	if (ll_sysfs_is_dir(moddir)) {
		const char *found = "none";

		for (size_t i = 0; i < LL_ARRAY_SIZE(gdr_modules); i++) {
			_cleanup_free_ char *p = ll_asprintf("%s/%s", moddir, gdr_modules[i]);
			if (ll_sysfs_is_dir(p)) {
				found = gdr_modules[i];
				break;
			}
		}
		ll_obj_info_once(root, LL_INFO_GDR_MODULE, found);
	}

	/* hwloc found the PCI devices there: none at all is then a fact (a fake tree,
	 * a CPU-only container), not an export made without I/O. */
	{
		_cleanup_free_ char *pci = ll_sysfs_path(fsroot, "/sys/bus/pci/devices");

		if (ll_sysfs_is_dir(pci))
			ll_obj_info_once(root, LL_INFO_PCI_SCANNED, "1");
	}

	/* AMD GPUs: RCCL takes GPUDirect RDMA as ready when a peer-memory client for
	 * amdkfd registered (ROCm/rccl src/transport/net_ib.cc: memory_peers/amdkfd/version
	 * below /sys/kernel/mm, /sys/kernel or /sys). Its other proof, the kernel's own
	 * ib_register_peer_memory_client in /proc/kallsyms, costs more than a probe to
	 * read: without the file, readiness on AMD stays unknown. */
	{
		static const char *const peers[] = { "/sys/kernel/mm/memory_peers/amdkfd/version",
						     "/sys/kernel/memory_peers/amdkfd/version",
						     "/sys/memory_peers/amdkfd/version" };

		for (size_t i = 0; i < LL_ARRAY_SIZE(peers); i++) {
			_cleanup_free_ char *p = ll_sysfs_path(fsroot, "%s", peers[i]);

			if (access(p, F_OK) == 0) {
				ll_obj_info_once(root, LL_INFO_AMD_PEER_MEMORY, "amdkfd");
				break;
			}
		}
	}

	/* What decides whether DMA-BUF can carry GPUDirect RDMA (NCCL docs,
	 * troubleshooting/gpu_troubleshooting.rst: recent kernels with the open
	 * NVIDIA driver): the kernel release, and which nvidia.ko is loaded. */
	{
		_cleanup_free_ char *rel = ll_sysfs_path(fsroot, "/proc/sys/kernel/osrelease");
		_cleanup_free_ char *ver = ll_sysfs_path(fsroot, "/proc/driver/nvidia/version");
		_cleanup_free_ char *v = NULL, *line = NULL;

		if (ll_sysfs_read(rel, &v) == 0)
			ll_obj_info_once(root, LL_INFO_KERNEL_RELEASE, v);
		/* "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15 ..."
		 * against "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05 ...". */
		if (ll_sysfs_read(ver, &line) == 0 && strstr(line, "Kernel Module"))
			ll_obj_info_once(root, LL_INFO_NVIDIA_MODULE, strstr(line, "Open Kernel Module") ? "open" : "proprietary");
	}

	if (!fsroot && !hwloc_obj_get_info_by_name(root, LL_INFO_HOSTNAME)) {
		char name[HOST_NAME_MAX + 1];

		if (gethostname(name, sizeof(name)) == 0) {
			name[HOST_NAME_MAX] = '\0';
			if (name[0])
				hwloc_obj_add_info(root, LL_INFO_HOSTNAME, name);
		}
	}

	if (!hwloc_obj_get_info_by_name(root, LL_INFO_DMI_PRODUCT)) {
		_cleanup_free_ char *p = ll_sysfs_path(fsroot, "/sys/class/dmi/id/product_name");
		_cleanup_free_ char *v = NULL;

		if (ll_sysfs_read(p, &v) == 0)
			hwloc_obj_add_info(root, LL_INFO_DMI_PRODUCT, v);
	}
	{
		int r = ll_annotate_imex(topo, fsroot, err);
		if (r < 0)
			return r;
	}
	return ll_annotate_net_plugins(topo, fsroot, err);
}
