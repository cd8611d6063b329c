/* tui_cmd: the notebook UI's slash commands (tui_cmd.c). */
#ifndef TERP_TUI_CMD_H
#define TERP_TUI_CMD_H

#include "tui_priv.h"

void tui_cmd_help(struct tui *t);
void tui_cmd_quit(struct tui *t);		/* asks first when busy */
void tui_cmd_line(struct tui *t, const char *s);	/* a command or a question */
int tui_cmd_holds(struct tui *t, const char *s);	/* must s wait for the replay? */
void tui_cmd_held_run(struct tui *t);		/* once per loop iteration */
char **tui_cmd_complete(const char *text, int start, int end);
void tui_cmd_show_matches(struct tui *t, char **matches, int num, int max);
void tui_cmd_free(void);

#endif
