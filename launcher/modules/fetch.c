/* Profiles over HTTPS with libcurl. The rules (docs/profiles.md): TLS verification is
 * always on; plain http only to loopback or with allow_http; redirects are followed
 * by hand, and only to https; connect and total timeouts; a size cap. Responses are
 * cached and revalidated with ETag / Last-Modified; when the server cannot be reached
 * the cached copy is used with a warning that says how old it is.
 *
 * Built as the module llmlaunch-fetch.so so that libcurl and its TLS stack load only
 * when a profile URL is used (launcher/profile/profile-fetch.c loads it). */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>
#include <jansson.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "llmlaunch/profile.h"
#include "llmlaunch/profile-fetch.h"
#include "llmlaunch/file.h"
#include "llmlaunch/version.h"
#include "sha256.h"
#include "llmlaunch/addr.h"

#define MAX_REDIRECTS 5

/* Plain http to loopback, decided from the URL's literal host before any lookup:
 * 127.0.0.0/8 written as an address, [::1], or "localhost" (then pinned to
 * 127.0.0.1 with CURLOPT_RESOLVE, so no resolver is asked). A name such as
 * 127.attacker.example is a name, and not loopback. */
static bool host_is_loopback(const char *url, bool *ret_localhost)
{
	CURLU *u = curl_url();
	char *host = NULL;
	bool r = false;
	unsigned char a[16];

	*ret_localhost = false;
	if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
		size_t n = strlen(host);

		if (strcasecmp(host, "localhost") == 0)
			r = *ret_localhost = true;
		else if (inet_pton(AF_INET, host, a) == 1)
			r = a[0] == 127;
		else if (n > 2 && host[0] == '[' && host[n - 1] == ']') {
			host[n - 1] = '\0';
			r = inet_pton(AF_INET6, host + 1, a) == 1 && IN6_IS_ADDR_LOOPBACK((struct in6_addr *)a);
		}
	}
	curl_free(host);
	curl_url_cleanup(u);
	return r;
}

enum addr_rule { ADDR_ANY, ADDR_PUBLIC_ONLY, ADDR_LOOPBACK_ONLY };

struct sock_guard {
	enum addr_rule rule;
	bool refused;
};

/* Checked on the address libcurl is about to connect to, after its lookup: a name
 * that resolves somewhere it may not go (DNS rebinding included) is refused here. */
static curl_socket_t open_socket(void *data, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct sock_guard *g = data;

	(void)purpose;
	if ((g->rule == ADDR_PUBLIC_ONLY && ll_addr_is_nonpublic(&a->addr)) ||
	    (g->rule == ADDR_LOOPBACK_ONLY && !ll_addr_is_loopback(&a->addr))) {
		g->refused = true;
		return CURL_SOCKET_BAD;
	}
	return socket(a->family, a->socktype, a->protocol);
}

static char *cache_dir(const struct ll_fetch_opts *opts)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");

	if (opts->cache_dir)
		return ll_strdup(opts->cache_dir);
	if (xdg && *xdg == '/')
		return ll_asprintf("%s/llmlaunch", xdg);
	if (home && *home)
		return ll_asprintf("%s/.cache/llmlaunch", home);
	return NULL;
}

