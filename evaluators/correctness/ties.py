"""Top-k / sort indices among tied scores (`[[compare.ties]]`): which of several exactly equal scores comes
first, and which of them makes it into the top k at the boundary, is not defined — torch's own CPU and CUDA
kernels pick differently — so a candidate's ids may differ from the reference's exactly there.

A row of the candidate's ids is accepted when it holds no id twice and, slot by slot, the score of its id is
exactly the reference's score at that slot (for unordered rows, `[[compare.unordered]]`: when the multisets
of scores agree). Scores are those of the tensor the reference's top-k/sort ran over when that call was
observed (`correctness_selections`): then a boundary id the reference did not choose is checked by its own
score, and an id outside the tensor fails. Otherwise they are the rule's `values` output, which knows only the
reference's ids: ids may then be permuted within a run of equal scores, never replaced.

Ties mean exact equality in the reference's own numbers (its float64 run, or its native run: an answer valid
against either passes, like every other output). Not equality within a tolerance: exact equality is what
torch.topk itself breaks arbitrarily, ties of low-precision inputs are exact in any deterministic computation,
and a tolerance would let a kernel swap genuinely ordered neighbours (near-ties stay the business of the
bounded `mismatch_fraction`) and would not even be transitive, so runs would have no edges.

An accepted row is aligned to the reference — its ids replaced by the reference's, its followers (`values`,
`follow`, the unordered rule's values) permuted along — so the element-wise comparison that follows judges the
values slot by slot and reports nothing for it. A row that fails is left as it is: the comparison reports its
first difference as before, and `TieAlignment.notes` says why the row was not a tie.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import torch

from evaluators.task import Task, TiedOutputs


@dataclass
class TieAlignment:
    outputs: dict[str, object]  # the candidate's outputs, tied rows aligned to the reference
    notes: dict[str, str] = field(default_factory=dict)  # key -> why its first differing row is no tie


def resolve_name(name: str, values: Mapping[str, object]) -> str:
    """Task files may name the second return value "return[1]" or just "1"."""
    return name if name in values or f"return[{name}]" not in values else f"return[{name}]"


def align_ties(
    expected: Mapping[str, object], actual: dict[str, object], sources: Mapping[str, torch.Tensor], task: Task
) -> TieAlignment:
    """Apply every `[[compare.ties]]` rule of `task` to the candidate's `actual` outputs."""
    result = TieAlignment(dict(actual))
    unordered = {resolve_name(g.key, expected): g.values for g in task.compare.unordered}
    for rule in task.compare.ties:
        key = resolve_name(rule.key, expected)
        named = (resolve_name(n, expected) for n in (*rule.followers, *unordered.get(key, ())))
        followers = list(dict.fromkeys(n for n in named if n != key))
        note = _align_rule(expected, result.outputs, sources.get(key), rule, key, followers, key in unordered)
        if note:
            result.notes[key] = note
    return result


def _integer_tensor(value: object) -> bool:
    return isinstance(value, torch.Tensor) and not (value.dtype.is_floating_point or value.dtype.is_complex)


def _align_rule(
    expected: Mapping[str, object],
    outputs: dict[str, object],
    source: torch.Tensor | None,
    rule: TiedOutputs,
    key: str,
    followers: list[str],
    unordered: bool,
) -> str:
    ref, cand = expected.get(key), outputs.get(key)
    if not (_integer_tensor(ref) and _integer_tensor(cand)):
        return ""
    assert isinstance(ref, torch.Tensor) and isinstance(cand, torch.Tensor)
    if ref.shape != cand.shape or ref.dim() == 0 or ref.numel() == 0 or ref.device.type != cand.device.type:
        return ""
    device, width = cand.device, ref.shape[-1]
    r_all = ref.detach().to(device).reshape(-1, width).to(torch.int64)
    c_all = cand.detach().reshape(-1, width).to(torch.int64)
    rows = torch.nonzero((r_all != c_all).any(dim=-1)).flatten()
    if rows.numel() == 0:
        return ""
    scores = _Scores.build(expected, source, rule, key, r_all, device)
    if scores is None:
        return ""
    r, c = r_all[rows], c_all[rows]
    verdict = _RowVerdict.judge(r, c, rows, scores, unordered)
    ok = verdict.ok
    if bool(ok.any()):
        _apply(outputs, key, followers, ref.shape, rows[ok], r[ok], c[ok], verdict.a[ok], verdict.b[ok])
    if bool(ok.all()):
        return ""
    return verdict.explain(int(torch.nonzero(~ok)[0]), ref.shape, key)


@dataclass(frozen=True)
class _Scores:
    """The reference's scores of any id (`table`, one row per key row) or only of its own ids (`values`)."""

    table: torch.Tensor | None
    values: torch.Tensor | None

    @staticmethod
    def build(
        expected: Mapping[str, object],
        source: torch.Tensor | None,
        rule: TiedOutputs,
        key: str,
        r_all: torch.Tensor,
        device: torch.device,
    ) -> _Scores | None:
        rows = r_all.shape[0]
        if isinstance(source, torch.Tensor) and source.dim() and source.numel() // source.shape[-1] == rows:
            return _Scores(source.detach().to(device).reshape(rows, source.shape[-1]), None)
        values = expected.get(resolve_name(rule.values, expected)) if rule.values else None
        if isinstance(values, torch.Tensor) and values.numel() == r_all.numel():
            return _Scores(None, values.detach().to(device).reshape(r_all.shape))
        return None  # nothing says which scores are tied: the ids are compared exactly


