"""Target profiles: the shipped TOML data, user profiles from kernelbot.toml, and the checks that name the
field at fault."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kernelbot.engines import SHIPPED, known_profiles, load_profile
from kernelbot.errors import ConfigError


def test_shipped_profiles() -> None:
    sglang, lmdeploy, example = (load_profile(name) for name in ("sglang", "lmdeploy", "example"))
    assert sglang.repo_url == "https://github.com/sgl-project/sglang" and sglang.source_roots == (
        "python",
        "",
    )
    assert sglang.tests.style == "unittest-customtestcase" and sglang.tests.directory == "test/srt"
    assert sglang.tests.base_class == "sglang.test.test_utils:CustomTestCase"
    # The fallback for a tree without a pre-commit config: ruff, as SGLang's current files are laid out.
    assert [(t.name, t.requirement) for t in sglang.formatter.tools] == [
        ("ruff-check", "ruff==0.15.4"),
        ("ruff-format", "ruff==0.15.4"),
    ]
    assert sglang.benchmark is not None and sglang.benchmark.needs == ("gpu", "model")
    assert sglang.pr_title("Triton RMSNorm") == "[Perf] Triton RMSNorm"
    assert any("run-ci" in step for step in sglang.human_steps)

    assert lmdeploy.kernel.rule == "directory" and lmdeploy.kernel.export_from_init
    # backends/default/ is imported by every backend: the kernel is imported inside the function.
    assert lmdeploy.kernel.lazy_import and not sglang.kernel.lazy_import and not example.kernel.lazy_import
    assert lmdeploy.kernel.directory == "lmdeploy/pytorch/kernels/cuda"
    assert lmdeploy.tests.style == "pytest" and lmdeploy.tests.directory == "tests/pytorch/kernel"
    ruff = lmdeploy.formatter.tools[0]
    assert ruff.requirement == "ruff==0.15.4" and "E,F,I,W,UP" in ruff.args and "E231,E741" in ruff.args
    assert lmdeploy.formatter.tools[1].name == "double-quote-string-fixer"
    assert lmdeploy.formatter.new_file_header == "# Copyright (c) OpenMMLab. All rights reserved."
    # Kernel benchmark scripts go where each engine keeps its own.
    assert sglang.kernel.benchmark == "benchmark/kernels/bench_{op}_triton.py"
    assert lmdeploy.kernel.benchmark == "benchmark/benchmark_{op}_triton.py"
    assert example.kernel.benchmark == "benchmarks/bench_{op}_triton.py"
    assert lmdeploy.pr_title("x").startswith("[Feature] ") and any("CLA" in s for s in lmdeploy.human_steps)

    bench = example.benchmark
    assert bench is not None and bench.argv == (
        "python",
        "benchmarks/throughput.py",
        "--batch",
        "8",
        "--steps",
        "32",
    )
    assert bench.metric.json_key == "tokens_per_s" and bench.metric.higher_is_better and not bench.needs
    assert bench.time_budget_s == 300.0 and sglang.benchmark and sglang.benchmark.time_budget_s == 1800.0
    assert example.tests.style == "pytest" and example.template == "example"


def test_unknown_profile_lists_the_known_ones(tmp_path: Path) -> None:
    (tmp_path / "empty.toml").write_text("")
    with pytest.raises(
        ConfigError, match="unknown target profile 'vllm'; known profiles: example, lmdeploy, sglang"
    ):
        load_profile("vllm", config=tmp_path / "empty.toml")


def test_user_profile_extends_a_shipped_one(tmp_path: Path) -> None:
    config = tmp_path / "kernelbot.toml"
    config.write_text(
        textwrap.dedent(
            """
            [profiles.my-sglang]
            extends = "sglang"
            repo_url = "https://github.com/me/sglang"
            [profiles.my-sglang.tests]
            command = ["python3", "-m", "pytest", "-x"]

            [profiles.sglang]
            extends = "sglang"
            default_branch = "release"
            """
        )
    )
    mine = load_profile("my-sglang", config=config)
    assert mine.name == "my-sglang" and mine.repo_url == "https://github.com/me/sglang"
    assert mine.test_command == ("python3", "-m", "pytest", "-x")
    assert mine.tests.style == "unittest-customtestcase"  # the rest of the table comes from sglang
    assert load_profile("sglang", config=config).default_branch == "release"
    assert known_profiles(config=config) == sorted({*SHIPPED, "my-sglang"})
    # The engine's convention comes along with the rest (kernelbot/engines/sglang/convention.py).
    assert mine.convention == "sglang" and load_profile("lmdeploy").convention == "lmdeploy"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            '[profiles.p]\nextends = "example"\n[profiles.p.tests]\nstyle = "nose"\n',
            r"tests\.style must be one of",
        ),
        ('[profiles.p]\nextends = "example"\nrepo = "x"\n', r"repo is not a known field"),
        (
            '[profiles.p]\nextends = "example"\n[profiles.p.kernel]\nrule = "directory"\n',
            r"kernel\.directory is needed",
        ),
        (
            '[profiles.p]\nextends = "example"\n[profiles.p.kernel]\nrule = "beside-source"\n'
            'benchmark = "bench/mine.py"\n',
            r"kernel\.benchmark must be a relative \.py path containing \{op\}",
        ),
        (
            '[profiles.p]\nextends = "example"\n'
            '[[profiles.p.formatter.tools]]\nname = "black"\nrequirement = "black"\n',
            r"formatter\.tools\[0\]\.requirement must pin a version",
        ),
        (
            '[profiles.p]\nextends = "example"\n[profiles.p.benchmark.metric]\njson_key = ""\n'
            'regex = "tok/s"\n',
            r"benchmark\.metric\.regex needs a group",
        ),
        (
            '[profiles.p]\nextends = "example"\n[profiles.p.pr]\ntitle = "Perf"\n',
            r"pr\.title must contain \{summary\}",
        ),
        ('[profiles.p]\ndescription = "standalone"\n', r"repo_url is missing"),
        ('[profiles.p]\nextends = "q"\n[profiles.q]\nextends = "p"\n', r"in a circle: p -> q -> p"),
        ("[profiles.p]\nextends = 3\n", r"extends must be a profile name"),
        (
            '[profiles.p]\nextends = "example"\n[profiles.p.benchmark]\ntime_budget_s = 0\n',
            r"benchmark\.time_budget_s must be a positive number of seconds \(got 0\)",
        ),
        (
            '[profiles.p]\nextends = "example"\nconvention = "vllm"\n',
            r"convention must be one of call-site, sglang, lmdeploy, example",
        ),
    ],
)
def test_bad_profiles_name_the_field(tmp_path: Path, table: str, message: str) -> None:
    config = tmp_path / "kernelbot.toml"
    config.write_text(table)
    with pytest.raises(ConfigError, match=message):
        load_profile("p", config=config)


def test_bad_toml_names_the_file(tmp_path: Path) -> None:
    config = tmp_path / "kernelbot.toml"
    config.write_text("[profiles.p\n")
    with pytest.raises(ConfigError, match=r"kernelbot\.toml is not valid TOML"):
        load_profile("p", config=config)


def test_source_root_is_detected_against_the_tree(tmp_path: Path) -> None:
    git_layout, release = tmp_path / "git", tmp_path / "release"
    for root in (git_layout / "python" / "sglang", release / "sglang"):
        root.mkdir(parents=True)
        (root / "__init__.py").write_text("")
    profile = load_profile("sglang")
    assert profile.for_tree(git_layout).source_root == "python"
    assert profile.for_tree(release).source_root == ""
    with pytest.raises(
        ConfigError, match=r"is not a sglang work tree: no package at python/sglang, \./sglang"
    ):
        profile.for_tree(tmp_path)


def test_benchmark_placeholders_come_from_the_environment() -> None:
    bench = load_profile("sglang").benchmark
    assert bench is not None
    assert bench.resolved_argv({}) == "the benchmark needs {model}: set KERNELBOT_BENCH_MODEL"
    argv = bench.resolved_argv({"KERNELBOT_BENCH_MODEL": "/models/llama"})
    assert isinstance(argv, tuple) and "/models/llama" in argv and "{model}" not in argv
