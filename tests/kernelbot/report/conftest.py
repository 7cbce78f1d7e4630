"""The runs the report tests share, built once per session (see report_runs.py): a real interpreter search
killed and resumed, an LLM-driven search on the loopback endpoint, an empty run, and target runs (the real
one is the session's run of the bundled example, tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# The search's test doubles (tests/evolution) and the propose tests' stand-ins (tests/kernelbot/propose).
_TESTS = Path(__file__).resolve().parents[2]
for _helpers in (_TESTS / "evolution", _TESTS / "kernelbot" / "propose"):
    if str(_helpers) not in sys.path:
        sys.path.insert(0, str(_helpers))

from report_runs import (  # noqa: E402
    LLM_KEY,
    LLM_KEY_ENV,
    copy_run,
    evolve_argv,
    kill_mid_search,
    llm_behaviour,
    make_silu_task,
    make_stopped_target_run,
    make_target_run,
)

from kernelbot import exit_codes  # noqa: E402
from kernelbot.cli import main  # noqa: E402


@dataclass(frozen=True)
class InterpreterRuns:
    task: Path
    killed: Path  # the run as SIGKILL left it
    finished: Path  # the same run, resumed to its end
    resumed_output: str  # what the resumed `kernelbot evolve` printed (stdout a pipe: plain lines)


@pytest.fixture(scope="session")
def interpreter_runs(tmp_path_factory) -> InterpreterRuns:
    root = tmp_path_factory.mktemp("interpreter")
    task = make_silu_task(root / "task")
    run = root / "run"
    argv = evolve_argv(task, run)
    kill_mid_search(argv, run, root / "first.log")
    killed = copy_run(run, root / "killed")
    resumed = subprocess.run([*argv, "--resume"], capture_output=True, text=True, timeout=400)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    return InterpreterRuns(task, killed, run, resumed.stdout)


@pytest.fixture(scope="session")
def llm_run(tmp_path_factory) -> Path:
    from openai_fake import FakeOpenAI
    from search_fakes import FakeExecutor, ScriptedMutator, make_tiny_task, program_source

    from evolution.operators import OperatorSet, build_operators
    from evolution.types import MutationOutcome

    root = tmp_path_factory.mktemp("llm")
    task = make_tiny_task(root / "task", [program_source(1.0), program_source(0, fail="compile")])
    run = root / "run"
    # Two islands, the best parent always, one mutation at a time: the LLM's edits build one line of
    # descent (and the islands' curves differ until migration carries the best across). Diffs only: whether
    # a mutation asks for a rewrite is drawn from the parent's (random) id, and the lineage test reads the
    # edit steps' tokens.
    config = root / "search.toml"
    config.write_text(
        "[archive]\nislands = 2\nmigration_interval = 3\n"
        "[sampling]\nexplore = 0.0\nexploit = 1.0\nweighted = 0.0\nexploit_top = 1\n"
        "[mutation]\nin_flight = 1\nrewrite_ratio = 0.0\n"
    )

    def operators(config, device):
        # The Inductor seed needs torch.compile to emit Triton (a GPU); this stand-in seeds the same way.
        inductor = ScriptedMutator(
            "seed:inductor",
            [lambda request: MutationOutcome("seed:inductor", program_source(1.1, body="x + x"))],
            seeds=True,
        )
        real = build_operators(config, device)
        mutators = list(dict.fromkeys([*real.seeders, *real.evolvers]))
        return OperatorSet.of([inductor, *mutators], config.mutation.weights)

    with (
        FakeOpenAI(default=llm_behaviour([0]), api_key=LLM_KEY) as server,
        pytest.MonkeyPatch.context() as mp,
    ):
        mp.setenv(LLM_KEY_ENV, LLM_KEY)
        mp.setattr("evolution.search.make_executor", lambda config, eval_config: FakeExecutor())
        mp.setattr("evolution.search.build_operators", operators)
        argv = ["evolve", str(task), "--out", str(run), "--config", str(config), "--iterations", "10"]
        argv += ["--rng-seed", "3", "--llm", f"fake-model@{server.url}", "--api-key-env", LLM_KEY_ENV]
        argv += [
            "--backend",
            "triton-interpret",
            "--workers",
            "local",
            "--no-inductor-seed",
            "--no-fusion-seed",
        ]
        code = main(argv)
    assert code == exit_codes.OK
    return run


@pytest.fixture(scope="session")
def empty_run(tmp_path_factory) -> Path:
    """A run store made and closed before anything was seeded."""
    from search_fakes import make_tiny_task

    from evaluators.task import load_task
    from evolution.config import SearchConfig
    from evolution.redact import Redactor
    from evolution.store import RunStore

    root = tmp_path_factory.mktemp("empty")
    task = load_task(make_tiny_task(root / "task"))
    RunStore.create(root / "run", task, SearchConfig(), Redactor()).close()
    return root / "run"


@pytest.fixture(scope="session")
def target_run(tmp_path_factory, llm_run) -> Path:
    root = tmp_path_factory.mktemp("target")
    return make_target_run(root / "run", llm_run, llm_run.parent / "task")


@pytest.fixture(scope="session")
def real_target_run(tmp_path_factory, example_target_run: Path) -> Path:
    """`kernelbot target example` on the bundled example, every stage for real (interpreter, no GPU): a copy
    of the session's run of the example's RMSNorm (tests/conftest.py), which other modules read too, so that
    what the report does to a run's store stays in the copy."""
    return copy_run(example_target_run, tmp_path_factory.mktemp("real-target") / example_target_run.name)


@pytest.fixture(scope="session")
def stopped_target_run(tmp_path_factory, interpreter_runs) -> Path:
    root = tmp_path_factory.mktemp("target-stopped")
    return make_stopped_target_run(root / "run", interpreter_runs.killed, interpreter_runs.task)
