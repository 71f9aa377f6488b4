"""How a command travels to an e2b sandbox and how its end comes back.

Every command runs under ``launcher.py``; its values travel in envd's request,
the names to keep on its command line; the launcher's last line on stderr says
how the command ended (``settle`` takes it off).
"""

import contextlib
import ipaddress
import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from benchwright_sandbox_manager.backends.forwarding import (
    LOOPBACK,
    MODEL_URL,
    NO_PROXY_VARS,
    PROXY_VARS,
)
from benchwright_sandbox_manager.ports import OUTPUT_LIMIT_BYTES, SandboxLimits

BASE_ENV = {"LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
BASE_PATH = "/usr/local/bin:/usr/bin:/bin"
# A shell's status for a command that died of SIGKILL.
KILLED = 137


def proxied_env(env: Mapping[str, str], egress_proxy_url: str | None) -> dict[str, str]:
    """``env`` as an e2b sandbox needs it: ``HTTP(S)_PROXY`` set to the egress proxy
    unless the command names its own, and the model proxy (with loopback) kept off
    the proxy through ``NO_PROXY`` (the rule of ``forwarding.plan_network``, without
    its forwarders: an e2b sandbox reaches addresses itself).

    A proxy on loopback is the injector as this host sees it (a run's URL carries its
    key as user info): it is pointed at the injector's address as e2b sandboxes see it.
    """
    out = dict(env)
    if egress_proxy_url and not any(out.get(var) for var in PROXY_VARS):
        out.update(dict.fromkeys(PROXY_VARS, egress_proxy_url))
    if not any(out.get(var) for var in PROXY_VARS):
        return out
    for var in PROXY_VARS:
        if out.get(var) and egress_proxy_url:
            out[var] = _reached_at(out[var], egress_proxy_url)
    direct = ["localhost", LOOPBACK]
    with contextlib.suppress(ValueError):
        model_host = urlsplit(out.get(MODEL_URL, "")).hostname
        if model_host:
            direct.append(model_host)
    given = [h for var in NO_PROXY_VARS for h in out.get(var, "").split(",") if h]
    out.update(dict.fromkeys(NO_PROXY_VARS, ",".join(dict.fromkeys([*given, *direct]))))
    return out


def _reached_at(url: str, public_url: str) -> str:
    """``url`` with ``public_url``'s host and port when its own host is loopback."""
    try:
        parts, public = urlsplit(url), urlsplit(public_url)
        host = parts.hostname or ""
        loopback = host == "localhost" or (is_ip(host) and ipaddress.ip_address(host).is_loopback)
        if not loopback or not public.hostname:
            return url
        where = f"[{public.hostname}]" if ":" in public.hostname else public.hostname
        if public.port:
            where += f":{public.port}"
    except ValueError:
        return url
    userinfo, at, _ = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=f"{userinfo}{at}{where}"))


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@dataclass
class Ending:
    """How a command ended, from the launcher's last line or, failing that, from envd."""

    exit_code: int
    timed_out: bool = False
    note: str = ""


@dataclass
class Output:
    """The head of stdout and the tail of stderr, as the SDK delivers them."""

    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)

    def out(self, chunk: str) -> None:
        room = OUTPUT_LIMIT_BYTES - len(self.stdout)
        if room > 0:
            self.stdout += chunk.encode()[:room]

    def err(self, chunk: str) -> None:
        # Room for the launcher's last line beyond the limit: it is cut off later.
        self.stderr += chunk.encode()
        keep = OUTPUT_LIMIT_BYTES + 4096
        if len(self.stderr) > keep:
            del self.stderr[: len(self.stderr) - keep]


def command_line(
    launcher: str,
    python: str,
    workdir: str,
    argv: Sequence[str],
    names: Sequence[str],
    timeout_s: float,
    limits: SandboxLimits,
    nonce: str,
    *,
    cwd: str | None = None,
    dirs: Sequence[str] = (),
) -> str:
    """The shell command envd runs: ``exec``, the launcher (``launcher``'s source on
    ``python``), its configuration, the command. ``names``: the environment kept;
    ``cwd``: where the command starts (None: ``workdir``); ``dirs``: the sandbox's own
    absolute directories, counted in its disk quota with ``workdir``."""
    python_dir = python.rpartition("/")[0]
    config = {
        "nonce": nonce,
        "timeout_s": timeout_s,
        "cwd": cwd,
        "disk": [workdir, *dirs],
        "limits": {
            "cpu_seconds": limits.cpu_seconds,
            "memory_mb": limits.memory_mb,
            "file_size_mb": limits.file_size_mb,
            "max_procs": limits.max_procs,
            "disk_mb": limits.disk_mb,
            "tmp_mb": limits.tmp_mb,
        },
        "env": list(names),
        "base_env": {
            **BASE_ENV,
            "PATH": f"{python_dir}:{BASE_PATH}" if python_dir else BASE_PATH,
            "HOME": workdir,
            # The runtime (bench_task, bench_runner) sits at the top of the sandbox.
            "PYTHONPATH": workdir,
        },
    }
    start = [python, "-I", "-S", "-c", launcher, json.dumps(config)]
    return "exec " + shlex.join([*start, *argv])


def settle(output: Output, ending: Ending, nonce: str, limits: SandboxLimits) -> str:
    """Take the launcher's last line off stderr into ``ending``; stderr as reported."""
    stderr = output.stderr.decode(errors="replace")
    head, found, last = stderr.rpartition(f"\n{nonce} ")
    if found:
        stderr = head
        with contextlib.suppress(ValueError, TypeError, KeyError):
            said = json.loads(last)
            ending.exit_code = int(said["exit_code"])
            why = said["killed_for"]
            ending.timed_out = ending.timed_out or why == "timeout"
            if why == "disk":
                ending.note = (
                    f"the sandbox passed its disk quota of {limits.disk_mb} MiB; "
                    "the command was killed"
                )
            elif why == "tmp":
                ending.note = f"/tmp passed {limits.tmp_mb} MiB; the command was killed"
    if ending.note:
        stderr += f"\n[sandbox] {ending.note}\n"
    return stderr.encode()[-OUTPUT_LIMIT_BYTES:].decode(errors="replace")
