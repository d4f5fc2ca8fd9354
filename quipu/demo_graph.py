"""The demo graph: a month of a small ops world with history, for the explorer's time slider.

``load(kb)`` writes November 2026 (valid time, UTC) of three teams, six people, ten services and
five incidents under ``http://demo.quipu.dev/``, one transaction per change, in chronological
order, through the embedding API's ``knot`` / ``set`` / ``retract`` with the valid time of the
change as each write's ``timestamp``. Along the month a service moves to another team, incidents
open and are resolved, two services appear, a dependency is removed, someone changes team, a
service is renamed and on-call rotates every Monday. The timeline below is plain data: every run
writes the same statements with the same valid times (only the transactions' recorded times
differ). ``quipu demo`` loads it into a fresh store and serves it.

Load it into an empty store: the counts and checkpoints ``load`` returns describe the demo alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    from quipu.api import KnowledgeBase

NS: Final = "http://demo.quipu.dev/"
SVC: Final = NS + "svc/"
TEAM: Final = NS + "team/"
INC: Final = NS + "inc/"
PERSON: Final = NS + "person/"
OPS: Final = NS + "ops#"  # the vocabulary: classes and predicates

RDF_TYPE: Final = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDFS_LABEL: Final = "http://www.w3.org/2000/01/rdf-schema#label"
SERVICE, TEAM_CLASS, PERSON_CLASS, INCIDENT = OPS + "Service", OPS + "Team", OPS + "Person", OPS + "Incident"
OWNED_BY: Final = OPS + "ownedBy"  # service -> team
DEPENDS_ON: Final = OPS + "dependsOn"  # service -> service
MEMBER_OF: Final = OPS + "memberOf"  # person -> team
ON_CALL: Final = OPS + "onCall"  # team -> person
AFFECTS: Final = OPS + "affects"  # incident -> service
STATUS: Final = OPS + "status"  # incident: "open" or "resolved"
SEVERITY: Final = OPS + "severity"  # incident: "sev1" (worst) to "sev3"

ACTOR: Final = "demo"
SOURCE: Final = "quipu demo"
START: Final = "2026-11-01T00:00:00Z"  # the world as it stands when the month begins
MID: Final = "2026-11-15T12:00:00Z"
END: Final = "2026-11-30T23:59:59Z"

# An object in the JSON value form of ``set`` / ``retract``: {"iri": ...} or {"str": ...}.
Value = dict[str, str]


def ref(iri: str) -> Value:
    return {"iri": iri}


def text(value: str) -> Value:
    return {"str": value}


@dataclass(frozen=True)
class Step:
    """One change, written as one transaction at valid time ``at``.

    ``add`` asserts ``statements`` (knot); ``set`` makes ``statements[0]``'s object the only one
    of its subject and predicate; ``retract`` closes ``statements[0]``. ``creates`` names the
    entity an ``add`` brings into the world (None when it only links existing ones).
    """

    at: str
    kind: Literal["add", "set", "retract"]
    statements: tuple[tuple[str, str, Value], ...]
    creates: str | None = None


def _entity(at: str, iri: str, cls: str, label: str, *links: tuple[str, Value]) -> Step:
    statements = ((iri, RDF_TYPE, ref(cls)), (iri, RDFS_LABEL, text(label)), *((iri, p, o) for p, o in links))
    return Step(at, "add", statements, creates=iri)


def _add(at: str, s: str, p: str, o: Value) -> Step:
    return Step(at, "add", ((s, p, o),))


def _set(at: str, s: str, p: str, o: Value) -> Step:
    return Step(at, "set", ((s, p, o),))


def _retract(at: str, s: str, p: str, o: Value) -> Step:
    return Step(at, "retract", ((s, p, o),))


def _incident(at: str, slug: str, label: str, severity: str, *affected: str) -> Step:
    links = [(SEVERITY, text(severity)), (STATUS, text("open"))]
    return _entity(at, INC + slug, INCIDENT, label, *links, *((AFFECTS, ref(SVC + s)) for s in affected))


def _rotation(at: str, **on_call: str) -> list[Step]:
    """Monday's on-call hand-over: one transaction per team whose person changes."""
    return [_set(at, TEAM + team, ON_CALL, ref(PERSON + person)) for team, person in on_call.items()]


# -- the checkpoints the tests (and the explorer's walkthrough) look at ---------------------------

