/* The parts of profile fetching that need no server: SHA-256 against the FIPS 180
 * examples, URL#sha256= pins, and the refusals decided before any connection. The
 * server-side cases live in tests/integration/profiles-https.sh. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "llmlaunch/profile.h"
#include "../../launcher/modules/sha256.h"

static void test_sha256(void **state)
{
	(void)state;
	char hex[65];
	char *million = ll_malloc(1000000);

	ll_sha256_hex("", 0, hex);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	ll_sha256_hex("abc", 3, hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	/* 56 bytes: the padding needs a second block. */
	ll_sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, hex);
	assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	memset(million, 'a', 1000000);
	ll_sha256_hex(million, 1000000, hex);
	assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	/* 55 and 64 bytes: the two other padding edges. */
	ll_sha256_hex(million, 55, hex);
	assert_string_equal(hex, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
	ll_sha256_hex(million, 64, hex);
	assert_string_equal(hex, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
	free(million);
}

static void test_pin_split(void **state)
{
	(void)state;
	char *url = NULL, *sha = NULL;
	struct ll_error err = { 0 };

	assert_int_equal(ll_url_split_pin("https://h/p.yaml", &url, &sha, &err), 0);
	assert_string_equal(url, "https://h/p.yaml");
	assert_null(sha);
	free(url);
	assert_int_equal(ll_url_split_pin("https://h/p.yaml#sha256=BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD",
					  &url, &sha, &err),
			 0);
	assert_string_equal(url, "https://h/p.yaml");
	assert_string_equal(sha, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	free(url);
	free(sha);
	assert_int_equal(ll_url_split_pin("https://h/p.yaml#md5=00", &url, &sha, &err), -EINVAL);
	assert_string_equal(err.message, "'https://h/p.yaml#md5=00': the only fragment understood is '#sha256=HEX'");
	assert_int_equal(ll_url_split_pin("https://h/p.yaml#sha256=xyz", &url, &sha, &err), -EINVAL);
	assert_string_equal(err.message, "'https://h/p.yaml#sha256=xyz': sha256 pin must be 64 hexadecimal digits");
	ll_error_clear(&err);

	assert_true(ll_is_url("https://x"));
	assert_true(ll_is_url("http://x"));
	assert_false(ll_is_url("ftp://x"));
	assert_false(ll_is_url("profiles/x.yaml"));
}

/* Credentials never reach a message, an origin or the cache. */
static void test_redact(void **state)
{
	static const char *const cases[][2] = {
		{ "https://alice:s3cret@h.example/p.yaml", "https://***@h.example/p.yaml" },
		{ "https://ghp_TOKEN@h.example:8443/a/b.yaml#sha256=00", "https://***@h.example:8443/a/b.yaml#sha256=00" },
		{ "https://u:p@ss@h/p.yaml", "https://***@h/p.yaml" },
		{ "https://h.example/p@2.yaml", "https://h.example/p@2.yaml" }, /* '@' in the path is not a user */
		{ "https://h.example/p.yaml?x=a@b", "https://h.example/p.yaml?x=a@b" },
		{ "https://h.example/p.yaml", "https://h.example/p.yaml" },
		{ "not a url", "not a url" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		_cleanup_free_ char *r = ll_url_redact(cases[i][0]);
		assert_string_equal(r, cases[i][1]);
	}
}

static void test_refusals(void **state)
{
	(void)state;
	struct ll_fetch_opts o = { .cache_dir = "/nonexistent/cache" };
	struct ll_fetch_result res = { 0 };
	struct ll_error err = { 0 };

	assert_int_equal(ll_profile_fetch("http://192.0.2.1/p.yaml", &o, &res, &err), -EPERM);
	assert_string_equal(err.message, "refusing plain http for 'http://192.0.2.1/p.yaml': only loopback may use http");
	assert_string_equal(err.hint, "use https://, or pass --allow-http if this network is trusted");
	assert_null(res.body);
	assert_int_equal(ll_profile_fetch("ftp://h/p.yaml", &o, &res, &err), -EPERM);
	assert_string_equal(err.message, "cannot fetch 'ftp://h/p.yaml': only https:// (and http:// to loopback)");
	/* Loopback http is allowed: nothing listens on port 9 (discard), so it is unreachable. */
	assert_int_equal(ll_profile_fetch("http://127.0.0.1:9/p.yaml", &o, &res, &err), -EHOSTUNREACH);
	assert_true(ll_startswith(err.message, "cannot fetch 'http://127.0.0.1:9/p.yaml': "));
	assert_string_equal(err.hint, "no cached copy of this profile exists yet");
	ll_error_clear(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256),
		cmocka_unit_test(test_pin_split),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_redact),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
