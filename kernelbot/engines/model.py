"""What kernelbot knows about one target repository: a frozen `Profile` built from TOML data (see
`kernelbot.engines.loader` for where that data comes from and how it is checked).

Paths in a profile are relative to one of two roots, named in each field's comment:
- the *repo root*: the top of the git work tree (tests, benchmarks, the test command's cwd);
- the *source root*: the directory holding the Python package (`python/` in SGLang's git layout, the repo
  root in an unpacked release or in LMDeploy). `Profile.for_tree` picks it for a given work tree.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kernelbot.errors import ConfigError

PLACEMENTS = ("beside-source", "directory")
TEST_STYLES = ("unittest-customtestcase", "pytest")


@dataclass(frozen=True)
class KernelPlacement:
    """Where a new kernel module goes.

    rule "beside-source": in the directory of the module that holds the rewritten function;
    rule "directory": in `directory` (source-root relative), e.g. LMDeploy's `lmdeploy/pytorch/kernels/cuda`.
    `module` is the file stem, `{op}` standing for the op name (e.g. "rms_norm" -> rms_norm_triton.py).
    With `export_from_init`, the kernel's entry is also imported in that directory's `__init__.py` and
    listed in its `__all__`. With `lazy_import`, the rewritten function imports the kernel itself, and only
    once a tensor argument is on the kernel's device: its module (LMDeploy's backends/default/, imported by
    every backend) then never imports the kernel module, nor Triton, on a machine or backend without them.
    `benchmark` is where the change's kernel benchmark script goes (repo-root relative, `{op}` as above):
    where the engine keeps its kernel benchmarks."""

    rule: str
    directory: str = ""
    module: str = "{op}_triton"
    export_from_init: bool = False
    lazy_import: bool = False
    benchmark: str = "benchmarks/bench_{op}_triton.py"


@dataclass(frozen=True)
class TestPlacement:
    """Where the generated test goes (`directory`, repo-root relative; `file`, `{op}` as above) and its
    style: "pytest" functions, or "unittest-customtestcase" classes deriving `base_class`
    ("module:Class"; plain `unittest.TestCase` when that module is not in the tree)."""

    __test__ = False  # not a test class, whatever pytest infers from its name

    directory: str
    style: str
    file: str = "test_{op}_triton.py"
    base_class: str = ""


@dataclass(frozen=True)
class FormatterTool:
    """One pinned tool run on the touched files, from its own venv (see kernelbot.formatting).

    `name` is one of kernelbot.formatting.TOOLS ("black", "isort", "ruff-check", "ruff-format",
    "double-quote-string-fixer"); `requirement` the pip requirement that provides it ("black==24.10.0");
    `args` the repository's settings for it, passed before the file names. `files` and `exclude` are
    regular expressions searched in a file's repo-relative path, as pre-commit filters a hook's files: the
    tool runs on a file only when every `files` pattern matches and no `exclude` pattern does."""

    name: str
    requirement: str
    args: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def applies_to(self, path: Path | str) -> bool:
        text = Path(path).as_posix()
        return all(re.search(p, text) for p in self.files) and not any(
            re.search(p, text) for p in self.exclude
        )


@dataclass(frozen=True)
class Formatter:
    """The tools in the order the repository's pre-commit config runs them, the line length generated prose
    (docstrings, comments) is wrapped to, and a header every new file starts with ("" for none).

    `new_file_tools` run first, on new files only: for repositories whose pinned tools check but do not
    lay out code (LMDeploy's ruff check), a layout that passes those checks."""

    tools: tuple[FormatterTool, ...]
    line_length: int = 88
    new_file_header: str = ""
    new_file_tools: tuple[FormatterTool, ...] = ()


@dataclass(frozen=True)
class MetricSpec:
    """How to read the benchmark's number from its stdout: the last line that parses as JSON and has
    `json_key`, or the last match of `regex` (its first group). `unit` is shown next to the number."""

    unit: str
    higher_is_better: bool
    json_key: str = ""
    regex: str = ""


@dataclass(frozen=True)
class BenchmarkSpec:
    """The end-to-end benchmark: `argv` run in `cwd` (repo-root relative) with `env` added, `runs` times per
    side. `{name}` placeholders in argv are filled from the environment variables `placeholders` maps them
    to (e.g. {model} <- KERNELBOT_BENCH_MODEL); `needs` lists what it cannot run without ("gpu", "model",
    "dataset") and `note` says so in words, for the evidence when it cannot run. After the first `runs` a
    side, pairs are added until the change's interval is narrow (kernelbot.verify.benchmark) while the
    comparison has taken less than `time_budget_s`."""

    argv: tuple[str, ...]
    metric: MetricSpec
    cwd: str = "."
    env: Mapping[str, str] = field(default_factory=dict)
    runs: int = 5
    time_budget_s: float = 1800.0
    needs: tuple[str, ...] = ()
    placeholders: Mapping[str, str] = field(default_factory=dict)
    note: str = ""

    def resolved_argv(self, environ: Mapping[str, str]) -> tuple[str, ...] | str:
        """argv with its placeholders filled from `environ`, or a sentence naming the variable missing."""
        values = {}
        for placeholder, variable in self.placeholders.items():
            if not environ.get(variable):
                return f"the benchmark needs {{{placeholder}}}: set {variable}"
            values[placeholder] = environ[variable]
        return tuple(arg.format(**values) if "{" in arg else arg for arg in self.argv)


@dataclass(frozen=True)
class Profile:
    """A target repository as data. `test_command` is an argv prefix run from the repo root; test file paths
    are appended to it. `title` formats a PR title from `{summary}`; `template` names
    pr_templates/<template>.md.j2; `human_steps` are what a person must still do after the PR opens."""

    name: str
    description: str
    repo_url: str
    default_branch: str
    package: str  # the top-level Python package, e.g. "sglang"
    source_roots: tuple[str, ...]  # candidates for the source root, repo-root relative; "" is the root
    kernel: KernelPlacement
    tests: TestPlacement
    test_command: tuple[str, ...]
    formatter: Formatter
    benchmark: BenchmarkSpec | None
    template: str
    title: str
    human_steps: tuple[str, ...] = ()
    fork_remote: str = "fork"
    api_url: str = "https://api.github.com"
    source_root: str = ""  # the chosen candidate (see for_tree); the first candidate until then
    # How the engine takes a kernel (kernelbot.engines.convention.CONVENTIONS): "sglang", "lmdeploy",
    # "example", or "call-site" (a guarded call in the function itself) for engines kernelbot has none for.
    convention: str = "call-site"

    def for_tree(self, repo: Path) -> Profile:
        """This profile with `source_root` set to the first candidate holding `package` in `repo`."""
        for root in self.source_roots:
            if (repo / root / self.package / "__init__.py").is_file():
                return dataclasses.replace(self, source_root=root)
        tried = ", ".join(f"{r or '.'}/{self.package}" for r in self.source_roots)
        raise ConfigError(f"{repo} is not a {self.name} work tree: no package at {tried}")

    def pr_title(self, summary: str) -> str:
        return self.title.format(summary=summary)
