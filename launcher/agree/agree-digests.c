/* Rank 0's table of the record digests seen at check-in (docs/multinode.md, "Check-in
 * and reachability"): which node's full summary the decision needs. Equal digests mean
 * equal summaries for what ll_agree_decide() compares, so rank 0 needs one summary per
 * hardware digest and one per network digest: the first node to arrive with each. An
 * open-addressing table keyed by the digest keeps that O(1) per node, with no rescan of
 * the nodes already here (ll_agree_publishes_summary() scans, which is fine for one
 * node deciding about itself, not for rank 0 deciding about thousands). */
#include "llmlaunch/agree.h"

#include <string.h>

struct digest_slot {
	uint64_t digest;
	size_t first;               /* the first node seen with it */
	size_t count;
	bool used;
};

struct digest_table {
	struct digest_slot *slots;
	size_t cap, n;              /* cap: a power of two, at most half full */
};

struct ll_agree_digests {
	struct digest_table hw, net;
};

/* The digests are ll_hash values already: their low bits spread well. */
static struct digest_slot *slot_of(struct digest_table *t, uint64_t digest)
{
	size_t mask = t->cap - 1, i = (size_t)(digest ^ (digest >> 32)) & mask;

	while (t->slots[i].used && t->slots[i].digest != digest)
		i = (i + 1) & mask;
	return &t->slots[i];
}

static void table_grow(struct digest_table *t)
{
	struct digest_table bigger = { .cap = t->cap ? t->cap * 2 : 16 };

	bigger.slots = ll_calloc(bigger.cap, sizeof(*bigger.slots));
	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i].used)
			*slot_of(&bigger, t->slots[i].digest) = t->slots[i];
	bigger.n = t->n;
	free(t->slots);
	*t = bigger;
}

/* True when `digest` is new: node `index` is its first. */
static bool table_add(struct digest_table *t, uint64_t digest, size_t index)
{
	struct digest_slot *s;

	if (2 * (t->n + 1) > t->cap)
		table_grow(t);
	s = slot_of(t, digest);
	s->count++;
	if (s->used)
		return false;
	s->used = true;
	s->digest = digest;
	s->first = index;
	t->n++;
	return true;
}

struct ll_agree_digests *ll_agree_digests_new(void)
{
	return ll_calloc(1, sizeof(struct ll_agree_digests));
}

bool ll_agree_digests_add(struct ll_agree_digests *d, const struct ll_agree_node *n, size_t index)
{
	bool new_hw = table_add(&d->hw, n->hw_digest, index);
	bool new_net = table_add(&d->net, n->net_digest, index);

	return new_hw || new_net;
}

size_t ll_agree_digests_groups(const struct ll_agree_digests *d, bool net)
{
	return net ? d->net.n : d->hw.n;
}

void ll_agree_digests_free(struct ll_agree_digests *d)
{
	if (!d)
		return;
	free(d->hw.slots);
	free(d->net.slots);
	free(d);
}
