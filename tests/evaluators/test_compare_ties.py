"""[[compare.ties]]: top-k ids may differ from the reference's only among exactly equal scores — inside a run
of equal scores, or at the boundary with an id whose own score is the k-th one — and never otherwise."""

from __future__ import annotations

from pathlib import Path

import torch

from evaluators.correctness.compare import CallComparison, ReferenceRun, compare_call, output_structure
from evaluators.correctness.selections import SelectionRecorder, selection_sources
from evaluators.correctness.tolerances import tolerance_for
from evaluators.task import CompareOptions, Task, TiedOutputs, Tolerance, UnorderedOutputs

# One row of eight experts. Top-4, sorted: 0.5 | 0.3 0.3 | 0.2 (the boundary run: ids 1, 2, 3 all score 0.2).
SCORES = torch.tensor([[0.5, 0.2, 0.2, 0.2, 0.1, 0.3, 0.3, 0.05]], dtype=torch.float64)
REF_IDS = torch.tensor([[0, 5, 6, 1]])
TIES = TiedOutputs("return[1]", "return[0]")


def _task(*ties: TiedOutputs, **compare: object) -> Task:
    options = CompareOptions(ties=ties, **compare)  # type: ignore[arg-type]
    return Task(root=Path("."), name="t", entry="f", regime="graph", cases=(), compare=options)


def _ref(scores: torch.Tensor, ids: torch.Tensor, observed: bool = True) -> ReferenceRun:
    values = scores.gather(-1, ids)
    outputs = {"return[0]": values, "return[1]": ids}
    dtypes = {"return[0]": torch.float32, "return[1]": torch.int64}
    sources = {"return[1]": scores} if observed else {}
    return ReferenceRun(output_structure((values, ids)), outputs, outputs, {}, {}, dtypes, sources, sources)


def _judge(ids: list[list[int]], *, observed: bool = True, task: Task | None = None) -> CallComparison:
    """A candidate returning `ids` with the values they really select."""
    cand = torch.tensor(ids)
    values = SCORES.gather(-1, cand.clamp(0, SCORES.shape[-1] - 1)).float()
    return compare_call(_ref(SCORES, REF_IDS, observed), (values, cand), {}, {}, task or _task(TIES), _tol)


def _tol(dtype: torch.dtype) -> Tolerance:
    return tolerance_for(dtype)


def test_tied_ids_may_come_in_any_order_inside_a_run() -> None:
    assert _judge([[0, 6, 5, 1]]).comparison.ok
    assert _judge([[0, 6, 5, 1]], observed=False).comparison.ok  # the values output alone shows this tie


def test_the_boundary_run_may_hold_another_id_of_exactly_the_kth_score() -> None:
    for ids in ([[0, 5, 6, 3]], [[0, 6, 5, 2]]):
        assert _judge(ids).comparison.ok, ids


def test_a_boundary_substitute_needs_the_indexed_tensor() -> None:
    verdict = _judge([[0, 5, 6, 3]], observed=False)
    assert not verdict.comparison.ok
    assert verdict.comparison.mismatch.output == "return[1]"
    assert verdict.comparison.mismatch.index == (0, 3)
    assert (verdict.comparison.mismatch.expected, verdict.comparison.mismatch.actual) == (1, 3)
    assert "did not choose" in verdict.comparison.reason and "not observed" in verdict.comparison.reason


def test_an_untied_swap_fails_and_says_which_scores_differ() -> None:
    verdict = _judge([[0, 5, 1, 6]])  # id 1 (0.2) moved ahead of id 6 (0.3)
    assert not verdict.comparison.ok
    mismatch = verdict.comparison.mismatch
    assert mismatch is not None and mismatch.output == "return[0]"  # the values at position 2 differ first
    assert not _judge([[0, 5, 1, 6]], task=_task(TiedOutputs("return[1]"))).comparison.ok


