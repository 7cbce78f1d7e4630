"""Extraction without a spec file, one inferred kind of rule per test, each on a small repository written into
tmp_path: sizes from the code's use of a parameter, string switches and None/tensor paths as cases, tied
dimensions (static and repaired from an error), dtypes, serving-shape presets, compare rules, a capture
winning over a draft, the refusal of a draft that cannot run, and an edited draft_spec.toml surviving
`--force`. Every written task's reference is run on every case."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from evaluators.task import load_task
from extractors import drafting
from extractors.drafting.gather_param_uses import gather_param_uses
from extractors.extract import ExtractOptions, extract
from extractors.gather_unordered_outputs import unordered_outputs
from kernelbot.cli import main
from tests.extractors.conftest import write_repo

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _repo(tmp_path: Path, source: str) -> Path:
    return write_repo(tmp_path / "repo", {"pkg/__init__.py": "", "pkg/ops.py": source})


def _extract(tmp_path: Path, source: str, function: str, **options: object) -> tuple:
    out = tmp_path / "task"
    summary = extract(ExtractOptions(_repo(tmp_path, source), f"pkg.ops:{function}", out=out, **options))  # type: ignore[arg-type]
    assert summary.probe is not None and summary.probe.ran, summary.probe
    assert not summary.probe.degenerate
    return load_task(out), tomllib.loads((out / "task.toml").read_text())


def _runs_every_case(task) -> list:  # type: ignore[no-untyped-def]
    reference, results = task.load_reference(), []
    for case in task.cases:
        args, kwargs = task.make_inputs(case, 1, "cpu")
        with torch.no_grad():
            results.append((case, args, kwargs, reference(*args, **kwargs)))
    return results


def _inferred(toml: dict, name: str) -> str:
    return next(line for line in toml["extraction"]["draft"]["inferred"] if line.startswith(f"{name}:"))


def test_sizes_come_from_views_ranges_topk_slices_and_size_comparisons(tmp_path: Path) -> None:
    task, toml = _extract(
        tmp_path,
        """
        import torch


        def fn(x, parts, k, width, limit, steps):
            if x.shape[-1] < limit:
                raise ValueError("too narrow")
            y = x.reshape(x.shape[0], parts, -1).sum(-1)
            top = torch.topk(y, k=k, dim=-1).values
            acc = x[..., :width].sum(-1, keepdim=True)
            for _ in range(steps):
                acc = acc * 0.5
            return top + acc
        """,
        "fn",
    )
    for name, evidence in [
        ("parts", ".reshape() size"),
        ("k", "torch.topk(k=)"),
        ("width", "slice bound"),
        ("limit", "compared with a size"),
        ("steps", "range()"),
    ]:
        assert _inferred(toml, name).startswith(f"{name}: int = "), _inferred(toml, name)
        assert evidence in _inferred(toml, name)
    assert "at most hidden" in _inferred(toml, "width")
    assert len(_runs_every_case(task)) == len(task.cases) >= 3


def test_string_switches_give_one_case_per_path_that_runs(tmp_path: Path) -> None:
    task, toml = _extract(
        tmp_path,
        """
        import torch


        def act(x, mode):
            if mode == "relu":
                return torch.relu(x)
            elif mode == "silu":
                return x * torch.sigmoid(x)
            elif mode == "fused":
                return fused_kernel_not_here(x)
            raise ValueError(mode)
        """,
        "act",
    )
    modes = {case.params.get("mode") for case in task.cases}
    assert modes == {"relu", "silu"}
    assert any("mode='fused'" in d and "not available" in d for d in toml["extraction"]["draft"]["dropped"])
    relu = next(r for c, _, _, r in _runs_every_case(task) if c.params["mode"] == "relu")
    assert float(relu.min()) >= 0.0


def test_none_and_tensor_paths_are_cases_when_both_are_reachable(tmp_path: Path) -> None:
    task, toml = _extract(
        tmp_path,
        """
        def norm(x, residual=None, unused=None):
            if residual is not None:
                x = x + residual
            if unused is not None and x.dim() > 99:
                x = x + unused
            return x * 2
        """,
        "norm",
    )
    with_residual = {case.params.get("with_residual") for case in task.cases}
    assert with_residual == {True, False}
    assert all(not case.params.get("with_unused") for case in task.cases)
    dropped = toml["extraction"]["draft"]["dropped"]
    assert any(d.startswith("unused=") and "takes the same path" in d for d in dropped), dropped
    for case, args, kwargs, _ in _runs_every_case(task):
        given = dict(zip(["x", "residual", "unused"], args, strict=False)) | kwargs
        assert (given.get("residual") is not None) == bool(case.params["with_residual"])


def test_dimensions_tied_by_shape_comparisons_matmul_broadcasts_and_views(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The ties are what is under test, not the sizes: served traffic of the drafting model alone, with a short
    # prefill (a CPU takes seconds per bfloat16 [1024, 4096] @ [4096, 4096], and the draft and the probe run
    # each case several times).
    load = drafting.load_profile
    default = load("default")
    small = replace(default, prefill_tokens=(16,), served=default.models[:1])
    monkeypatch.setattr(drafting, "load_profile", lambda name: small if name == "default" else load(name))
    task, toml = _extract(
        tmp_path,
        """
        def proj(x, w, shift, width: int, chunks: int):
            assert x.shape[-1] == width
            y = (x * shift.to(x.dtype)) @ w
            return y.view(y.shape[0], chunks, -1)
        """,
        "proj",
    )
    assert "size tied to x.shape" in _inferred(toml, "width") and "int = hidden" in _inferred(toml, "width")
    assert _inferred(toml, "w").startswith("w: tensor [hidden, hidden]")
    assert _inferred(toml, "shift").startswith("shift: tensor [tokens, hidden]")
    assert {c.params["tokens"] for c in task.cases} == {1, 64, 16}  # the short prefill: the profile above
    for _, args, _, result in _runs_every_case(task):
        assert result.shape[0] == args[0].shape[0] and args[1].shape[0] == args[0].shape[-1]


def test_a_shape_mismatch_is_repaired_by_retying_the_named_dimensions(tmp_path: Path) -> None:
    task, toml = _extract(
        tmp_path,
        """
        def rotate(query, cos):
            return query * cos.unsqueeze(-2)
        """,
        "rotate",
    )
    draft = toml["extraction"]["draft"]
    assert any("cos.shape[1] := head_dim" in r and "must match" in r for r in draft["repairs"]), draft
    assert _inferred(toml, "cos").startswith("cos: tensor [tokens, head_dim]")
    for _, args, _, result in _runs_every_case(task):
        assert result.shape == args[0].shape


def test_dtypes_come_from_casts_indexing_masks_and_dtype_comparisons(tmp_path: Path) -> None:
    task, _ = _extract(
        tmp_path,
        """
        import torch


        def pick(x, table, ids, keep, half):
            out = x.float() + table[ids].sum()
            out = out.masked_fill(keep, 0.0)
            if half.dtype == torch.float16:
                out = out + half.float().mean()
            return out
        """,
        "pick",
    )
    case = task.cases[0]
    args, kwargs = task.make_inputs(case, 0, "cpu")
    given = dict(zip(["x", "table", "ids", "keep", "half"], args, strict=False)) | kwargs
    assert given["x"].dtype == torch.bfloat16  # cast up to fp32 by the code: the model's dtype
    assert given["ids"].dtype == torch.int64 and int(given["ids"].max()) < given["table"].shape[0]
    assert given["keep"].dtype == torch.bool
    assert given["half"].dtype == torch.float16
    assert len(_runs_every_case(task)) == len(task.cases)


ROUTER = """
import torch