def _same(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    same = x == y
    if x.dtype.is_floating_point:
        same = same | (torch.isnan(x) & torch.isnan(y))
    return same


def _member(ids: torch.Tensor, pool: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per slot of `ids`: is it in the same row of `pool`, and at which slot of `pool`."""
    ordered, order = pool.sort(dim=-1)
    at = torch.searchsorted(ordered, ids).clamp(max=pool.shape[-1] - 1)
    return ordered.gather(-1, at) == ids, order.gather(-1, at)


@dataclass(frozen=True)
class _RowVerdict:
    r: torch.Tensor  # reference ids of the rows that differ
    c: torch.Tensor  # candidate ids of those rows
    rows: torch.Tensor  # their row numbers
    a: torch.Tensor  # the reference's score per slot
    b: torch.Tensor  # the score of the candidate's id per slot (meaningless where not `known`)
    known: torch.Tensor  # the candidate's id has a score the evaluator knows
    repeated: torch.Tensor  # per slot: this id already appeared earlier in the row
    same: torch.Tensor  # per slot (sorted rows) or per sorted slot (unordered rows): scores equal
    ok: torch.Tensor  # per row
    unordered: bool
    span: int  # how many scores the ids index (0: only the reference's own ids are known)

    @staticmethod
    def judge(
        r: torch.Tensor, c: torch.Tensor, rows: torch.Tensor, scores: _Scores, unordered: bool
    ) -> _RowVerdict:
        if scores.table is not None:
            table = scores.table[rows]
            known = (c >= 0) & (c < table.shape[-1])
            a = table.gather(-1, r.clamp(0, table.shape[-1] - 1))
            b = table.gather(-1, c.clamp(0, table.shape[-1] - 1))
        else:
            assert scores.values is not None
            a = scores.values[rows]
            known, slot = _member(c, r)
            b = a.gather(-1, slot)
        ordered, order = c.sort(dim=-1, stable=True)
        dup_sorted = torch.zeros_like(ordered, dtype=torch.bool)
        dup_sorted[:, 1:] = ordered[:, 1:] == ordered[:, :-1]
        repeated = torch.zeros_like(dup_sorted).scatter(-1, order, dup_sorted)
        if unordered:
            fill = torch.where(known, b, a)  # unknown slots fail through `known`; keep the sort meaningful
            same = _same(a.sort(dim=-1).values, fill.sort(dim=-1).values)
        else:
            same = _same(a, b)
        ok = known.all(dim=-1) & ~repeated.any(dim=-1) & same.all(dim=-1)
        span = scores.table.shape[-1] if scores.table is not None else 0
        return _RowVerdict(r, c, rows, a, b, known, repeated, same, ok, unordered, span)

    def explain(self, i: int, shape: torch.Size, key: str) -> str:
        """Why row `i` (of the differing rows) is not a tie, in one sentence."""
        where = _row_label(key, int(self.rows[i]), shape)
        ids = self.c[i].tolist()
        for j, repeated in enumerate(self.repeated[i].tolist()):
            if repeated:
                return f"{where} holds id {ids[j]} twice (top-k ids are distinct)"
        for j, known in enumerate(self.known[i].tolist()):
            if known:
                continue
            if self.span:
                return f"{where} holds id {ids[j]}, outside the {self.span} scores the ids index"
            return (
                f"{where} holds id {ids[j]}, which the reference did not choose; the tensor the ids index "
                "was not observed, so it cannot be checked as a tie"
            )
        if self.unordered:
            return (
                f"{where}: the scores of its ids are not the reference's as a set (ids may differ only among "
                "exactly equal scores)"
            )
        j = int(torch.nonzero(~self.same[i])[0])
        return (
            f"{where}: position {j} holds id {ids[j]} scoring {float(self.b[i, j]):.9g}, the reference's id "
            f"{int(self.r[i, j])} there scores {float(self.a[i, j]):.9g} (ids may differ only among exactly "
            "equal scores)"
        )


def _row_label(key: str, row: int, shape: torch.Size) -> str:
    lead = tuple(shape[:-1])
    if not lead:
        return f"ties: {key}"
    index = torch.unravel_index(torch.tensor(row), lead)
    return f"ties: {key}[{', '.join(str(int(i)) for i in index)}]"


def _apply(
    outputs: dict[str, object],
    key: str,
    followers: list[str],
    shape: torch.Size,
    rows: torch.Tensor,
    r: torch.Tensor,
    c: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
) -> None:
    """Give the accepted rows the reference's ids and move each follower's slot to the reference slot of the
    same id (a tied id the reference did not choose takes a reference slot of the same score)."""
    shared_c, _ = _member(c, r)
    shared_r, _ = _member(r, c)
    from_slot = _lexsort(b, ~shared_c, c)  # candidate slots, grouped by score, shared ids first
    to_slot = _lexsort(a, ~shared_r, r)  # reference slots in the same arrangement
    source_slot = torch.empty_like(to_slot).scatter_(-1, to_slot, from_slot)
    width = shape[-1]
    ids = outputs[key]
    assert isinstance(ids, torch.Tensor)
    flat = ids.detach().clone().reshape(-1, width)
    flat[rows] = r.to(flat.dtype)
    outputs[key] = flat.reshape(ids.shape)
    for name in followers:
        value = outputs.get(name)
        if not isinstance(value, torch.Tensor) or value.shape != shape or name == key:
            continue
        moved = value.detach().clone().reshape(-1, width)
        moved[rows] = moved[rows].gather(-1, source_slot)
        outputs[name] = moved.reshape(value.shape)


def _lexsort(major: torch.Tensor, middle: torch.Tensor, minor: torch.Tensor) -> torch.Tensor:
    """Slot order per row by (major, middle, minor), each ascending."""
    order = minor.argsort(dim=-1, stable=True)
    order = order.gather(-1, middle.gather(-1, order).to(torch.int64).argsort(dim=-1, stable=True))
    return order.gather(-1, major.gather(-1, order).argsort(dim=-1, stable=True))
