"""Input specs, drafts and the release-source cache (offline parts)."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest
import torch

from extractors.drafting.guesses import draft_spec
from extractors.errors import ExtractionError, SpecError
from extractors.input_spec import check_against_signature, parse_spec, render_inputs
from extractors.release_sources import fetch_release
from extractors.signature import entry_signature

SOURCE = "def f(x, idx, n: int, eps=1e-6, *, weight):\n    return x\n"


def test_spec_expands_cases_and_renders_runnable_inputs(tmp_path: Path) -> None:
    spec = parse_spec(
        {
            "sizes": {"tokens": [1, 4], "hidden": 8},
            "args": {
                "x": {"shape": ["tokens", "hidden"], "dtype": "bfloat16"},
                "idx": {"shape": ["tokens"], "dtype": "int64", "init": "perm", "high": "tokens * 2"},
                "n": {"value": "hidden // 2"},
                "weight": {"shape": ["hidden"], "init": "ones"},
            },
        },
        "spec.toml",
    )
    assert [name for name, _ in spec.expand_cases()] == ["tokens1", "tokens4"]
    assert spec.dynamic_sizes() == ["tokens"]
    signature = entry_signature(SOURCE, "f")
    check_against_signature(spec, signature, "spec.toml")
    namespace: dict = {}
    exec(render_inputs(spec, signature, "t"), namespace)
    args, kwargs = namespace["make_inputs"]({"tokens": 4, "hidden": 8}, 3, "cpu")
    assert args[0].shape == (4, 8) and args[0].dtype == torch.bfloat16
    assert sorted(args[1].tolist()) == sorted(set(args[1].tolist())) and int(args[1].max()) < 8
    assert args[2] == 4 and set(kwargs) == {"weight"}
    again, _ = namespace["make_inputs"]({"tokens": 4, "hidden": 8}, 3, "cpu")
    assert torch.equal(again[0], args[0])  # a seed gives the same values


def test_a_spec_declares_sizes_that_vary_at_serving_time() -> None:
    raw = {
        "dynamic": ["seq"],
        "sizes": {"bs": [1, 4], "seq": 40, "page_size": 4},
        "args": {"x": {"shape": ["bs", "seq"]}},
    }
    spec = parse_spec(raw, "spec.toml")
    # The batch varies among the cases; the sequence length is declared though every case holds it at 40.
    assert spec.dynamic_sizes() == ["bs", "seq"]
    assert spec.to_toml_dict()["dynamic"] == ["seq"] and next(iter(spec.to_toml_dict())) == "dynamic"
    for dynamic, problem in (
        (["nope"], "dynamic names 'nope', which is not in [sizes]"),
        (["seq", "seq"], "dynamic must be a list of size names, each once"),
        ("seq", "dynamic must be a list of size names, each once"),
    ):
        with pytest.raises(SpecError, match=re.escape(problem)):
            parse_spec({**raw, "dynamic": dynamic}, "spec.toml")
    with pytest.raises(SpecError, match="whose values are not integers"):
        parse_spec({**raw, "sizes": {**raw["sizes"], "seq": 0.5}}, "spec.toml")


def test_a_dtype_size_builds_each_case_in_its_dtype() -> None:
    spec = parse_spec(
        {
            "sizes": {"tokens": 2, "hidden": 8, "dtype": ["float32", "bfloat16"]},
            "args": {
                "x": {"shape": ["tokens", "hidden"], "dtype": "dtype"},
                "idx": {"shape": [2], "dtype": "int64"},
            },
        },
        "spec.toml",
    )
    cases = dict(spec.expand_cases())
    assert list(cases) == ["dtypefloat32", "dtypebfloat16"]
    namespace: dict = {}
    exec(render_inputs(spec, entry_signature("def f(x, idx):\n    return x\n", "f"), "t"), namespace)
    for name, dtype in (("dtypefloat32", torch.float32), ("dtypebfloat16", torch.bfloat16)):
        (x, idx), _ = namespace["make_inputs"](cases[name], 0, "cpu")
        assert x.dtype == dtype and idx.dtype == torch.int64


def test_an_expr_moved_to_the_cpu_stays_on_the_host() -> None:
    """SGLang keeps `seq_lens_cpu` on the host: an `expr` ending in a move to the CPU is not moved back to
    the case's device (a kernel's host code reads a bound from it there); any other `expr` is."""
    spec = parse_spec(
        {
            "sizes": {"bs": 3},
            "args": {
                "lens": {"expr": "torch.arange(bs)"},
                "lens_cpu": {"expr": "torch.arange(bs).cpu()"},
                "lens_host": {"expr": 'torch.arange(bs).to(device="cpu")'},
            },
        },
        "spec.toml",
    )
    namespace: dict = {}
    signature = entry_signature("def f(lens, lens_cpu, lens_host):\n    return lens\n", "f")
    exec(render_inputs(spec, signature, "t"), namespace)
    (lens, lens_cpu, lens_host), _ = namespace["make_inputs"]({"bs": 3}, 0, "meta")
    assert (lens.device.type, lens_cpu.device.type, lens_host.device.type) == ("meta", "cpu", "cpu")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"args": {"x": {"shape": ["t"], "dtype": "float33"}}}, "args.x.dtype 'float33'"),
        (
            {"sizes": {"dt": ["float32", "half"]}, "args": {"x": {"shape": [2], "dtype": "dt"}}},
            "names the size 'dt', whose values 'half' are not dtypes",
        ),
        ({"args": {"x": {"shape": ["t"], "value": 1}}}, "needs exactly one of"),
        ({"sizes": {"t": []}, "args": {"x": {"value": 1}}}, "sizes.t must be"),
        ({"args": {}}, r"needs an \[args.<parameter>\]"),
        ({"cases": [{"t": 1}], "args": {"x": {"value": 1}}}, "unique non-empty name"),
    ],
)
def test_bad_specs_name_the_field(raw: dict, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_spec(raw, "spec.toml")


def test_spec_must_cover_required_parameters() -> None:
    spec = parse_spec({"args": {"x": {"shape": [2]}, "bogus": {"value": 1}}}, "s.toml")
    with pytest.raises(SpecError, match=r"args \['bogus'\] are not parameters"):
        check_against_signature(spec, entry_signature(SOURCE, "f"), "s.toml")


def test_draft_guesses_from_names_hints_and_init() -> None:
    source = (
        "def g(hidden_states, gating_output, topk: int, seq_lens, req_pool_indices, eps: float,"
        " renormalize: bool, *, weight):\n    return 0\n"
    )
    spec, notes = draft_spec(
        entry_signature(source, "g"), {"weight": ["nn.Parameter(torch.ones(hidden_size))"]}
    )
    args = spec.args
    assert args["hidden_states"]["shape"] == ["tokens", "hidden"]
    assert args["gating_output"]["shape"] == ["tokens", "num_experts"]
    assert args["topk"] == {"value": "topk"} and args["eps"] == {"value": 1e-6}
    assert args["seq_lens"]["dtype"] == "int32" and args["req_pool_indices"]["dtype"] == "int64"
    assert args["weight"]["shape"] == ["hidden"] and args["weight"]["mean"] == 1.0
    assert args["renormalize"] == {"value": False}
    assert len(notes) == 8 and {"tokens", "hidden", "num_experts", "topk"} <= set(spec.sizes)


def test_release_sources_unpack_from_the_cache_without_network(tmp_path: Path) -> None:
    downloads = tmp_path / "sources" / "downloads"
    downloads.mkdir(parents=True)
    wheel = downloads / "demo_pkg-1.2.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("demo_pkg/__init__.py", "")
        zf.writestr("demo_pkg/ops.py", "def f(x):\n    return x\n")
        zf.writestr("demo_pkg/_C.so", b"\x7fELF")
        zf.writestr("demo_pkg-1.2.0.dist-info/METADATA", "Name: demo-pkg\nVersion: 1.2.0\n")
    root = fetch_release("demo-pkg==1.2.0", cache=tmp_path / "sources")
    assert (root / "demo_pkg" / "ops.py").is_file() and not (root / "demo_pkg" / "_C.so").exists()
    assert fetch_release("demo-pkg==1.2.0", cache=tmp_path / "sources") == root  # reused
    from extractors.source_info import source_info

    assert source_info(root).commit == "demo-pkg==1.2.0"
    with pytest.raises(ExtractionError, match="pin a release as name==version"):
        fetch_release("demo-pkg>=1", cache=tmp_path / "sources")