MOVED_SERVICE: Final = SVC + "notify"
OLD_TEAM, NEW_TEAM = TEAM + "platform", TEAM + "growth"
MOVED_AT: Final = "2026-11-13T10:00:00Z"
NEW_SERVICE: Final = SVC + "fraud"
APPEARS_AT: Final = "2026-11-16T11:00:00Z"
INCIDENT_IRI: Final = INC + "duplicate-charges"
OPENED_AT, RESOLVED_AT = "2026-11-09T14:05:00Z", "2026-11-12T17:45:00Z"
REMOVED_FROM, REMOVED_TO = SVC + "checkout", SVC + "auth"  # checkout stops depending on auth
REMOVED_AT: Final = "2026-11-25T14:00:00Z"
RENAMED: Final = MOVED_SERVICE
OLD_LABEL, NEW_LABEL = "Notifications", "Messaging"
RENAMED_AT: Final = "2026-11-26T09:00:00Z"
MOVED_PERSON: Final = PERSON + "dara"
PERSON_OLD_TEAM, PERSON_NEW_TEAM = TEAM + "payments", TEAM + "growth"
PERSON_MOVED_AT: Final = "2026-11-23T10:00:00Z"


def _team(slug: str, label: str, on_call: str) -> Step:
    return _entity(START, TEAM + slug, TEAM_CLASS, label, (ON_CALL, ref(PERSON + on_call)))


def _person(slug: str, label: str, team: str) -> Step:
    return _entity(START, PERSON + slug, PERSON_CLASS, label, (MEMBER_OF, ref(TEAM + team)))


def _service(at: str, slug: str, label: str, team: str, *depends_on: str) -> Step:
    links = [(OWNED_BY, ref(TEAM + team)), *((DEPENDS_ON, ref(SVC + d)) for d in depends_on)]
    return _entity(at, SVC + slug, SERVICE, label, *links)


TIMELINE: Final[tuple[Step, ...]] = (
    # November 1st: the world as it stands.
    _team("platform", "Platform", "ana"),
    _team("payments", "Payments", "chen"),
    _team("growth", "Growth", "eli"),
    _person("ana", "Ana Torres", "platform"),
    _person("ben", "Ben Okafor", "platform"),
    _person("chen", "Chen Wei", "payments"),
    _person("dara", "Dara Singh", "payments"),
    _person("eli", "Eli Novak", "growth"),
    _person("fay", "Fay Moreau", "growth"),
    _service(START, "gateway", "API Gateway", "platform", "auth"),
    _service(START, "auth", "Auth Service", "platform"),
    _service(START, "notify", OLD_LABEL, "platform", "gateway"),
    _service(START, "billing", "Billing", "payments", "ledger"),
    _service(START, "ledger", "Ledger", "payments"),
    _service(START, "checkout", "Checkout", "payments", "gateway", "billing", "auth"),
    _service(START, "search", "Search", "growth", "gateway"),
    _service(START, "recs", "Recommendations", "growth", "search"),
    # The month, in order.
    *_rotation("2026-11-02T09:00:00Z", platform="ben", payments="dara", growth="fay"),
    _incident("2026-11-03T09:14:00Z", "gateway-502s", "Gateway 502s", "sev2", "gateway"),
    _set("2026-11-03T11:40:00Z", INC + "gateway-502s", STATUS, text("resolved")),
    *_rotation("2026-11-09T09:00:00Z", platform="ana", payments="chen", growth="eli"),
    _incident(OPENED_AT, "duplicate-charges", "Duplicate charges", "sev1", "billing", "ledger"),
    _set(RESOLVED_AT, INCIDENT_IRI, STATUS, text("resolved")),
    _set(MOVED_AT, MOVED_SERVICE, OWNED_BY, ref(NEW_TEAM)),
    _incident("2026-11-14T03:20:00Z", "search-latency", "Search latency spike", "sev3", "search"),
    *_rotation("2026-11-16T09:00:00Z", platform="ben", payments="dara", growth="fay"),
    _service(APPEARS_AT, "fraud", "Fraud Detection", "payments", "ledger", "billing"),
    _add("2026-11-17T15:00:00Z", SVC + "checkout", DEPENDS_ON, ref(NEW_SERVICE)),
    _set("2026-11-20T16:30:00Z", INC + "search-latency", STATUS, text("resolved")),
    _incident("2026-11-21T22:10:00Z", "notify-backlog", "Notification backlog", "sev2", "notify"),
    _set("2026-11-22T07:30:00Z", INC + "notify-backlog", STATUS, text("resolved")),
    *_rotation("2026-11-23T09:00:00Z", platform="ana", payments="chen", growth="eli"),
    _set(PERSON_MOVED_AT, MOVED_PERSON, MEMBER_OF, ref(PERSON_NEW_TEAM)),
    _service("2026-11-24T11:00:00Z", "flags", "Feature Flags", "platform"),
    _add("2026-11-25T10:00:00Z", SVC + "gateway", DEPENDS_ON, ref(SVC + "flags")),
    _retract(REMOVED_AT, REMOVED_FROM, DEPENDS_ON, ref(REMOVED_TO)),
    _set(RENAMED_AT, RENAMED, RDFS_LABEL, text(NEW_LABEL)),
    _incident(
        "2026-11-27T13:15:00Z", "fraud-false-positives", "Fraud false positives", "sev3", "fraud", "checkout"
    ),
    *_rotation("2026-11-30T09:00:00Z", platform="ben", growth="fay"),  # payments: only Chen is left
)