def route(hidden_states, gating_output, correction_bias, topk: int, num_expert_group: int, topk_group: int):
    assert hidden_states.shape[0] == gating_output.shape[0]
    scores = gating_output.sigmoid()
    n = scores.shape[0]
    biased = scores + correction_bias.unsqueeze(0)
    group_scores = biased.view(n, num_expert_group, -1).max(dim=-1).values
    group_idx = torch.topk(group_scores, k=topk_group, dim=-1, sorted=False)[1]
    mask = torch.zeros_like(group_scores).scatter_(1, group_idx, 1)
    mask = mask.unsqueeze(-1).expand(n, num_expert_group, -1).reshape(n, -1)
    _, ids = torch.topk(biased.masked_fill(~mask.bool(), float("-inf")), k=topk, dim=-1, sorted=False)
    weights = scores.gather(1, ids)
    weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, ids.to(torch.int32)
"""


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    """ROUTER extracted once with the default serving profile; read by the tests of what it drafts."""
    return _extract(tmp_path_factory.mktemp("router"), ROUTER, "route")


def test_serving_presets_give_real_model_dimensions_and_token_counts(tmp_path: Path, router: tuple) -> None:
    task, toml = router
    draft = toml["extraction"]["draft"]
    assert draft["model"] == "deepseek-v3"  # the only preset with expert groups
    case = task.cases[0].params
    assert (case["num_experts"], case["groups"], case["topk_group"], case["topk"]) == (256, 8, 4, 8)
    assert case["hidden"] == 7168
    # decode batches and a prefill chunk in the model's dtype, the first again in the other one the engine
    # serves
    bf16 = [c.params["tokens"] for c in task.cases if c.params["dtype"] == "bfloat16"]
    fp16 = [c.name for c in task.cases if c.params["dtype"] == "float16"]
    assert bf16 == [1, 64, 1024] and fp16 == ["decode1_float16"]
    assert task.dynamic == ("tokens",)
    # a router without groups, for an LMDeploy profile: a Qwen3 MoE
    plain = (
        "def route(hidden_states, router_logits, top_k: int):\n"
        "    assert hidden_states.shape[0] == router_logits.shape[0]\n"
        "    weights, ids = router_logits.softmax(-1).topk(top_k, dim=-1)\n"
        "    return weights, ids\n"
    )
    other = tmp_path / "plain"
    other.mkdir()
    task, toml = _extract(other, plain, "route", profile="lmdeploy")
    assert toml["extraction"]["draft"]["model"] == "qwen3-30b-a3b"
    assert (task.cases[0].params["num_experts"], task.cases[0].params["topk"]) == (128, 8)


def test_unsorted_topk_feeding_an_output_makes_its_rows_unordered(router: tuple) -> None:
    task, toml = router
    assert toml["compare"]["unordered"] == [{"key": "return[1]", "values": ["return[0]"]}]
    assert task.compare.unordered[0].key == "return[1]"
    # sorted rows, a stable sort, and indices scattered back in place imply no rule
    for source in [
        "def f(x, k: int):\n    v, i = x.topk(k, dim=-1)\n    return v, i\n",
        "def f(x):\n    v, i = x.sort(dim=-1, stable=True)\n    return v, i\n",
        "def f(p):\n    s, i = p.sort(dim=-1)\n    return s.new_zeros(s.shape).scatter_(-1, i, s)\n",
    ]:
        assert unordered_outputs(source, "f") == [], source
    flag = (
        "def f(x, k: int, shared: int = 0):\n    return x.topk(k, sorted=(True if shared > 0 else False))[1]"
    )
    assert unordered_outputs(flag, "f", {"shared": 0})[0].key == "return"
    assert unordered_outputs(flag, "f", {"shared": 1}) == []
    assert gather_param_uses(ROUTER, "route").params["topk_group"].int_uses


def test_a_capture_in_the_task_directory_wins_over_a_draft(tmp_path: Path) -> None:
    out = tmp_path / "task"
    (out / "captured").mkdir(parents=True)
    recorded = (torch.randn(3, 5), torch.randn(5))
    torch.save({"args": recorded, "kwargs": {}}, out / "captured" / "call0.pt")
    repo = _repo(tmp_path, "def scale(x, w):\n    return x * w\n")
    summary = extract(ExtractOptions(repo, "pkg.ops:scale", out=out))
    assert summary.inputs_source == "capture" and not summary.draft
    task = load_task(out)
    assert {c.name for c in task.cases} == {"call0", "captured:call0"}
    assert not (out / "draft_spec.toml").exists()


def test_a_draft_that_cannot_run_is_refused_with_the_last_error_and_the_assignment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _repo(tmp_path, "from missing_kernels import fused\n\n\ndef broken(x):\n    return fused(x) + x\n")
    out = tmp_path / "task"
    code = main(["extract", "--repo", str(repo), "--function", "pkg.ops:broken", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 1
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: refused pkg.ops:broken"), err
    assert "fused is not available in this reference" in err and "inferred: x: tensor [tokens, hidden]" in err
    assert f"edit {out / 'draft_spec.toml'} and pass it with --spec" in err
    assert (out / "draft_spec.toml").is_file()
    assert not (out / "task.toml").exists() and not (out / "reference.py").exists()


def test_force_never_deletes_an_edited_draft_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _repo(tmp_path, "def scale(x, w):\n    return x * w\n")
    out = tmp_path / "task"
    args = ["extract", "--repo", str(repo), "--function", "pkg.ops:scale", "--out", str(out)]
    assert main(args) == 0
    draft = out / "draft_spec.toml"
    untouched = draft.read_text()
    assert main([*args, "--force"]) == 0  # an untouched draft is simply redrafted
    assert draft.read_text() == untouched and not (out / "draft_spec.new.toml").exists()
    edited = untouched.replace("[sizes]", "[sizes]\nextra = 3", 1)
    draft.write_text(edited)
    assert main([*args, "--force"]) == 0
    assert draft.read_text() == edited and (out / "draft_spec.new.toml").is_file()
    assert "kept your edited draft_spec.toml" in capsys.readouterr().out
    assert main([*args, "--force", "--spec", str(draft)]) == 0  # the edited draft, passed back
    assert draft.read_text() == edited
    assert load_task(out).cases[0].params["extra"] == 3


def test_error_lines_print_brackets_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    from kernelbot.console import error

    error("inferred: x: tensor [tokens, hidden] bfloat16; y: [1, 2]")
    assert "x: tensor [tokens, hidden] bfloat16; y: [1, 2]" in capsys.readouterr().err


def test_a_trial_that_hangs_is_killed_and_the_next_one_starts_a_fresh_worker(tmp_path: Path) -> None:
    from extractors.drafting.trials import TrialRunner
    from extractors.signature import entry_signature

    source = "import time\n\n\ndef f(x, wait: int):\n    time.sleep(wait)\n    return x * 2\n"
    runner = TrialRunner(source, "f", entry_signature(source, "f"), timeout=3.0)
    try:
        args = {"x": {"shape": [4], "dtype": "float32"}, "wait": {"value": "wait"}}
        hung = runner.run(args, {"wait": 60}, [{"name": "probe", "wait": 60}])
        assert not hung[0].ok and hung[0].error == "ran past 3s"
        ran = runner.run(
            args, {"wait": 0}, [{"name": "probe", "wait": 0}], full=("probe",), repeat=("probe",)
        )
        assert ran[0].accepted and ran[0].outputs == ["return: float32[4]"], ran[0]
    finally:
        runner.close()


def test_a_draft_takes_the_sizes_of_other_model_families_that_use_the_function(tmp_path: Path) -> None:
    """A grouped router is run by DeepSeek-V3 and by Kimi-K2 (384 experts, one group kept): the draft adds a
    case at Kimi-K2's sizes, which the reference ran on, instead of DeepSeek-V3's sizes only."""
    task, toml = _extract(tmp_path, ROUTER, "route", profile="sglang")
    assert toml["extraction"]["draft"]["model"] == "deepseek-v3"
    extra = [c for c in task.cases if c.name.endswith("_kimi-k2")]
    assert len(extra) == 1
    params = extra[0].params
    assert (params["num_experts"], params["topk_group"], params["topk"]) == (384, 1, 8)
    assert params["tokens"] == 64
    assert len(_runs_every_case(task)) == len(task.cases)


def test_a_function_drafted_in_float32_alone_is_also_drafted_in_the_served_dtypes() -> None:
    """Logits and probabilities are drafted in float32; the engine may pass its activation dtypes too, so the
    draft adds the first case in each served dtype, unless the judge finds that case degenerate there (a
    half-precision value that rounds the outputs to what any seed gives)."""
    from extractors.drafting import _served_dtypes
    from extractors.drafting.serving_shapes import load_profile
    from extractors.drafting.trials import TrialRunner
    from extractors.input_spec import InputSpec
    from extractors.signature import entry_signature

    source = (
        "import torch\n\n\n"
        "def scale(logits, penalties):\n"
        "    return torch.where(logits > 0, logits / penalties, logits * penalties)\n\n\n"
        "def tiny(logits, penalties):\n"
        "    return (logits * penalties) * 1e-9 + 1.0\n"
    )
    profile = load_profile("sglang")
    args = {
        "logits": {"shape": ["batch", "vocab"], "dtype": "float32"},
        "penalties": {"shape": ["batch", 1], "dtype": "float32", "init": "rand", "low": 1.0, "high": 2.0},
    }
    spec = InputSpec(
        sizes={"batch": [2], "vocab": [64]},
        cases=[{"name": "decode2", "batch": 2}, {"name": "decode8", "batch": 8}],
        args=args,
        source="draft",
    )
    runner = TrialRunner(source, "scale", entry_signature(source, "scale"))
    try:
        drafted, described = _served_dtypes(runner, spec, profile)
    finally:
        runner.close()
    assert [c["name"] for c in drafted.cases or []] == [
        "decode2", "decode8", "decode2_bfloat16", "decode2_float16",
    ]  # fmt: skip
    assert {a["dtype"] for a in drafted.args.values()} == {"dtype"} and drafted.sizes["dtype"] == ["float32"]
    assert described == [
        "decode2_bfloat16: the first case in bfloat16",
        "decode2_float16: the first case in float16",
    ]

    runner = TrialRunner(source, "tiny", entry_signature(source, "tiny"))
    try:
        kept, described = _served_dtypes(runner, spec, profile)
    finally:
        runner.close()
    assert kept is spec and described == []  # 1 + 1e-9 * x is 1.0 in half precision for every seed
