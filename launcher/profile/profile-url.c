/* The URL half of profiles that needs no network library: URL syntax and pins. */
#include <errno.h>
#include <string.h>

#include "llmlaunch/profile.h"

char *ll_url_redact(const char *url)
{
	const char *auth = url ? strstr(url, "://") : NULL, *end, *at = NULL;

	if (!auth)
		return ll_strdup(url);
	auth += 3;
	end = auth + strcspn(auth, "/?#");
	for (const char *c = auth; c < end; c++)
		if (*c == '@')
			at = c;
	if (!at)
		return ll_strdup(url);
	return ll_asprintf("%.*s***%s", (int)(auth - url), url, at);
}

bool ll_is_url(const char *s)
{
	return s && (ll_startswith(s, "https://") || ll_startswith(s, "http://"));
}

void ll_fetch_result_release(struct ll_fetch_result *r)
{
	if (!r)
		return;
	free(r->body);
	free(r->url);
	free(r->warning);
	memset(r, 0, sizeof(*r));
}

int ll_url_split_pin(const char *s, char **ret_url, char **ret_sha, struct ll_error *err)
{
	const char *hash = strchr(s, '#');
	char *sha = NULL;

	if (hash) {
		const char *hex = hash + 1;
		if (!ll_startswith(hex, "sha256="))
			return ll_error_set(err, -EINVAL, "'%s': the only fragment understood is '#sha256=HEX'", s);
		hex += strlen("sha256=");
		if (strlen(hex) != 64 || strspn(hex, "0123456789abcdefABCDEF") != 64)
			return ll_error_set(err, -EINVAL, "'%s': sha256 pin must be 64 hexadecimal digits", s);
		sha = ll_strdup(hex);
		for (char *c = sha; *c; c++)
			if (*c >= 'A' && *c <= 'F')
				*c = (char)(*c - 'A' + 'a');
	}
	*ret_url = hash ? ll_strndup(s, (size_t)(hash - s)) : ll_strdup(s);
	*ret_sha = sha;
	return 0;
}
