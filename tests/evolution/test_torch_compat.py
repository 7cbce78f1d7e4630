"""The tracers' change to torch for releases before 2.13: a copy between two slices whose widths are values
the host read (unbacked symbols) traces as one graph, the copy's meta kernel is swapped only inside the
block and only on those releases, and torch's own kernel is back afterwards."""

from __future__ import annotations

import pytest
import torch
from torch._C import DispatchKey

from evolution.writers.tracing import torch_compat
from evolution.writers.tracing.torch_compat import unbacked_copies


def _decode_pages(seq_lens_cpu: torch.Tensor, table: torch.Tensor, slots: torch.Tensor, page: int) -> int:
    """The example engine's decode-metadata pattern: a width read from a CPU tensor bounds both slices."""
    pages = -(-int(seq_lens_cpu.max()) // page)
    table[:, :pages].copy_(slots[:, :pages] // page)
    return pages


def _inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    seq_lens = torch.tensor([5, 17, 9])
    return seq_lens, torch.zeros(3, 8, dtype=torch.int32), torch.arange(24, dtype=torch.int32).view(3, 8), 4


@pytest.mark.parametrize("version", ["2.11.0+cu130", "2.13.0+cpu"])
def test_the_copy_meta_is_swapped_only_inside_and_only_before_2_13(
    monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    kernels = torch.ops.aten.copy_.default.py_kernels
    original = kernels[DispatchKey.Meta]
    monkeypatch.setattr(torch, "__version__", version)
    with unbacked_copies():
        inside = kernels[DispatchKey.Meta]
    assert kernels[DispatchKey.Meta] is original
    if version.startswith("2.11"):
        assert inside is torch_compat._deferred_copy_meta
    else:
        assert inside is original


def test_a_copy_between_host_bounded_slices_traces_under_the_swapped_meta(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(torch, "__version__", "2.11.0")  # the swap is what this trace runs on
    torch._dynamo.reset()
    graphs: list[torch.fx.GraphModule] = []

    def backend(gm: torch.fx.GraphModule, example_inputs: list) -> object:
        graphs.append(gm)
        return gm

    compiled = torch.compile(_decode_pages, backend=backend, dynamic=True, fullgraph=True)
    expected_table = _inputs()[1]
    expected = _decode_pages(_inputs()[0], expected_table, *_inputs()[2:])
    seq_lens, table, slots, page = _inputs()
    import torch._dynamo.config as dynamo_config

    with dynamo_config.patch(capture_scalar_outputs=True), unbacked_copies():
        assert compiled(seq_lens, table, slots, page) == expected == 5
    torch._dynamo.reset()
    assert len(graphs) == 1
    assert torch.equal(table, expected_table) and table[:, :5].ne(0).any()
