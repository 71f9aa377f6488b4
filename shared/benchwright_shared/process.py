"""Child processes that do not outlive the platform."""

import contextlib
import ctypes
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (use as ``preexec_fn``).

    If the platform is killed outright, its nats-server and sandboxes go with it
    rather than holding data directories or calling a proxy that is gone.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
