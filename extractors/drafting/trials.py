"""Try a draft: write its inputs.py next to the reference in a scratch task and run them in a worker process
(templates/trial_worker.py), so a reference that crashes, hangs or leaks state never touches the extraction.
The worker imports torch once and serves every trial of one extraction; one that runs past its time is
killed, and the next trial starts a fresh one."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluators.sandbox import boxed_argv
from evaluators.subprocesses import Started
from extractors.input_spec import InputSpec, render_inputs
from extractors.signature import Param
from extractors.toml_writer import dumps

WORKER = Path(__file__).resolve().parents[1] / "templates" / "trial_worker.py"
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT = 300.0  # importing torch on a loaded machine; trials are timed once the worker is ready


@dataclass
class TrialOutcome:
    case: str
    ok: bool
    error: str = ""
    frames: list[tuple[int, str]] = field(
        default_factory=list
    )  # (line, function) in reference.py, outermost first
    where: str = "reference"  # "inputs" when make_inputs itself failed
    lines: frozenset[int] = frozenset()  # reference lines executed
    outputs: list[str] = field(default_factory=list)
    deterministic: bool = True
    degenerate: str = ""
    nan: bool = False
    seconds: float = 0.0  # the case's first run on this CPU (making its inputs and the reference)
    timed_out: bool = False  # the trial ran past its time: no error to repair from

    @property
    def accepted(self) -> bool:
        return self.ok and self.deterministic and not self.degenerate

    def reason(self) -> str:
        if not self.ok:
            return self.error
        if not self.deterministic:
            return "the same seed gives different outputs (the reference draws random numbers of its own)"
        return self.degenerate


class TrialRunner:
    def __init__(
        self, reference_source: str, entry: str, signature: list[Param], timeout: float = 120.0
    ) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="kernelbot-draft-"))
        (self.root / "reference.py").write_text(reference_source)
        self.entry = entry
        self.signature = signature
        self.timeout = timeout
        self.proc: Started | None = None
        self.count = 0
        self.died = False

    def run(
        self,
        args: dict[str, dict[str, Any]],
        sizes: dict[str, Any],
        cases: list[dict[str, Any]],
        full: tuple[str, ...] = (),
        repeat: tuple[str, ...] = (),
    ) -> list[TrialOutcome]:
        """Run each case once (seed 0); for the cases named in `full` also the degenerate check, for those in
        `repeat` a second run with the same seed (the reference must not draw random numbers of its own)."""
        self.count += 1
        spec = InputSpec(sizes={k: [v] for k, v in sizes.items()}, args=args, source="draft")
        (self.root / "inputs.py").write_text(render_inputs(spec, self.signature, self.entry))
        task = {"name": "draft", "entry": self.entry, "regime": "wall", "cases": cases}
        (self.root / "task.toml").write_text(dumps(task))
        request = {
            "root": str(self.root),
            "cases": [c["name"] for c in cases],
            "full": list(full),
            "repeat": list(repeat),
        }
        reply = self._ask(request)
        if reply is None:  # every case is charged the whole time: which one ran long is not known
            why = self._why_no_reply()
            late = not self.died
            return [TrialOutcome(c["name"], False, why, seconds=self.timeout, timed_out=late) for c in cases]
        if "*" in reply:
            only = reply["*"]
            return [TrialOutcome(c["name"], False, only["error"], where="inputs") for c in cases]
        return [_outcome(c["name"], reply[c["name"]]) for c in cases]

    def _ask(self, request: dict[str, Any]) -> dict[str, Any] | None:
        worker = self._worker()
        if worker is None:
            return None
        proc = worker.popen
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], self.timeout)
            line = proc.stdout.readline() if ready else ""
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            self.died = proc.poll() is not None
            self._stop()
            return None
        return json.loads(line)

    def _why_no_reply(self) -> str:
        if not self.died:
            return f"ran past {self.timeout:g}s"
        log = (self.root / "worker.log").read_text(errors="replace").strip().splitlines()
        return "the trial process died" + (f": {log[-1]}" if log else "")

    def _worker(self) -> Started | None:
        """The running worker, or a fresh one once it has imported torch (None when it never gets there)."""
        if self.proc is not None and self.proc.poll() is None:
            return self.proc
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p)
        env.setdefault("TORCH_COMPILE_DISABLE", "1")
        env.setdefault(
            "TRITON_INTERPRET", "1"
        )  # drafts run on the CPU; a Triton reference needs the interpreter
        # The reference is the target repository's code: it runs in an OS box (evaluators.sandbox) that
        # shows the draft folder read-only (this process writes the next draft there; a link planted in it
        # must not redirect that write), with no network and no secret.
        argv, env = boxed_argv(
            [sys.executable, str(WORKER)],
            env,
            what="the reference's trial runs",
            read_only=(self.root, _PACKAGE_ROOT, WORKER),
            cwd=self.root,
        )
        with (self.root / "worker.log").open("a") as log:
            # In a session of its own: killing its group ends the box and all inside.
            self.proc = Started(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=env,
                cwd=self.root,
            )
        stdout = self.proc.popen.stdout
        assert stdout is not None
        ready, _, _ = select.select([stdout], [], [], STARTUP_TIMEOUT)
        if not ready or not stdout.readline():
            self.died = True  # it exited, or never finished importing: either way, say what its log says
            self._stop()
            return None
        return self.proc

    def _stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()
            self.proc = None

    def close(self) -> None:
        if self.proc is not None and self.proc.popen.stdin is not None:
            self.proc.popen.stdin.close()  # the worker's end of requests: it exits
            if self.proc.wait(timeout=10) is None:
                self._stop()
        self.proc = None
        shutil.rmtree(self.root, ignore_errors=True)


def _outcome(case: str, raw: dict[str, Any]) -> TrialOutcome:
    return TrialOutcome(
        case=case,
        ok=bool(raw.get("ok")),
        error=raw.get("error", ""),
        frames=[(int(line), str(fn)) for line, fn in raw.get("frames", [])],
        where=raw.get("where", "reference"),
        lines=frozenset(raw.get("lines", [])),
        outputs=list(raw.get("outputs", [])),
        deterministic=bool(raw.get("deterministic", True)),
        degenerate=raw.get("degenerate", ""),
        nan=bool(raw.get("nan", False)),
        seconds=float(raw.get("seconds", 0.0)),
    )
