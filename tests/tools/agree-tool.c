/* The agreement step alone, for the Slurm/mpirun tests and bench/agree.sh: probe (or
 * replay) this node, plan, ll_agree() (with --prove: and the rendezvous proof, as run
 * does), print the cluster as one JSON line. Exit 1 with the error on stderr when
 * agreement fails. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmlaunch/agree.h"
#include "llmlaunch/plan.h"
#include "llmlaunch/probe.h"

extern char **environ;

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "topology", required_argument, NULL, 't' },
		{ "fsroot", required_argument, NULL, 'f' },
		{ "nproc-per-node", required_argument, NULL, 'n' },
		{ "prove", no_argument, NULL, 'p' },
		LL_AGREE_LONG_OPTIONS,
		{ 0 },
	};
	struct ll_probe_options popts = { .skip_nvml = true };
	struct ll_agree_options aopts = { 0 };
	struct ll_plan_input in = { .environ = environ, .nnodes = 1 };
	struct ll_assignment nproc = { "torchrun.nproc_per_node", NULL, "--nproc-per-node" };
	struct ll_facts *facts = NULL;
	struct ll_plan *plan = NULL;
	struct ll_cluster c = { 0 };
	struct ll_error err = { 0 };
	json_t *o, *notes;
	int opt, r;

	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 't':
			popts.topology_file = optarg;
			break;
		case 'f':
			popts.fsroot = optarg;
			break;
		case 'n':
			nproc.value = optarg;
			in.cli = &nproc;
			in.n_cli = 1;
			break;
		case 'p':
			aopts.prove = true;
			break;
		default:
			if (ll_agree_cmd_option(&aopts, opt, optarg, &err) != 1) {
				fprintf(stderr, "usage: %s [--topology FILE | --fsroot DIR] [--nproc-per-node N] [--agree-timeout S] [--strict] [--prove]\n",
					argv[0]);
				return 2;
			}
		}
	}
	r = ll_probe(&popts, NULL, &facts, &err);
	if (r >= 0) {
		in.facts = facts;
		in.launcher = ll_agree_launcher(environ, &in.launcher_why);
		r = ll_plan_build(&in, &plan, &err);
	}
	if (r >= 0)
		r = ll_agree(plan, facts, &aopts, &c, &err);
	if (r < 0) {
		fprintf(stderr, "llmlaunch: %s\n", err.message ? err.message : "unknown error");
		if (err.hint)
			fprintf(stderr, "hint: %s\n", err.hint);
		ll_error_clear(&err);
		ll_plan_free(plan);
		ll_facts_free(facts);
		return 1;
	}
	notes = json_array();
	for (size_t i = 0; i < c.n_notes; i++)
		json_array_append_new(notes, json_string(c.notes[i]));
	o = json_pack("{s:s,s:i,s:i,s:s?,s:i,s:s?,s:s?,s:s?,s:s?,s:b,s:o,s:f,s:i,s:b,s:f}", "backend",
		      ll_agree_backend_name(c.backend), "nnodes", c.nnodes, "node_rank", c.node_rank, "master_addr",
		      c.master_addr, "master_port", c.master_port, "socket_ifname", c.socket_ifname, "subnet", c.subnet,
		      "NCCL_SOCKET_IFNAME", ll_plan_value(plan, "NCCL_SOCKET_IFNAME"), "host", facts->hostname,
		      "checked", c.checked, "notes", notes, "seconds", c.seconds, "fetched", (int)c.n_fetched, "proved",
		      c.proved, "prove_seconds", c.prove_seconds);
	char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	puts(text);
	free(text);
	json_decref(o);
	ll_cluster_release(&c);
	ll_plan_free(plan);
	ll_facts_free(facts);
	return fflush(stdout) == 0 ? 0 : 1;
}
