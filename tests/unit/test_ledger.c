/* Unit tests of ledger: the proxy's events as the notebook's entries
 * (the conversion the core does, so that netlog knows nothing of the
 * proxy). */
#include <criterion/criterion.h>
#include <string.h>

#include "terp/egress.h"
#include "terp/ledger.h"
#include "terp/netlog.h"

Test(ledger, from_egress_cuts_and_cleans)
{
	char longhost[600];
	struct egress_event ev = { .phase = EGRESS_EV_OPEN, .verdict = EGRESS_ALLOWED,
	    .id = 3, .time_ms = 5, .method = "CONNECT", .host = longhost, .port = 443,
	    .addr = "", .code = "ok", .reason = "bad\x1b[2Jreason\n", .up = 1, .down = 2 };
	struct net_attempt a;

	memset(longhost, 'a', sizeof longhost - 1);
	longhost[sizeof longhost - 1] = '\0';
	ledger_from_egress(&a, 4, &ev);
	cr_assert_eq(a.open, 1);
	cr_assert_eq(a.cell, 4);
	cr_assert_eq(strlen(a.host), sizeof a.host - 1);
	cr_assert_str_eq(a.reason, "bad?[2Jreason?");
	ev.phase = EGRESS_EV_END;
	ev.verdict = EGRESS_FAILED;
	ledger_from_egress(&a, 4, &ev);
	cr_assert_eq(a.open, 0);
	cr_assert_eq(a.verdict, NETLOG_FAILED);
}
