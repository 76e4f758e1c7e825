/* The PCIe path class between two I/O objects, as nvidia-smi and NCCL count it. */
#ifndef LLMLAUNCH_PROBE_PCI_PATH_H
#define LLMLAUNCH_PROBE_PCI_PATH_H

#include <hwloc.h>

#include "llmlaunch/facts.h"

/* a and b are PCI devices or OS devices (which stand for their PCI device).
 * LL_PATH_UNKNOWN when either is not on PCIe (virtual RDMA devices). */
enum ll_path ll_pci_path(hwloc_obj_t a, hwloc_obj_t b);

#endif
