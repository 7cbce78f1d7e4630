"""`kernelbot evolve / best / export` in-process, with the executor and operators replaced by fakes
(the real evaluator and operators are exercised in test_evolve_e2e.py)."""

from __future__ import annotations

import itertools
import json

import pytest
import torch
from search_fakes import BumpMutator, FakeExecutor, make_tiny_task, program_source

from evolution.operators import OperatorSet
from kernelbot import exit_codes
from kernelbot.cli import main


@pytest.fixture
def fakes(monkeypatch):
    made: dict[str, object] = {}

    def executor(config, eval_config):
        made["executor"] = FakeExecutor()
        made["executor_config"] = config
        return made["executor"]

    def operators(config, device):
        made["device"] = device
        return OperatorSet.of([BumpMutator(tag_island=True)], config.mutation.weights)

    monkeypatch.setattr("evolution.search.make_executor", executor)
    monkeypatch.setattr("evolution.search.build_operators", operators)
    return made


@pytest.fixture
def task(tmp_path):
    return make_tiny_task(tmp_path / "task", [program_source(1.0)])


def evolve(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["evolve", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_evolve_json_summary_best_and_growth(tmp_path, task, fakes, capsys) -> None:
    run = tmp_path / "run"
    code, out, _ = evolve(
        capsys,
        str(task),
        "--out",
        str(run),
        "--iterations",
        "4",
        "--json",
        "--backend",
        "triton-interpret",
        "--workers",
        "local",
    )
    assert code == exit_codes.OK
    summary = json.loads(out)
    assert summary["iterations"] == 4 and summary["stop_reason"].startswith("iterations")
    best = summary["best"]
    assert best["score"] > 1.0
    case = best["cases"][0]
    assert set(case) >= {"name", "graph", "wall", "max_abs_error"}
    assert case["wall"]["speedup"] == pytest.approx(best["score"])
    assert (run / "best.py").read_text().startswith("import torch")
    growth = json.loads((run / "growth.json").read_text())
    assert [g["evaluation"] for g in growth] == list(range(1, summary["evaluations"] + 1))
    assert all(b["best_score"] >= a["best_score"] for a, b in itertools.pairwise(growth))
    assert (run / "growth.csv").read_text().splitlines()[0].startswith("evaluation,elapsed_s")
    assert fakes["device"] == "cpu" and fakes["executor_config"].backend == "triton-interpret"


def test_fresh_run_refuses_an_existing_run_and_resume_continues(tmp_path, task, fakes, capsys) -> None:
    run = tmp_path / "run"
    assert evolve(capsys, str(task), "--out", str(run), "--iterations", "2")[0] == exit_codes.OK
    code, _, err = evolve(capsys, str(task), "--out", str(run), "--iterations", "2")
    assert code == exit_codes.USER_ERROR and "already holds a run" in err and "--resume" in err
    code, out, _ = evolve(capsys, str(task), "--out", str(run), "--iterations", "5", "--resume", "--json")
    assert code == exit_codes.OK and json.loads(out)["iterations"] == 5


def test_a_run_whose_seeding_failed_resumes_with_a_seed_given_later(tmp_path, fakes, capsys) -> None:
    """Nothing seeds (no candidates/, no --seed, no LLM): the error says what to add; the run is not stored
    as seeded, so the resume it suggests takes the --seed file given then and goes on."""
    task = make_tiny_task(tmp_path / "task")
    run = tmp_path / "run"
    code, _, err = evolve(capsys, str(task), "--out", str(run), "--iterations", "3")
    flat = " ".join(err.split())
    assert code == exit_codes.USER_ERROR and "no program to mutate" in flat and "--resume" in flat
    code, _, err = evolve(capsys, str(task), "--out", str(run), "--iterations", "3")  # a fresh start: refused
    assert code == exit_codes.USER_ERROR and "already holds a run" in err

    bad = tmp_path / "bad.py"
    bad.write_text("def other(x):\n    return x\n")
    code, _, err = evolve(capsys, str(task), "--out", str(run), "--resume", "--seed", str(bad))
    assert code == exit_codes.USER_ERROR and "scale" in err  # checked before anything runs

    seed = tmp_path / "later.py"
    seed.write_text(program_source(1.5))
    code, out, err = evolve(
        capsys, str(task), "--out", str(run), "--resume", "--seed", str(seed), "--iterations", "3", "--json"
    )
    assert code == exit_codes.OK, err
    summary = json.loads(out)
    assert summary["iterations"] == 3 and summary["best"]["score"] > 1.5  # seeded from later.py, then bred
    assert summary["stop_reason"].startswith("iterations")


def test_a_resume_seeds_from_candidates_added_to_the_task_meanwhile(tmp_path, fakes, capsys) -> None:
    task = make_tiny_task(tmp_path / "task")
    run = tmp_path / "run"
    assert evolve(capsys, str(task), "--out", str(run), "--iterations", "2")[0] == exit_codes.USER_ERROR
    make_tiny_task(task, [program_source(2.0)])  # the fix the message names: candidates/ in the task
    code, out, err = evolve(capsys, str(task), "--out", str(run), "--resume", "--json")
    assert code == exit_codes.OK, err
    summary = json.loads(out)
    assert summary["evaluations"] == 3 and summary["best"]["score"] > 2.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--time-limit", "5 fortnights"], "--time-limit"),
        (["--devices", "0,x"], "--devices"),
        (["--llm", "no-url"], "--llm"),
        (["--workers", "k8s://x"], "executor.workers"),
        (["--resume"], "holds no run to resume"),
        (["--seed", "/nonexistent/seed.py"], "does not exist"),
        pytest.param(
            ["--backend", "triton-cuda"],
            "cannot run here",
            marks=pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here: the backend can run"),
        ),
        (["--backend", "tpu"], "unknown backend"),
    ],
)
def test_bad_flags_give_one_clear_error(tmp_path, task, fakes, capsys, args, message) -> None:
    code, _, err = evolve(capsys, str(task), "--out", str(tmp_path / "run"), *args)
    assert code == exit_codes.USER_ERROR
    assert message in err and "Traceback" not in err
    if "--resume" not in args:
        assert not (tmp_path / "run").exists()  # refused before anything was created


