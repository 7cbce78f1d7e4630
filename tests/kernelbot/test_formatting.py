"""Pinned formatters run from their own venvs in the tool cache: what they change, the findings a checker
leaves, the files a tool's patterns leave out, and the errors when a tool cannot be installed or fails."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from kernelbot.engines import load_profile
from kernelbot.engines.model import Formatter, FormatterTool
from kernelbot.formatting import FormatterError, format_files, tool_venv
from tests.kernelbot.integrate.conftest import tool_venvs  # noqa: F401  (the session fixture)

MESSY = textwrap.dedent(
    """
    import torch
    import os
    from sglang.srt.utils import is_cuda
    def f(x):
        return {"a":x, 'b': os.sep, "c": is_cuda(torch)}
    """
).lstrip()


def test_sglang_ruff_imports_then_layout_and_nothing_left_to_do(tmp_path: Path, tool_venvs: dict) -> None:  # noqa: F811
    (tmp_path / "mod.py").write_text(MESSY)
    formatter = load_profile("sglang").formatter
    outcome = format_files(tmp_path, [Path("mod.py")], formatter)
    assert outcome.tools == ("ruff==0.15.4", "ruff==0.15.4") and outcome.findings == ()
    text = (tmp_path / "mod.py").read_text()
    assert text.startswith(
        "import os\n\nimport torch\n\nfrom sglang.srt.utils import is_cuda\n\n\ndef f(x):\n"
    )
    assert '{"a": x, "b": os.sep' in text
    format_files(tmp_path, [Path("mod.py")], formatter)
    assert (tmp_path / "mod.py").read_text() == text


def test_lmdeploy_ruff_check_and_single_quotes_with_findings(tmp_path: Path, tool_venvs: dict) -> None:  # noqa: F811
    (tmp_path / "mod.py").write_text(MESSY + "\n\nLONG = " + repr("x" * 130) + "\n")
    outcome = format_files(tmp_path, [Path("mod.py")], load_profile("lmdeploy").formatter)
    text = (tmp_path / "mod.py").read_text()
    assert text.index("import os") < text.index("import torch")  # ruff's isort rules
    assert "{'a':x, 'b': os.sep, 'c': is_cuda(torch)}" in text  # double-quote-string-fixer; layout as it was
    assert [f for f in outcome.findings if "E501" in f] == [f for f in outcome.findings], outcome.findings
    assert len(outcome.findings) == 1 and outcome.findings[0].startswith("mod.py:")


def test_a_tool_that_fails_on_a_file_says_which(tmp_path: Path, tool_venvs: dict) -> None:  # noqa: F811
    (tmp_path / "bad.py").write_text("def f(:\n")
    try:  # no shipped profile pins black any more: installed here (a tree's pre-commit config may pin it)
        tool_venv("black==24.10.0")
    except FormatterError as exc:
        pytest.skip(f"cannot install black==24.10.0 (is the package registry reachable?): {exc}")
    formatter = Formatter((FormatterTool("black", "black==24.10.0"),))
    with pytest.raises(FormatterError, match=r"black==24\.10\.0 failed \(exit 123\) on bad\.py"):
        format_files(tmp_path, [Path("bad.py")], formatter)


def test_a_tool_that_cannot_be_installed_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERNELBOT_CACHE", str(tmp_path / "cache"))
    # No index, no find-links, no config file: pip has nowhere to get black from.
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    with pytest.raises(FormatterError) as caught:
        tool_venv("black==24.10.0")
    message = str(caught.value)
    assert message.startswith("formatter black==24.10.0 is not installed and could not be installed: ")
    assert "pip install black==24.10.0" in message and "registry reachable" in message
    assert not (tmp_path / "cache" / "tools" / "black-24.10.0").exists()  # nothing half-built is left
    with pytest.raises(FormatterError, match="must pin a version"):
        tool_venv("black")


def test_a_tool_runs_only_on_the_files_its_patterns_select(tmp_path: Path, tool_venvs: dict) -> None:  # noqa: F811
    for name in ("docs/conf.py", "pkg/mod.py", "pkg/generated/mod_pb2.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x  =  1\n")
    tool = FormatterTool("ruff-format", "ruff==0.15.4", ("--isolated",), exclude=("^pkg/generated/",))
    docs_only = FormatterTool("ruff-format", "ruff==0.15.4", ("--isolated",), files=("^docs/",))
    files = [Path("pkg/mod.py"), Path("pkg/generated/mod_pb2.py")]
    assert format_files(tmp_path, files, Formatter((docs_only,))).tools == ()  # nothing of its own: not run
    assert format_files(tmp_path, files, Formatter((tool,))).tools == ("ruff==0.15.4",)
    assert (tmp_path / "pkg/mod.py").read_text() == "x = 1\n"
    assert (tmp_path / "pkg/generated/mod_pb2.py").read_text() == "x  =  1\n"
