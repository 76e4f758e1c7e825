/* The job's torch, asked once per interpreter and boot (llmlaunch/torch.h).
 *
 * torch >= 2.4 starts TCPStore with use_libuv=True unless told otherwise (the
 * default of the binding's use_libuv argument, torch/csrc/distributed/c10d/init.cpp,
 * v2.4.0), and a torch built without libuv (USE_LIBUV=OFF: Debian 13's python3-torch
 * 2.6) then fails with "use_libuv was requested but PyTorch was build without libuv
 * support". No file of torch says how it was built, so the question is asked the
 * only sure way: start a TCPStore on 127.0.0.1, port 0, as torch's own callers do.
 * That needs `import torch.distributed` (seconds), so older torch (read from
 * torch/version.py, no import) is not asked, and the answer is cached. */
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "llmlaunch/child.h"
#include "llmlaunch/file.h"
#include "llmlaunch/hash.h"
#include "llmlaunch/torch.h"

#define TORCH_ASK_TIMEOUT_S 120.0
#define TORCH_CACHE_FORMAT "llmlaunch-torch 1"

/* The answer for an interpreter without torch: a definite one, kept like a version. */
#define NO_TORCH "torch is not importable"

/* One answer line each: "dir D", "version V", then "libuv WORD" or "error TEXT"; with
 * torch not importable, "path P" for each directory an installed torch would appear
 * in (the search path, '' as '.', and the site directories that may not exist yet). */
static const char ask_code[] =
	"import importlib.util, os, re, sys\n"
	"NO_TORCH = '" NO_TORCH "'\n"
	"def say(*a): print(*a, flush=True)\n"
	"s = importlib.util.find_spec('torch')\n"
	"if s is None or not s.submodule_search_locations:\n"
	"    say('error', NO_TORCH)\n"
	"    import site\n"
	"    user = [site.getusersitepackages()] if site.ENABLE_USER_SITE else []\n"
	"    seen = set()\n"
	"    for p in sys.path + list(getattr(site, 'getsitepackages', list)()) + user:\n"
	"        p = p or '.'\n"
	"        if p not in seen and '\\n' not in p:\n"
	"            seen.add(p); say('path', p)\n"
	"    sys.exit(0)\n"
	"d = list(s.submodule_search_locations)[0]\n"
	"say('dir', d)\n"
	"try:\n"
	"    with open(os.path.join(d, 'version.py')) as f:\n"
	"        m = re.search(r'^__version__\\s*=\\s*[\\'\"]([^\\'\"]+)', f.read(), re.M)\n"
	"except OSError as e:\n"
	"    m = None\n"
	"if not m:\n"
	"    say('error no __version__ in', os.path.join(d, 'version.py')); sys.exit(0)\n"
	"say('version', m.group(1))\n"
	"if tuple(int(x) for x in re.findall(r'\\d+', m.group(1))[:2]) < (2, 4):\n"
	"    say('libuv not-asked'); sys.exit(0)\n"
	"import torch.distributed as dist\n"
	"try:\n"
	"    dist.TCPStore('127.0.0.1', 0, 1, True, wait_for_workers=False)\n"
	"    say('libuv works')\n"
	"except RuntimeError as e:\n"
	"    if 'libuv' not in str(e):\n"
	"        say('error', str(e).splitlines()[0] if str(e) else type(e).__name__); sys.exit(0)\n"
	"    doc = getattr(dist.TCPStore.__init__, '__doc__', None) or ''\n"
	"    say('libuv missing' if 'use_libuv' in doc else 'libuv no-knob')\n";

static const char *const libuv_names[] = {
	[LL_TORCH_LIBUV_UNKNOWN] = "unknown",     [LL_TORCH_LIBUV_NOT_ASKED] = "not-asked",
	[LL_TORCH_LIBUV_WORKS] = "works",         [LL_TORCH_LIBUV_MISSING] = "missing",
	[LL_TORCH_LIBUV_NO_KNOB] = "no-knob",
};

