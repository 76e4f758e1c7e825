/* Shared between the files that turn a topology into struct ll_facts
 * (facts.c: host, GPUs, NVLink; facts-net.c: RDMA devices and interfaces;
 * facts-data.c: name tables, freeing, queries). Not a public interface. */
#ifndef LLMLAUNCH_PROBE_FACTS_INTERNAL_H
#define LLMLAUNCH_PROBE_FACTS_INTERNAL_H

#include <hwloc.h>

#include "llmlaunch/facts.h"

char *ll_facts_busid(hwloc_obj_t pci);                        /* "0000:07:00.0" */
hwloc_obj_t ll_facts_pci_parent(hwloc_obj_t o);               /* NULL if the parent is no PCI device */
int ll_facts_numa(hwloc_topology_t topo, hwloc_obj_t o);      /* -1 unless one NUMA node */
long ll_facts_parse_long(const char *s, int base);            /* -1 for NULL, garbage, negative */
enum ll_netif_kind ll_netif_kind_from_name(const char *s);    /* NetKind value */

/* Fill f->rdma (natural name order) and return the hwloc object of each. */
void ll_facts_rdma_extract(hwloc_topology_t topo, struct ll_facts *f, hwloc_obj_t **ret_objs);
/* Fill f->netifs (name order); needs f->rdma first. */
void ll_facts_netifs_extract(hwloc_topology_t topo, struct ll_facts *f);
/* RoCE ports' QoS reasons and path MTU, once ports and interfaces are known. */
void ll_facts_port_qos_finish(struct ll_facts *f);

#endif
