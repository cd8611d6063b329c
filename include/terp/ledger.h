/* ledger: where the egress proxy's reports become the notebook's ledger
 * entries. The core sits above both: the proxy (egress.h) knows nothing
 * of the notebook, and the notebook's netlog (netlog.h) nothing of the
 * proxy. Pure. */
#ifndef TERP_LEDGER_H
#define TERP_LEDGER_H

struct egress_event;
struct net_attempt;

/* Fills a from one egress event of cell (the kernel's attribution): its
 * verdict, open until the END report, and the event's strings made
 * what netlog keeps (cut to fit, bytes outside printable ASCII as '?';
 * netlog_text). */
void ledger_from_egress(struct net_attempt *a, int cell, const struct egress_event *ev);

#endif
