"""When the repository's code cannot even be imported before the change (an engine release unpacked on a
machine without its dependencies), verification says so, naming the missing module and what to do, instead
of calling the generated test a new failure; the evidence says the tests were not run. A module the change
itself cannot import is still a new failure."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

from kernelbot.propose import collect
from kernelbot.target.run_dir import VERIFY_FILE
from kernelbot.verify import verify
from kernelbot.verify.importable import base_import_problem, imported_modules

LAYERS = "import not_installed_dependency\n\n\ndef double(x):\n    return 2 * x\n"
OWN_TEST = "from pkg.layers import double\n\n\ndef test_double():\n    assert double(2) == 4\n"
KERNEL = "def double_fast(x):\n    return x + x\n"
GENERATED = (
    "import os\n"
    "import sys\n\n"
    "if 'pytest' not in sys.modules:\n"
    "    os.environ.setdefault('SEEN', '1')\n\n"
    "from pkg.layers import double  # noqa: E402\n"
    "from pkg import double_triton as kernel  # noqa: E402\n\n\n"
    "def test_same():\n"
    "    assert kernel.double_fast(3) == double(3)\n"
)

PROFILE = SimpleNamespace(
    name="synthetic",
    package="pkg",
    test_command=("python", "-m", "pytest", "-q"),
    source_root="",
    benchmark=None,
)
INTEGRATION = SimpleNamespace(
    kernel_module=Path("pkg/double_triton.py"),
    test_file=Path("tests/test_double_triton.py"),
    touched=(Path("pkg/double_triton.py"), Path("pkg/layers.py"), Path("tests/test_double_triton.py")),
    cpu_test_env={},
)


def trees(root: Path, layers: str = LAYERS, kernel: str = KERNEL) -> tuple[Path, Path]:
    base = root / "base"
    (base / "pkg").mkdir(parents=True)
    (base / "pkg" / "__init__.py").write_text("")
    (base / "pkg" / "layers.py").write_text(layers)
    (base / "tests").mkdir()
    (base / "tests" / "test_layers.py").write_text(OWN_TEST)
    change = root / "change"
    shutil.copytree(base, change)
    (change / "pkg" / "double_triton.py").write_text(kernel)
    (change / "tests" / "test_double_triton.py").write_text(GENERATED)
    return base, change


def test_the_generated_test_imports_are_read_statically(tmp_path: Path) -> None:
    _, change = trees(tmp_path)
    assert imported_modules(change / "tests" / "test_double_triton.py") == ["os", "sys", "pkg.layers", "pkg"]


def test_a_missing_dependency_before_the_change_is_said_plainly(tmp_path: Path) -> None:
    base, change = trees(tmp_path)
    report = verify(base, change, PROFILE, INTEGRATION, run_dir=tmp_path / "run")
    assert not report.tests_ran and report.ok and report.refusal == ""  # no confusing "new failure"
    tests = report.tests
    assert tests.cannot_run == (
        "before the change, `import pkg.layers` fails: "
        "ModuleNotFoundError: No module named 'not_installed_dependency'"
    )
    assert tests.advice == (
        "install pkg's dependencies in this environment (the module `not_installed_dependency` is missing "
        "here), or run kernelbot on the machine that has them"
    )
    assert tests.files == ("tests/test_double_triton.py", "tests/test_layers.py")
    assert not (tmp_path / "run" / "verify" / "tests-base.log").exists()  # nothing was run for nothing
    written = json.loads((tmp_path / "run" / VERIFY_FILE).read_text())
    assert written["tests_ran"] is False and written["ok"] is True
    assert written["tests"]["cannot_run"] == tests.cannot_run
    evidence = collect.tests_evidence(written["tests"])
    assert not evidence.ran and evidence.reason == f"not run where this proposal was made: {tests.cannot_run}"
    assert evidence.files == tests.files


def test_with_the_dependency_present_the_tests_run(tmp_path: Path) -> None:
    base, change = trees(tmp_path, layers=LAYERS.replace("import not_installed_dependency", "import json"))
    assert base_import_problem(base, change / INTEGRATION.test_file, "pkg.double_triton") is None
    report = verify(base, change, PROFILE, INTEGRATION, run_dir=tmp_path / "run")
    assert report.tests_ran and report.ok and report.tests.after.passed == 2


def test_a_module_the_change_cannot_import_is_still_a_new_failure(tmp_path: Path) -> None:
    layers = LAYERS.replace("import not_installed_dependency", "import json")
    base, change = trees(tmp_path, layers=layers, kernel="import not_installed_dependency\n" + KERNEL)
    report = verify(base, change, PROFILE, INTEGRATION, run_dir=tmp_path / "run")
    assert report.tests_ran and not report.ok
    assert report.tests.new_failures == ("tests/test_double_triton.py",)