static int mkdir_p(const char *path)
{
	_cleanup_free_ char *p = ll_strdup(path);

	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(p, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

struct cache_entry {
	char *body;
	size_t len;
	char *etag;
	char *last_modified;
	time_t fetched;
};

static void cache_entry_release(struct cache_entry *c)
{
	free(c->body);
	free(c->etag);
	free(c->last_modified);
	memset(c, 0, sizeof(*c));
}

static char *cache_path(const char *dir, const char *url, const char *ext)
{
	char key[65];

	ll_sha256_hex(url, strlen(url), key);
	return ll_asprintf("%s/%.32s.%s", dir, key, ext);
}

static bool cache_read(const char *dir, const char *url, size_t max, struct cache_entry *ret)
{
	_cleanup_free_ char *body_path = NULL, *meta_path = NULL, *text = NULL;
	json_t *meta;
	const char *s;

	if (!dir)
		return false;
	body_path = cache_path(dir, url, "yaml");
	meta_path = cache_path(dir, url, "json");
	/* Not json_load_file(): it would wait forever on a FIFO planted there. */
	if (ll_read_file(meta_path, 64 * 1024, &text) < 0)
		return false;
	meta = json_loads(text, 0, NULL);
	if (!meta)
		return false;
	/* The key is a hash prefix: make sure the entry really is this URL's. */
	s = json_string_value(json_object_get(meta, "url"));
	if (!s || strcmp(s, url) != 0 || ll_read_file(body_path, max, &ret->body) < 0) {
		json_decref(meta);
		return false;
	}
	ret->len = strlen(ret->body);
	ret->etag = ll_strdup(json_string_value(json_object_get(meta, "etag")));
	ret->last_modified = ll_strdup(json_string_value(json_object_get(meta, "last_modified")));
	ret->fetched = (time_t)json_integer_value(json_object_get(meta, "fetched"));
	json_decref(meta);
	return true;
}

/* Best effort: a cache that cannot be written costs a refetch, never the launch. */
static void cache_write(const char *dir, const char *url, const struct cache_entry *c)
{
	_cleanup_free_ char *body_path = NULL, *meta_path = NULL, *text = NULL;
	json_t *meta;

	if (!dir || mkdir_p(dir) < 0)
		return;
	body_path = cache_path(dir, url, "yaml");
	meta_path = cache_path(dir, url, "json");
	meta = json_pack("{s:s, s:I}", "url", url, "fetched", (json_int_t)c->fetched);
	if (!meta)
		return;
	if (c->etag)
		json_object_set_new(meta, "etag", json_string(c->etag));
	if (c->last_modified)
		json_object_set_new(meta, "last_modified", json_string(c->last_modified));
	text = json_dumps(meta, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(meta);
	if (c->body && ll_file_replace(body_path, c->body, c->len, 0600) < 0)
		return;
	if (text)
		ll_file_replace(meta_path, text, strlen(text), 0600);
}

static char *format_age(time_t fetched, time_t now)
{
	long s = fetched > 0 && now >= fetched ? (long)(now - fetched) : -1;

	if (s < 0)
		return ll_strdup("an unknown time ago");
	if (s < 120)
		return ll_asprintf("%ld seconds ago", s);
	if (s < 2 * 3600)
		return ll_asprintf("%ld minutes ago", s / 60);
	if (s < 2 * 86400)
		return ll_asprintf("%ld hours ago", s / 3600);
	return ll_asprintf("%ld days ago", s / 86400);
}

/* ---- one transfer ---- */

struct transfer {
	struct ll_buf body;
	size_t max;
	bool too_big;
	char *etag;
	char *last_modified;
};

static size_t on_body(char *data, size_t size, size_t n, void *userdata)
{
	struct transfer *t = userdata;

	if (t->body.len + size * n > t->max) {
		t->too_big = true;
		return 0;
	}
	ll_buf_addn(&t->body, data, size * n);
	return size * n;
}

static char *header_value(const char *line, size_t n, const char *name)
{
	size_t k = strlen(name);
	const char *v, *end = line + n;

	if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
		return NULL;
	v = line + k + 1;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
		end--;
	return ll_strndup(v, (size_t)(end - v));
}

static size_t on_header(char *data, size_t size, size_t n, void *userdata)
{
	struct transfer *t = userdata;
	size_t len = size * n;
	char *v;

	/* A status line starts the headers of a new response (after a redirect or 100). */
	if (len >= 5 && strncmp(data, "HTTP/", 5) == 0) {
		free(t->etag);
		free(t->last_modified);
		t->etag = t->last_modified = NULL;
	} else if ((v = header_value(data, len, "ETag"))) {
		free(t->etag);
		t->etag = v;
	} else if ((v = header_value(data, len, "Last-Modified"))) {
		free(t->last_modified);
		t->last_modified = v;
	}
	return len;
}

enum outcome { OUT_OK, OUT_NOT_MODIFIED, OUT_UNREACHABLE, OUT_FAILED };

struct fetch_state {
	const struct ll_fetch_opts *opts;
	const struct cache_entry *cache; /* for conditional requests, NULL without one */
	struct transfer t;
	char *unreachable;               /* why the server could not be reached */
	bool nonpublic;                  /* the last answer came from a non-public address */
	long env_timeout_ms;             /* LLMLAUNCH_FETCH_TIMEOUT, 0 unset */
};

/* LLMLAUNCH_FETCH_TIMEOUT: seconds for one whole fetch. 0 when unset; a value that
 * is not a time (0, -1, abc) is an error, never a silent 20 s. */
#define FETCH_TIMEOUT_MAX_S 3600

static int env_timeout_ms(long *ret, struct ll_error *err)
{
	const char *s = getenv("LLMLAUNCH_FETCH_TIMEOUT");
	double v;

	*ret = 0;
	if (!s || !*s)
		return 0;
	if (ll_parse_seconds("LLMLAUNCH_FETCH_TIMEOUT", s, 0.001, FETCH_TIMEOUT_MAX_S, &v, err) < 0)
		return -EINVAL;
	*ret = (long)(v * 1000);
	return 0;
}

static enum outcome transfer_once(struct fetch_state *st, const char *url, bool first, char **ret_location,
				  int *ret_code, struct ll_error *err)
{
	const struct ll_fetch_opts *o = st->opts;
	char errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL, *pin = NULL;
	struct sock_guard guard = { .rule = o->public_only ? ADDR_PUBLIC_ONLY : ADDR_ANY };
	bool localhost = false;
	long code = 0, connect_ms, total_ms;
	char *location = NULL;
	enum outcome out = OUT_FAILED;
	bool https = ll_startswith(url, "https://");
	_cleanup_free_ char *shown = ll_url_redact(url);
	CURLcode cc;
	CURL *c;

	if (!https && !ll_startswith(url, "http://")) {
		*ret_code = ll_error_set(err, -EPERM, "cannot fetch '%s': only https:// (and http:// to loopback)", shown);
		return OUT_FAILED;
	}
	if (!https && !first) {
		*ret_code = ll_error_set(err, -EPERM, "refusing redirect to '%s': redirects must stay on https", shown);
		return OUT_FAILED;
	}
	if (!https && !o->allow_http) {
		if (!host_is_loopback(url, &localhost)) {
			*ret_code = ll_error_set(err, -EPERM, "refusing plain http for '%s': only loopback may use http",
						 shown);
			ll_error_hint(err, "use https://, or pass --allow-http if this network is trusted");
			return OUT_FAILED;
		}
		if (guard.rule == ADDR_ANY)
			guard.rule = ADDR_LOOPBACK_ONLY;
	}

	c = curl_easy_init();
	if (!c) {
		*ret_code = ll_error_set(err, -ENOMEM, "cannot fetch '%s': libcurl failed to initialise", shown);
		return OUT_FAILED;
	}
	connect_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 5000;
	total_ms = o->timeout_ms > 0 ? o->timeout_ms : st->env_timeout_ms > 0 ? st->env_timeout_ms : 20000;
	if (o->budget_ms > 0 && o->budget_ms < total_ms)
		total_ms = o->budget_ms;
	if (connect_ms > total_ms)
		connect_ms = total_ms;
	ll_buf_reset(&st->t.body);
	st->t.too_big = false;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, &guard);
	if (localhost) {
		/* "localhost" as 127.0.0.1 without asking a resolver, on any port. */
		pin = curl_slist_append(NULL, "localhost:*:127.0.0.1");
		curl_easy_setopt(c, CURLOPT_CONNECT_TO, pin);
	}
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, https ? "https" : "http");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
	if (o->cacert)
		curl_easy_setopt(c, CURLOPT_CAINFO, o->cacert);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, total_ms);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)st->t.max);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &st->t);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &st->t);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "llmlaunch/" LLMLAUNCH_VERSION);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	if (st->cache && st->cache->etag) {
		_cleanup_free_ char *h = ll_asprintf("If-None-Match: %s", st->cache->etag);
		hdrs = curl_slist_append(hdrs, h);
	}
	if (st->cache && st->cache->last_modified) {
		_cleanup_free_ char *h = ll_asprintf("If-Modified-Since: %s", st->cache->last_modified);
		hdrs = curl_slist_append(hdrs, h);
	}
	if (hdrs)
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);

	cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	const char *detail = errbuf[0] ? errbuf : curl_easy_strerror(cc);
	if (guard.refused) {
		if (guard.rule == ADDR_PUBLIC_ONLY) {
			*ret_code = ll_error_set(err, -EPERM, "refusing '%s': it resolves to a loopback, link-local or private "
						 "address, which a profile from the network may not reach", shown);
			ll_error_hint(err, "only a URL you give yourself (--profile, a local profile's extends) may name such "
					   "an address");
		} else {
			*ret_code = ll_error_set(err, -EPERM, "refusing plain http for '%s': it does not connect to loopback",
						 shown);
		}
		goto done;
	}
	if (cc == CURLE_OK) {
		char *ip = NULL;
		unsigned char a[16];
		struct sockaddr_storage ss = { 0 };

		if (curl_easy_getinfo(c, CURLINFO_PRIMARY_IP, &ip) == CURLE_OK && ip) {
			if (inet_pton(AF_INET, ip, a) == 1) {
				ss.ss_family = AF_INET;
				memcpy(&((struct sockaddr_in *)&ss)->sin_addr, a, 4);
			} else if (inet_pton(AF_INET6, ip, a) == 1) {
				ss.ss_family = AF_INET6;
				memcpy(&((struct sockaddr_in6 *)&ss)->sin6_addr, a, 16);
			}
			st->nonpublic = ss.ss_family && ll_addr_is_nonpublic((struct sockaddr *)&ss);
		}
	}
	switch (cc) {
	case CURLE_OK:
		break;
	case CURLE_OPERATION_TIMEDOUT: {
		/* Which deadline ran out: the connect timeout covers the TCP connect and
		 * the TLS handshake, the total one the whole answer. libcurl records no
		 * connect time for a connection that never completed, so tell them
		 * apart by when it gave up. */
		curl_off_t elapsed_us = 0;
		const char *what = "no complete answer";
		long ms = total_ms;

		curl_easy_getinfo(c, CURLINFO_TOTAL_TIME_T, &elapsed_us);
		if (connect_ms < total_ms && elapsed_us < (curl_off_t)(connect_ms + total_ms) * 500) {
			what = https ? "connection and TLS handshake not complete" : "no connection";
			ms = connect_ms;
		}
		st->unreachable = ll_asprintf("%s within %ld ms (%s)", what, ms, detail);
		*ret_code = ll_error_set(err, -ETIMEDOUT, "cannot fetch '%s': %s within %ld ms (%s)", shown, what, ms,
					 detail);
		out = OUT_UNREACHABLE;
		goto done;
	}
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
		st->unreachable = ll_strdup(detail);
		*ret_code = ll_error_set(err, -EHOSTUNREACH, "cannot fetch '%s': %s", shown, detail);
		out = OUT_UNREACHABLE;
		goto done;
	case CURLE_FILESIZE_EXCEEDED:
	case CURLE_WRITE_ERROR:
		if (st->t.too_big || cc == CURLE_FILESIZE_EXCEEDED) {
			*ret_code = ll_error_set(err, -EFBIG, "cannot fetch '%s': larger than the %zu byte limit for profiles",
						 shown, st->t.max);
			goto done;
		}
		/* fall through */
	default:
		*ret_code = ll_error_set(err, cc == CURLE_PEER_FAILED_VERIFICATION ? -EPERM : -EIO,
					 "cannot fetch '%s': %s", shown, detail);
		if (cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CACERT_BADFILE)
			ll_error_hint(err, "TLS verification is always on: pass --cacert FILE to trust a private CA");
		goto done;
	}

	if (code >= 300 && code < 400 && code != 304) {
		curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &location);
		if (!location) {
			*ret_code = ll_error_set(err, -EIO, "cannot fetch '%s': HTTP %ld without a Location", shown, code);
			goto done;
		}
		*ret_location = ll_strdup(location);
		out = OUT_OK;
		goto done;
	}
	if (code == 304) {
		out = OUT_NOT_MODIFIED;
	} else if (code == 200) {
		out = OUT_OK;
	} else if (code >= 500) {
		st->unreachable = ll_asprintf("the server answered HTTP %ld", code);
		*ret_code = ll_error_set(err, -EREMOTEIO, "cannot fetch '%s': HTTP %ld", shown, code);
		out = OUT_UNREACHABLE;
	} else {
		*ret_code = ll_error_set(err, code == 404 ? -ENOENT : -EACCES, "cannot fetch '%s': HTTP %ld%s", shown, code,
					 code == 404 ? " (not found)" : "");
	}
