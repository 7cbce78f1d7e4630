from __future__ import annotations

import textwrap

from kernelbot.integrate.gather_param_reads import GatherParamReadsVisitor
from tests.kernelbot.integrate.integrate_testing import release_root

REFERENCE = textwrap.dedent(
    """
    def helper(steps):
        return steps


    def backend_update(bs, seq_lens, *, self_seq_lens, steps, last_bs=None, longest=0, shortest=0):
        longest = int(seq_lens.max())
        if bs:
            shortest = int(seq_lens.min())
        self_seq_lens[:bs].copy_(seq_lens[:bs])
        steps = helper(steps=steps) + bs + longest + shortest
        last_bs = bs
        return (steps, last_bs, longest, shortest)
    """
)


def test_written_only_attributes_are_not_reads() -> None:
    params = {"bs", "seq_lens", "self_seq_lens", "steps", "last_bs", "longest", "shortest"}
    reads = GatherParamReadsVisitor.of(REFERENCE, "backend_update", params)
    # `longest` is overwritten before any read; `shortest` only under a condition, so its value may matter.
    assert reads == {"bs", "seq_lens", "self_seq_lens", "steps", "shortest"}


def test_leaves_other_functions_out() -> None:
    assert GatherParamReadsVisitor.of(REFERENCE, "missing", {"steps"}) == set()


def test_real_lmdeploy_rmsnorm_reference(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from extractors.extract import ExtractOptions, extract

    root = release_root("lmdeploy==0.18.0")
    spec = "tests/extractors/specs/real/lmdeploy_rmsnorm.toml"
    target = "lmdeploy.pytorch.backends.default.norm:DefaultRMSNormImpl.forward"
    summary = extract(ExtractOptions(root, target, out=tmp_path / "task", spec=spec, probe=False))
    reference = (tmp_path / "task" / "reference.py").read_text()
    assert GatherParamReadsVisitor.of(reference, summary.entry, {"eps"}) == {"eps"}
