/* The agreement under an engine's contract (Kubernetes operators, SkyPilot, the manual
 * form: llmlaunch/agree-contract.h). The engine placed every node; what is left:
 *
 *   master    node 0's name as this node resolves it, with backoff until the
 *             agreement's deadline (on Kubernetes a pod's record in the headless
 *             service appears only once the pod exists, seconds after the others
 *             start), handed to torchrun as the numeric address; node 0 itself takes
 *             the address the others reached it at
 *   interface the one the kernel's route to node 0 leaves by (node 0: where the others
 *             came in), so nodes in different subnets behind routers each get their own
 *   port      the contract's, else MASTER_PORT, else torchrun's default
 *
 * Under `run` every node checks in with node 0, which runs the PMIx path's decision on
 * what the check-ins carry, then proves it reaches node 0 (agree_env_prove): a node
 * that never starts is named by node 0 at the deadline. */
#include "agree-internal.h"

#include <errno.h>
#include <netdb.h>
#include <string.h>

#include "llmlaunch/addr.h"
#include "llmlaunch/clock.h"
#include "llmlaunch/hash.h"
#include "llmlaunch/port.h"

/* Who can leave a node out under this contract. */
static enum ll_leave_out leave_out_terms(enum ll_contract_engine e)
{
	switch (e) {
	case LL_CONTRACT_SKYPILOT:
		return LL_LEAVE_OUT_SKYPILOT;
	case LL_CONTRACT_MANUAL:
		return LL_LEAVE_OUT_MANUAL;
	default:
		return LL_LEAVE_OUT_PODS;
	}
}

/* What to do when a node cannot reach node 0, in the engine's own terms. */
static const char *unreach_hint(enum ll_contract_engine e)
{
	switch (e) {
	case LL_CONTRACT_SKYPILOT:
		return "nothing was started: without a shared channel only that node knows why; check the cluster's "
		       "firewall between its nodes (sky status, the cloud's security group) or relaunch without it";
	case LL_CONTRACT_MANUAL:
		return "nothing was started: without a shared channel only that node knows why; its own log says which "
		       "interface and address it tried";
	default:
		return "nothing was started: without a shared channel only that pod knows why; its own log says which "
		       "interface and address it tried (kubectl logs); check NetworkPolicies and the headless service "
		       "between the pods";
	}
}

int agree_contract_run(const struct ll_agree_options *o, const struct agree_env_self *me, const char *proof_ifname,
		       int port_asked, struct ll_cluster *ret, struct ll_error *err)
{
	struct ll_contract *k = ll_calloc(1, sizeof(*k));
	_cleanup_free_ char *numeric = NULL, *why = NULL, *id = NULL, *port_why = NULL;
	double t0 = ll_now_s();
	bool loopback = false, multi;
	int r;

	r = ll_contract_read(o->environ, k, err);
	if (r <= 0) {
		free(k);
		if (r == 0)
			return ll_error_set(err, -EINVAL, "no engine's variables are set: no contract to agree on");
		return r;
	}
	ret->contract = k;
	ret->backend = LL_AGREE_CONTRACT;
	ret->nnodes = (int)k->nnodes;
	ret->node_rank = (int)k->node_rank;
	ret->checked = false;
	if (port_asked > 0 && k->master_port > 0 && port_asked != k->master_port) {
		r = ll_error_set(err, -EINVAL, "--master-port %d disagrees with %s=%d (%s)", port_asked, k->port_var,
				 k->master_port, k->name);
		err->usage = true;
		return r;
	}
	ret->master_port = port_asked > 0 ? port_asked : k->master_port > 0 ? k->master_port : LL_CONTRACT_DEFAULT_PORT;
	ll_agree_deadlines((size_t)k->nnodes, o->timeout_s, &ret->deadlines);
	multi = k->nnodes > 1;
	if (multi && !o->prove)
		ll_cluster_note(ret, "no homogeneity check here under the %s contract: 'llmlaunch run' has node 0 compare "
				     "every node's GPUs, RDMA ports and addresses at its check-in before launching",
				k->name);

	/* Only nodes that connect to node 0 need its address before the proof; node 0
	 * learns its own from where they came in. */
	numeric = agree_resolve_until(k->master_host, o->prove && multi && k->node_rank != 0 ? t0 + ret->deadlines.agree_s : 0,
				&loopback, &why);
	if (!numeric) {
		if (o->prove && multi && k->node_rank != 0) {
			r = ll_error_set(err, -ENETUNREACH, "node 0's name '%s' (%s) is not resolvable yet after %.0f s: %s",
					 k->master_host, k->addr_var, ll_now_s() - t0, why);
			ll_error_hint(err, "on Kubernetes node 0's record appears in the headless service once its pod "
					   "exists: check that it was scheduled (kubectl get pods), or give --agree-timeout "
					   "more time");
			return r;
		}
		ll_cluster_note(ret, "node 0's name '%s' (%s) does not resolve here yet: %s", k->master_host, k->addr_var,
				why);
		ret->master_addr = ll_strdup(k->master_host);
	} else if (loopback && multi && k->node_rank != 0) {
		ll_cluster_note(ret, "node 0's name '%s' resolves to %s on this node: only a node on this host reaches that",
				k->master_host, numeric);
		ret->master_addr = ll_strdup(numeric);
	} else {
		ret->master_addr = ll_strdup(numeric);
	}
	if (numeric) {
		struct ll_error e = { 0 };
		_cleanup_free_ char *source = NULL;

		if (k->node_rank == 0)
			ret->socket_ifname = agree_local_ifname(numeric);
		else if (ll_route_to(numeric, &ret->socket_ifname, &source, &e) < 0)
			ll_cluster_note(ret, "%s", e.message);
		ll_error_clear(&e);
	}
	if (!o->prove || !multi) {
		if (k->node_rank == 0 && multi && ll_port_in_use(ret->master_port))
			ll_cluster_note(ret, "master port %d is in use on this node now", ret->master_port);
		return 0;
	}
	/* Every node reads the same contract: the same identity on each. */
	id = ll_asprintf("%s %s %d %ld", k->name, k->master_host, ret->master_port, k->nnodes);
	port_why = k->port_var ? ll_asprintf("%s", k->port_var) : ll_strdup("torchrun's default");
	{
		struct agree_env_self me_here = *me;
		struct agree_env_world w = {
			.id = id, .nnodes = (size_t)k->nnodes, .rank = (size_t)k->node_rank, .names = k->node_names,
			.port_why = port_why,
			.port_hint = "another process on this node holds it: give the job another port (--master-port "
				     "PORT on every node, or the engine's port variable)",
			.unreach_hint = unreach_hint(k->engine), .me = &me_here, .user_ifname = proof_ifname,
		};

		me_here.leave_out = leave_out_terms(k->engine);
		return agree_env_prove(o, &w, k->node_rank == 0 ? ret->master_addr : numeric,
				       proof_ifname ? proof_ifname : ret->socket_ifname, t0, ret, err);
	}
}
