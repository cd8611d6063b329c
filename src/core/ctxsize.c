/* ctxsize: the sizes that need no conversation: the window a model's
 * name gives (the table) and the token estimate of a text or a message
 * (ctxsize.h; the public names are context.h's). */
#include "ctxsize.h"

#include <string.h>
#include <strings.h>

#include "terp/context.h"

/* ------------------------------------------------------------ the table */

struct window_entry {
	const char	*prefix;
	long		 tokens;
};

/* Taken CONTEXT_TABLE_DATE from the providers' model pages. Longer
 * prefixes of one family before shorter ones (first match wins). */
static const struct window_entry table[] = {
	{ "gpt-5", 400000 },
	{ "gpt-4.1", 1047576 },
	{ "gpt-4o", 128000 },
	{ "gpt-4-turbo", 128000 },
	{ "gpt-4-32k", 32768 },
	{ "gpt-4", 8192 },
	{ "gpt-3.5-turbo", 16385 },
	{ "o1-mini", 128000 },
	{ "o1", 200000 },
	{ "o3", 200000 },
	{ "o4-mini", 200000 },
	{ "gpt-oss", 131072 },
	{ "claude", 200000 },
	{ "llama3.1", 131072 },
	{ "llama3.2", 131072 },
	{ "llama3.3", 131072 },
	{ "llama3", 8192 },
	{ "qwen3", 40960 },
	{ "qwen2.5-coder", 32768 },
	{ "qwen2.5", 32768 },
	{ "mistral-nemo", 131072 },
	{ "mistral", 32768 },
	{ "gemma3", 131072 },
	{ "gemma2", 8192 },
	{ "phi4", 16384 },
	{ "deepseek-r1", 131072 },
};

long
context_window_of(const char *provider, const char *model)
{
	const char *m = model;
	size_t n;

	(void)provider;
	if (m == NULL)
		return 0;
	/* "library/llama3.1:8b", "models/gpt-4o": the last path part. */
	if (strrchr(m, '/') != NULL)
		m = strrchr(m, '/') + 1;
	n = strcspn(m, ":");
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
		size_t pl = strlen(table[i].prefix);
		if (n >= pl && strncasecmp(m, table[i].prefix, pl) == 0)
			return table[i].tokens;
	}
	return 0;
}

/* ------------------------------------------------------------ estimates */

long
context_estimate_text(const char *s, size_t n)
{
	long t = 0;
	size_t i = 0;

	if (s == NULL)
		return 0;
	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		size_t j = i;
		if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') {
			while (j < n && (((unsigned char)s[j] | 0x20) >= 'a' &&
			    ((unsigned char)s[j] | 0x20) <= 'z'))
				j++;
			t += (long)((j - i + 3) / 4);
		} else if (c >= '0' && c <= '9') {
			while (j < n && s[j] >= '0' && s[j] <= '9')
				j++;
			t += (long)((j - i + 2) / 3);
		} else if (c == ' ') {
			/* One space joins the next word; a run is a token. */
			while (j < n && s[j] == ' ')
				j++;
			if (j - i > 1)
				t++;
		} else if (c >= 0x80) {
			/* One code point: the lead byte and its continuations. */
			j++;
			while (j < n && ((unsigned char)s[j] & 0xC0) == 0x80)
				j++;
			t++;
		} else {
			j++;
			t++;
		}
		i = j;
	}
	return t;
}

long
ctxsize_str(const cJSON *o, const char *key)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));

	return s ? context_estimate_text(s, strlen(s)) : 0;
}

long
context_estimate_message(const cJSON *m)
{
	long t = CTXSIZE_MSG_OVERHEAD + ctxsize_str(m, "content");
	const cJSON *c;

	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(m, "tool_calls"))
		t += CTXSIZE_MSG_OVERHEAD + ctxsize_str(c, "id") + ctxsize_str(c, "name") +
		    ctxsize_str(c, "arguments");
	/* reasoning kept to send back (the providers may not count an
	 * earlier question's: counted anyway, it is sent) */
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(m, "reasoning"))
		t += CTXSIZE_MSG_OVERHEAD + ctxsize_str(c, "thinking") + ctxsize_str(c, "signature") +
		    ctxsize_str(c, "data") + ctxsize_str(c, "encrypted_content");
	return t;
}