done:
	curl_slist_free_all(hdrs);
	curl_slist_free_all(pin);
	curl_easy_cleanup(c);
	return out;
}

LL_MODULE_EXPORT int ll_fetch_module_run(const char *spec, const struct ll_fetch_opts *opts, struct ll_fetch_result *ret,
		     struct ll_error *err)
{
	static const struct ll_fetch_opts defaults;
	_cleanup_free_ char *url = NULL, *pin = NULL, *dir = NULL, *current = NULL, *shown = NULL;
	struct cache_entry cache = { 0 };
	struct fetch_state st = { .opts = opts ? opts : &defaults };
	bool have_cache;
	enum outcome out = OUT_FAILED;
	char hex[65];
	int r;

	r = ll_url_split_pin(spec, &url, &pin, err);
	if (r < 0)
		return r;
	/* What is shown, and what the cache keys and stores: never the credentials. */
	shown = ll_url_redact(url);
	r = env_timeout_ms(&st.env_timeout_ms, err);
	if (r < 0)
		return r;
	st.t.max = st.opts->max_bytes ? st.opts->max_bytes : LL_PROFILE_MAX_BYTES;
	dir = cache_dir(st.opts);
	have_cache = cache_read(dir, shown, st.t.max, &cache);

	/* Pinned content cannot change: a cached copy with the right hash is the answer. */
	if (pin && have_cache) {
		ll_sha256_hex(cache.body, cache.len, hex);
		if (strcmp(hex, pin) == 0) {
			ret->body = LL_TAKE(cache.body);
			ret->len = cache.len;
			ret->url = LL_TAKE(shown);
			ret->from_cache = true;
			cache_entry_release(&cache);
			return 0;
		}
	}

