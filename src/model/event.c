/* event: the names of the event stream's typed facts, shared by the
 * writers that record them (the journal, --json). */
#include "terp/event.h"

const char *
event_error_name(const struct event *ev)
{
	switch (ev->error) {
	case ERROR_MODEL: return llm_err_name(ev->llm_err);
	case ERROR_EMPTY_REPLY: return "empty_reply";
	case ERROR_TURN_CAP: return "turn_cap";
	case ERROR_CANCELLED: return "cancelled";
	case ERROR_SANDBOX: return "sandbox";
	case ERROR_USAGE: return "usage";
	case ERROR_MAX_SESSION: return "max_session";
	case ERROR_MAX_COST: return "max_cost";
	}
	return "unknown";
}
