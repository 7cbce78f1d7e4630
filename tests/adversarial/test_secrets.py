"""Secrets never reach code kernelbot did not write, nor anything it prints, stores or sends.

Sentinel secrets (unique random strings) are set in kernelbot's environment, under the well-known names and
under names no name-based filter would catch (`--api-key-env LLM_SERVICE_CRED`, `--token-env GH_PAT`). The
candidate s01_parent_secrets.py reads its own environment and every ancestor's /proc/<pid>/environ and hands
what it found to every channel a candidate has (log, failure, the next prompt's feedback); none may hold a
sentinel. The end-to-end runs start kernelbot as its own process, so that its initial environment block (what
/proc/<pid>/environ shows) really holds the sentinels.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets as random_tokens
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from suite import CHEATS, checkout_pythonpath, task_dir

from evaluators import secrets
from evaluators.task import load_task
from evolution.config import SearchConfig, parse_llm_flag
from evolution.redact import Redactor
from evolution.search import SearchOverrides
from evolution.store import MutationRecord, RunStore
from evolution.types import Program
from kernelbot.cli import main
from kernelbot.crash import report_crash

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "evolution"))  # the loopback OpenAI fake lives with the search tests
from openai_fake import Reply  # noqa: E402
from openai_fake import fake_openai as fake_openai  # noqa: E402  (the fixture)

LEAKER = CHEATS / "s01_parent_secrets.py"


# The command-line cases judge with the CUDA backend where a GPU is present (a user's run takes that path).
CLI_BACKEND = "triton-cuda" if torch.cuda.is_available() else "triton-interpret"


def _sentinel(kind: str) -> str:
    return f"{kind}-sentinel-{random_tokens.token_hex(12)}"


@pytest.fixture
def sentinels() -> dict[str, str]:
    return {
        "GITHUB_TOKEN": _sentinel("ghp"),
        "KERNELBOT_LLM_API_KEY": _sentinel("sk"),
        "OPENAI_API_KEY": _sentinel("sk"),
        "LLM_SERVICE_CRED": _sentinel("cred"),  # named by --api-key-env: no KEY/TOKEN in its name
    }


def _kernelbot(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env, "PYTHONPATH": checkout_pythonpath()}
    return subprocess.run(
        [sys.executable, "-m", "kernelbot.cli", *args],
        env=full,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=420,
    )


def _leaked(text: str | bytes, values: dict[str, str]) -> list[str]:
    data = text.encode() if isinstance(text, str) else text
    return [name for name, value in values.items() if value.encode() in data]


def _tree_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


# --- end to end ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_eval_json_and_the_terminal_hold_no_secret(tmp_path: Path, sentinels: dict[str, str]) -> None:
    done = _kernelbot(
        # --no-static: the runtime path, which a payload better hidden than this one would reach anyway.
        [
            "eval",
            str(task_dir("scale_add")),
            str(LEAKER),
            "--backend",
            CLI_BACKEND,
            "--json",
            "--no-static",
        ],
        sentinels,
        tmp_path,
    )
    assert done.returncode in (4, 5), done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert "loot:" in result["reason"] and "loot:" in result["logs"]  # it ran and reported what it found
    assert _leaked(done.stdout + done.stderr, sentinels) == []


@pytest.mark.slow
def test_evolve_llm_sends_stores_and_prints_no_secret(
    tmp_path: Path, sentinels: dict[str, str], fake_openai
) -> None:
    server = fake_openai(default=Reply("I cannot write Triton today."), models=("fake-model",))
    run = tmp_path / "run"
    config = tmp_path / "search.toml"
    config.write_text("[eval]\nstatic_checks = false\n")  # the runtime path, as in the eval test above
    args = [
        "evolve", str(task_dir("scale_add")), "--out", str(run), "--iterations", "2", "--config", str(config),
        "--no-inductor-seed", "--no-fusion-seed", "--seed", str(LEAKER),
        "--backend", CLI_BACKEND, "--workers-per-device", "1",
        "--llm", f"fake-model@{server.url}", "--api-key-env", "LLM_SERVICE_CRED",
    ]  # fmt: skip
    done = _kernelbot(args, sentinels, tmp_path)
    assert done.returncode in (0, 1), done.stderr[-2000:]  # 1: nothing correct was found
    assert _leaked(done.stdout + done.stderr, sentinels) == []

    chats = [r for r in server.requests if r.path.endswith("/chat/completions")]
    assert len(chats) >= 2
    assert any("loot:" in r.prompt_text for r in chats)  # the leaker's failure reached the feedback
    key = sentinels["LLM_SERVICE_CRED"]
    for request in server.requests:
        assert request.headers.get("authorization") == f"Bearer {key}"  # the key still reaches its endpoint
        assert _leaked(json.dumps(request.body), sentinels) == []
        others = {k: v for k, v in request.headers.items() if k != "authorization"}
        assert _leaked(json.dumps(others), sentinels) == []

    assert _leaked(_tree_bytes(run), sentinels) == []  # run.sqlite, its WAL, best.py, summary.json
    with sqlite3.connect(run / "run.sqlite") as db:
        rows = db.execute("SELECT prompt FROM mutations WHERE operator LIKE 'llm%'")
        stored = sorted(row[0] for row in rows)
    sent = sorted(
        f"[system]\n{r.body['messages'][0]['content']}\n\n[user]\n{r.body['messages'][1]['content']}"
        for r in chats
    )
    assert stored == sent


# --- the registry -------------------------------------------------------------------------------------

_PROBE = textwrap.dedent(
    """
    import json, os, subprocess, sys
    from evaluators import secrets
    from evaluators.process import worker_env
    from evaluators.backends import get_backend

    names = ("GITHUB_TOKEN", "GH_PAT", "LLM_SERVICE_CRED")
    with secrets.held(sys.argv[1:]):
        environ = open(f"/proc/{os.getpid()}/environ", "rb").read().decode(errors="replace")
        child = subprocess.run(
            ["cat", f"/proc/{os.getpid()}/environ"], capture_output=True, text=True, errors="replace"
        )
        os.environ["LATE_COPY"] = secrets.get("GH_PAT")  # set after the start: filtered by its value
        env = worker_env(get_backend("triton-interpret"), "/tmp")
        del os.environ["LATE_COPY"]
        print(json.dumps({
            "proc_environ": environ,
            "os_environ": json.dumps(dict(os.environ)),
            "child_read": child.stdout + child.stderr,
            "worker_env": json.dumps(env),
            "held": {n: secrets.get(n) for n in names},
            "dumpable": secrets.is_dumpable(),
            "redacted": secrets.redact("a " + secrets.get("COPY") + " b"),
        }))
    print(json.dumps({"restored": {n: os.environ.get(n) for n in names}}))
    """
)


def test_held_secrets_leave_the_environment_the_initial_block_and_child_environments(
    sentinels: dict[str, str], tmp_path: Path
) -> None:
    values = {**sentinels, "GH_PAT": _sentinel("pat")}
    env = {**os.environ, **values, "COPY": values["GH_PAT"], "PYTHONPATH": checkout_pythonpath()}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, "target", "--token-env", "GH_PAT", "--api-key-env=LLM_SERVICE_CRED"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    inside, after = (json.loads(line) for line in done.stdout.splitlines())
    for channel in ("proc_environ", "os_environ", "child_read", "worker_env", "redacted"):
        assert _leaked(inside[channel], values) == [], channel
    # COPY holds GH_PAT's value under another name: held like the secret it copies.
    assert '"COPY"' not in inside["os_environ"] and '"LATE_COPY"' not in inside["worker_env"]
    assert inside["redacted"] == "a *** b"
    assert inside["held"] == {n: values[n] for n in ("GITHUB_TOKEN", "GH_PAT", "LLM_SERVICE_CRED")}
    assert inside["dumpable"] is False
    if os.geteuid() != 0:  # root reads any process's environ; the wiped block above is what protects it
        assert "Permission denied" in inside["child_read"]
    assert after["restored"] == inside["held"]  # an in-process caller gets its environment back


_SAME_USER_PROBE = textwrap.dedent(
    """
    import os, subprocess
    from evaluators import secrets
    with secrets.held([]):
        read = subprocess.run(["cat", f"/proc/{os.getpid()}/environ"], capture_output=True, text=True)
        print(read.returncode, "Permission denied" in read.stderr, secrets.is_dumpable())
    """
)


def test_a_same_user_process_that_is_not_root_cannot_read_kernelbots_environ(tmp_path: Path) -> None:
    """What non-dumpable gives: /proc/<pid>/environ becomes root's. Run as an unprivileged user (here
    through setpriv when the tests run as root), kernelbot and the reader share that user."""
    command = [sys.executable, "-c", _SAME_USER_PROBE]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: no unprivileged user to test with")
        command = [setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups", *command]
    env = {**os.environ, "GITHUB_TOKEN": _sentinel("ghp"), "PYTHONPATH": checkout_pythonpath()}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, cwd="/")
    assert done.stdout.split() == ["1", "True", "False"], done.stdout + done.stderr[-2000:]


def test_a_token_under_any_name_is_masked_in_the_run_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = _sentinel("pat")
    monkeypatch.setenv("GH_PAT", token)
    task = load_task(task_dir("scale_add"))
    with secrets.held(["target", "--token-env", "GH_PAT"]):
        assert "GH_PAT" not in os.environ
        redactor = Redactor.from_env(SearchConfig())
        with RunStore.create(tmp_path / "run", task, SearchConfig(), redactor) as store:
            program = Program("p0", f"# {token}\n", "sha0", None, "seed:file", 0, -1)
            store.add_pending(program)
            store.record_mutation(
                MutationRecord(
                    phase="evolve", iteration=0, operator="llm:m", outcome="malformed", prompt=f"p {token}",
                    response=f"r {token}", error=f"e {token}",
                )
            )  # fmt: skip
    assert os.environ["GH_PAT"] == token
    assert _leaked(_tree_bytes(tmp_path / "run"), {"GH_PAT": token}) == []


def test_an_llm_urls_password_is_kept_out_of_configs_and_handed_back_to_the_client() -> None:
    password = _sentinel("pw")
    with secrets.held([]):
        endpoint = parse_llm_flag(f"m@https://alice:{password}@llm.example/v1#2")
        assert endpoint.base_url == "https://llm.example/v1" and endpoint.weight == 2.0
        flags = SearchOverrides(llm=(f"m@https://alice:{password}@llm.example/v1",))
        assert flags.llm == ("m@https://llm.example/v1",)
        recorded = json.dumps(SearchConfig().to_dict()) + json.dumps(dataclasses.asdict(flags), default=str)
        assert password not in recorded
        assert secrets.url_with_credentials(endpoint.base_url) == f"https://alice:{password}@llm.example/v1"
        assert secrets.redact(f"x {password} y") == "x *** y"
    assert secrets.url_with_credentials("https://llm.example/v1") == "https://llm.example/v1"


def test_an_llm_urls_password_is_never_printed(tmp_path: Path, capsys) -> None:
    password = _sentinel("pw")
    url = f"https://alice:{password}@127.0.0.1:9/v1"  # nothing listens there: the endpoint check fails
    args = ["evolve", str(task_dir("scale_add")), "--out", str(tmp_path / "run"), "--iterations", "1"]
    code = main([*args, "--backend", "triton-interpret", "--llm", f"m@{url}"])
    out, err = capsys.readouterr()
    assert code == 1 and "https://127.0.0.1:9/v1" in err, err
    assert password not in out + err and not (tmp_path / "run").exists()


def test_a_crash_report_masks_the_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = _sentinel("sk")
    monkeypatch.setenv("KERNELBOT_HOME", str(tmp_path))
    monkeypatch.setenv("KERNELBOT_LLM_API_KEY", key)
    with secrets.held(["evolve"]):
        try:
            raise RuntimeError(f"the endpoint answered with {key}")
        except RuntimeError:
            path = report_crash(["kernelbot", "evolve"])
    text = path.read_text()
    assert "the endpoint answered with ***" in text and key not in text


# --- the smaller items --------------------------------------------------------------------------------

MINIREPO = REPO / "examples" / "minirepo"


@pytest.mark.parametrize("name", ["../x", "a/b", ".."])
def test_extract_refuses_a_task_name_that_is_a_path(name: str, tmp_path: Path, capsys) -> None:
    code = main(
        [
            "extract", "--repo", str(MINIREPO), "--function",
            "minisglang.layers.activation:SiluAndMul.forward_native", "--name", name, "--no-probe",
        ]
    )  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1 and "--name" in err, err
    assert not (tmp_path.parent / "x").exists()


def test_extract_refuses_a_file_outside_the_repository(tmp_path: Path, capsys) -> None:
    outside = tmp_path / "elsewhere.py"
    outside.write_text("def f(x):\n    return x\n")
    relative = os.path.relpath(outside, MINIREPO)
    for function in (f"{relative}:f", f"{outside}:f"):
        args = ["extract", "--repo", str(MINIREPO), "--function", function, "--out", str(tmp_path / "t")]
        code = main(args)
        err = capsys.readouterr().err.strip()
        assert code == 1 and len(err.splitlines()) == 1 and "outside the repository" in err, err
