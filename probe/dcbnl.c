/* DCB netlink reader (dcbnl.h). Layouts are those of the kernel's
 * include/uapi/linux/dcbnl.h (struct dcbmsg, struct ieee_pfc, struct dcb_app, enum
 * dcbnl_attrs, enum ieee_attrs) and net/dcb/dcbnl.c (dcbnl_ieee_fill, which writes the
 * reply: DCB_ATTR_IFNAME, then DCB_ATTR_IEEE nesting DCB_ATTR_IEEE_ETS,
 * DCB_ATTR_IEEE_PFC, DCB_ATTR_IEEE_APP_TABLE with one DCB_ATTR_IEEE_APP per entry). */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "llmlaunch/util.h"
#include "dcbnl.h"

/* One netlink attribute header at p (4-byte aligned, struct nlattr), its payload and
 * the offset of the next; false when it does not fit in the len bytes left. */
static bool nla_next(const uint8_t *p, size_t len, uint16_t *type, const uint8_t **payload, size_t *plen,
		     size_t *advance)
{
	struct nlattr a;

	if (len < sizeof(a))
		return false;
	memcpy(&a, p, sizeof(a));
	if (a.nla_len < sizeof(a) || a.nla_len > len)
		return false;
	*type = a.nla_type & NLA_TYPE_MASK;
	*payload = p + NLA_HDRLEN;
	*plen = a.nla_len - NLA_HDRLEN;
	*advance = (size_t)NLA_ALIGN(a.nla_len) < len ? (size_t)NLA_ALIGN(a.nla_len) : len;
	return true;
}

static int parse_app_table(const uint8_t *p, size_t len, struct ll_dcb_state *st)
{
	uint16_t type;
	const uint8_t *pl;
	size_t plen, adv;

	st->app_known = true;
	while (len > 0) {
		if (!nla_next(p, len, &type, &pl, &plen, &adv))
			return -EBADMSG;
		if (type == DCB_ATTR_IEEE_APP) {
			struct dcb_app app;

			if (plen < sizeof(app))
				return -EBADMSG;
			memcpy(&app, pl, sizeof(app));
			/* IEEE 802.1Qaz-2018 selector 5: the protocol is a DSCP (0-63). A priority
			 * above 7 is no 802.1p priority: not a mapping. */
			if (app.selector == IEEE_8021QAZ_APP_SEL_DSCP && app.protocol < 64 && app.priority < 8) {
				/* Several priorities for one DSCP: the kernel keeps them all, the
				 * hardware takes one; which is not said, so the DSCP is left out. */
				if (st->dscp_prio[app.protocol] >= 0 && st->dscp_prio[app.protocol] != app.priority)
					st->dscp_prio[app.protocol] = -2;
				else if (st->dscp_prio[app.protocol] == -1)
					st->dscp_prio[app.protocol] = (int8_t)app.priority;
				st->trust = LL_DCB_TRUST_DSCP;
			}
		}
		p += adv;
		len -= adv;
	}
	for (size_t i = 0; i < LL_ARRAY_SIZE(st->dscp_prio); i++)
		if (st->dscp_prio[i] == -2)
			st->dscp_prio[i] = -1;
	/* mlx5 adds the DSCP entries when its trust state becomes DSCP and removes them
	 * when it goes back to PCP (drivers/net/ethernet/mellanox/mlx5/core/en_dcbnl.c,
	 * mlx5e_dcbnl_dscp_app); `dcb app` and mlnx_qos show trust the same way. */
	if (st->trust != LL_DCB_TRUST_DSCP)
		st->trust = LL_DCB_TRUST_PCP;
	return 0;
}

static int parse_ieee(const uint8_t *p, size_t len, struct ll_dcb_state *st)
{
	uint16_t type;
	const uint8_t *pl;
	size_t plen, adv;
	int r;

	while (len > 0) {
		if (!nla_next(p, len, &type, &pl, &plen, &adv))
			return -EBADMSG;
		if (type == DCB_ATTR_IEEE_PFC) {
			struct ieee_pfc pfc;

			if (plen < sizeof(pfc))
				return -EBADMSG;
			memcpy(&pfc, pl, sizeof(pfc));
			st->pfc_known = true;
			st->pfc_en = pfc.pfc_en;
		} else if (type == DCB_ATTR_IEEE_APP_TABLE) {
			r = parse_app_table(pl, plen, st);
			if (r < 0)
				return r;
		}
		p += adv;
		len -= adv;
	}
	return 0;
}