const char *ll_torch_libuv_name(enum ll_torch_libuv v)
{
	return (size_t)v < LL_ARRAY_SIZE(libuv_names) ? libuv_names[v] : "unknown";
}

void ll_torch_facts_release(struct ll_torch_facts *t)
{
	if (!t)
		return;
	free(t->version);
	free(t->dir);
	free(t->error);
	free(t->cache_status);
	ll_strv_free(t->path, t->n_path);
	memset(t, 0, sizeof(*t));
}

int ll_torch_version_code(const char *version)
{
	unsigned major, minor;
	char dot;

	if (!version || sscanf(version, "%u.%u%c", &major, &minor, &dot) < 2 || major > 99 || minor > 99)
		return -1;
	return (int)(major * 100 + minor);
}

static void set_str(char **dst, const char *s, size_t n)
{
	free(*dst);
	*dst = ll_strndup(s, n);
}

int ll_torch_facts_parse(const char *text, struct ll_torch_facts *ret)
{
	struct ll_torch_facts t = { 0 };
	const char *p = text;

	ll_torch_facts_release(ret);
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		const char *sp = memchr(p, ' ', n);
		size_t key = sp ? (size_t)(sp - p) : n;
		const char *val = sp ? sp + 1 : p + n;
		size_t vlen = (size_t)(p + n - val);

		if (n == 0) {
			/* an empty line says nothing */
		} else if (key == 3 && strncmp(p, "dir", 3) == 0 && vlen) {
			set_str(&t.dir, val, vlen);
		} else if (key == 7 && strncmp(p, "version", 7) == 0 && vlen) {
			set_str(&t.version, val, vlen);
		} else if (key == 5 && strncmp(p, "error", 5) == 0) {
			set_str(&t.error, val, vlen);
		} else if (key == 4 && strncmp(p, "path", 4) == 0 && vlen) {
			char **slot = ll_array_push(&t.path, &t.n_path, sizeof(*t.path));

			*slot = ll_strndup(val, vlen);
		} else if (key == 5 && strncmp(p, "libuv", 5) == 0) {
			size_t i;

			for (i = 1; i < LL_ARRAY_SIZE(libuv_names); i++)
				if (strlen(libuv_names[i]) == vlen && strncmp(val, libuv_names[i], vlen) == 0)
					break;
			if (i == LL_ARRAY_SIZE(libuv_names))
				goto bad;
			t.libuv = (enum ll_torch_libuv)i;
		} else {
			goto bad;
		}
		p = nl ? nl + 1 : NULL;
	}
	*ret = t;
	return 0;
bad:
	ll_torch_facts_release(&t);
	return -EBADMSG;
}

/* ---- asking ---- */

struct ask {
	const char *python;
	char *const *envp;
};

static int ask_child(void *data, int fd)
{
	const struct ask *a = data;
	char *argv[] = { (char *)a->python, "-c", (char *)ask_code, NULL };
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	/* stdin and stderr on /dev/null (torch's import warnings are not an answer),
	 * stdout on the answer pipe. */
	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 2) < 0 || dup2(fd, 1) < 0)
		return 127;
	if (a->envp)
		execve(a->python, argv, a->envp);
	else
		execv(a->python, argv);
	return 127;
}

/* ---- the cache ---- */

/* What the answer depends on besides torch's own files: this boot, the interpreter
 * (its path, inode and change time: a new venv or a reinstalled python), and the
 * variables that move where it finds torch. */
