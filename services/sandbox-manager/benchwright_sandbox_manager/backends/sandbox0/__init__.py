"""The ``sandbox0`` backend: each sandbox a pod on Kubernetes, every command an exec into it.

A sandbox is a Pod in ``BW_KUBE_NAMESPACE`` running ``BW_KUBE_IMAGE`` (which
needs ``/bin/sh``, ``env`` and ``python3`` >= 3.8) that only sleeps: non-root
under a uid of its own (a hash of its id, as ``local`` gives one), read-only
root filesystem, every capability dropped, no privilege escalation, seccomp
``RuntimeDefault``, no service-account token, no service links, DNS off; an
``emptyDir`` ``/work`` (the sandbox's files, sized by the disk quota) and a
memory-backed ``/tmp``; an ``emptyDir`` more at each of the sandbox's own absolute
directories (``CreateSandbox.dirs``: a Harbor task's ``/app``, ``/logs``...), writable
by its uid through ``fsGroup``; CPU, memory and ephemeral-storage limits. Beside it a
NetworkPolicy lets nothing in, and out only to the egress injector
(``BW_KUBE_EGRESS_PROXY_URL``) and to the addresses a command is given
(its model proxy, a proxy it names); it exists before the pod and goes after it.

Every operation is an exec of ``launcher.py`` (see there) through the exec
subresource's websocket. A command gets only the environment it is given plus
a minimal base and the image's PATH, its rlimits, a wall clock and a disk quota
that kill its whole process tree, and nothing it started outlives it.

What a cluster must provide: a CNI that enforces NetworkPolicies (without one the
policy is a no-op), and an injector address the policy can match (a pod or
external IP: most CNIs match egress after a Service's ClusterIP is translated).
The sandbox-manager's credentials need pods, pods/exec and networkpolicies in
the namespace.
"""

from benchwright_sandbox_manager.backends.sandbox0.backend import Sandbox0Backend

__all__ = ["Sandbox0Backend"]
