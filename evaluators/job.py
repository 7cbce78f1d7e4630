"""The wire protocol between a WorkerPool (parent) and one evaluation worker (child).

Two pipes per worker, neither of them the worker's stdout or stderr (those go to a log file, so nothing a
candidate prints can be mistaken for a message):

    parent ──job pipe──► worker       one JSON line: the Job (task dir, source, config, hidden seeds, nonce)
    parent ◄─control pipe── worker    JSON lines: ready, then progress/result/task_error, each with the nonce

The nonce is drawn per job, so a line the candidate manages to push into the control pipe without knowing it
is recognised as tampering. (Code running in the worker can read the nonce from memory; the judge's runtime
sandbox is what stops a candidate reaching for the evaluator's internals.)
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import signal
import time
from dataclasses import dataclass, field
from typing import Any

# Progress names the worker reports, in cascade order; each maps to the EvalResult stage it belongs to.
PROGRESS_STAGES = {
    "static": "static",
    "compile": "compile",
    "correctness": "correctness",
    "wait-lock": "timing",
    "timing": "timing",
}
MAX_MESSAGE_BYTES = 32 << 20  # a control line longer than this is tampering (a result is a few KB)


@dataclass(frozen=True)
class Job:
    task_dir: str
    source: str
    config: dict[str, Any]  # EvalConfig.to_dict()
    seeds: tuple[int, ...]  # hidden: drawn by the parent per evaluation, never stored
    nonce: str

    def encode(self) -> bytes:
        body = {
            "task_dir": self.task_dir,
            "source": self.source,
            "config": self.config,
            "seeds": list(self.seeds),
            "nonce": self.nonce,
        }
        return (json.dumps(body) + "\n").encode()

    @classmethod
    def decode(cls, line: bytes) -> Job:
        body = json.loads(line)
        return cls(
            task_dir=body["task_dir"],
            source=body["source"],
            config=body["config"],
            seeds=tuple(int(s) for s in body["seeds"]),
            nonce=body["nonce"],
        )


@dataclass(frozen=True)
class Message:
    kind: str  # "ready" | "progress" | "result" | "task_error"
    nonce: str = ""
    body: dict[str, Any] = field(default_factory=dict)

    def encode(self) -> bytes:
        return (json.dumps({"kind": self.kind, "nonce": self.nonce, "body": self.body}) + "\n").encode()

    @classmethod
    def decode(cls, line: bytes) -> Message:
        raw = json.loads(line)
        if not isinstance(raw, dict) or not isinstance(raw.get("kind"), str):
            raise ValueError("not a control message")
        body = raw.get("body", {})
        return cls(
            kind=raw["kind"], nonce=str(raw.get("nonce", "")), body=body if isinstance(body, dict) else {}
        )


def candidate_sha(source: str, entry: str) -> str:
    """Candidate.sha, or a hash of the raw text when the source is too deeply nested to normalise."""
    from evaluators.candidate import Candidate

    try:
        return Candidate(source=source, entry=entry).sha
    except (RecursionError, MemoryError, ValueError):
        return hashlib.sha256(source.encode(errors="replace")).hexdigest()[:16]


class ProtocolError(Exception):
    """The control channel carried something the worker would never send (garbage, a wrong nonce)."""


class LineReader:
    """Reads newline-terminated messages from a pipe fd with a deadline, without blocking past it."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = bytearray()
        self.eof = False

    def read_line(self, timeout: float | None) -> bytes | None:
        """The next line (without newline); None on timeout or end of file (check `eof`)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            cut = self._buffer.find(b"\n")
            if cut >= 0:
                line = bytes(self._buffer[:cut])
                del self._buffer[: cut + 1]
                return line
            if len(self._buffer) > MAX_MESSAGE_BYTES:
                raise ProtocolError(f"control message longer than {MAX_MESSAGE_BYTES} bytes")
            if self.eof:
                return None
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([self.fd], [], [], wait)
            if not readable:
                return None
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                self.eof = True
            self._buffer += chunk

    def ready(self) -> bool:
        """True when a line (or end of file) can be read without waiting."""
        if b"\n" in self._buffer or self.eof:
            return True
        readable, _, _ = select.select([self.fd], [], [], 0)
        return bool(readable)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


# --- how a worker died, in words ----------------------------------------------------------------------------

_SIGNAL_MEANING = {
    signal.SIGSEGV: "segmentation fault",
    signal.SIGBUS: "bus error",
    signal.SIGFPE: "floating-point exception",
    signal.SIGILL: "illegal instruction",
    signal.SIGABRT: "aborted",
    signal.SIGXFSZ: "its output passed the size limit (output flood)",
    signal.SIGXCPU: "CPU time limit",
    signal.SIGTERM: "terminated",
    signal.SIGPIPE: "broken pipe",
}


# A worker SIGKILLed by someone other than the pool: the OOM killer (the candidate's fault) or an operator /
# a dying machine (not its fault). Executors that can retry elsewhere do so once when they see this.
KILLED_FROM_OUTSIDE = "was killed by SIGKILL"


def describe_exit(returncode: int | None, *, output_limit_mb: int = 0, killed_by_us: bool = False) -> str:
    """One sentence saying how a worker ended, e.g. 'crashed with SIGSEGV (segmentation fault)'."""
    if returncode is None:
        return "did not exit"
    if returncode >= 0:
        if returncode == 0:
            return "exited with code 0 without reporting a result (did the candidate call exit?)"
        return f"exited with code {returncode}"
    signum = -returncode
    try:
        name = signal.Signals(signum).name
    except ValueError:
        return f"was killed by signal {signum}"
    if signum == signal.SIGKILL:
        if killed_by_us:
            return "was killed by the evaluator (SIGKILL)"
        return f"{KILLED_FROM_OUTSIDE} (most likely the kernel's OOM killer: host memory ran out)"
    meaning = _SIGNAL_MEANING.get(signal.Signals(signum), "")
    if signum == signal.SIGXFSZ and output_limit_mb:
        meaning = f"its stdout/stderr passed {output_limit_mb} MB (output flood)"
    return f"crashed with {name}" + (f" ({meaning})" if meaning else "")
