"""Evaluator backends, listed in one explicit dict (no import-time symbol swapping)."""

from __future__ import annotations

from evaluators.backends.base import Backend
from evaluators.errors import BackendUnavailable

BACKEND_NAMES = ("triton-cuda", "triton-interpret", "maca")


def get_backend(name: str, device_index: int = 0) -> Backend:
    """Instantiate a backend by name ("auto" picks maca, then triton-cuda, then triton-interpret)."""
    if name == "auto":
        name = detect_backend()
    if name == "triton-cuda":
        from evaluators.backends.triton_cuda import TritonCudaBackend

        return TritonCudaBackend(device_index)
    if name == "triton-interpret":
        from evaluators.backends.triton_interpret import TritonInterpretBackend

        return TritonInterpretBackend()
    if name == "maca":
        from evaluators.backends.maca import MacaBackend

        return MacaBackend(device_index)
    raise BackendUnavailable(f"unknown backend {name!r}; choose one of auto, {', '.join(BACKEND_NAMES)}")


def detect_backend() -> str:
    import torch

    from evaluators.backends.maca import torch_reports_maca

    if torch_reports_maca():
        return "maca"
    if torch.cuda.is_available():
        return "triton-cuda"
    return "triton-interpret"


def require_backend(name: str, device_index: int = 0) -> Backend:
    """Like get_backend, but raise BackendUnavailable with the reason when it cannot run here."""
    backend = get_backend(name, device_index)
    reason = backend.unavailable_reason()
    if reason:
        raise BackendUnavailable(f"backend {backend.name!r} cannot run here: {reason}")
    return backend


__all__ = ["BACKEND_NAMES", "Backend", "detect_backend", "get_backend", "require_backend"]
