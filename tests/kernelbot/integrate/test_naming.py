from __future__ import annotations

from pathlib import Path

import pytest

from kernelbot.integrate.errors import IntegrationError
from kernelbot.integrate.naming import guard_name, kernel_entry_name, op_name, op_slug


@pytest.mark.parametrize(
    ("qualname", "op"),
    [
        ("RMSNorm.forward_native", "rms_norm"),
        ("SiluAndMul.forward_native", "silu_and_mul"),
        ("DefaultRMSNormImpl.forward", "rms_norm"),
        ("DefaultApplyRotaryEmbImpl.forward", "apply_rotary_emb"),
        (
            "FlashDecodeBackend.init_forward_metadata_replay",
            "flash_decode_backend_init_forward_metadata_replay",
        ),
        ("biased_grouped_topk_impl", "biased_grouped_topk"),
        ("_filter_topp_sorted_", "filter_topp_sorted"),
        ("top_p_normalize_probs_torch", "top_p_normalize_probs"),
    ],
)
def test_op_names(qualname: str, op: str) -> None:
    assert op_name(qualname) == op
    assert kernel_entry_name(op) == f"{op}_triton" and guard_name(op) == f"can_use_{op}_triton"


def test_op_slug_from_the_task(tmp_path: Path) -> None:
    (tmp_path / "task.toml").write_text('[source]\nqualname = "RMSNorm.forward_native"\n')
    assert op_slug(tmp_path) == "rms-norm-forward-native"
    (tmp_path / "task.toml").write_text('name = "t"\n')
    with pytest.raises(IntegrationError, match="no \\[source\\] qualname"):
        op_slug(tmp_path)
