"""One evaluation worker: `python -m evaluators.worker ...`, started warm by a WorkerPool, used once.

It imports torch and triton and initialises the device before any candidate exists, says "ready", then
waits for exactly one Job. It applies the job's resource limits, loads the task, hands everything to
`evaluators.pipeline.run` (the cascade), sends the EvalResult back and leaves with os._exit, so nothing a
candidate did (threads, patched modules, a poisoned CUDA context) can outlive it.

stdout and stderr are the worker's own log file; the control pipe is moved to a private
close-on-exec descriptor so that nothing the candidate prints or spawns can write to it by accident.
"""

from __future__ import annotations

import argparse
import ctypes
import faulthandler
import fcntl
import importlib
import os
import resource
import signal
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evaluators.job import Job, LineReader, Message, write_all

PRIVATE_FD_FLOOR = 200  # the control pipe moves above the descriptors a candidate would see by chance
PR_SET_PDEATHSIG = 1


class Channel:
    """The worker's end of the control pipe."""

    def __init__(self, fd: int) -> None:
        self.fd = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, PRIVATE_FD_FLOOR)
        os.close(fd)
        self.nonce = ""

    def send(self, kind: str, **body: object) -> None:
        write_all(self.fd, Message(kind, self.nonce, dict(body)).encode())

    def progress(self, stage: str) -> None:
        self.send("progress", stage=stage)


def die_with_parent(parent_pid: int) -> None:
    """Ask Linux to SIGKILL this worker when the pool's spawner thread (its parent) goes away."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: an idle worker still exits on the job pipe's EOF
        return
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(0)


def apply_limits(config: dict, backend_name: str) -> None:
    """Resource limits for this job; hard limits too, so the candidate cannot lift them again."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a segfault must not leave a multi-GB core file
    output_mb = int(config.get("output_limit_mb", 0) or 0)
    if output_mb > 0:
        limit = output_mb << 20
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        # Python ignores SIGXFSZ at start-up; restore the default so a flood ends the worker.
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    memory_gb = float(config.get("memory_limit_gb", 0) or 0)
    # Only on the interpreter: the CUDA driver maps huge private address ranges that RLIMIT_DATA would break.
    if memory_gb > 0 and backend_name == "triton-interpret":
        limit = int(memory_gb * (1 << 30))
        _, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if hard == resource.RLIM_INFINITY or limit < hard:
            resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def limit_device_memory(config: dict, backend: Any) -> None:
    """Cap this worker's share of the GPU (see EvalConfig.device_memory_share), so that workers judging large
    cases at the same time cannot starve each other; one that needs more fails on its own account."""
    share = float(config.get("device_memory_share", 0) or 0)
    if share <= 0 or not str(getattr(backend, "device", "")).startswith("cuda"):
        return
    import torch

    torch.cuda.set_per_process_memory_fraction(min(1.0, share), torch.device(backend.device))


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m evaluators.worker")
    parser.add_argument("--control-fd", type=int, required=True)
    parser.add_argument("--job-fd", type=int, required=True)
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--backend", required=True)
    parser.add_argument("--device-index", type=int, default=0)
    parser.add_argument("--workdir", type=Path, required=True)
    return parser.parse_args(argv)


def preload() -> None:
    """Imports every worker needs; a zygote does this once and forks warm workers from it."""
    import torch  # noqa: F401
    import triton.language  # noqa: F401

    from evaluators import pipeline  # noqa: F401
    from evaluators.backends import get_backend  # noqa: F401

    for name in _STAGE_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:  # the pipeline reports a missing stage module when it needs it
            if exc.name != name:
                raise
    guards = sys.modules.get("evaluators.guards")
    if guards is not None:
        guards.warm_up()  # loads torch._dynamo & co. (~2 s) so no candidate call pays for it


# The stages' modules, imported before a candidate exists (and before a zygote forks).
_STAGE_MODULES = (
    "evaluators.static.checks",
    "evaluators.guards",
    "evaluators.correctness.stage",
    "evaluators.timing.stage",  # the package itself loads its stage lazily
    "evaluators.scoring",
)


def place_off_timing_cores() -> None:
    """Keep this process (and all it starts) off the cores reserved for wall timing, as far as they are known
    before the device is (evaluators.timing.placement); the plan is completed once the job names the
    device."""
    try:
        from evaluators.timing.placement import place_early

        note = place_early()
    except Exception as exc:  # placement is an optimisation of timing quality, never a reason not to start
        note = f"skipped ({type(exc).__name__}: {exc})"
    print(f"kernelbot worker: cpu placement at start: {note}", file=sys.stderr, flush=True)


def warm_cuda_tools(device: str) -> None:
    """The profiler (kernel and stream checks) and CUDA graphs (graph-regime timing) each have a one-time
    set-up cost per process; a worker pays it while it waits in the warm pool."""
    from evaluators.guards.kernels import warm_up_profiler
    from evaluators.timing.graph import warm_up_capture

    warm_up_profiler(device)
    warm_up_capture()


def serve(control_fd: int, job_fd: int, backend_name: str, device_index: int, workdir: Path) -> None:
    """Warm up, say ready, judge one job, report, exit. Never returns."""
    faulthandler.enable(file=sys.stderr)  # a segfault leaves the Python stack in the log tail
    channel = Channel(control_fd)
    jobs = LineReader(job_fd)
    place_off_timing_cores()  # warming up (CUDA context, profiler) is heavy: not on a core that times

    # Warm-up: everything expensive happens before a candidate exists.
    preload()
    from evaluators import pipeline
    from evaluators.backends import get_backend

    backend = get_backend(backend_name, device_index)
    backend.init_device()
    if backend.device.startswith("cuda"):
        try:
            warm_cuda_tools(backend.device)
        except Exception as exc:  # an optimisation only: the stages set these tools up again themselves
            print(f"kernelbot worker: CUDA warm-up skipped: {type(exc).__name__}: {exc}", file=sys.stderr)
    hardware = backend.hardware()
    channel.send("ready", hardware=pipeline.hardware_dict(hardware), pid=os.getpid())

    line = jobs.read_line(timeout=None)
    os.close(job_fd)
    if line is None:  # the pool closed (or died) while this worker was idle
        os._exit(0)
    job = Job.decode(line)
    channel.nonce = job.nonce
    apply_limits(job.config, backend.name)
    limit_device_memory(job.config, backend)
    from evaluators.timing.placement import place_worker

    place_worker(job.config, backend)  # now with its GPU known; the candidate's compiler inherits it

    try:
        prepared = pipeline.prepare(job, backend, hardware, workdir=workdir, progress=channel.progress)
    except pipeline.TaskProblem as exc:
        channel.send("task_error", message=str(exc))
        os._exit(0)
    result = pipeline.run(prepared)
    sys.stdout.flush()
    sys.stderr.flush()
    channel.send("result", result=result.to_dict())
    os._exit(0)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    die_with_parent(args.parent_pid)
    serve(args.control_fd, args.job_fd, args.backend, args.device_index, args.workdir)


def run_guarded(body: Callable[[], None]) -> None:
    """Run a worker body; a failure of the worker itself (never the candidate's) goes to the log, exit 70."""
    try:
        body()
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(70)


if __name__ == "__main__":
    run_guarded(main)
