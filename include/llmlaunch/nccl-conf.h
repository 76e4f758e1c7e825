/* NCCL's own configuration files as a layer of the plan (launcher/profile/nccl-conf.c).
 * NCCL reads NCCL_CONF_FILE (or, when that is unset or empty, $HOME/.nccl.conf) and
 * then /etc/nccl.conf, line by line as NAME=VALUE, and sets each with setenv(NAME,
 * VALUE, 0): a variable already in the environment wins, and the first file to set
 * one wins over later ones (NCCL src/misc/param.cc initEnvFunc/setEnvFile,
 * src/os/linux.cc ncclOsSetEnv). The planner decides what that means for every
 * variable (plan-conf.c); this module only reads the files. */
#ifndef LLMLAUNCH_NCCL_CONF_H
#define LLMLAUNCH_NCCL_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include "llmlaunch/plan.h"

struct ll_nccl_conf {
	/* Every line NCCL takes as an assignment, in the order NCCL reads them; origin
	 * "FILE:LINE". name is what NCCL takes: everything before the first '=' (so
	 * "export NCCL_X" or "NCCL_X " verbatim), value the rest of the line. */
	struct ll_assignment *entries;
	size_t n_entries;
	/* NCCL_CONF_FILE names a file that cannot be read: the path, NULL otherwise;
	 * what it is or why it cannot be read ("a FIFO", "No such file or directory");
	 * and whether NCCL would read it forever or block on it: not a regular file
	 * and not a directory (a FIFO, a device, a socket), which NCCL's fopen() and
	 * fgets() do not refuse (src/misc/param.cc setEnvFile). */
	char *unreadable;
	char *unreadable_why;
	bool unreadable_blocks;
	char **strings;            /* storage of the above */
	size_t n_strings;
};

/* Append the assignments of one file's text, as NCCL parses it: lines of up to
 * 4095 bytes, a trailing CR dropped, '#' in the first column a comment, lines
 * without '=' ignored, names and values cut at 1023 bytes. */
void ll_nccl_conf_parse(struct ll_nccl_conf *c, const char *text, const char *path);

/* Read the files of one node: conf_file (NCCL_CONF_FILE's value, NULL or empty:
 * none) or else HOME/.nccl.conf, then /etc/nccl.conf below fsroot when read_etc
 * (false for a snapshot of another machine). A missing file is no error; only an
 * unreadable NCCL_CONF_FILE is recorded (unreadable, unreadable_why,
 * unreadable_blocks). Returns 0. */
int ll_nccl_conf_load(struct ll_nccl_conf *c, const char *conf_file, const char *home, const char *fsroot,
		      bool read_etc);

void ll_nccl_conf_release(struct ll_nccl_conf *c);

#endif
