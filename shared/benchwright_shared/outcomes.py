"""Whose fault an ``err`` row is: the platform's, or the model's and the scorer's.

A task can end ``err`` because the scorer raised, the model answered nonsense or
a ceiling was hit: that is a result, and replaying the run gives it again. It
can also end ``err`` because the platform failed it: a sandbox lost with its
sandbox-manager, a model proxy that stayed unreachable past every retry, a
local model that kept crashing. The platform retries those first; an error that
remains is recorded as ``infra:<reason>``, counted apart in the summary
(``infra_errored``), and a run holding any shows ``display_status`` ``degraded``
instead of a clean ``ok``.
"""

INFRA_PREFIX = "infra:"

# The reasons the platform records (``infra:<reason>``).
SANDBOX_LOST = "infra:sandbox_lost"
RESULTS_MISSING = "infra:results_missing"
PROXY_UNREACHABLE = "infra:proxy_unreachable"
PROVIDER_CRASHED = "infra:provider_crashed"
# A scorer called a judge on a run that names none (the launch should have refused it).
NO_JUDGE = "infra:no_judge"


def is_infra_error(error_type: str | None) -> bool:
    """Whether an ``err`` row's ``error_type`` names a platform failure."""
    return bool(error_type) and str(error_type).startswith(INFRA_PREFIX)
