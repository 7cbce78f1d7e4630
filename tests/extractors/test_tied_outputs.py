"""Extraction writes `[[compare.ties]]` where the reference's code returns top-k or (unstable) sort indices:
the gatherer on snippets, then whole extractions from a small repository in tmp_path, built from a spec and
from a draft, whose task the loader reads back."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from evaluators.task import TiedOutputs, load_task
from extractors.extract import ExtractOptions, extract
from extractors.gather_tied_outputs import TieRule, tied_outputs
from extractors.gather_unordered_outputs import unordered_outputs
from tests.extractors.conftest import write_repo

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROUTER = """\
import torch


def route(router_logits, top_k: int):
    routing_weights = torch.softmax(router_logits, dim=-1, dtype=torch.float32)
    topk_weights, topk_ids = torch.topk(routing_weights, top_k, dim=-1)
    topk_weights = topk_weights / topk_weights.sum(dim=-1, keepdim=True)
    return topk_weights, topk_ids
"""

UNSORTED_ROUTER = """\
import torch


def route(router_logits, correction_bias, top_k: int):
    scores = router_logits.sigmoid()
    _, ids = torch.topk(scores + correction_bias, k=top_k, dim=-1, sorted=False)
    weights = scores.gather(1, ids)
    return weights / weights.sum(dim=-1, keepdim=True), ids.to(torch.int32)
"""


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (ROUTER.replace("route", "f"), [TieRule("return[1]", "return[0]", [], "topk")]),
        (UNSORTED_ROUTER.replace("route", "f"), [TieRule("return[1]", None, ["return[0]"], "topk")]),
        (
            "def f(x):\n    v, i = x.sort(dim=-1, descending=True)\n    return i, v * 2\n",
            [TieRule("return[0]", "return[1]", [], "sort() without stable=True")],
        ),
        (
            "def f(x):\n    return x.argsort(dim=-1)\n",
            [TieRule("return", None, [], "argsort() without stable=True")],
        ),
        (
            "def f(x, y, k: int):\n    r = x.topk(k)\n    return r.values * y.gather(1, r[1]), r.indices\n",
            [TieRule("return[1]", None, ["return[0]"], "topk")],  # selected values mixed with gathered ones
        ),
    ],
)
def test_returned_selection_ids_get_a_tie_rule(source: str, expected: list[TieRule]) -> None:
    assert tied_outputs(source, "f") == expected


@pytest.mark.parametrize(
    "source",
    [
        "def f(x):\n    v, i = x.sort(dim=-1, stable=True)\n    return v, i\n",
        "def f(x, k: int):\n    return x.topk(k).values\n",
        "def f(p):\n    s, i = p.sort(dim=-1)\n    return s.new_zeros(s.shape).scatter_(-1, i, s)\n",
        "def f(x, k: int):\n    i = x.topk(k).indices\n    return i.sum(dim=-1)\n",
    ],
)
def test_ids_that_never_reach_an_output_in_tie_order_get_no_rule(source: str) -> None:
    assert tied_outputs(source, "f") == []


def test_a_sort_is_tied_but_not_unordered() -> None:
    source = "def f(x):\n    v, i = x.sort(dim=-1)\n    return v, i\n"
    assert unordered_outputs(source, "f") == []
    assert [r.key for r in tied_outputs(source, "f")] == ["return[1]"]


def _extract(tmp_path: Path, source: str, spec: Path | None = None) -> tuple:
    repo = write_repo(tmp_path / "repo", {"pkg/__init__.py": "", "pkg/ops.py": source})
    out = tmp_path / "task"
    summary = extract(ExtractOptions(repo, "pkg.ops:route", out=out, spec=spec))
    assert summary.probe is not None and summary.probe.ran, summary.probe
    return load_task(out), tomllib.loads((out / "task.toml").read_text()), (out / "task.toml").read_text()


def test_a_spec_built_router_task_declares_its_tied_ids(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(
        "[sizes]\ntokens = [1, 16]\nexperts = 64\ntop_k = 4\n\n"
        '[args.router_logits]\nshape = ["tokens", "experts"]\ndtype = "bfloat16"\n\n'
        '[args.top_k]\nvalue = "top_k"\n'
    )
    task, toml, text = _extract(tmp_path, ROUTER, spec)
    assert toml["extraction"]["inputs"] == "spec"
    assert toml["compare"] == {"ties": [{"key": "return[1]", "values": "return[0]"}]}
    assert task.compare.ties == (TiedOutputs("return[1]", "return[0]"),)
    assert task.compare.unordered == ()
    assert "orders exactly equal scores as its kernel likes" in text


def test_a_drafted_unsorted_router_is_unordered_and_tied(tmp_path: Path) -> None:
    task, toml, _ = _extract(tmp_path, UNSORTED_ROUTER)
    assert toml["extraction"]["inputs"] == "draft"
    assert toml["compare"]["unordered"] == [{"key": "return[1]", "values": ["return[0]"]}]
    assert toml["compare"]["ties"] == [{"key": "return[1]", "follow": ["return[0]"]}]
    assert task.compare.ties[0].followers == ("return[0]",)
