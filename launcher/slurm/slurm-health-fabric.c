/* The Prolog's verdict on multi-node NVLink (GB200 NVL72 and its kind): a GPU whose
 * fabric registration failed, or IMEX channels gone from a node that had them this
 * boot, drains the node. Both are node faults no job can work around: NCCL turns
 * multi-node NVLink off for the whole job when one GPU is not registered (NCCL 2.30,
 * src/mnnvl.cc), and stops it when CUDA finds no IMEX channel. A registration still
 * in progress (right after boot the fabric manager may be at it) is a note. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llmlaunch/file.h"
#include "llmlaunch/slurm.h"

#define GPUS_SHOWN 4

static void add(char ***v, size_t *n, char *s)
{
	*(char **)ll_array_push(v, n, sizeof(char *)) = s;
}

void ll_health_check_fabric(const struct ll_facts *f, int imex_before, bool slurm_imex, struct ll_health *h)
{
	struct ll_buf failed, pending;
	size_t n_failed = 0, n_pending = 0;
	bool known = false;

	ll_buf_init(&failed);
	ll_buf_init(&pending);
	for (size_t i = 0; i < f->n_gpus; i++) {
		const struct ll_gpu_fabric_info *fi = &f->gpus[i].nvfabric;

		if (fi->state == LL_FABRIC_UNKNOWN || fi->state == LL_FABRIC_NOT_SUPPORTED)
			continue;
		known = true;
		/* Four GPUs named at most: Slurm keeps 200 bytes of a drain reason. */
		if (fi->state == LL_FABRIC_COMPLETED && fi->status != 0 && n_failed++ < GPUS_SHOWN)
			ll_buf_addf(&failed, "%s%s (NVML status %d)", failed.len ? ", " : "", f->gpus[i].busid, fi->status);
		else if (fi->state != LL_FABRIC_COMPLETED && n_pending++ < GPUS_SHOWN)
			ll_buf_addf(&pending, "%s%s (%s)", pending.len ? ", " : "", f->gpus[i].busid,
				    ll_fabric_state_name(fi->state));
	}
	if (n_failed > GPUS_SHOWN)
		ll_buf_addf(&failed, " and %zu more", n_failed - GPUS_SHOWN);
	if (n_pending > GPUS_SHOWN)
		ll_buf_addf(&pending, " and %zu more", n_pending - GPUS_SHOWN);
	if (known) {
		h->n_stated++;
		h->n_checked++;
	}
	if (failed.len)
		add(&h->faults, &h->n_faults, ll_asprintf("NVLink fabric registration failed on GPU %s", failed.s));
	if (pending.len)
		add(&h->notes, &h->n_notes,
		    ll_asprintf("NVLink fabric registration not completed on GPU %s: multi-node NVLink is off until "
				"it is",
				pending.s));
	ll_buf_release(&failed);
	ll_buf_release(&pending);

	if (slurm_imex && known)
		add(&h->notes, &h->n_notes,
		    ll_strdup("IMEX channels are Slurm's (SwitchType=switch/nvidia_imex): one per job, inside the "
			      "job; the host's /dev/nvidia-caps-imex-channels is not checked"));
	else if (imex_before > 0 && f->imex_channels >= 0) {
		h->n_stated++;
		h->n_checked++;
		if (f->imex_channels == 0)
			add(&h->faults, &h->n_faults,
			    ll_asprintf("IMEX channels missing: /dev/nvidia-caps-imex-channels had %d this boot, now none",
					imex_before));
	}
}

#define IMEX_STATE_NAME "imex-channels"

int ll_slurm_imex_before(const char *state_dir)
{
	_cleanup_free_ char *path = NULL, *line = NULL;
	struct ll_error err = { 0 };
	char *end;
	long n;
	int dfd = ll_slurm_state_dir_open(state_dir, geteuid(), false, &err);

	ll_error_clear(&err);
	if (dfd < 0)
		return -1;
	path = ll_asprintf("/proc/self/fd/%d/%s", dfd, IMEX_STATE_NAME);
	n = ll_read_line(path, &line);
	close(dfd);
	if (n < 0)
		return -1;
	n = strtol(line, &end, 10);
	return end != line && *end == '\0' && n >= 0 && n < 1000000 ? (int)n : -1;
}

int ll_slurm_imex_remember(const char *state_dir, const struct ll_facts *f)
{
	struct ll_error err = { 0 };
	char text[32];
	int n, dfd, r;

	/* Only a node that has channels sets the mark; it stays (the state directory is
	 * under /run: gone at reboot, like the channels) until they are back. */
	if (f->imex_channels <= 0)
		return 0;
	n = snprintf(text, sizeof(text), "%d\n", f->imex_channels);
	dfd = ll_slurm_state_dir_open(state_dir, geteuid(), true, &err);
	ll_error_clear(&err);
	if (dfd < 0)
		return dfd;
	r = ll_file_replace_at(dfd, IMEX_STATE_NAME, text, (size_t)n, 0644);
	close(dfd);
	return r;
}
