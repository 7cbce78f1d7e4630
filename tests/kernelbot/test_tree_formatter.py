"""The formatter a work tree asks for: the tools, versions, arguments and files its .pre-commit-config.yaml
pins, each with the tree's own settings (the profile's standing in where the tree has none), and the
profile's formatter for a tree without a config. The last test installs black 24.8.0 (not a shipped pin)
and runs it: the versions of the tree's config are the ones used."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kernelbot.engines import load_profile
from kernelbot.formatting import FormatterError, format_files, tool_venv
from kernelbot.formatting.precommit import PreCommitConfigError, read_config
from kernelbot.formatting.tree import formatter_for_tree

OLDER_SGLANG = """
default_stages: [pre-commit, pre-push, manual]
exclude: ^pkg/generated/
repos:
  - repo: https://github.com/pre-commit/pre-commit-hooks
    rev: v5.0.0
    hooks:
      - id: trailing-whitespace
  - repo: https://github.com/PyCQA/isort
    rev: 5.13.2
    hooks:
      - id: isort
  - repo: https://github.com/astral-sh/ruff-pre-commit
    rev: v0.11.2
    hooks:
      - id: ruff
        args: [--select=F401, --fixable=F401]
        files: ^(benchmark/|docs/)
  - repo: https://github.com/psf/black
    rev: 24.8.0
    hooks:
      - id: black-jupyter
        args: [--check]
  - repo: https://github.com/crate-ci/typos
    rev: v1.20.7
    hooks:
      - id: typos
        stages: [manual]
