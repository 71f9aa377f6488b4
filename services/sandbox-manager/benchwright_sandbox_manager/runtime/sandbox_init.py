"""The first program in every isolated sandbox command; stdlib only.

bubblewrap starts it as ``python -I -S /run/bw/init.py <config json> <argv...>``
inside the sandbox's namespaces. In order, it:

1. drops to the sandbox's own uid when bubblewrap ran as root (``uid``/``gid``),
   then enters the command's directory (``cwd``, when given: as that uid, so a
   directory the sandbox closed to others is entered as its owner would);
2. reads the command's environment from an inherited pipe (``env_fd``), so the
   values never appear on a command line or in bubblewrap's environment;
3. sets the rlimits (``limits``: CPU seconds, address space, file size,
   processes, no core files);
4. starts the network forwarders (``forwards``): each listens on 127.0.0.1:<port>
   in the sandbox's own network namespace and relays every connection to a unix
   socket the sandbox-manager serves on the host side. They are the only way out;
5. replaces itself with the command (exit 127 when it cannot be found, 126 when
   it cannot be run, as a shell would; 126 too when ``cwd`` cannot be entered).

It is never copied into the sandbox's directory: the manager mounts it read-only,
as one file with ``command_limits`` inlined (``runtime.launcher_source``).
"""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any

from benchwright_sandbox_manager.runtime.command_limits import set_limits

CHUNK = 1 << 16


def _drop_privileges(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)  # from root: every capability goes with it


def _enter(cwd: str) -> None:
    try:
        os.chdir(cwd)
    except OSError as exc:
        print(f"cannot enter {cwd!r}: {exc}", file=sys.stderr)
        raise SystemExit(126) from None


def _read_env(fd: int) -> dict[str, str]:
    chunks = []
    while chunk := os.read(fd, CHUNK):
        chunks.append(chunk)
    os.close(fd)
    env: dict[str, str] = json.loads(b"".join(chunks))
    return env


def _forward(listeners: list[tuple[socket.socket, str]]) -> None:
    """Relay every connection to a listener to its unix socket, until the sandbox ends."""
    import asyncio  # here, not at the top: the command need not wait for it

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(CHUNK):
                writer.write(data)
                await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()
        except (ConnectionError, OSError):
            writer.close()

    async def relay(path: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(path)
        except OSError:
            writer.close()
            return
        try:
            await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))
        finally:
            for w in (writer, up_writer):
                w.close()

    async def serve() -> None:
        for sock, path in listeners:

            async def handle(
                r: asyncio.StreamReader, w: asyncio.StreamWriter, path: str = path
            ) -> None:
                await relay(path, r, w)

            await asyncio.start_server(handle, sock=sock)
        await asyncio.Event().wait()

    asyncio.run(serve())


def _start_forwarders(forwards: list[dict[str, Any]]) -> None:
    """Bind every forwarder now (the command may connect at once), relay in a grandchild.

    The grandchild is adopted by the sandbox's init and dies with the sandbox.
    """
    listeners = []
    for forward in forwards:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", int(forward["port"])))
        sock.listen(128)
        listeners.append((sock, str(forward["socket"])))
    if not listeners:
        return
    child = os.fork()
    if child == 0:
        try:
            if os.fork() != 0:
                os._exit(0)
            os.setsid()
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            _forward(listeners)
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    for sock, _ in listeners:
        sock.close()


def main() -> None:
    config: dict[str, Any] = json.loads(sys.argv[1])
    argv = sys.argv[2:]
    if config.get("uid") is not None:
        _drop_privileges(int(config["uid"]), int(config["gid"]))
    if config.get("cwd"):
        _enter(str(config["cwd"]))
    env = _read_env(int(config["env_fd"]))
    set_limits(config["limits"])
    _start_forwarders(config.get("forwards", []))
    try:
        os.execvpe(argv[0], argv, env)
    except FileNotFoundError as exc:
        print(f"cannot run {argv[0]!r}: {exc}", file=sys.stderr)
        raise SystemExit(127) from None
    except OSError as exc:
        print(f"cannot run {argv[0]!r}: {exc}", file=sys.stderr)
        raise SystemExit(126) from None


if __name__ == "__main__":
    main()
