"""compare.py: one tensor against the reference, structured outputs, unordered rows, poison and mutation."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from evaluators.correctness.bits import changed_elements, count_true, poison_mask, same_bits
from evaluators.correctness.compare import (
    ReferenceRun,
    canonicalize_rows,
    compare_call,
    compare_tensors,
    flatten_outputs,
    output_structure,
)
from evaluators.correctness.tolerances import tolerance_for
from evaluators.task import CompareOptions, Task, Tolerance, UnorderedOutputs

TOL = Tolerance(atol=1e-5, rtol=1e-5)


def _task(**compare: object) -> Task:
    return Task(
        root=Path("."), name="t", entry="f", regime="graph", cases=(), compare=CompareOptions(**compare)
    )


# --- compare_tensors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32, torch.int32])
def test_slices_give_the_whole_tensor_verdict(monkeypatch: pytest.MonkeyPatch, dtype: torch.dtype) -> None:
    # Big outputs are compared slice by slice (memory); the verdict must not depend on the slicing.
    import evaluators.correctness.compare as compare

    gen = torch.Generator().manual_seed(3)
    expected = (torch.randn(13, 11, generator=gen) * 50).to(dtype)
    actual = expected.clone()
    actual[5, 3] += 7  # the first difference lies in a later slice
    actual[9, 10] -= 3
    if dtype.is_floating_point:
        actual[12, 0] = float("nan")
    verdicts = []
    for chunk in (1 << 22, 7, 1):
        monkeypatch.setattr(compare, "COMPARE_CHUNK", chunk)
        tol = tolerance_for(dtype) if dtype.is_floating_point else TOL
        verdicts.append(compare_tensors(expected, actual, tol, "return[1]"))
    assert not verdicts[0].ok and verdicts[0].mismatch is not None
    assert verdicts[0].mismatch.index == (5, 3)
    assert ("non-finite" in verdicts[0].reason) == dtype.is_floating_point
    assert verdicts[1] == verdicts[0] and verdicts[2] == verdicts[0]


def test_equal_tensors_pass_and_report_zero_error() -> None:
    x = torch.randn(4, 5)
    result = compare_tensors(x, x.clone(), TOL)
    assert result.ok and result.max_abs_error == 0.0 and result.mismatch is None


def test_mismatch_names_output_index_and_values() -> None:
    expected = torch.zeros(3, 4)
    actual = expected.clone()
    actual[2, 1] = 0.5
    result = compare_tensors(expected, actual, TOL, "return[1]")
    assert not result.ok
    assert result.mismatch is not None
    assert result.mismatch.output == "return[1]" and result.mismatch.index == (2, 1)
    assert result.mismatch.actual == 0.5 and result.mismatch.expected == 0.0
    assert "1 of 12 elements differ" in result.reason


def test_nan_never_passes_unless_the_reference_has_it() -> None:
    expected = torch.tensor([1.0, float("nan"), float("inf")])
    assert compare_tensors(expected, expected.clone(), TOL).ok
    bad = expected.clone()
    bad[0] = float("nan")
    result = compare_tensors(expected, bad, TOL)
    assert not result.ok and "non-finite" in result.reason
    flipped = expected.clone()
    flipped[2] = -float("inf")
    assert not compare_tensors(expected, flipped, TOL).ok


@pytest.mark.parametrize(
    ("actual", "fragment"),
    [
        (torch.zeros(3, dtype=torch.float64), "dtype"),
        (torch.zeros(4), "shape"),
        ([0.0, 0.0, 0.0], "expected a torch.Tensor"),
    ],
)
def test_wrong_dtype_shape_or_type_fails(actual: object, fragment: str) -> None:
    assert fragment in compare_tensors(torch.zeros(3), actual, TOL).reason


def test_tensor_subclass_is_refused() -> None:
    class Sneaky(torch.Tensor):
        pass

    sneaky = torch.zeros(3).as_subclass(Sneaky)
    assert "subclass" in compare_tensors(torch.zeros(3), sneaky, TOL).reason


def test_float64_reference_checks_the_candidate_dtype() -> None:
    exact = torch.randn(8, dtype=torch.float64)
    candidate = exact.to(torch.bfloat16)
    result = compare_tensors(exact, candidate, tolerance_for(torch.bfloat16), expected_dtype=torch.bfloat16)
    assert result.ok, result.reason
    assert not compare_tensors(exact, exact.float(), TOL, expected_dtype=torch.bfloat16).ok


def test_integer_outputs_are_exact_up_to_the_mismatch_fraction() -> None:
    expected = torch.arange(1000, dtype=torch.int32)
    actual = expected.clone()
    actual[:2] += 1
    assert not compare_tensors(expected, actual, TOL).ok
    assert compare_tensors(expected, actual, TOL, mismatch_fraction=0.005).ok
    assert not compare_tensors(expected, actual, TOL, mismatch_fraction=0.001).ok


# --- structure, rows, poison, bits --------------------------------------------------------------------


def test_flatten_outputs_names_every_leaf() -> None:
    a, b = torch.zeros(1), torch.ones(1)
    names = [n for n, _ in flatten_outputs((a, (b, 3), {"k": None}))]
    assert names == ["return[0]", "return[1][0]", "return[1][1]", "return[2]['k']"]
    assert flatten_outputs(a) == [("return", a)]
    assert output_structure((a, [b])) != output_structure((a, b))


def test_canonicalize_rows_sorts_keys_and_permutes_values() -> None:
    ids = torch.tensor([[3, 1, 2]])
    weights = torch.tensor([[0.3, 0.1, 0.2]])
    out = canonicalize_rows({"ids": ids, "w": weights}, "ids", ("w",))
    assert out["ids"].tolist() == [[1, 2, 3]]
    assert out["w"][0].tolist() == pytest.approx([0.1, 0.2, 0.3])


def test_poison_mask_recognises_all_ones_bytes_in_every_dtype() -> None:
    for dtype in (torch.float32, torch.bfloat16, torch.int32, torch.int64, torch.float16):
        raw = torch.full((4 * torch.empty(0, dtype=dtype).element_size(),), 255, dtype=torch.uint8)
        poisoned = raw.view(dtype)
        assert bool(poison_mask(poisoned).all()), dtype
    assert not bool(poison_mask(torch.tensor([float("nan")])).any())  # a computed NaN is not poison
    assert not bool(poison_mask(torch.tensor([-2, 5], dtype=torch.int32)).any())


def test_same_bits_and_changed_elements() -> None:
    a = torch.tensor([0.0, float("nan"), 1.0])
    b = a.clone()
    assert bool(same_bits(a, b).all())  # NaN equals NaN bitwise
    b[0] = -0.0
    assert changed_elements(a, b) == 1  # -0.0 is a change
    assert changed_elements(a, torch.zeros(4)) == 4


# --- a whole call -------------------------------------------------------------------------------------


def _run(outputs: dict, mutated: dict | None = None, structure: object = "T") -> ReferenceRun:
    mutated = mutated or {}
    dtypes = {k: v.dtype for k, v in {**outputs, **mutated}.items() if isinstance(v, torch.Tensor)}
    return ReferenceRun(structure, outputs, outputs, mutated, mutated, dtypes)


def _tol(dtype: torch.dtype) -> Tolerance:
    return tolerance_for(dtype)


def test_compare_call_flags_an_argument_the_reference_leaves_alone() -> None:
    x = torch.randn(5)
    out = torch.randn(5)
    after = x.clone()
    after[0] += 1
    verdict = compare_call(_run({"return": out}), out.clone(), {"x": x}, {"x": after}, _task(), _tol)
    assert not verdict.comparison.ok
    assert verdict.findings[0][0] == "input_mutation" and "'x'" in verdict.findings[0][1]


def test_compare_call_checks_mutated_arguments_against_the_reference() -> None:
    y = torch.zeros(4)
    expected_y = torch.arange(4.0)
    ref = _run({"return": None}, {"y": expected_y}, structure="NoneType")
    good = compare_call(ref, None, {"y": y}, {"y": expected_y.clone()}, _task(), _tol)
    assert good.comparison.ok and not good.findings
    bad = compare_call(ref, None, {"y": y}, {"y": torch.zeros(4)}, _task(), _tol)
    assert not bad.comparison.ok and bad.comparison.mismatch.output == "y"


def test_compare_call_reports_structure_and_lazy_outputs() -> None:
    out = torch.randn(3)
    assert "returned" in compare_call(_run({"return": out}), (out,), {}, {}, _task(), _tol).comparison.reason

    class Lazy(torch.Tensor):
        pass

    verdict = compare_call(_run({"return": out}), out.clone().as_subclass(Lazy), {}, {}, _task(), _tol)
    assert not verdict.comparison.ok
    assert [k for k, _ in verdict.findings] == ["lazy_output"]


def test_compare_call_recognises_recycled_memory() -> None:
    out = torch.randn(64)
    poisoned = torch.full((256,), 255, dtype=torch.uint8).view(torch.float32)
    verdict = compare_call(_run({"return": out}), poisoned, {}, {}, _task(), _tol)
    assert ("allocator_reuse" in {k for k, _ in verdict.findings}) and not verdict.comparison.ok


def test_compare_call_accepts_the_native_result_when_the_float64_one_differs() -> None:
    exact = torch.tensor([1.0000001], dtype=torch.float64)
    native = torch.tensor([1.0], dtype=torch.float32)
    ref = ReferenceRun("T", {"return": exact}, {"return": native}, {}, {}, {"return": torch.float32})
    strict = Tolerance(0.0, 0.0)
    assert compare_call(ref, native.clone(), {}, {}, _task(), lambda d: strict).comparison.ok


def test_unordered_rows_with_a_tolerated_near_tie() -> None:
    task = _task(mismatch_fraction=0.3, unordered=(UnorderedOutputs("1", ("0",)),))
    ids = torch.tensor([[4, 1, 2], [0, 5, 3], [7, 8, 9], [1, 2, 3]], dtype=torch.int32)
    weights = ids.float() / 10
    ref = _run({"return[0]": weights, "return[1]": ids}, structure=output_structure((weights, ids)))
    # Same sets in another order pass; one row picking expert 6 instead of 5 (a near-tie) is tolerated.
    order = torch.tensor([2, 0, 1])
    shuffled_ids, shuffled_w = ids[:, order], weights[:, order]
    assert compare_call(ref, (shuffled_w, shuffled_ids), {}, {}, task, _tol).comparison.ok
    tie_ids = shuffled_ids.clone()
    tie_ids[1, 2] = 6
    tie_w = shuffled_w.clone()
    tie_w[1, 2] = 0.6
    assert compare_call(ref, (tie_w, tie_ids), {}, {}, task, _tol).comparison.ok
    wrong_w = shuffled_w.clone()
    wrong_w[0, 0] += 1.0  # a row whose ids agree must still have the right weights
    assert not compare_call(ref, (wrong_w, shuffled_ids), {}, {}, task, _tol).comparison.ok


def test_count_true_counts_slice_by_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    import evaluators.correctness.bits as bits

    mask = torch.zeros(5, 7, dtype=torch.bool)
    assert count_true(mask) == 0
    mask[0, 1] = mask[3, 6] = mask[4, 0] = True
    monkeypatch.setattr(bits, "COUNT_SLICE", 4)
    assert count_true(mask) == 3 == count_true(mask.t())


# 2, 4, 8, 1 and 16 bytes per element
WORD_SIZES = [torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.complex128]


@pytest.mark.parametrize("dtype", WORD_SIZES)
def test_same_bits_per_word_size(dtype: torch.dtype) -> None:
    a = (torch.arange(12) - 6).to(dtype)
    b = a.clone()
    b[4] = b[4] + 1
    assert same_bits(a, b).tolist() == [i != 4 for i in range(12)]
    assert changed_elements(a, b) == 1
