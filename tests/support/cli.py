"""Run the real ``assay`` command as a user would: in a subprocess, in a pipe or on a pseudo-terminal.

``run_pty`` gives the child a real terminal (stdin, stdout and stderr on a pty slave, 100x30), so
code that only runs on a TTY (the progress bar) is exercised; ``send`` lets a test press Ctrl-C.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    """A minimal environment: no user store or cache, no keys but the ones a test passes."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "ASSAY_CACHE_DIR": str(home / "cache"), "ASSAY_STORE": str(home / "runs.sqlite3"),
           "PYTHONUNBUFFERED": "1", "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"}
    if os.environ.get("PYTHONPATH"):  # a source tree put first on purpose stays first in the child
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    env.update(extra)
    return env


def run_pipe(args: list[str], env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


@dataclass
class PtyResult:
    returncode: int
    output: str   # everything the child wrote to its terminal (stdout and stderr together)


def run_pty(args: list[str], env: dict[str, str], *, timeout: float = 60,
            on_output: Callable[[str, "subprocess.Popen[bytes]"], None] | None = None,
            columns: int = 100) -> PtyResult:
    """Run ``assay ARGS`` on a pseudo-terminal; ``on_output(text_so_far, proc)`` is called as output arrives."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, columns, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "assay", *args], stdin=slave, stdout=slave, stderr=slave,
                            env=env, start_new_session=True, close_fds=True)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                raise TimeoutError(f"assay {' '.join(args)} did not finish in {timeout} s: "
                                   + b"".join(chunks).decode("utf-8", "replace")[-2000:])
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child closed its side of the terminal
                    break
                if not data:
                    break
                chunks.append(data)
                if on_output is not None:
                    on_output(b"".join(chunks).decode("utf-8", "replace"), proc)
            elif proc.poll() is not None:
                break  # exited and nothing left to read
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        os.close(master)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return PtyResult(proc.returncode, b"".join(chunks).decode("utf-8", "replace"))
