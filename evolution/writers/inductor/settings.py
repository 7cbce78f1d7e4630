"""The Inductor and Dynamo settings of a capture, and the code-generation-only Triton target used when there
is no GPU."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def inductor_settings(device: str) -> Iterator[None]:
    import torch._dynamo.config as dynamo_config
    import torch._inductor.config as inductor_config
    import torch.fx.experimental._config as fx_config

    wanted = {
        "force_disable_caches": True,
        "fx_graph_cache": False,
        "size_asserts": False,
        "alignment_asserts": False,
        "assert_indirect_indexing": False,
        "cpu_backend": "triton",
        "compile_threads": 1,  # nothing is compiled: no pool of compile workers to start
        # Kernel shapes a plain launch cannot reproduce (split/cooperative launches, runtime kernel choice,
        # combined kernels) or helpers we do not re-implement (online softmax): ask for the classic forms.
        "online_softmax": False,
        "combo_kernels": False,
        "triton.mix_order_reduction": False,
        "triton.cooperative_reductions": False,
        "triton.multi_kernel": 0,
    }
    # Only the settings this torch knows (names move between releases).
    try:
        known = set(inductor_config.get_config_copy())
    except AttributeError:  # pragma: no cover - very old config modules
        known = {k for k in wanted if "." not in k and hasattr(inductor_config, k)}
    settings = {k: v for k, v in wanted.items() if k in known}
    # Python floats (eps, scales) stay arguments of the graph instead of constants baked into the kernels
    # (older releases specialise them by default); ints are not specialised either.
    dynamo = {k: False for k in ("specialize_float", "specialize_int") if hasattr(dynamo_config, k)}
    with (
        inductor_config.patch(settings),
        # torch installs `patch` on its config modules at import; this one (unlike dynamo's) declares no stub
        fx_config.patch(use_duck_shape=False),  # type: ignore[attr-defined]
        dynamo_config.patch(dynamo),
        _target_for(device),
    ):
        yield


@contextlib.contextmanager
def _target_for(device: str) -> Iterator[None]:
    """Without a GPU, give Triton's driver registry a target description so Inductor can generate code."""
    if device.startswith("cuda"):
        yield
        return
    from triton.backends.compiler import GPUTarget
    from triton.runtime.driver import driver

    class CodegenOnlyDriver:
        def get_current_target(self) -> GPUTarget:
            return GPUTarget("cuda", 90, 32)

    driver.set_active(CodegenOnlyDriver())
    try:
        yield
    finally:
        driver._active = None