	ll_buf_init(&st.t.body);
	st.cache = have_cache ? &cache : NULL;
	current = ll_strdup(url);
	r = 0;
	for (int hop = 0; hop <= MAX_REDIRECTS; hop++) {
		char *location = NULL;

		out = transfer_once(&st, current, hop == 0, &location, &r, err);
		if (out != OUT_OK || !location)
			break;
		free(current);
		current = location;
		if (hop == MAX_REDIRECTS) {
			r = ll_error_set(err, -ELOOP, "cannot fetch '%s': more than %d redirects", shown, MAX_REDIRECTS);
			out = OUT_FAILED;
		}
	}

	if (out == OUT_NOT_MODIFIED && !have_cache) {
		r = ll_error_set(err, -EIO, "cannot fetch '%s': HTTP 304 without a cached copy", shown);
		out = OUT_FAILED;
	}
	if (out == OUT_UNREACHABLE && have_cache) {
		_cleanup_free_ char *age = format_age(cache.fetched, time(NULL));
		ret->warning = ll_asprintf("using the cached copy of '%s' from %s: %s", shown, age, st.unreachable);
		ll_error_clear(err);
		out = OUT_NOT_MODIFIED; /* served from the cache; its age stays, it was not revalidated */
	} else if (out == OUT_NOT_MODIFIED) {
		cache.fetched = time(NULL);
		cache_write(dir, shown, &(struct cache_entry){ .etag = cache.etag, .last_modified = cache.last_modified,
							    .fetched = cache.fetched });
	}
	if (out == OUT_UNREACHABLE && !have_cache)
		ll_error_hint(err, "no cached copy of this profile exists yet");

