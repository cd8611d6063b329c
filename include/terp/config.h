/* config: the settings file $XDG_CONFIG_HOME/terp/config, lines of
 * `key = value` with # comments. Pure parsing plus one loader; knows
 * the names of all keys (an unknown key is an error with its line
 * number) but not what they mean: llm_config_resolve takes the model's
 * settings, main takes the rest (theme, memory, timeout...). */
#ifndef TERP_CONFIG_H
#define TERP_CONFIG_H

#include <stddef.h>

#define CONFIG_MAX	(64 * 1024)	/* bytes of the whole file */

struct config_entry {
	char	*key;
	char	*value;
	int	 line;
};

struct config {
	struct config_entry	*e;
	int			 n;
	char			*path;	/* where it was read from, or NULL */
};

/* Parses text (len bytes; name is used in messages) into c, which the
 * caller zeroes first and frees with config_free. Returns 0, or -1 with
 * *err like "config:3: unknown key 'colour' (known: ...)". Values may
 * be wrapped in double quotes; a later line overrides an earlier one. */
int config_parse(struct config *c, const char *text, size_t len,
    const char *name, char **err);

/* $XDG_CONFIG_HOME/terp/config, where the settings file is read from
 * (for messages that name it too). A new string. */
char *config_default_path(void);

/* Reads $XDG_CONFIG_HOME/terp/config (or path when not NULL) into c. A
 * missing file is an empty config. 0, or -1 with *err. */
int config_load(struct config *c, const char *path, char **err);

/* The value of key (owned by c), or NULL when unset. */
const char *config_get(const struct config *c, const char *key);
void config_free(struct config *c);

/* The known keys, NULL-terminated (for help texts). */
extern const char *const config_keys[];

#endif
