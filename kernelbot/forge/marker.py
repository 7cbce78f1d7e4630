"""The hidden marker kernelbot leaves at the end of every PR body it writes, and reads back from the forge.

    <!-- kernelbot:{"base_sha": "...", "commit": "...", "kernel_hash": "...", "op": "...", "schema": 1,
                    "tool": "0.1.0"} -->

The PR is the state (ARCHITECTURE.md, "State"): which function it changes (op), which kernel it carries
(kernel_hash), which upstream commit it was verified on (base_sha), which kernelbot wrote it, and the commit
kernelbot last pushed to the PR's branch (commit; empty in a bundle's body.md, written before any push).
Deciding whether to open, update or leave a PR alone reads only these values, never a local database; the
next push's lease expects `commit`, so a push by anyone else to the branch is never overwritten.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass

MARKER_SCHEMA = 1
_PREFIX = "kernelbot:"
_MARKER = re.compile(r"<!--\s*kernelbot:(\{.*?\})\s*-->", re.DOTALL)
_FIELDS = ("op", "kernel_hash", "base_sha", "tool")


@dataclass(frozen=True)
class Marker:
    op: str  # the op slug, e.g. "silu-and-mul-forward-native"
    kernel_hash: str  # hash of the kernel source the PR carries
    base_sha: str  # the upstream commit the change was made and verified on
    tool: str  # kernelbot's version
    schema: int = MARKER_SCHEMA
    commit: str = ""  # what kernelbot pushed to the PR's branch ("" before the first push)

    def render(self) -> str:
        # "<" and ">" escaped so no value can close the HTML comment early.
        payload = json.dumps(asdict(self), sort_keys=True).replace("<", "\\u003c").replace(">", "\\u003e")
        return f"<!-- {_PREFIX}{payload} -->"


def parse_marker(body: str | None) -> Marker | None:
    """The last well-formed kernelbot marker in a PR body, or None (not a kernelbot PR, or a body someone
    edited the marker out of)."""
    found: Marker | None = None
    for match in _MARKER.finditer(body or ""):
        try:
            data = json.loads(match.group(1))
        except json.JSONDecodeError:
            continue
        if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in _FIELDS):
            continue
        schema = data.get("schema", MARKER_SCHEMA)
        commit = data.get("commit", "")
        found = Marker(
            op=data["op"],
            kernel_hash=data["kernel_hash"],
            base_sha=data["base_sha"],
            tool=data["tool"],
            schema=schema if isinstance(schema, int) else 0,
            commit=commit if isinstance(commit, str) else "",
        )
    return found


def with_marker(body: str, marker: Marker) -> str:
    """`body` with any old marker removed and `marker` appended on its own line."""
    stripped = _MARKER.sub("", body).rstrip()
    return f"{stripped}\n\n{marker.render()}\n"