	if (out == OUT_OK) {
		ret->len = st.t.body.len;
		ret->body = ll_buf_detach(&st.t.body);
	} else if (out == OUT_NOT_MODIFIED) {
		ret->len = cache.len;
		ret->body = LL_TAKE(cache.body);
		ret->from_cache = true;
	}
	if (ret->body && pin) {
		ll_sha256_hex(ret->body, ret->len, hex);
		if (strcmp(hex, pin) != 0) {
			r = ll_error_set(err, -EBADMSG, "'%s' does not match its pin: sha256 is %s, expected %s", shown, hex,
					 pin);
			ll_error_hint(err, "the profile changed on the server; review it and update the #sha256= pin");
			free(ret->body);
			ret->body = NULL;
			free(ret->warning);
			ret->warning = NULL;
			out = OUT_FAILED;
		}
	}
	if (out == OUT_OK)
		cache_write(dir, shown, &(struct cache_entry){ .body = ret->body, .len = ret->len, .etag = st.t.etag,
							    .last_modified = st.t.last_modified, .fetched = time(NULL) });

	ll_buf_release(&st.t.body);
	free(st.t.etag);
	free(st.t.last_modified);
	free(st.unreachable);
	cache_entry_release(&cache);
	if (out != OUT_OK && out != OUT_NOT_MODIFIED)
		return r < 0 ? r : -EIO;
	ret->url = LL_TAKE(shown);
	ret->nonpublic = st.nonpublic; /* false when no transfer completed (cache): strict */
	return 0;
}