def test_an_untied_id_in_a_tied_run_fails() -> None:
    for ids in ([[0, 5, 4, 1]], [[0, 5, 6, 4]], [[0, 5, 6, 7]]):  # 0.1 / 0.05 are no 0.3 / 0.2
        verdict = _judge(ids)
        assert not verdict.comparison.ok, ids
    # The right values with a wrong id: the ids fail, and the reason says why this is no tie.
    lying = (SCORES.gather(-1, REF_IDS).float(), torch.tensor([[0, 5, 6, 4]]))
    reason = compare_call(_ref(SCORES, REF_IDS), lying, {}, {}, _task(TIES), _tol).comparison.reason
    assert reason.startswith("return[1][0, 3] = 4, expected 1 (1 of 4 elements differ")
    assert "position 3 holds id 4 scoring 0.1" in reason and "id 1 there scores 0.2" in reason


def test_a_repeated_id_fails_even_when_its_score_fits() -> None:
    verdict = _judge([[0, 5, 5, 1]])  # 5 scores 0.3 like the 6 it replaces
    assert not verdict.comparison.ok
    assert "holds id 5 twice" in verdict.comparison.reason


def test_an_id_outside_the_scores_fails() -> None:
    cand = torch.tensor([[0, 5, 6, 8]])
    values = torch.tensor([[0.5, 0.3, 0.3, 0.2]])
    verdict = compare_call(_ref(SCORES, REF_IDS), (values, cand), {}, {}, _task(TIES), _tol)
    assert not verdict.comparison.ok and "outside the 8 scores" in verdict.comparison.reason


def test_values_must_still_be_the_selected_ones() -> None:
    cand = torch.tensor([[0, 5, 6, 3]])
    values = torch.tensor([[0.5, 0.3, 0.3, 0.25]])  # the right tied id, a wrong value
    verdict = compare_call(_ref(SCORES, REF_IDS), (values, cand), {}, {}, _task(TIES), _tol)
    assert not verdict.comparison.ok and verdict.comparison.mismatch.output == "return[0]"


def test_followers_move_with_their_ids() -> None:
    """A value gathered with the ids from another tensor is compared for the same id, wherever it sits."""
    other = torch.arange(8.0).unsqueeze(0) * 10
    ref = _ref(SCORES, REF_IDS)
    ref.outputs = ref.native_outputs = {**ref.outputs, "return[2]": other.gather(-1, REF_IDS)}
    ref.dtypes["return[2]"] = torch.float32
    ref.structure = output_structure((other, other, other))
    task = _task(TiedOutputs("return[1]", "return[0]", ("return[2]",)))
    cand = torch.tensor([[0, 6, 5, 1]])
    values = SCORES.gather(-1, cand).float()
    good = compare_call(ref, (values, cand, other.gather(-1, cand)), {}, {}, task, _tol)
    assert good.comparison.ok, good.comparison.reason
    wrong = compare_call(ref, (values, cand, other.gather(-1, REF_IDS)), {}, {}, task, _tol)
    assert not wrong.comparison.ok and wrong.comparison.mismatch.output == "return[2]"


def test_unordered_rows_with_ties_compare_score_multisets() -> None:
    task = _task(TIES, unordered=(UnorderedOutputs("return[1]", ("return[0]",)),))
    assert _judge([[3, 6, 0, 5]], task=task).comparison.ok  # any order, boundary id 3 for 1
    assert not _judge([[4, 6, 0, 5]], task=task).comparison.ok  # 0.1 is not among the top four
    assert not _judge([[6, 6, 0, 5]], task=task).comparison.ok  # repeated
    assert not _judge([[2, 3, 0, 5]], task=task).comparison.ok  # two 0.2s for a 0.3 and a 0.2