def test_resume_of_another_tasks_run_is_refused(tmp_path, task, fakes, capsys) -> None:
    run = tmp_path / "run"
    evolve(capsys, str(task), "--out", str(run), "--iterations", "1")
    other = make_tiny_task(tmp_path / "other", [program_source(1.0)])
    toml = other / "task.toml"
    toml.write_text(toml.read_text().replace('name = "tiny_scale"', 'name = "other_task"'))
    code, _, err = evolve(capsys, str(other), "--out", str(run), "--resume")
    assert code == exit_codes.USER_ERROR and "run of task 'tiny_scale'" in err


def test_best_prints_writes_and_exports(tmp_path, task, fakes, capsys) -> None:
    run = tmp_path / "run"
    evolve(capsys, str(task), "--out", str(run), "--iterations", "3")
    assert main(["best", str(run)]) == exit_codes.OK
    out, err = capsys.readouterr()
    assert out.startswith("import torch") and "SCORE = " in out
    assert "best of run:" in err and "wall" in err and "bound>=" in err and "claim>=" not in err
    assert "a pull request states only what `kernelbot target`'s confirmation measures" in err
    assert main(["best", str(run), "--out", str(tmp_path / "w.py")]) == exit_codes.OK
    assert (tmp_path / "w.py").read_text() == (run / "best.py").read_text()
    capsys.readouterr()
    assert main(["best", str(run), "--json"]) == exit_codes.OK
    best = json.loads(capsys.readouterr().out)
    assert best["score"] > 1.0
    wall = best["cases"][0]["wall"]
    assert wall["claim_low"] == pytest.approx(wall["ci"][0] / 1.01)

    for fmt in ("sft", "grpo"):
        target = tmp_path / f"{fmt}.jsonl"
        assert main(["export", str(run), "--format", fmt, "--out", str(target)]) == exit_codes.OK
        rows = [json.loads(line) for line in target.read_text().splitlines()]
        assert rows, fmt
    assert main(["export", str(run), "--format", "dpo"]) == exit_codes.USER_ERROR
    assert "--format 'dpo'" in capsys.readouterr().err
    assert main(["best", str(tmp_path / "nothing")]) == exit_codes.USER_ERROR


