"""The Task contract: loading and validating task directories, one clear TaskError per problem."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from evaluators.errors import TaskError
from evaluators.task import load_task

EXAMPLES = Path(__file__).parents[2] / "examples" / "tasks"

TOML = """
name = "double"
entry = "double"
regime = "wall"
cache = "cold"
dynamic = ["n"]
seeds = 2

[source]
repo = "https://example.org/repo"
path = "pkg/mod.py"
qualname = "double"
commit = "abc"

[tolerance.float32]
atol = 1e-4
rtol = 1e-3

[compare]
mismatch_fraction = 0.01

[[compare.unordered]]
key = "return[1]"
values = ["return[0]"]

[[compare.ties]]
key = "return[1]"
values = "return[0]"
follow = ["return[2]"]

[[compare.ties]]
key = "return[3]"

[roofline]
read = ["x"]

[[cases]]
name = "small"
n = 4

[[cases]]
name = "big"
n = 64
"""


def _ties_as_a_string(toml: str) -> str:
    without = re.sub(r"\[\[compare\.ties\]\]\n(?:[^\n]+\n)*", "", toml)
    return without.replace("mismatch_fraction = 0.01", 'mismatch_fraction = 0.01\nties = "return[1]"')


def write_task(root: Path, toml: str = TOML) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "task.toml").write_text(toml)
    (root / "reference.py").write_text("def double(x):\n    return 2 * x\n")
    (root / "inputs.py").write_text(
        "import torch\n"
        "def make_inputs(case, seed, device):\n"
        "    g = torch.Generator().manual_seed(seed)\n"
        "    return (torch.randn(case['n'], generator=g).to(device),), {}\n"
    )
    return root


def test_every_field_is_read(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path / "t"))
    assert (task.name, task.entry, task.regime, task.cache, task.seeds) == (
        "double",
        "double",
        "wall",
        "cold",
        2,
    )
    assert task.dynamic == ("n",) and task.roofline_reads == ("x",)
    assert task.source.repo == "https://example.org/repo" and task.source.qualname == "double"
    assert task.tolerances["float32"].atol == 1e-4 and task.tolerances["float32"].rtol == 1e-3
    assert task.compare.mismatch_fraction == 0.01
    assert task.compare.unordered[0].key == "return[1]" and task.compare.unordered[0].values == ("return[0]",)
    first, second = task.compare.ties
    assert (first.key, first.values, first.follow) == ("return[1]", "return[0]", ("return[2]",))
    assert first.followers == ("return[0]", "return[2]")
    assert (second.key, second.values, second.follow, second.followers) == ("return[3]", None, (), ())
    assert [c.name for c in task.cases] == ["small", "big"] and task.case("big").params == {"n": 64}
    assert task.root.is_absolute()


def test_make_inputs_and_reference_are_loaded_lazily_and_work(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path / "t") / "task.toml")  # a path to task.toml works too
    (x,), kwargs = task.make_inputs(task.case("small"), 3, "cpu")
    assert kwargs == {} and x.shape == (4,)
    assert torch.equal(task.load_reference()(x), 2 * x)


def test_captured_inputs_become_extra_cases(tmp_path: Path) -> None:
    root = write_task(tmp_path / "t")
    (root / "captured").mkdir()
    torch.save({"args": (torch.ones(3),), "kwargs": {}}, root / "captured" / "step7.pt")
    task = load_task(root)
    case = task.case("captured:step7")
    assert case.is_captured
    (x,), _ = task.make_inputs(case, 123, "cpu")
    assert torch.equal(x, torch.ones(3))


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (lambda t: t.replace('name = "double"\n', "", 1), "missing required field 'name'"),
        (lambda t: t.replace('entry = "double"', 'entry = "not an identifier"'), "not a Python identifier"),
        (lambda t: t.replace('regime = "wall"', 'regime = "fast"'), "regime must be one of"),
        (lambda t: t.replace('cache = "cold"', 'cache = "warm"'), "cache must be one of"),
        (lambda t: t.replace("mismatch_fraction = 0.01", "mismatch_fraction = 0.7"), "mismatch_fraction"),
        (lambda t: t.replace("seeds = 2", "seeds = 0"), "seeds must be a positive integer"),
        (lambda t: t.replace('name = "big"', 'name = "small"'), "duplicate case names"),
        (lambda t: t.split("[[cases]]")[0], "at least one [[cases]]"),
        (lambda t: t.replace("atol = 1e-4\n", ""), "needs atol and rtol"),
        (lambda t: t + "\n[[[", "not valid TOML"),
        (lambda t: t.replace('key = "return[3]"', "key = 3"), "compare.ties[1]: field 'key' must be"),
        (lambda t: t.replace('values = "return[0]"\nfollow', 'values = ["return[0]"]\nfollow'), "'values'"),
        (lambda t: t.replace('follow = ["return[2]"]', 'follow = "return[2]"'), "field 'follow' must be"),
        (
            lambda t: t.replace('key = "return[3]"', 'key = "return[3]"\nsource = "x"'),
            "unknown field 'source'",
        ),
        (lambda t: t.replace('key = "return[3]"', 'key = "return[1]"'), "already has a [[compare.ties]]"),
        (
            lambda t: t.replace('follow = ["return[2]"]', 'follow = ["return[1]"]'),
            "cannot also follow itself",
        ),
        (_ties_as_a_string, "compare.ties must be an array of tables"),
    ],
)
def test_malformed_task_toml_names_the_field(tmp_path: Path, change, fragment: str) -> None:
    root = write_task(tmp_path / "t", change(TOML))
    with pytest.raises(TaskError) as info:
        load_task(root)
    assert fragment in str(info.value)
    assert "task.toml" in str(info.value) or fragment == "not valid TOML"


def test_missing_files_and_broken_modules(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="does not exist"):
        load_task(tmp_path / "nope")
    root = write_task(tmp_path / "t")
    (root / "inputs.py").unlink()
    with pytest.raises(TaskError, match=r"no inputs\.py"):
        load_task(root)
    root = write_task(tmp_path / "u")
    (root / "reference.py").write_text("def other(x):\n    return x\n")
    with pytest.raises(TaskError, match="defines no function 'double'"):
        load_task(root).load_reference()
    (root / "reference.py").write_text("raise RuntimeError('boom')\n")
    with pytest.raises(TaskError, match="fails to import: RuntimeError: boom"):
        load_task(root).load_reference()
    with pytest.raises(TaskError, match="has no case 'huge'"):
        load_task(root).case("huge")


@pytest.mark.parametrize("name", ["decode_metadata", "moe_grouped_topk", "rmsnorm_residual", "silu_and_mul"])
def test_the_example_tasks_load(name: str) -> None:
    task = load_task(EXAMPLES / name)
    assert task.name == name and task.cases and callable(task.load_reference())
