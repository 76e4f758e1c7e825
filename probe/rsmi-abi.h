/* The part of ROCm SMI's ABI probe/rsmi.c uses, declared here because ROCm's header
 * (rocm_smi/rocm_smi.h, ROCm/rocm_smi_lib) is not installed on build machines. Types
 * and values as that header declares them. */
#ifndef LLMLAUNCH_PROBE_RSMI_ABI_H
#define LLMLAUNCH_PROBE_RSMI_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef int rsmi_status_t;          /* enum rsmi_status_t: RSMI_STATUS_SUCCESS = 0 */
#define RSMI_STATUS_SUCCESS 0
#define RSMI_STATUS_NOT_SUPPORTED 2
#define RSMI_STATUS_INIT_ERROR 8    /* the 9th enumerator: SUCCESS, INVALID_ARGS,
				     * NOT_SUPPORTED, FILE_ERROR, PERMISSION,
				     * OUT_OF_RESOURCES, INTERNAL_EXCEPTION,
				     * INPUT_OUT_OF_BOUNDS, INIT_ERROR */

typedef int RSMI_IO_LINK_TYPE;      /* UNDEFINED 0, PCIEXPRESS 1, XGMI 2 */
#define RSMI_IOLINK_TYPE_XGMI 2

/* BDFID = (domain << 32) | (partition << 28) | (bus << 8) | (device << 3) | function */
typedef rsmi_status_t (*rsmi_init_fn)(uint64_t init_flags);
typedef rsmi_status_t (*rsmi_shut_down_fn)(void);
typedef rsmi_status_t (*rsmi_num_monitor_devices_fn)(uint32_t *num_devices);
typedef rsmi_status_t (*rsmi_dev_pci_id_get_fn)(uint32_t dv_ind, uint64_t *bdfid);
typedef rsmi_status_t (*rsmi_dev_name_get_fn)(uint32_t dv_ind, char *name, size_t len);
typedef rsmi_status_t (*rsmi_dev_unique_id_get_fn)(uint32_t dv_ind, uint64_t *id);
typedef rsmi_status_t (*rsmi_topo_get_link_type_fn)(uint32_t src, uint32_t dst, uint64_t *hops,
						    RSMI_IO_LINK_TYPE *type);
typedef rsmi_status_t (*rsmi_status_string_fn)(rsmi_status_t status, const char **text);

#endif
