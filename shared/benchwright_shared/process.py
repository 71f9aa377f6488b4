"""Child processes that do not outlive the platform; the process's own memory."""

import contextlib
import ctypes
import gc
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (use as ``preexec_fn``).

    If the platform is killed outright, its nats-server and sandboxes go with it
    rather than holding data directories or calling a proxy that is gone.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


M_ARENA_MAX = -8


def limit_malloc_arenas(arenas: int = 2) -> None:
    """Cap glibc's malloc arenas for this process (what ``MALLOC_ARENA_MAX`` does).

    glibc gives each thread that allocates its own arena, up to eight per core, and
    memory freed in one is not reused by another: a service with a dozen store
    and worker threads holds tens of megabytes it does not use. Call it before
    threads start; elsewhere than glibc it does nothing.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").mallopt(M_ARENA_MAX, arenas)


_heap_frozen = False


def freeze_startup_heap() -> None:
    """Put what is alive once the services are up out of the cycle collector's reach.

    The services' modules, classes, schemas and caches are hundreds of thousands of
    objects that live as long as the process, and every full collection walked them
    all (about 1 ms of each agent turn, measured 2026-12-06). ``gc.freeze`` moves
    them to a generation no collection scans: they are still freed when their last
    reference goes, only a cycle among them is kept. Once a process: a second
    platform started in the same process (tests do) would freeze the first one's
    leftovers too.
    """
    global _heap_frozen
    if _heap_frozen:
        return
    _heap_frozen = True
    gc.collect()
    gc.freeze()
