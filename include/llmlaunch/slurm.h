/* Slurm integration (docs/slurm.md): the node health verdict the Prolog gives from
 * the facts and the profiles' `expect` rules, the state directory where the Prolog
 * leaves the node's snapshot for the TaskProlog, and the drain call (bounded, as
 * every child of the Prolog: llmlaunch/child.h).
 * Library code: returns 0 or -errno, fills struct ll_error, never prints. */
#ifndef LLMLAUNCH_SLURM_H
#define LLMLAUNCH_SLURM_H

#include <hwloc.h>
#include <stdbool.h>
#include <stddef.h>
#include "llmlaunch/facts.h"
#include "llmlaunch/profile.h"
#include "llmlaunch/child.h"
#include "llmlaunch/util.h"

/* ---- the job's variables (launcher/slurm/slurm-job.c) ---- */

/* What Slurm tells a process about its job. Strings are borrowed from the
 * environment they were read from. */
struct ll_slurm_job {
	bool in_step;               /* SLURM_STEP_ID set: inside srun, not the batch script */
	const char *nodelist;       /* the step's node list, else the job's; NULL unset */
	long nnodes;                /* the step's node count, else the job's */
	const char *nnodes_name;    /* the variable it came from */
	long node_id;               /* SLURM_NODEID, 0 when unset */
	long job_id;                /* -1 unset */
	long step_id;               /* -1: not a numbered step ("batch", "extern", none) */
	long step_tasks;            /* SLURM_STEP_NUM_TASKS, -1 unset */
	const char *topology_addr;  /* SLURM_TOPOLOGY_ADDR ("s1.s7.n12"), NULL */
};

/* SLURM_JOB_ID and SLURM_JOB_NODELIST are both set (NULL env: the process's). */
bool ll_slurm_in_job(char *const *env);

/* Read the job from `env` (NULL: the process's). The node count is, in this order,
 * SLURM_STEP_NUM_NODES, SLURM_JOB_NUM_NODES, SLURM_NNODES; an empty value counts as
 * unset. -ENOENT when there is no node count (not in a job), -EINVAL naming the
 * variable when a value is not a number or SLURM_NODEID is outside the count. The node list and job id may
 * be unset (-1, NULL): a caller that needs them checks. */
int ll_slurm_job_read(char *const *env, struct ll_slurm_job *ret, struct ll_error *err);

/* ---- health (launcher/slurm/slurm-health.c) ---- */

/* The verdict on one node. A fault is something wrong with the node itself (a GPU
 * missing, a port down, the GPUDirect RDMA module not loaded): worth draining it.
 * A note is an expectation that could not be checked from the facts (a snapshot
 * without link layers): never a fault, because a guess must not drain a node. */
struct ll_health {
	char **faults;          /* one line each: "expected 8 GPUs, found 7" */
	size_t n_faults;
	char **notes;
	size_t n_notes;
	unsigned n_checked;     /* expectations stated and decided (met or not) */
	unsigned n_stated;      /* expectations stated */
};

/* Check `facts` against `e` (fields -1 / UNKNOWN are not stated). Semantics:
 *   gpus               at least this many GPUs (fewer: one fell off the bus)
 *   active_rdma_ports  at least this many ACTIVE ports (of link_layer when stated)
 *   link_layer         without active_rdma_ports: at least one active port of it
 *   gdr_required       true: the nvidia_peermem (or nv_peer_mem) module is loaded
 * Faults come only from fields no fetched profile stated (e->fetched): what a
 * fetched profile's fields add is a note, so a shared profile cannot drain nodes.
 * `ret` is filled and owned by the caller (ll_health_release). */
void ll_health_check(const struct ll_facts *facts, const struct ll_profile_expect *e, struct ll_health *ret);
void ll_health_release(struct ll_health *h);

/* Multi-node NVLink (launcher/slurm/slurm-health-fabric.c), checked on every node
 * whose facts tell, with no profile needed: a GPU whose NVLink fabric registration
 * failed is a fault; so are IMEX channels missing where `imex_before` (> 0: how many
 * this boot's earlier Prologs saw; -1 unknown) says there were some. A registration
 * not completed yet is a note. `slurm_imex`: Slurm's switch/nvidia_imex makes the
 * channels, one per job in the job's own mount namespace, and empties the host's
 * directory: the host's channels say nothing then, and are not checked.
 * Adds to `h` (after ll_health_check). */
