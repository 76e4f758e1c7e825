/* What the job's torch is, as far as starting it needs to know (probe/torch.c): its
 * version and directory, and whether its TCPStore can start as torch asks it to by
 * default. Asked once per interpreter and boot: the answer is cached beside the
 * probe's (the per-boot cache directory) and checked against torch's files on every
 * read, so a reinstalled torch is asked again; "torch is not importable" is kept too,
 * checked against the directories python looked in, so an installed torch is seen. */
#ifndef LLMLAUNCH_TORCH_H
#define LLMLAUNCH_TORCH_H

#include <stdbool.h>

#include "llmlaunch/util.h"

enum ll_torch_libuv {
	LL_TORCH_LIBUV_UNKNOWN = 0, /* not asked, or no answer (error says why) */
	LL_TORCH_LIBUV_NOT_ASKED,   /* torch < 2.4: TCPStore does not ask for libuv by default */
	LL_TORCH_LIBUV_WORKS,       /* TCPStore's default start works (built with libuv, or not asking) */
	LL_TORCH_LIBUV_MISSING,     /* built without libuv, asks for it, and takes use_libuv=False */
	LL_TORCH_LIBUV_NO_KNOB,     /* built without libuv, asks for it, and has no use_libuv parameter */
};
const char *ll_torch_libuv_name(enum ll_torch_libuv v); /* "unknown", "not-asked", ... */

struct ll_torch_facts {
	char *version;              /* torch.__version__ from torch/version.py: "2.6.0+debian" */
	char *dir;                  /* the torch package's directory */
	enum ll_torch_libuv libuv;
	char *error;                /* why there is no answer (libuv unknown) */
	char **path;                /* where torch was looked for, when it is not importable */
	size_t n_path;
	char *cache_status;         /* "hit 'PATH'", "miss (why); written 'PATH'", "off (why)" */
};
void ll_torch_facts_release(struct ll_torch_facts *t);

/* A version as MAJOR * 100 + MINOR ("2.6.0+debian": 206, "1.13.0a0": 113), the
 * scale of ll_torchrun_option.since; -1 when it is not one. */
int ll_torch_version_code(const char *version);

/* Read the asking script's answer ("dir D", "version V", "libuv WORD", "error TEXT",
 * "path P" lines) into *ret (released first). -EBADMSG for a line it does not know. */
int ll_torch_facts_parse(const char *text, struct ll_torch_facts *ret);

/* Ask `python` (an absolute path), run with envp (NULL: ours), about its torch, or
 * take the cached answer. Never fails: what went wrong is in ret->error and
 * ret->cache_status. Costs about 30 ms for torch < 2.4 (no import) and one
 * `import torch.distributed` (seconds) otherwise, once per boot. */
void ll_torch_probe(const char *python, char *const *envp, bool no_cache, struct ll_torch_facts *ret);

#endif
