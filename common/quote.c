#include "llmlaunch/quote.h"

#include <string.h>

bool ll_sh_safe(const char *s)
{
	if (!s || !*s)
		return false;
	for (const char *c = s; *c; c++)
		if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-", *c))
			return false;
	return true;
}

void ll_sh_quote(const char *s, bool if_needed, struct ll_buf *out)
{
	if (if_needed && ll_sh_safe(s)) {
		ll_buf_add(out, s);
		return;
	}
	ll_buf_addc(out, '\'');
	for (const char *c = s; *c; c++) {
		if (*c == '\'')
			ll_buf_add(out, "'\\''");
		else
			ll_buf_addc(out, *c);
	}
	ll_buf_addc(out, '\'');
}
