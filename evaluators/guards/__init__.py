"""The hack checks' machinery: what a candidate really does, recorded and judged as HackFindings with
evidence.

What this package guarantees to its callers:
- `Sandbox(candidate_path, protected_paths=...)`, installed in the worker before the candidate is imported,
  records from then on every audited event, thread start, harness patch and precision-flag change that the
  candidate caused; installing it is irrevocable, and `findings()` returns all of it as HackFindings.
- `CallMonitor` watches one candidate call: the ATen ops its host code dispatched, the Python code that ran
  (the reference, torch.compile, the evaluator's own) and, on a GPU, the kernels it launched and on which
  stream. `ModuleFingerprint` tells whether the candidate's module kept state across calls.
- What one host-side PyTorch operation does (`host_ops`) is decided from the ATen op it runs, and that one
  policy serves both the runtime recorder and the static checks (the evaluators.static package).
- Code in this package is the checker itself: the code tracer does not count it as "the evaluator's code"
  when it runs inside a watched call (its wrappers and recorders run there on the candidate's behalf), and
  everything else under evaluators/ it does.

The names are imported here, not lazily: the harness snapshot records this namespace before the candidate is
imported, so a candidate that swaps one of them is caught.
"""

from evaluators.guards.host_ops import CallVerdict, HostOp, OpVerdict, tensor_method, torch_function
from evaluators.guards.monitor import CallMonitor
from evaluators.guards.sandbox import Sandbox, SandboxViolation, warm_up
from evaluators.guards.snapshots import HarnessSnapshot, ModuleFingerprint

__all__ = [
    "CallMonitor",
    "CallVerdict",
    "HarnessSnapshot",
    "HostOp",
    "ModuleFingerprint",
    "OpVerdict",
    "Sandbox",
    "SandboxViolation",
    "tensor_method",
    "torch_function",
    "warm_up",
]
