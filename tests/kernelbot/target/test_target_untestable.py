"""`kernelbot target` on a repository whose code cannot be imported here (an engine release on a machine
without its dependencies): one warning line names the missing module and what to do, the bundle is written
and says the tests were not run, and --open-pr refuses to open a PR from it. The synthetic upstream is the
bundled example with a module-level import of a package that is not installed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.kernelbot.github_fake import ACCEPTED_TOKEN
from tests.kernelbot.target.road import (
    MINIREPO,
    QUICK_SEARCH,
    ROWWISE,
    SILU,
    kernelbot,
    make_upstream,
    one_error_line,
)

pytestmark = pytest.mark.slow
ACTIVATION = "minisglang/layers/activation.py"


def test_tests_that_cannot_import_the_engine_are_reported_not_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = (
        (MINIREPO / ACTIVATION)
        .read_text()
        .replace("import torch\n", "import not_installed_dependency  # noqa: F401\nimport torch\n", 1)
    )
    upstream, _ = make_upstream(tmp_path, {ACTIVATION: source})
    run = tmp_path / "run"
    args = ["target", "example", "--function", SILU, "--repo", f"file://{upstream}", "--out", run]
    args += [*QUICK_SEARCH, "--seed", ROWWISE]
    code, out, err = kernelbot(capsys, *args)
    assert code == 0, err
    warnings = [line for line in err.splitlines() if "tests cannot run here" in line]
    assert len(warnings) == 1, err
    assert (
        "before the change, `import minisglang.layers.activation` fails: ModuleNotFoundError: No module "
        "named 'not_installed_dependency'; install minisglang's dependencies" in warnings[0]
    )
    assert "or run kernelbot on the machine that has them" in warnings[0]
    assert "related test(s) fail that did not fail before" not in err + out  # no confusing refusal

    evidence = json.loads((run / "pr" / "evidence.json").read_text())
    assert evidence["tests"]["ran"] is False
    assert "No module named 'not_installed_dependency'" in evidence["tests"]["reason"]
    body = (run / "pr" / "body.md").read_text()
    assert "Repository tests: not run where this proposal was made: before the change, `import " in body
    verify = json.loads((run / "verify.json").read_text())
    assert verify["tests_ran"] is False and verify["ok"] is True

    # No pull request is opened from it; the bundle stays.
    monkeypatch.setenv("GITHUB_TOKEN", ACCEPTED_TOKEN)
    code, _, err = kernelbot(capsys, *args, "--open-pr", "--fork", tmp_path / "fork.git")
    line = one_error_line(err)
    assert code == 1 and "no pull request is opened from a change whose tests could not run" in line
    assert (run / "pr" / "body.md").is_file()
