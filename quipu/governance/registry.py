"""The verifier registry, read as of a witness (tools-graphs-governance §5.0).

A registration is a ROOT resource typed ``VerifierRegistration`` carrying the verifier's name,
its public key, the predicates it may attest and, for hardware schemes, the scheme, relying
party, origin and recorded sign counts. Every fact used must count at the witness
(``store.registry_reads``), and answers are always about one registration: "some registration
has this key" and "some registration attests this predicate" are never combined across two.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from sqlalchemy import Connection

from quipu import times
from quipu.errors import InvalidField
from quipu.governance.vocabulary import RDF_TYPE, local_name, spellings
from quipu.store import graph_scope, registry_reads, values
from quipu.store.database import Database
from quipu.store.schema import ROOT

# Trust is granted only on these bases: an allow-list, so any future basis fails closed.
TRUSTING: Final = frozenset({"recorded", "now"})
_FIELDS: Final = (
    "verifier",
    "publicKey",
    "attests",
    "signatureScheme",
    "webauthnRpId",
    "webauthnOrigin",
    "signCount",
)


@dataclass(frozen=True)
class Witness:
    """The instant the registry is read at: a transaction (or none) and a valid time."""

    tx: int | None
    at: str
    basis: str  # "recorded", "caller-supplied" or "now"

    @property
    def trusting(self) -> bool:
        return self.basis in TRUSTING

    def as_json(self) -> dict[str, object]:
        return {"tx": self.tx, "at": self.at, "basis": self.basis}


def witness_of(signed_at: str | None, tx: int | None) -> Witness:
    """A caller's instant (a what-if, never a trust decision) or now."""
    if tx is not None and (isinstance(tx, bool) or not isinstance(tx, int) or tx < 0):
        raise InvalidField(f"'tx' must be an integer >= 0, got {tx!r}", field="tx")
    if signed_at is None and tx is None:
        return Witness(None, times.now(), "now")
    at = times.normalise_valid_at(signed_at, "signed_at") if signed_at is not None else times.now()
    return Witness(tx, at or times.now(), "caller-supplied")


@dataclass
class Registration:
    iri: str
    # Each property's distinct string values at the witness (alias twins collapsed).
    props: dict[str, set[str]] = field(default_factory=dict)
    counts: list[bytes] = field(default_factory=list)  # raw aegis:signCount values

    def get(self, name: str) -> set[str]:
        return self.props.get(name, set())

    @property
    def scheme(self) -> str | None:
        """The declared scheme; None when absent (ed25519) or ambiguous."""
        schemes = self.get("signatureScheme")
        return next(iter(schemes)) if len(schemes) == 1 else None

    def declares(self, scheme: str) -> bool:
        """Strict scheme matching (VV-5): ed25519 is an absent or ``ed25519`` declaration."""
        schemes = self.get("signatureScheme")
        return schemes <= {"ed25519"} if scheme == "ed25519" else schemes == {scheme}

    def names(self, verifier: str) -> bool:
        return verifier in self.get("verifier")

    def attests(self, predicate: str) -> bool:
        return predicate in self.get("attests")


def registrations(db: Database, conn: Connection, witness: Witness) -> list[Registration]:
    """Every ROOT registration in effect at the witness, by IRI (enrolment order must never
    decide an outcome). A read of ROOT, so the store's label floor applies."""
    graph_scope.enforce(db, conn, (ROOT,))
    classes = spellings("VerifierRegistration")
    props = {iri: name for name in _FIELDS for iri in spellings(name)}
    ids = db.terms.lookup(conn, [RDF_TYPE, *classes, *props])
    class_ids = [ids[c] for c in classes if c in ids]
    if RDF_TYPE not in ids or not class_ids:
        return []
    typed = registry_reads.facts_at(
        conn,
        [ids[RDF_TYPE]],
        at=witness.at,
        tx=witness.tx,
        objects=[values.ref(c) for c in class_ids],
    )
    subjects = sorted({e for e, _a, _v in typed})
    name_of = {ids[iri]: name for iri, name in props.items() if iri in ids}
    found: dict[int, Registration] = {e: Registration("") for e in subjects}
    for e, a, v in registry_reads.facts_at(
        conn, list(name_of), at=witness.at, tx=witness.tx, subjects=subjects
    ):
        name = name_of[a]
        if name == "signCount":
            found[e].counts.append(v)
            continue
        text = _string(v)
        if text is not None:  # only string literals count (an IRI value is no key or name)
            found[e].props.setdefault(name, set()).add(text)
    iris = db.terms.iris(conn, subjects)
    for e, registration in found.items():
        registration.iri = iris[e]
    return sorted(found.values(), key=lambda r: r.iri)


def _string(value: bytes) -> str | None:
    decoded = values.decode(value)
    return decoded.lexical if decoded.kind == "str" else None


def authorized(found: list[Registration], verifier: str, predicate: str) -> bool:
    """VA-1: one registration names the verifier and attests the predicate (no key needed)."""
    return any(r.names(verifier) and r.attests(predicate) for r in found)


def recorded_count(registration: Registration) -> int:
    """The highest ``aegis:signCount`` recorded on the registration (0 if none)."""
    best = 0
    for raw in registration.counts:
        decoded = values.decode(raw)
        try:
            n = int(decoded.lexical)
        except ValueError:
            raise InvalidField(
                f"registration <{registration.iri}> has a non-numeric aegis:signCount {decoded.lexical!r}",
                field="verifier",
            ) from None
        best = max(best, n)
    return best


def is_term(iri: str, local: str) -> bool:
    """``iri`` is one of the accepted spellings of ``local``."""
    return local_name(iri) == local
