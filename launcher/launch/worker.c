/* Worker-side placement and exit records (llmlaunch/launch.h); the `__worker`
 * command that uses them is launcher/cli/cmd-worker.c.
 *
 * Binding uses the two system calls directly instead of hwloc_set_cpubind and
 * hwloc_set_membind: those need a loaded topology (several ms per worker, see
 * docs/launch.md), while CPU and node numbers in the placement are already the OS
 * indexes the kernel takes. */#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <hwloc.h>
#include <limits.h>
#include <linux/mempolicy.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "llmlaunch/file.h"
#include "llmlaunch/launch.h"

void ll_worker_placement_release(struct ll_worker_placement *p)
{
	if (!p)
		return;
	free(p->cpus);
	p->cpus = NULL;
}

/* One entry "R[:cpus=LIST][:mem=N]" of length n. */
static int parse_entry(const char *s, size_t n, struct ll_worker_placement *ret)
{
	const char *end = s + n, *p = memchr(s, ':', n);
	struct ll_worker_placement pl = { .mem = -1 };

	if (ll_parse_digits(s, (p ? p : end) - s, &pl.local_rank) < 0)
		return -EINVAL;
	while (p && p < end) {
		const char *field = p + 1, *next = memchr(field, ':', end - field);
		size_t len = (next ? next : end) - field;

		if (len > 5 && strncmp(field, "cpus=", 5) == 0 && !pl.cpus) {
			pl.cpus = ll_strndup(field + 5, len - 5);
		} else if (len > 4 && strncmp(field, "mem=", 4) == 0 && pl.mem < 0) {
			if (ll_parse_digits(field + 4, len - 4, &pl.mem) < 0)
				goto bad;
		} else {
			goto bad;
		}
		p = next;
	}
	*ret = pl;
	return 0;
bad:
	free(pl.cpus);
	return -EINVAL;
}

int ll_placement_find(const char *spec, int local_rank, struct ll_worker_placement *ret, struct ll_error *err)
{
	const char *p = spec;

	while (*p) {
		const char *semi = strchr(p, ';');
		size_t n = semi ? (size_t)(semi - p) : strlen(p);
		struct ll_worker_placement pl;

		if (parse_entry(p, n, &pl) < 0)
			return ll_error_set(err, -EINVAL, "malformed %s entry '%.*s'", LL_PLACEMENT_ENV, (int)n, p);
		if (pl.local_rank == local_rank) {
			*ret = pl;
			return 0;
		}
		ll_worker_placement_release(&pl);
		p += n + (semi ? 1 : 0);
	}
	return -ENOENT;
}

int ll_placement_apply_cpus(const struct ll_worker_placement *p, struct ll_error *err)
{
	hwloc_bitmap_t set;
	cpu_set_t *mask;
	size_t size;
	int last, r = 0;

	if (!p->cpus)
		return 0;
	set = hwloc_bitmap_alloc();
	if (!set)
		return ll_error_set(err, -ENOMEM, "cannot parse CPU list '%s'", p->cpus);
	if (hwloc_bitmap_list_sscanf(set, p->cpus) < 0 || hwloc_bitmap_iszero(set) ||
	    (last = hwloc_bitmap_last(set)) < 0 || last >= 1 << 20) {
		hwloc_bitmap_free(set);
		return ll_error_set(err, -EINVAL, "cannot bind local rank %d: bad CPU list '%s'", p->local_rank,
				    p->cpus);
	}
	mask = CPU_ALLOC(last + 1);
	size = CPU_ALLOC_SIZE(last + 1);
	CPU_ZERO_S(size, mask);
	for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i))
		CPU_SET_S(i, size, mask);
	if (sched_setaffinity(0, size, mask) < 0)
		r = ll_error_set(err, -errno, "cannot bind local rank %d to CPUs '%s': %s", p->local_rank, p->cpus,
				 strerror(errno));
	CPU_FREE(mask);
	hwloc_bitmap_free(set);
	return r;
}

int ll_placement_apply_mem(const struct ll_worker_placement *p, struct ll_error *err)
{
	enum { MAX_NODES = 1024, BITS = sizeof(unsigned long) * CHAR_BIT };
	unsigned long nodes[MAX_NODES / BITS] = { 0 };

	if (p->mem < 0)
		return 0;
	if (p->mem >= MAX_NODES)
		return ll_error_set(err, -EINVAL, "cannot bind local rank %d to memory of NUMA node %d: beyond %d",
				    p->local_rank, p->mem, MAX_NODES);
	nodes[p->mem / BITS] |= 1UL << (p->mem % BITS);
	/* maxnode counts one more than the bits the kernel reads. */
	if (syscall(SYS_set_mempolicy, MPOL_BIND, nodes, (unsigned long)MAX_NODES + 1) < 0)
		return ll_error_set(err, -errno, "cannot bind local rank %d to memory of NUMA node %d: %s",
				    p->local_rank, p->mem, strerror(errno));
	return 0;
}

/* ---- exit records ---- */

int ll_worker_status_write(const char *dir, int local_rank, int attempt, int wstatus, struct ll_error *err)
{
	return ll_worker_end_write(dir,
				   &(struct ll_worker_end){
					   .local_rank = local_rank, .rank = -1, .attempt = attempt, .wstatus = wstatus },
				   err);
}

int ll_worker_status_collect(const char *dir, int *ret_status, int *ret_rank)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	long long best_time = 0;
	int best_attempt = -1, best_status = 0, best_rank = -1;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char *path, *text = NULL, kind[8];
		int rank, attempt, num;
		long long t;

		if (sscanf(e->d_name, "rank-%d-attempt-%d", &rank, &attempt) != 2 || strstr(e->d_name, ".tmp"))
			continue;
		path = ll_asprintf("%s/%s", dir, e->d_name);
		if (ll_read_file(path, 128, &text) == 0 && sscanf(text, "%7s %d %lld", kind, &num, &t) == 3) {
			bool failed = strcmp(kind, "signal") == 0 || num != 0;
			int status = strcmp(kind, "signal") == 0 ? 128 + num : num;

			/* A newer attempt replaces everything before it; within one
			 * attempt the first failure is the cause, later ones mostly
			 * torchrun stopping the others. */
			if (attempt > best_attempt) {
				best_attempt = attempt;
				best_rank = -1;
			}
			if (attempt == best_attempt && failed && (best_rank < 0 || t < best_time)) {
				best_time = t;
				best_status = status;
				best_rank = rank;
			}
		}
		free(text);
		unlink(path);
		free(path);
	}
	closedir(d);
	if (best_rank < 0)
		return 0;
	*ret_status = best_status;
	*ret_rank = best_rank;
	return 1;
}