int ll_dcb_parse_reply(const void *buf, size_t len, struct ll_dcb_state *ret)
{
	const uint8_t *p = buf;
	struct nlmsghdr h;
	struct dcbmsg dm;
	struct ll_dcb_state st = { 0 };
	uint16_t type;
	const uint8_t *pl;
	size_t plen, adv;
	int r;

	memset(st.dscp_prio, -1, sizeof(st.dscp_prio));
	if (len < sizeof(h))
		return -EBADMSG;
	memcpy(&h, p, sizeof(h));
	if (h.nlmsg_len < sizeof(h) || h.nlmsg_len > len)
		return -EBADMSG;
	len = h.nlmsg_len;
	if (h.nlmsg_type == NLMSG_ERROR) {
		struct nlmsgerr e;

		if (len < NLMSG_HDRLEN + sizeof(e))
			return -EBADMSG;
		memcpy(&e, p + NLMSG_HDRLEN, sizeof(e));
		/* error 0 is an acknowledgement, not an answer; a positive one is no errno. */
		return e.error < 0 && e.error > -4096 ? e.error : -EBADMSG;
	}
	if (h.nlmsg_type != RTM_GETDCB || len < NLMSG_HDRLEN + sizeof(dm))
		return -EBADMSG;
	memcpy(&dm, p + NLMSG_HDRLEN, sizeof(dm));
	if (dm.cmd != DCB_CMD_IEEE_GET)
		return -EBADMSG;
	p += NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(dm));
	len -= NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(dm));
	while (len > 0) {
		if (!nla_next(p, len, &type, &pl, &plen, &adv))
			return -EBADMSG;
		if (type == DCB_ATTR_IEEE) {
			r = parse_ieee(pl, plen, &st);
			if (r < 0)
				return r;
		}
		p += adv;
		len -= adv;
	}
	*ret = st;
	return 0;
}

static void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

int ll_dcb_query(const char *ifname, void **ret, size_t *ret_len)
{
	struct {
		struct nlmsghdr h;
		struct dcbmsg dm;
		uint8_t attrs[NLA_HDRLEN + NLA_ALIGN(16)];
	} req;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct nlattr a;
	_cleanup_(closep) int fd = -1;
	_cleanup_free_ uint8_t *buf = NULL;
	size_t n = strlen(ifname);
	struct pollfd pfd;
	ssize_t got;

	if (n == 0 || n > 15)
		return -EINVAL;
	memset(&req, 0, sizeof(req));
	a.nla_type = DCB_ATTR_IFNAME;
	a.nla_len = (uint16_t)(NLA_HDRLEN + n + 1);
	memcpy(req.attrs, &a, sizeof(a));
	memcpy(req.attrs + NLA_HDRLEN, ifname, n + 1);
	req.h.nlmsg_len = (uint32_t)(NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(req.dm)) + NLA_ALIGN(a.nla_len));
	req.h.nlmsg_type = RTM_GETDCB;
	req.h.nlmsg_flags = NLM_F_REQUEST;
	req.h.nlmsg_seq = 1;
	req.dm.dcb_family = AF_UNSPEC;
	req.dm.cmd = DCB_CMD_IEEE_GET;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (sendto(fd, &req, req.h.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	/* The kernel answers a get at once, in the sending call; the wait only guards
	 * against a reply that never comes. */
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	if (poll(&pfd, 1, 1000) <= 0)
		return -ETIMEDOUT;
	buf = malloc(LL_DCB_REPLY_MAX);
	if (!buf)
		return -ENOMEM;
	got = recv(fd, buf, LL_DCB_REPLY_MAX, MSG_DONTWAIT);
	if (got < 0)
		return -errno;
	*ret = LL_TAKE(buf);
	*ret_len = (size_t)got;
	return 0;
}