static char *cache_key(const char *python, char *const *envp)
{
	static const char *const vars[] = { "PYTHONPATH=", "PYTHONHOME=", "PYTHONUSERBASE=", "PYTHONNOUSERSITE=",
					    "PYTHONSAFEPATH=" };
	_cleanup_free_ char *boot = NULL;
	struct stat st;
	uint64_t h = LL_HASH_INIT;

	if (ll_read_line("/proc/sys/kernel/random/boot_id", &boot) < 0 || !*boot || stat(python, &st) < 0)
		return NULL;
	for (size_t i = 0; i < LL_ARRAY_SIZE(vars); i++) {
		const char *v = NULL;

		for (char *const *e = envp ? envp : environ; e && *e; e++)
			if (strncmp(*e, vars[i], strlen(vars[i])) == 0)
				v = *e;
		h = ll_hash_add_part(h, v);
	}
	return ll_asprintf("boot %s\npython %s %llu %lld.%09ld\nenv %016llx", boot, python,
			   (unsigned long long)st.st_ino, (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec,
			   (unsigned long long)h);
}

/* torch's own files as they are now: version.py's change time (a reinstall). */
static char *torch_stamp(const char *dir)
{
	_cleanup_free_ char *path = dir ? ll_asprintf("%s/version.py", dir) : NULL;
	struct stat st;

	if (!path || stat(path, &st) < 0)
		return ll_strdup("none");
	return ll_asprintf("%llu %lld.%09ld", (unsigned long long)st.st_ino, (long long)st.st_ctim.tv_sec,
			   st.st_ctim.tv_nsec);
}

/* Where python looked for torch and did not find it, as those directories are now:
 * installing torch (or a .pth file) adds an entry to one of them, or makes a site
 * directory that did not exist. A relative entry ('.': the working directory, as in
 * the job's own sys.path[0]) is read from ours. */
static char *search_stamp(char *const *path, size_t n)
{
	uint64_t h = LL_HASH_INIT;

	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *one = NULL;
		struct stat st;

		if (stat(path[i], &st) < 0)
			one = ll_asprintf("%s -", path[i]);
		else
			one = ll_asprintf("%s %llu %lld.%09ld", path[i], (unsigned long long)st.st_ino,
					  (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
		h = ll_hash_add_part(h, one);
	}
	return ll_asprintf("search %016llx", (unsigned long long)h);
}

/* A definite "no torch": the interpreter ran to its end and said so, with where it
 * looked. A failure to ask (no answer, a crash, a timeout) is not one. */
static bool no_torch_answer(const struct ll_torch_facts *t, int status)
{
	return status == 0 && t->libuv == LL_TORCH_LIBUV_UNKNOWN && !t->dir && t->error &&
	       strcmp(t->error, NO_TORCH) == 0 && t->n_path > 0;
}

/* What a kept answer is checked against on every read. */
static char *answer_stamp(const struct ll_torch_facts *t)
{
	return t->libuv == LL_TORCH_LIBUV_UNKNOWN ? search_stamp(t->path, t->n_path) : torch_stamp(t->dir);
}

/* The cached answer when its key and torch's stamp still hold. */
static int cache_lookup(const char *path, const char *key, struct ll_torch_facts *ret)
{
	struct ll_cache c = { .path = (char *)path };
	_cleanup_free_ char *text = NULL, *stamp = NULL, *now = NULL;
	const char *answer, *stamp_line;
	size_t head = strlen(TORCH_CACHE_FORMAT "\n") + strlen(key) + 1;
	int r;

	r = ll_cache_read(&c, &text);
	if (r < 0)
		return r;
	if (strlen(text) < head || strncmp(text, TORCH_CACHE_FORMAT "\n", strlen(TORCH_CACHE_FORMAT "\n")) != 0 ||
	    strncmp(text + strlen(TORCH_CACHE_FORMAT "\n"), key, strlen(key)) != 0 || text[head - 1] != '\n')
		return -ESTALE;
	stamp_line = text + head;
	if (strncmp(stamp_line, "stamp ", 6) != 0 || !(answer = strchr(stamp_line, '\n')))
		return -ESTALE;
	stamp = ll_strndup(stamp_line + 6, (size_t)(answer - stamp_line - 6));
	r = ll_torch_facts_parse(answer + 1, ret);
	if (r < 0 || (ret->libuv == LL_TORCH_LIBUV_UNKNOWN && !no_torch_answer(ret, 0))) {
		ll_torch_facts_release(ret);
		return -ESTALE;
	}
	now = answer_stamp(ret);
	if (strcmp(now, stamp) != 0) {
		ll_torch_facts_release(ret);
		return -ESTALE;
	}
	return 0;
}

void ll_torch_probe(const char *python, char *const *envp, bool no_cache, struct ll_torch_facts *ret)
{
	_cleanup_free_ char *dir = NULL, *bad = NULL, *key = NULL, *path = NULL, *output = NULL, *miss = NULL;
	struct ask a = { .python = python, .envp = envp };
	struct ll_error err = { 0 };
	int r, status = 0;

	ll_torch_facts_release(ret);
	if (no_cache) {
		miss = ll_strdup("off (--no-cache)");
	} else if (!(dir = ll_cache_dir(&r, &bad))) {
		miss = r < 0 ? ll_asprintf("off (cannot use '%s': %s)", bad, ll_cache_dir_error(r))
			     : ll_strdup("off (no cache directory: set XDG_RUNTIME_DIR or LLMLAUNCH_CACHE_DIR)");
	} else if (!(key = cache_key(python, envp))) {
		miss = ll_asprintf("off (cannot read the boot id or stat '%s')", python);
	} else {
		path = ll_asprintf("%s/torch-%016llx.txt", dir, (unsigned long long)ll_hash(key, strlen(key)));
		r = cache_lookup(path, key, ret);
		if (r == 0) {
			ret->cache_status = ll_asprintf("hit '%s'", path);
			return;
		}
		miss = ll_asprintf("miss (%s)", r == -ESTALE ? "another interpreter, boot or torch" : strerror(-r));
	}

	r = ll_run_bounded(ask_child, &a, TORCH_ASK_TIMEOUT_S, &output, &status, &err);
	if (r < 0) {
		ret->error = ll_asprintf("asking '%s' about torch: %s", python,
					 r == -ETIMEDOUT ? "no answer in 120 s" : err.message);
	} else if (ll_torch_facts_parse(output, ret) < 0) {
		ret->error = ll_asprintf("'%s' answered what llmlaunch did not ask (exit status %d)", python, status);
	} else if (ret->libuv == LL_TORCH_LIBUV_UNKNOWN && !ret->error) {
		ret->error = status ? ll_asprintf("'%s' exited with status %d before answering", python, status)
				    : ll_asprintf("'%s' gave no answer", python);
	}
	ll_error_clear(&err);
	/* Only a whole answer is kept, "no torch" included (or every dry run with an
	 * interpreter without torch pays for python's start): a failure to ask may be
	 * passing (a timeout under load). */
	if (path && r >= 0 && (ret->libuv != LL_TORCH_LIBUV_UNKNOWN || no_torch_answer(ret, status))) {
		_cleanup_free_ char *stamp = answer_stamp(ret);
		_cleanup_free_ char *text = NULL;

		if (ret->libuv != LL_TORCH_LIBUV_UNKNOWN) {
			text = ll_asprintf(TORCH_CACHE_FORMAT "\n%s\nstamp %s\n%s%s%s%s%s%slibuv %s\n", key, stamp,
					   ret->dir ? "dir " : "", ret->dir ? ret->dir : "", ret->dir ? "\n" : "",
					   ret->version ? "version " : "", ret->version ? ret->version : "",
					   ret->version ? "\n" : "", ll_torch_libuv_name(ret->libuv));
		} else {
			text = ll_asprintf(TORCH_CACHE_FORMAT "\n%s\nstamp %s\nerror " NO_TORCH "\n", key, stamp);
			for (size_t i = 0; i < ret->n_path; i++) {
				char *more = ll_asprintf("%spath %s\n", text, ret->path[i]);

				free(text);
				text = more;
			}
		}
		r = ll_file_replace(path, text, strlen(text), 0600);
		ret->cache_status = r < 0 ? ll_asprintf("%s; not written: %s", miss, strerror(-r))
					  : ll_asprintf("%s; written '%s'", miss, path);
	} else {
		ret->cache_status = path ? ll_asprintf("%s; no answer to keep", miss) : ll_strdup(miss);
	}
}