def test_rows_of_a_batch_are_judged_apart_and_the_fraction_still_applies() -> None:
    scores = SCORES.expand(10, -1).clone()
    scores[:, 7] = torch.linspace(0.0, 0.09, 10, dtype=torch.float64)
    scores[9, 7] = 0.2 + 1e-12  # a near-tie: 7 now beats the boundary run in row 9 alone
    ref_ids = scores.topk(4, dim=-1).indices
    ref_ids[:, 3] = torch.where(scores[:, 7] > 0.2, 7, 1)
    cand = ref_ids.clone()
    cand[:, [1, 2]] = cand[:, [2, 1]]  # every row: the 0.3 pair swapped
    cand[:5, 3] = 2  # half the rows: another boundary id
    cand[9, 3] = 1  # the near-tie row chose 1 (0.2) over 7 (0.2 + 1e-12)
    values = scores.gather(-1, cand).float()
    ref = _ref(scores, ref_ids)
    strict = compare_call(ref, (values, cand), {}, {}, _task(TIES), _tol).comparison
    # Only the near-tie row is left; it is not aligned, so its swapped pair counts too.
    assert not strict.ok and strict.mismatch.index[0] == 9
    assert "3 of 40 elements differ" in strict.reason and "position 3 holds id 1" in strict.reason
    tolerant = compare_call(ref, (values, cand), {}, {}, _task(TIES, mismatch_fraction=0.1), _tol)
    assert tolerant.comparison.ok, tolerant.comparison.reason


def test_a_tie_only_the_native_run_has_is_a_tie() -> None:
    """float64 tells three scores apart that the native float32 run rounds to one: either answer passes."""
    wide = torch.tensor([[0.3, 0.3 + 1e-12, 0.3 + 2e-12, 0.1]], dtype=torch.float64)
    native = wide.float()
    wide_ids, native_ids = torch.tensor([[2, 1]]), torch.tensor([[0, 1]])
    run = _ref(wide, wide_ids)
    native_run = _ref(native.double(), native_ids)
    run.native_outputs, run.native_sources = native_run.outputs, native_run.sources
    cand = torch.tensor([[1, 2]])
    values = native.gather(-1, cand)
    assert compare_call(run, (values, cand), {}, {}, _task(TIES), _tol).comparison.ok
    untied = torch.tensor([[1, 3]])
    verdict = compare_call(run, (native.gather(-1, untied), untied), {}, {}, _task(TIES), _tol)
    assert not verdict.comparison.ok


def test_leading_dimensions_and_sort_indices() -> None:
    scores = torch.tensor([[[2.0, 1.0, 1.0, 3.0], [0.0, 0.0, 0.0, 1.0]]], dtype=torch.float64)
    ref_ids = scores.sort(dim=-1, descending=True, stable=True).indices
    cand = torch.tensor([[[3, 0, 2, 1], [3, 2, 0, 1]]])
    task = _task(TIES)
    values = scores.gather(-1, cand).float()
    assert compare_call(_ref(scores, ref_ids), (values, cand), {}, {}, task, _tol).comparison.ok
    wrong = torch.tensor([[[3, 0, 2, 1], [3, 2, 1, 1]]])
    verdict = compare_call(
        _ref(scores, ref_ids), (scores.gather(-1, wrong).float(), wrong), {}, {}, task, _tol
    )
    assert not verdict.comparison.ok and "ties: return[1][0, 1] holds id 1 twice" in verdict.comparison.reason


def test_the_recorder_finds_the_scores_the_returned_ids_index() -> None:
    logits = torch.tensor([[1.0, 2.0, 2.0, 0.5], [3.0, 3.0, 3.0, 3.0]], dtype=torch.bfloat16)
    with SelectionRecorder() as recorder:
        probs = torch.softmax(logits, dim=-1, dtype=torch.float32)
        weights, ids = torch.topk(probs, 2, dim=-1)
        shifted = probs.topk(2).indices + 4  # transformed on the way out: indexes nothing recorded
        order = probs.argsort(dim=0)  # not along the last dimension: not recorded
    leaves = {"return[0]": weights, "return[1]": ids.to(torch.int32), "return[2]": shifted, "x": order}
    sources = selection_sources(recorder.selections, leaves, ["return[1]", "return[2]", "x"])
    assert list(sources) == ["return[1]"]
    assert torch.equal(sources["return[1]"], probs)
    ids.add_(1)  # the reference writing into its own result later changes nothing recorded
    assert torch.equal(recorder.selections[0].indices, ids - 1)