"""


def tree(root: Path, config: str | None, files: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    if config is not None:
        (root / ".pre-commit-config.yaml").write_text(textwrap.dedent(config).lstrip())
    for rel, text in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text).lstrip())
    return root


def test_without_a_config_the_profile_pins_hold(tmp_path: Path) -> None:
    profile = load_profile("sglang")
    chosen = formatter_for_tree(profile.formatter, tree(tmp_path, None))
    assert chosen.formatter == profile.formatter
    assert chosen.describe() == (
        "ruff-check 0.15.4, ruff-format 0.15.4 "
        "(as the profile pins them: the tree has no .pre-commit-config.yaml)"
    )
    # The shipped SGLang fallback is what current SGLang's files follow: ruff's import order, then its layout.
    assert [t.requirement for t in profile.formatter.tools] == ["ruff==0.15.4", "ruff==0.15.4"]
    assert [t.name for t in profile.formatter.tools] == ["ruff-check", "ruff-format"]


def test_the_config_pins_tools_versions_arguments_and_files(tmp_path: Path) -> None:
    repo = tree(
        tmp_path,
        OLDER_SGLANG,
        {
            ".isort.cfg": "[settings]\nprofile=black\nknown_first_party=pkg\n",
            "python/pyproject.toml": "[tool.black]\nline-length = 100\n",
        },
    )
    chosen = formatter_for_tree(load_profile("sglang").formatter, repo, "python")
    isort, ruff, black = chosen.formatter.tools
    assert (
        chosen.describe()
        == "isort 5.13.2, ruff-check 0.11.2, black 24.8.0 (as .pre-commit-config.yaml pins them)"
    )
    # isort and black have the tree's settings: only the hooks' own arguments (--check dropped: it would
    # report instead of rewrite).
    assert (isort.name, isort.requirement, isort.args) == ("isort", "isort==5.13.2", ())
    assert (black.name, black.requirement, black.args) == ("black", "black==24.8.0", ())
    # ruff has none in the tree: isolated from any configuration above it; it runs only where its hook does.
    assert ruff.args == ("--select=F401", "--fixable=F401", "--force-exclude", "--isolated")
    assert ruff.files == ("^(benchmark/|docs/)",) and ruff.exclude == ("^pkg/generated/",)
    assert not ruff.applies_to("pkg/layers/x.py") and ruff.applies_to("docs/conf.py")
    assert not black.applies_to("pkg/generated/x_pb2.py") and black.applies_to("pkg/layers/x.py")
    assert chosen.formatter.line_length == 100  # black's, from python/pyproject.toml


def test_a_tree_without_ruff_settings_runs_ruff_isolated(tmp_path: Path) -> None:
    config = """
    repos:
      - repo: https://github.com/astral-sh/ruff-pre-commit
        rev: v0.14.0
        hooks:
          - id: ruff-check
            args: ["--fix", "--exit-non-zero-on-fix"]
      - repo: https://github.com/pre-commit/pre-commit-hooks
        rev: v5.0.0
        hooks:
          - id: double-quote-string-fixer
    """
    lmdeploy = load_profile("lmdeploy").formatter
    bare = formatter_for_tree(lmdeploy, tree(tmp_path / "bare", config))
    ruff, quotes = bare.formatter.tools
    assert ruff.requirement == "ruff==0.14.0" and quotes.requirement == "pre-commit-hooks==5.0.0"
    # As pre-commit would run it there: ruff's defaults, not a configuration found above the tree.
    assert ruff.args == ("--fix", "--force-exclude", "--isolated")
    # New files' layout keeps the profile's arguments, at the config's ruff.
    assert [t.requirement for t in bare.formatter.new_file_tools] == ["ruff==0.14.0"]
    assert bare.formatter.new_file_tools[0].args == lmdeploy.new_file_tools[0].args
    assert bare.formatter.new_file_header == lmdeploy.new_file_header

    configured = tree(tmp_path / "configured", config, {"pyproject.toml": "[tool.ruff]\nline-length = 100\n"})
    ruff = formatter_for_tree(lmdeploy, configured).formatter.tools[0]
    assert ruff.args == ("--fix", "--force-exclude")  # the tree's [tool.ruff] applies, not --isolated
    assert formatter_for_tree(lmdeploy, configured).formatter.line_length == 100


def test_frozen_shas_manual_hooks_and_pins_kernelbot_cannot_install(tmp_path: Path) -> None:
    frozen = """
    repos:
      - repo: https://github.com/psf/black-pre-commit-mirror
        rev: 1b2427a2b785cc4aac97c19bb4b9a0de063f9547  # frozen: 24.8.0
        hooks:
          - id: black
      - repo: https://github.com/PyCQA/isort
        rev: 5.12.0
        hooks:
          - id: isort
            stages: [manual]
    """
    chosen = formatter_for_tree(load_profile("sglang").formatter, tree(tmp_path / "frozen", frozen))
    assert [t.requirement for t in chosen.formatter.tools] == ["black==24.8.0"]  # isort only runs manually
    assert [h.id for h in read_config(tmp_path / "frozen").hooks] == ["black"]

    sha = frozen.replace("  # frozen: 24.8.0", "")
    profile = load_profile("sglang").formatter
    chosen = formatter_for_tree(profile, tree(tmp_path / "sha", sha))
    assert chosen.formatter == profile
    assert chosen.source == (
        "as the profile pins them: .pre-commit-config.yaml pins black at "
        "1b2427a2b785cc4aac97c19bb4b9a0de063f9547, not a release kernelbot can install"
    )
    unknown = "repos:\n  - repo: local\n    hooks:\n      - id: fmt\n        entry: ./fmt.sh\n"
    chosen = formatter_for_tree(profile, tree(tmp_path / "local", unknown))
    assert chosen.formatter == profile and "runs no formatter kernelbot knows" in chosen.source


def test_an_unreadable_config_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PreCommitConfigError, match=r"\.pre-commit-config\.yaml is not valid YAML: "):
        formatter_for_tree(load_profile("sglang").formatter, tree(tmp_path / "a", "repos: [\n"))
    with pytest.raises(PreCommitConfigError, match="needs a list of `repos`"):
        formatter_for_tree(load_profile("sglang").formatter, tree(tmp_path / "b", "repos: 3\n"))
    with pytest.raises(PreCommitConfigError, match="not a valid regular expression"):
        formatter_for_tree(
            load_profile("sglang").formatter, tree(tmp_path / "c", "exclude: '('\nrepos: []\n")
        )


@pytest.mark.slow
def test_the_versions_the_config_pins_are_the_ones_run(tmp_path: Path) -> None:
    """black 24.8.0 and isort 5.13.2 from the tree's config (not the profile's ruff), with its settings: the
    line length of [tool.black] and the first-party package of .isort.cfg."""
    for requirement in ("black==24.8.0", "isort==5.13.2"):
        try:
            tool_venv(requirement)
        except FormatterError as exc:
            pytest.skip(f"cannot install {requirement} (is the package registry reachable?): {exc}")
    long_call = "    return {'a': x, 'b': os.sep, 'c': is_cuda(torch), 'd': [x, x, x, x, x], 'e': 'ee'}"
    repo = tree(
        tmp_path,
        OLDER_SGLANG,
        {
            ".isort.cfg": "[settings]\nprofile=black\nknown_first_party=pkg\n",
            "python/pyproject.toml": "[tool.black]\nline-length = 100\n",
            "python/pkg/mod.py": "import torch\nimport os\nfrom pkg.utils import is_cuda\ndef f(x):\n"
            + long_call
            + "\n",
        },
    )
    chosen = formatter_for_tree(load_profile("sglang").formatter, repo, "python")
    outcome = format_files(repo, [Path("python/pkg/mod.py")], chosen.formatter)
    assert outcome.tools == ("isort==5.13.2", "black==24.8.0")  # ruff's hook does not cover python/
    text = (repo / "python/pkg/mod.py").read_text()
    assert text.startswith("import os\n\nimport torch\n\nfrom pkg.utils import is_cuda\n\n\ndef f(x):\n")
    assert long_call.replace("'", '"') in text  # 98 columns: within [tool.black]'s 100, black's quotes