void ll_health_check_fabric(const struct ll_facts *facts, int imex_before, bool slurm_imex, struct ll_health *h);
/* The IMEX channel count an earlier Prolog of this boot saw (STATE_DIR/imex-channels),
 * -1 when none was recorded, or when STATE_DIR is not one only this user may change
 * (ll_slurm_state_dir_open): a mark anyone could plant must not drain a node. */
int ll_slurm_imex_before(const char *state_dir);
/* Record the node's IMEX channel count when it has channels; 0 or -errno. */
int ll_slurm_imex_remember(const char *state_dir, const struct ll_facts *facts);
/* The value of KEY in slurm.conf at `path` (launcher/slurm/slurm-conf.c): 0 and
 * `ret` (malloc'ed), -ENOENT when the key is absent, or -errno reading the file. */
int ll_slurm_conf_get(const char *path, const char *key, char **ret);
/* slurm.conf at `path` sets SwitchType=switch/nvidia_imex (false when unreadable). */
bool ll_slurm_conf_imex_switch(const char *path);
/* All faults joined with "; " (malloc'ed), NULL when there are none. */
char *ll_health_faults_line(const struct ll_health *h);

/* ---- state directory and drain (launcher/slurm/slurm-prolog.c) ---- */

#define LL_SLURM_STATE_DIR "/run/llmlaunch"
#define LL_SLURM_SNAPSHOT_NAME "snapshot.xml"
#define LL_SLURM_PROLOG_TIMEOUT 8.0

/* STATE_DIR/snapshot.xml (malloc'ed). */
char *ll_slurm_snapshot_path(const char *state_dir);

/* Open the state directory for root's Prolog or for reading root's snapshot: an
 * absolute path walked one component at a time without following a symbolic link
 * anywhere, the directory owned by `owner` and writable by nobody else (not its
 * group, not others). `create`: make the last component (0755) when it is missing.
 * Returns the directory's descriptor (O_CLOEXEC) or -errno with `err` saying why
 * ("is a symbolic link", "is owned by uid 1000", "is writable by others"). */
int ll_slurm_state_dir_open(const char *dir, uid_t owner, bool create, struct ll_error *err);

/* The Prolog's snapshot as a TaskProlog may trust it: STATE_DIR owned by root and
 * writable by nobody else (ll_slurm_state_dir_open), snapshot.xml a regular file,
 * not a link, owned by root and writable by nobody else. 0 with *ret_path, a path
 * that reads it through the checked directory (malloc'ed), and *ret_dirfd, which
 * the caller closes after the load; -ENOENT when there is none; another -errno
 * with `err` saying why the snapshot is not used. */
int ll_slurm_snapshot_trusted(const char *state_dir, char **ret_path, int *ret_dirfd, struct ll_error *err);

/* Write `topo` as STATE_DIR/snapshot.xml: a temporary file in the same directory,
 * made readable by every user (0644), then renamed over the old one, so a reader
 * sees the old snapshot or the new one, never half of one. STATE_DIR is opened with
 * ll_slurm_state_dir_open() (owner: this process's user) and created (0755) when it
 * is missing (not its parents). *ret_path (optional) gets the final path. */
int ll_slurm_save_snapshot(hwloc_topology_t topo, const char *state_dir, char **ret_path, struct ll_error *err);

/* Where scontrol is: `hint` when it is an executable file, else the first executable
 * "scontrol" in $PATH, then /usr/bin, /usr/local/bin, /opt/slurm/bin (a Prolog runs
 * with no PATH at all in Slurm 22.05). NULL when none is found; malloc'ed. */
char *ll_slurm_find_scontrol(const char *hint);

/* `scontrol update NodeName=NODE State=DRAIN Reason=REASON`, bounded. Slurm shows
 * only "Prolog error" for a failed Prolog; this puts the fault itself in
 * `sinfo -R`. The reason is cut to 200 bytes and newlines become spaces. */
int ll_slurm_drain(const char *scontrol, const char *node, const char *reason, double timeout_s,
		   struct ll_error *err);

#endif
