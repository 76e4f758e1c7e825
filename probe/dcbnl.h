/* DCB netlink (RTM_GETDCB, DCB_CMD_IEEE_GET): a RoCE port's trust mode, DSCP-to-priority
 * map and PFC-enabled priorities. Gets need no privilege (the kernel checks
 * CAP_NET_ADMIN for RTM_SETDCB only, net/dcb/dcbnl.c, dcb_doit). The reply parser is
 * apart from the socket so that it can be tested on bytes built from the layout of
 * the kernel's include/uapi/linux/dcbnl.h. */
#ifndef LLMLAUNCH_PROBE_DCBNL_H
#define LLMLAUNCH_PROBE_DCBNL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest reply kept: the IEEE attributes with a full 64-entry DSCP table are
 * about 1.5 KiB; anything far larger is not a reply of this kind. */
#define LL_DCB_REPLY_MAX 65536

enum ll_dcb_trust {
	LL_DCB_TRUST_UNKNOWN = 0,
	LL_DCB_TRUST_PCP,  /* no DSCP entries in the APP table: frames are classified by their VLAN PCP */
	LL_DCB_TRUST_DSCP, /* DSCP entries in the APP table (or DSCP first in the trust table) */
};

struct ll_dcb_state {
	bool pfc_known;
	uint8_t pfc_en;           /* bit p: PFC on priority p (struct ieee_pfc, pfc_en) */
	bool app_known;           /* the reply had an APP table (possibly empty) */
	enum ll_dcb_trust trust;
	int8_t dscp_prio[64];     /* priority of each DSCP, -1 not mapped */
};

/* Parse one netlink reply to RTM_GETDCB/DCB_CMD_IEEE_GET. Returns 0 with *ret filled;
 * the kernel's error when the reply is NLMSG_ERROR (-EOPNOTSUPP: the device has no
 * DCB operations, as veth; -ENODEV); -EBADMSG when the bytes are not such a reply. */
int ll_dcb_parse_reply(const void *buf, size_t len, struct ll_dcb_state *ret);

/* Ask the kernel for ifname's IEEE DCB state; the raw reply in *ret (malloc'ed,
 * ll_dcb_parse_reply reads it). -errno when no reply came (socket errors, a second's
 * silence). */
int ll_dcb_query(const char *ifname, void **ret, size_t *ret_len);

#endif
