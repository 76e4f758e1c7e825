/* The DCB netlink reply parser (probe/dcbnl.c) on bytes laid out by hand after the
 * kernel's include/uapi/linux/dcbnl.h (tests/fixtures/sysfs/fake-sysfs.sh,
 * fake_dcb_reply and fake_dcb_error, which do not use the header the parser uses),
 * every truncation of them, and the one live answer this machine can give: the
 * loopback interface has no DCB operations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "llmlaunch/file.h"
#include "llmlaunch/util.h"
#include "../../probe/dcbnl.h"

/* The bytes fake-sysfs.sh's SCRIPT writes to $R/dcbnl/IF. */
static void gen_reply(const char *script, const char *ifname, char **ret, size_t *ret_len)
{
	const char *fixtures = getenv("LL_FIXTURES");
	char dir[] = "/tmp/ll-dcbnl-XXXXXX";
	char *cmd, *path;

	if (!fixtures)
		skip();
	assert_non_null(mkdtemp(dir));
	cmd = ll_asprintf("R='%s' bash -euc '. \"%s/sysfs/fake-sysfs.sh\"; %s'", dir, fixtures, script);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	path = ll_asprintf("%s/dcbnl/%s", dir, ifname);
	assert_int_equal(ll_read_file_n(path, LL_DCB_REPLY_MAX, ret, ret_len), 0);
	free(path);
	cmd = ll_asprintf("rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	free(cmd);
}

static void test_trust_dscp_pfc3(void **state)
{
	struct ll_dcb_state st;
	char *b;
	size_t n;

	(void)state;
	gen_reply("fake_dcb_reply \"$R\" eth0 3 0:0 26:3 48:6", "eth0", &b, &n);
	assert_int_equal(ll_dcb_parse_reply(b, n, &st), 0);
	assert_true(st.pfc_known);
	assert_int_equal(st.pfc_en, 0x08);
	assert_true(st.app_known);
	assert_int_equal(st.trust, LL_DCB_TRUST_DSCP);
	assert_int_equal(st.dscp_prio[26], 3);
	assert_int_equal(st.dscp_prio[0], 0);
	assert_int_equal(st.dscp_prio[48], 6);
	assert_int_equal(st.dscp_prio[10], -1);
	/* Every shorter prefix is refused or read without reading past it (ASan). */
	for (size_t k = 0; k < n; k++) {
		struct ll_dcb_state part;
		char *copy = ll_malloc(k ? k : 1);

		uint32_t len32 = (uint32_t)k;
		int r;

		memcpy(copy, b, k);
		assert_int_equal(ll_dcb_parse_reply(copy, k, &part), -EBADMSG);
		/* The same cut with a header that agrees: the attributes are cut instead. */
		if (k >= sizeof(len32)) {
			memcpy(copy, &len32, sizeof(len32));
			r = ll_dcb_parse_reply(copy, k, &part);
			assert_true(r == 0 || r == -EBADMSG);
		}
		free(copy);
	}
	free(b);
}

static void test_trust_pcp_no_pfc(void **state)
{
	struct ll_dcb_state st;
	char *b;
	size_t n;

	(void)state;
	gen_reply("fake_dcb_reply \"$R\" enp2s0f0np0 \"\"", "enp2s0f0np0", &b, &n);
	assert_int_equal(ll_dcb_parse_reply(b, n, &st), 0);
	assert_true(st.pfc_known);
	assert_int_equal(st.pfc_en, 0);
	assert_true(st.app_known);
	assert_int_equal(st.trust, LL_DCB_TRUST_PCP);
	for (int d = 0; d < 64; d++)
		assert_int_equal(st.dscp_prio[d], -1);
	free(b);
}

/* Two priorities for one DSCP: the kernel keeps both entries, the hardware one of
 * them; which, the reply does not say. */
static void test_ambiguous_dscp(void **state)
{
	struct ll_dcb_state st;
	char *b;
	size_t n;

	(void)state;
	gen_reply("fake_dcb_reply \"$R\" eth0 3,4 26:3 26:4 24:4", "eth0", &b, &n);
	assert_int_equal(ll_dcb_parse_reply(b, n, &st), 0);
	assert_int_equal(st.pfc_en, 0x18);
	assert_int_equal(st.dscp_prio[26], -1);
	assert_int_equal(st.dscp_prio[24], 4);
	assert_int_equal(st.trust, LL_DCB_TRUST_DSCP);
	free(b);
}

static void test_error_reply(void **state)
{
	struct ll_dcb_state st;
	char *b;
	size_t n;

	(void)state;
	gen_reply("fake_dcb_error \"$R\" veth0 95", "veth0", &b, &n);
	assert_int_equal(ll_dcb_parse_reply(b, n, &st), -EOPNOTSUPP);
	free(b);
	gen_reply("fake_dcb_error \"$R\" gone0 19", "gone0", &b, &n);
	assert_int_equal(ll_dcb_parse_reply(b, n, &st), -ENODEV);
	free(b);
}

/* An attribute whose length runs past its parent is no reply. */
static void test_bad_lengths(void **state)
{
	struct ll_dcb_state st;
	char *b;
	size_t n;

	(void)state;
	gen_reply("fake_dcb_reply \"$R\" eth0 3 26:3", "eth0", &b, &n);
	/* The IFNAME attribute follows the 16-byte header and the 4-byte dcbmsg. */
	b[20] = (char)0xff;
	b[21] = 0x7f;
	assert_int_equal(ll_dcb_parse_reply(b, n, &st), -EBADMSG);
	b[20] = 2; /* shorter than an attribute header */
	b[21] = 0;
	assert_int_equal(ll_dcb_parse_reply(b, n, &st), -EBADMSG);
	free(b);
	assert_int_equal(ll_dcb_parse_reply("", 0, &st), -EBADMSG);
}

/* Live: an unprivileged get on lo, which has no DCB operations. */
static void test_live_unsupported(void **state)
{
	struct ll_dcb_state st;
	void *reply = NULL;
	size_t n = 0;
	int r;

	(void)state;
	r = ll_dcb_query("lo", &reply, &n);
	if (r == -EAFNOSUPPORT || r == -EPROTONOSUPPORT) {
		print_message("no netlink route sockets here\n");
		skip();
	}
	assert_int_equal(r, 0);
	assert_int_equal(ll_dcb_parse_reply(reply, n, &st), -EOPNOTSUPP);
	free(reply);
	assert_int_equal(ll_dcb_query("", &reply, &n), -EINVAL);
	assert_int_equal(ll_dcb_query("a-name-far-too-long", &reply, &n), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trust_dscp_pfc3),	  cmocka_unit_test(test_trust_pcp_no_pfc),
		cmocka_unit_test(test_ambiguous_dscp),	  cmocka_unit_test(test_error_reply),
		cmocka_unit_test(test_bad_lengths),	  cmocka_unit_test(test_live_unsupported),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