@dataclass(frozen=True)
class Demo:
    """What ``load`` wrote, and the checkpoints a reader can check it against.

    Instants are valid times (``YYYY-MM-DDTHH:MM:SSZ``). ``entities_at_*`` count the drawable
    entities then: the subjects of ROOT facts valid at that instant (no episodes are written, so
    none is a prov:Activity), which is what the explorer's node-link view draws.
    """

    namespace: str
    start: str
    mid: str
    end: str
    transactions: int  # one per change
    entities_at_start: int
    entities_at_mid: int
    entities_at_end: int
    # A service moves from one team to another.
    moved_service: str
    old_team: str
    new_team: str
    moved_at: str
    # A service appears mid-month.
    new_service: str
    appears_at: str
    # An incident opens ("open") and is resolved ("resolved") later.
    incident: str
    incident_opened_at: str
    incident_resolved_at: str
    # A dependency is removed late in the month: removed_from ops:dependsOn removed_to.
    removed_from: str
    removed_to: str
    removed_at: str
    # A service is renamed (its rdfs:label changes).
    renamed: str
    old_label: str
    new_label: str
    renamed_at: str
    # Someone changes team.
    moved_person: str
    person_old_team: str
    person_new_team: str
    person_moved_at: str


def entities_at(instant: str) -> int:
    """How many demo entities exist at valid time ``instant`` (none is ever removed)."""
    return sum(1 for step in TIMELINE if step.creates is not None and step.at <= instant)


def _term(value: Value) -> str:
    if "iri" in value:
        return f"<{value['iri']}>"
    escaped = value["str"].replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def ntriples(step: Step) -> str:
    """An ``add`` step's statements as an N-Triples document."""
    return "".join(f"<{s}> <{p}> {_term(o)} .\n" for s, p, o in step.statements)


def load(kb: KnowledgeBase) -> Demo:
    """Write the demo month into ``kb`` (an empty store), one transaction per step, in order."""
    written = 0
    for step in TIMELINE:
        at = step.at
        if step.kind == "add":
            tx = kb.knot(ntriples(step), "nt", timestamp=at, actor=ACTOR, source=SOURCE).tx_id
        else:
            ((s, p, o),) = step.statements
            if step.kind == "set":
                tx = kb.set(s, p, o, timestamp=at, actor=ACTOR, source=SOURCE).tx_id
            else:
                tx = kb.retract(s, p, o, timestamp=at, actor=ACTOR, source=SOURCE).tx_id
        if not tx:
            raise RuntimeError(
                f"the demo step at {step.at} ({step.kind}) changed nothing: is the store empty?"
            )
        written += 1
    return Demo(
        namespace=NS,
        start=START,
        mid=MID,
        end=END,
        transactions=written,
        entities_at_start=entities_at(START),
        entities_at_mid=entities_at(MID),
        entities_at_end=entities_at(END),
        moved_service=MOVED_SERVICE,
        old_team=OLD_TEAM,
        new_team=NEW_TEAM,
        moved_at=MOVED_AT,
        new_service=NEW_SERVICE,
        appears_at=APPEARS_AT,
        incident=INCIDENT_IRI,
        incident_opened_at=OPENED_AT,
        incident_resolved_at=RESOLVED_AT,
        removed_from=REMOVED_FROM,
        removed_to=REMOVED_TO,
        removed_at=REMOVED_AT,
        renamed=RENAMED,
        old_label=OLD_LABEL,
        new_label=NEW_LABEL,
        renamed_at=RENAMED_AT,
        moved_person=MOVED_PERSON,
        person_old_team=PERSON_OLD_TEAM,
        person_new_team=PERSON_NEW_TEAM,
        person_moved_at=PERSON_MOVED_AT,
    )
