"""CURIE compaction of IRI values (tools-core §0.6).

The prefix map comes from the ``@prefix``/``PREFIX`` declarations of the loaded shape sets. A
prefix bound to different namespaces by two sets is dropped; when two prefixes bind the same
namespace the lexicographically smallest wins; the empty prefix is never used. An IRI becomes
``prefix:local`` under its longest matching namespace, only when ``local`` is a safe name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

_LOCAL = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class PrefixMap:
    """prefix -> namespace, already resolved by the rules above."""

    namespaces: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_declarations(cls, sets: Iterable[Mapping[str, str]]) -> PrefixMap:
        bound: dict[str, str] = {}
        conflicted: set[str] = set()
        for declarations in sets:
            for prefix, namespace in declarations.items():
                if not prefix:
                    continue
                if prefix in bound and bound[prefix] != namespace:
                    conflicted.add(prefix)
                bound.setdefault(prefix, namespace)
        by_namespace: dict[str, str] = {}
        for prefix in sorted(p for p in bound if p not in conflicted):
            by_namespace.setdefault(bound[prefix], prefix)
        return cls({prefix: ns for ns, prefix in by_namespace.items()})

    def __bool__(self) -> bool:
        return bool(self.namespaces)

    def compact(self, iri: str) -> str:
        """``prefix:local`` for the longest matching namespace, else the IRI unchanged."""
        best: tuple[str, str] | None = None
        for prefix, namespace in self.namespaces.items():
            if iri.startswith(namespace) and (best is None or len(namespace) > len(best[1])):
                best = (prefix, namespace)
        if best is None:
            return iri
        local = iri[len(best[1]) :]
        if not _LOCAL.fullmatch(local) or local.endswith("."):
            return iri
        return f"{best[0]}:{local}"

    def used(self, curies: Iterable[str]) -> dict[str, str]:
        """The ``@context`` for a document: exactly the prefixes its compacted names use."""
        out: dict[str, str] = {}
        for name in curies:
            prefix, sep, _ = name.partition(":")
            if sep and prefix in self.namespaces:
                out[prefix] = self.namespaces[prefix]
        return dict(sorted(out.items()))


EMPTY = PrefixMap()
