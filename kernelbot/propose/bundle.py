"""The proposal bundle, RUN/pr/:

    patch.diff     the change; `git apply`s on the base commit
    body.md        the PR body, rendered from evidence.json (hidden marker at the end)
    evidence.json  every number body.md shows
    reproduce.sh   re-applies the patch on the base commit and re-runs the checks (executable)

Written before anything is pushed, and enough on its own: without --open-pr it is the result. A secret from
the environment (a GitHub token, an LLM key) found in any of the four refuses the whole bundle.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from evaluators import secrets
from evolution.config import WELL_KNOWN_SECRET_ENVS
from kernelbot.errors import KernelbotError, RunStateError
from kernelbot.forge.marker import Marker, parse_marker
from kernelbot.propose.collect import ProfileLike
from kernelbot.propose.evidence import Evidence
from kernelbot.propose.render import render_body, render_reproduce

BUNDLE_DIR = "pr"
PATCH_FILE = "patch.diff"
BODY_FILE = "body.md"
EVIDENCE_FILE = "evidence.json"
REPRODUCE_FILE = "reproduce.sh"
MIN_SECRET_LEN = 8
_SECRET_ENVS = (*WELL_KNOWN_SECRET_ENVS, "GH_TOKEN")


class SecretInBundle(KernelbotError):
    """Raised when a secret from the environment would be written into the bundle."""


@dataclass(frozen=True)
class Bundle:
    dir: Path
    evidence: Evidence
    patch: str
    body: str

    @property
    def title(self) -> str:
        return self.evidence.op.title

    @property
    def marker(self) -> Marker:
        found = parse_marker(self.body)
        assert found is not None, "a bundle body always ends with its marker"
        return found

    @property
    def branch(self) -> str:
        return f"kernelbot/{self.evidence.op.slug}"


def write_bundle(
    run_dir: Path, evidence: Evidence, profile: ProfileLike, patch: str, *, secret_envs: Iterable[str] = ()
) -> Bundle:
    """Write RUN/pr/ for `evidence` and `patch`; the body uses the profile's template (profile.template,
    e.g. "sglang" for pr_templates/sglang.md.j2). `secret_envs` names token variables beyond the well-known
    ones whose values must not appear in any file."""
    if not patch.strip():
        raise RunStateError("the change is empty: there is nothing to propose (did integrate run?)")
    body = render_body(evidence, profile.template)
    files = {
        PATCH_FILE: patch if patch.endswith("\n") else patch + "\n",
        EVIDENCE_FILE: evidence.to_json(),
        BODY_FILE: body,
        REPRODUCE_FILE: render_reproduce(evidence),
    }
    _refuse_secrets(files, (*_SECRET_ENVS, *secret_envs))
    out = run_dir / BUNDLE_DIR
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        _write_atomically(out / name, text, executable=name == REPRODUCE_FILE)
    return Bundle(dir=out, evidence=evidence, patch=files[PATCH_FILE], body=body)


def load_bundle(run_dir: Path) -> Bundle:
    """The bundle written earlier in RUN/pr/ (a resumed run proposes what it wrote)."""
    out = run_dir / BUNDLE_DIR
    try:
        evidence = Evidence.from_json((out / EVIDENCE_FILE).read_text())
        patch, body = (out / PATCH_FILE).read_text(), (out / BODY_FILE).read_text()
    except (OSError, ValueError) as exc:
        raise RunStateError(f"cannot read the bundle in {out}: {exc}") from exc
    if parse_marker(body) is None:
        raise RunStateError(f"{out / BODY_FILE} has lost its kernelbot marker: write the bundle again")
    return Bundle(dir=out, evidence=evidence, patch=patch, body=body)


def _refuse_secrets(files: dict[str, str], names: Iterable[str]) -> None:
    for name in dict.fromkeys(names):
        value = secrets.get(name)
        if len(value) < MIN_SECRET_LEN:
            continue
        for filename, text in files.items():
            if value in text:
                raise SecretInBundle(
                    f"the proposal's {filename} would contain the value of ${name}: refusing to write the "
                    "bundle (find what echoed it into the run's outputs)"
                )


def _write_atomically(path: Path, text: str, *, executable: bool = False) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    mode = 0o755 if executable else 0o644
    os.chmod(tmp, mode | stat.S_IRUSR)
    os.replace(tmp, path)
