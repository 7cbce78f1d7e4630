"""evaluators.sandbox: the bwrap command line, the environment allow-list, and what happens without a box."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluators import sandbox
from evaluators.pool import WorkerPool

HAS_BOX = sandbox.availability().ok
needs_box = pytest.mark.skipif(not HAS_BOX, reason="no bubblewrap box on this machine")


def test_box_env_keeps_the_allow_list_only() -> None:
    environ = {
        "PATH": "/usr/bin",
        "LANG": "C.UTF-8",
        "TRITON_CACHE_DIR": "/x",
        "CUDA_VISIBLE_DEVICES": "0",
        "GITHUB_TOKEN": "s1",
        "KERNELBOT_LLM_API_KEY": "s2",
        "GH_PAT": "s3",
        "MY_SERVICE_PASSWORD": "s4",
        "AWS_SECRET_ACCESS_KEY": "s5",
        "HOME": "/root",
        "SSH_AUTH_SOCK": "/run/agent",
        "RANDOM_VAR": "x",
        sandbox.ALLOW_ENV: "1",
    }
    env = sandbox.box_env({"EXTRA": "1", "OPENAI_API_KEY": "s6"}, environ=environ)
    assert env == {
        "PATH": "/usr/bin",
        "LANG": "C.UTF-8",
        "TRITON_CACHE_DIR": "/x",
        "CUDA_VISIBLE_DEVICES": "0",
        "EXTRA": "1",
    }
    secret = ["GITHUB_TOKEN", "KERNELBOT_LLM_API_KEY", "GH_PAT", "MY_SERVICE_PASSWORD"]
    secret += ["AWS_SECRET_ACCESS_KEY"]
    assert sandbox.secret_names(environ) == sorted([*secret, "SSH_AUTH_SOCK"])  # an agent socket is one too


def test_command_line_unshares_everything_and_binds_what_it_is_told(tmp_path: Path) -> None:
    scratch, task, out = tmp_path / "scratch", tmp_path / "task", tmp_path / "out"
    for path in (scratch, task, out):
        path.mkdir()
    box = sandbox.Box(
        scratch=scratch, read_only=(task,), writable=(out,), env={"GITHUB_TOKEN": "s", "A": "1"}, gpu=True
    )
    argv = box.command(["python", "-c", "pass"], bwrap="/bin/bwrap")
    joined = " ".join(argv)
    for flag in ("--unshare-all", "--die-with-parent", "--new-session", "--clearenv", "--proc /proc"):
        assert flag in joined
    assert "--share-net" not in argv
    assert f"--ro-bind {task} {task}" in joined and f"--bind {out} {out}" in joined
    assert f"--bind {scratch} {sandbox.SCRATCH}" in joined
    assert "GITHUB_TOKEN" not in joined and "--setenv A 1" in joined
    assert "/etc/shadow" not in joined and "--ro-bind /etc /etc" not in joined
    assert argv[-3:] == ["python", "-c", "pass"]


def test_a_writable_folder_inside_a_read_only_one_stays_writable_and_vice_versa(tmp_path: Path) -> None:
    inner = tmp_path / "run" / "worktree"
    task = inner / "task"
    task.mkdir(parents=True)
    binds = sandbox._binds([tmp_path], [inner], [task])
    order = [binds[i + 1] for i in range(0, len(binds), 3)]
    assert order == [str(tmp_path), str(inner), str(task)]  # outer first: the deeper one overlays it
    assert binds[0::3] == ["--ro-bind", "--bind", "--ro-bind"]


def test_without_bwrap_a_secret_blocks_untrusted_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(sandbox.BWRAP_ENV, "/nonexistent/bwrap")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-sentinel")
    monkeypatch.delenv(sandbox.ALLOW_ENV, raising=False)
    with pytest.raises(sandbox.SandboxUnavailable, match=r"GITHUB_TOKEN.*--allow-unsandboxed"):
        WorkerPool("triton-interpret", size=1)
    with pytest.raises(sandbox.SandboxUnavailable):
        sandbox.require_box_or_consent("the repository's tests")


def test_without_bwrap_consent_is_recorded(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv(sandbox.BWRAP_ENV, "/nonexistent/bwrap")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-sentinel")
    monkeypatch.setenv(sandbox.ALLOW_ENV, "1")
    found = sandbox.require_box_or_consent("evaluation workers")
    assert not found.ok
    record = sandbox.sandbox_record()
    assert record.startswith("none:") and "allowed by --allow-unsandboxed" in record
    assert "no OS sandbox" in capsys.readouterr().err


def test_the_cli_refuses_in_one_line_and_its_flag_gives_consent(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {k: v for k, v in os.environ.items() if k != sandbox.ALLOW_ENV}
    env.update({sandbox.BWRAP_ENV: "/nonexistent/bwrap", "GITHUB_TOKEN": "ghp-sentinel"})
    code = "import sys; from kernelbot.cli import main; sys.exit(main(sys.argv[1:]))"
    task = Path(__file__).parents[1] / "adversarial" / "tasks" / "scale_add"
    candidate = Path(__file__).parents[1] / "adversarial" / "legit" / "scale_add_triton.py"
    argv = [sys.executable, "-c", code, "eval", str(task), str(candidate), "--backend", "triton-interpret"]
    refused = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 1, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "no OS sandbox" in lines[0] and "--allow-unsandboxed" in lines[0]
    assert "ghp-sentinel" not in refused.stderr + refused.stdout

    from typer.testing import CliRunner

    from kernelbot.cli.application import app

    monkeypatch.delenv(sandbox.ALLOW_ENV, raising=False)
    assert CliRunner().invoke(app, ["--allow-unsandboxed", "--version"]).exit_code == 0
    assert sandbox.consented()
    monkeypatch.delenv(sandbox.ALLOW_ENV)


@needs_box
def test_nothing_started_in_a_box_outlives_it(tmp_path: Path) -> None:
    marker = tmp_path / "alive"
    script = f"import os, time; os.setsid(); time.sleep(1.0); open({str(marker)!r}, 'w').write('x')"
    box = sandbox.Box(scratch=tmp_path, writable=(tmp_path,))
    started = sandbox.BoxedProcess(box, ["/bin/sh", "-c", f"{sys.executable} -c {script!r} & exit 0"])
    assert started.popen.wait(timeout=30) == 0
    assert started.wait_empty(timeout=10)
    time.sleep(1.5)
    assert not marker.exists()


@needs_box
def test_a_box_sees_only_its_own_processes_and_no_network(tmp_path: Path) -> None:
    script = (
        "import os, socket\n"
        "print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n"
        "print(sorted(n for _, n in socket.if_nameindex()))\n"
    )
    box = sandbox.Box(scratch=tmp_path)
    done = subprocess.run(
        box.command([sys.executable, "-c", script]), capture_output=True, text=True, timeout=60, env={}
    )
    assert done.returncode == 0, done.stderr
    pids, interfaces = done.stdout.splitlines()
    assert max(eval(pids)) < 10  # bwrap, the interpreter: nothing of the host
    assert eval(interfaces) == ["lo"]


def test_the_interpreter_paths_never_show_a_home_or_the_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/", str(Path.home()), "."]))
    monkeypatch.setenv("LD_LIBRARY_PATH", "/")
    monkeypatch.chdir(Path.home())
    paths = sandbox.python_paths()
    assert Path("/") not in paths and Path.home().resolve() not in paths
    assert not any(p in Path.home().resolve().parents for p in paths)
    assert any(Path(sys.prefix).resolve() == p or p in Path(sys.prefix).resolve().parents for p in paths)


@needs_box
def test_a_worker_leaves_the_folders_its_pool_shares_in_place() -> None:
    """Between two workers a boxed zygote empties its private /tmp, but not the pool's folders bound there
    (the compiler cache every worker writes, the task copies, the GPU lock): another worker may be reading
    them at that moment (on a GPU: a kernel's cache entry deleted under a compile)."""
    adversarial = Path(__file__).resolve().parents[1] / "adversarial"
    task = adversarial / "tasks" / "scale_add"
    source = (adversarial / "legit" / "scale_add_triton.py").read_text()
    with WorkerPool("triton-interpret", size=1) as pool:
        marker = pool._root / "triton-cache" / "kept-by-every-worker"
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("a cache entry")
        for _ in range(3):  # each evaluation is a new worker, forked after the last one's sweep
            assert pool.evaluate(task, source).passed
        assert marker.read_text() == "a cache entry"
        assert (pool._root / "tasks").is_dir()
