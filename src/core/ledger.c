/* ledger: the proxy's events as netlog's entries (ledger.h). */
#include "terp/ledger.h"

#include <string.h>

#include "terp/egress.h"
#include "terp/netlog.h"

void
ledger_from_egress(struct net_attempt *a, int cell, const struct egress_event *ev)
{
	memset(a, 0, sizeof *a);
	a->cell = cell;
	a->id = ev->id;
	a->time_ms = ev->time_ms;
	a->verdict = ev->verdict == EGRESS_REFUSED ? NETLOG_REFUSED :
	    ev->verdict == EGRESS_FAILED ? NETLOG_FAILED : NETLOG_ALLOWED;
	a->open = ev->phase != EGRESS_EV_END;
	netlog_text(a->method, sizeof a->method, ev->method);
	netlog_text(a->host, sizeof a->host, ev->host);
	a->port = ev->port;
	netlog_text(a->code, sizeof a->code, ev->code);
	netlog_text(a->reason, sizeof a->reason, ev->reason);
	a->up = ev->up;
	a->down = ev->down;
}
