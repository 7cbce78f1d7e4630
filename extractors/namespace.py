"""The global names of the emitted reference: every closed-over definition, kept import and stub claims one,
and a clash (two modules each defining `_helper`) renames the later one after its module."""

from __future__ import annotations

import builtins
import keyword

_RESERVED = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | {"annotations"}


class Namespace:
    def __init__(self) -> None:
        self._owner: dict[str, object] = {}
        self._by_key: dict[object, str] = {}

    def get(self, key: object) -> str | None:
        return self._by_key.get(key)

    def claim(self, key: object, wanted: str, module_hint: str = "") -> str:
        existing = self._by_key.get(key)
        if existing is not None:
            return existing
        candidates = [wanted]
        if module_hint:
            candidates.append(f"{wanted}_{module_hint.rpartition('.')[2]}")
        name = next((c for c in candidates if self._free(c)), None)
        counter = 2
        while name is None:
            if self._free(f"{wanted}_{counter}"):
                name = f"{wanted}_{counter}"
            counter += 1
        self._owner[name] = key
        self._by_key[key] = name
        return name

    def _free(self, name: str) -> bool:
        return name not in self._owner and name not in _RESERVED

    def names(self) -> set[str]:
        return set(self._owner)