def test_best_without_a_correct_candidate_exits_4(tmp_path, fakes, capsys) -> None:
    task = make_tiny_task(tmp_path / "task", [program_source(0, fail="compile")])
    run = tmp_path / "run"
    evolve(capsys, str(task), "--out", str(run), "--iterations", "1")
    assert main(["best", str(run)]) == exit_codes.REJECTED
    assert "no correct candidate" in capsys.readouterr().err


def test_the_summary_lists_why_candidates_failed(tmp_path, fakes, capsys) -> None:
    task = make_tiny_task(tmp_path / "task", [program_source(0, fail="compile"), program_source(2.0)])
    run = tmp_path / "run"
    evolve(capsys, str(task), "--out", str(run), "--iterations", "1")
    summary = json.loads((run / "summary.json").read_text())
    assert {"stage": "compile", "reason": "fake failure at compile", "count": 1} in summary["failure_reasons"]
    assert [r["stage"] for r in summary["failure_reasons"]] == ["compile"]  # the passing seed is not listed


def test_best_shows_a_skipped_case_as_skipped_not_failed() -> None:
    from kernelbot.cli.best import _describe

    summary = {
        "program_id": "p1",
        "operator": "tune",
        "score": 1.0,
        "regime": "graph",
        "backend": "triton-interpret",
        "device": "",
        "cases": [
            {"name": "small", "passed": True, "skipped": None, "max_abs_error": 1e-7},
            {"name": "huge", "passed": False, "skipped": "over the interpreter's size cap"},
            {"name": "bad", "passed": False, "skipped": None, "max_abs_error": 0.5},
        ],
    }
    lines = _describe(summary).splitlines()
    assert lines[1].startswith("  small: ok")
    assert lines[2] == "  huge: skipped (over the interpreter's size cap)"
    assert lines[3].startswith("  bad: FAILED")


@pytest.fixture
def fake_openai_server():
    from openai_fake import FakeOpenAI

    servers = []

    def start(**options):
        servers.append(FakeOpenAI(**options).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("problem", ["dead", "bad-key", "no-key", "unknown-model"])
def test_an_unusable_llm_endpoint_stops_before_seeding(
    tmp_path, task, fakes, capsys, monkeypatch, fake_openai_server, problem
) -> None:
    monkeypatch.delenv("KB_CLI_LLM_KEY", raising=False)
    if problem == "dead":
        url, model = f"http://127.0.0.1:{_free_port()}/v1", "m"
    else:
        server = fake_openai_server(api_key="sk-right-0123456789", models=("m",))
        url, model = server.url, "other" if problem == "unknown-model" else "m"
        if problem != "no-key":
            right = problem == "unknown-model"
            monkeypatch.setenv("KB_CLI_LLM_KEY", "sk-right-0123456789" if right else "sk-wrong-0123456789")
    run = tmp_path / "run"
    code, _, err = evolve(
        capsys, str(task), "--out", str(run), "--llm", f"{model}@{url}", "--api-key-env", "KB_CLI_LLM_KEY"
    )
    assert code == exit_codes.USER_ERROR and "Traceback" not in err
    expected = {
        "dead": "cannot connect",
        "bad-key": "$KB_CLI_LLM_KEY was refused",
        "no-key": "$KB_CLI_LLM_KEY is not set",
        "unknown-model": "does not serve model 'other'",
    }[problem]
    assert expected in " ".join(err.split()) and url in " ".join(err.split())
    assert "sk-wrong" not in err and "sk-right" not in err
    assert not run.exists() and "executor" not in fakes  # nothing seeded, no run directory


def test_a_live_llm_endpoint_passes_the_check(tmp_path, task, fakes, capsys, monkeypatch, fake_openai_server):
    server = fake_openai_server(api_key="sk-right-0123456789", models=None)  # no models route: one-token chat
    monkeypatch.setenv("KB_CLI_LLM_KEY", "sk-right-0123456789")
    code, _, err = evolve(
        capsys, str(task), "--out", str(tmp_path / "run"), "--iterations", "1",
        "--llm", f"m@{server.url}", "--api-key-env", "KB_CLI_LLM_KEY",
    )  # fmt: skip
    assert code == exit_codes.OK, err
    assert [r.path for r in server.requests][:1] == ["/v1/chat/completions"]
