"""Who may see a run: a rule both the gateway (to answer at once) and the
orchestrator (which owns the run) apply."""

VISIBILITIES = ("private", "unlisted", "public")


def publish_problem(status: str, benchmark_id: str | None) -> str | None:
    """Why a run cannot be made public yet, or None.

    A public run lands on its subset's leaderboard and makes its benchmark public,
    so it must have finished ``ok`` on a benchmark the registry knows.
    """
    if benchmark_id is None:
        return "the run never resolved a benchmark"
    if status != "ok":
        return f"the run is {status}; only a run that finished ok can be public"
    return None
