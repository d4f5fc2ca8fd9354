"""The outward scrub: a share leaves only if no block-tier internal-identifier rule matches it
(tools-graphs-governance §4.1, the outward-scrub rule; §4.2 step 3 runs it on an internal-marked
share).

The rules are data: every ``aegis:InternalIdentifierPattern`` in ROOT whose
``aegis:enforcementTier`` is ``"block"``, with its ``aegis:regex`` and, to name it, its
``rdfs:label``. Warning-tier rules never block. A hit refuses the whole share (403) naming the
member, the rule's label and the byte range of the match, and never the matched text or the
regex, which would carry the identifier out in the error. Nothing is ever rewritten: an internal
hostname is entity identity, and an edited share would say something the store never said.

Only ROOT is read: named graphs include import staging and quarantine graphs, whose rules came
from another store and could make every outward share fail (or stall; see below).

The patterns run on Python's backtracking ``re``, which has no time bound and holds the
interpreter while it matches, so a pattern is refused (400, naming its label) unless it is safe
to run: it must compile, be at most ``MAX_PATTERN`` characters, not match the empty string (it
would refuse every share), and avoid what makes backtracking super-linear: backreferences,
lookaround, conditionals, and one wide repetition nested inside another (``(a+)+``). A refused
pattern refuses the share: a rule that cannot be evaluated cannot vouch that the share is clean.
The first three constructs are not in the regex language of the original either (Rust's
``regex`` crate); nesting is, and must be rewritten without it here (``[a-z0-9.-]+`` rather
than ``([a-z0-9-]+\\.)+``). Overlapping alternatives under a repetition (``(a|ab)+``) are not
detected.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

from quipu.errors import BadRequest, Forbidden
from quipu.sparql.engine import run_query
from quipu.store.database import Database

AEGIS: Final = "http://aegis.gastown.local/ontology/"
MANIFEST: Final = "manifest.json"  # the one member the scrub never reads (§4.1)
MAX_PATTERN: Final = 2048  # characters of one pattern
_WIDE: Final = 64  # a repetition allowed more times than this is "wide"
# The stdlib's own regex parser (private, but the one re.compile uses): its tree shows the
# constructs to refuse without a second, hand-written regex grammar.
_sre: Any = importlib.import_module("re._parser")
_UNSAFE: Final = {
    "GROUPREF": "a backreference",
    "GROUPREF_EXISTS": "a conditional group",
    "ASSERT": "a lookaround",
    "ASSERT_NOT": "a lookaround",
}
_REPEATS: Final = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})

_RULES: Final = f"""PREFIX aegis: <{AEGIS}>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
SELECT ?rule ?regex ?label WHERE {{
  ?rule a aegis:InternalIdentifierPattern ;
        aegis:enforcementTier ?tier ;
        aegis:regex ?regex .
  FILTER(STR(?tier) = "block")
  OPTIONAL {{ ?rule rdfs:label ?label }}
}}"""


@dataclass(frozen=True, slots=True)
class Rule:
    label: str  # its rdfs:label (the smallest, when it has several), else its IRI
    regex: str


def block_rules(db: Database) -> list[Rule]:
    """The block-tier rules in ROOT, each (label, regex) once, in that order."""
    labels: dict[tuple[str, str], str] = {}
    for row in run_query(db, _RULES).rows:
        key = (str(row["rule"]), str(row["regex"]))
        label = str(row["label"]) if "label" in row else str(row["rule"])
        labels[key] = min(labels.get(key, label), label)
    return sorted(
        {Rule(label, regex) for (_, regex), label in labels.items()}, key=lambda r: (r.label, r.regex)
    )


def scrub(db: Database, members: Mapping[str, str]) -> None:
    """403 when a block-tier rule matches a member (``manifest.json`` aside), naming the first
    member by name that has a match, the rule and the UTF-8 byte range ``[start, end)`` of its
    earliest match there; 400 when a rule cannot be run safely (module docstring)."""
    rules = [(rule, compiled(rule)) for rule in block_rules(db)]
    if not rules:
        return
    for member in sorted(members):
        if member == MANIFEST:
            continue
        text = members[member]
        hits = [(span, rule) for rule, pattern in rules if (span := _first(pattern, text)) is not None]
        if not hits:
            continue
        (start, end), rule = min(hits, key=lambda hit: hit[0][0])  # min is stable: rule order breaks ties
        first, last = _byte_offset(text, start), _byte_offset(text, end)
        raise Forbidden(
            f"outward scrub: {member} matches the block-tier internal identifier pattern "
            f"'{rule.label}' at bytes {first}-{last} (end exclusive); the share is refused and "
            "nothing is rewritten",
            reason="outward_scrub",
            extra={"member": member, "pattern": rule.label, "byte_range": [first, last]},
        )


def _first(pattern: re.Pattern[str], text: str) -> tuple[int, int] | None:
    """The span of the first non-empty match: a zero-width match names no identifier."""
    for match in pattern.finditer(text):
        if match.end() > match.start():
            return match.span()
    return None


def _byte_offset(text: str, index: int) -> int:
    return len(text[:index].encode("utf-8", "surrogatepass"))


def compiled(rule: Rule) -> re.Pattern[str]:
    """The rule's pattern, compiled, or 400 naming the rule when it cannot be run safely."""
    problem, pattern = _checked(rule.regex)
    if pattern is None:
        raise BadRequest(
            f"outward scrub: the internal identifier pattern '{rule.label}' cannot be checked: "
            f"{problem}; fix or remove it before sharing",
            reason="unusable_scrub_pattern",
        )
    return pattern


@lru_cache(maxsize=256)
def _checked(regex: str) -> tuple[str, re.Pattern[str] | None]:
    """``("", pattern)``, or ``(why not, None)``; never quotes the regex (it may be the secret)."""
    if len(regex) > MAX_PATTERN:
        return f"it is longer than {MAX_PATTERN} characters", None
    try:
        pattern = re.compile(regex)
        tree = _sre.parse(regex)
    except (re.error, RecursionError, OverflowError) as exc:
        return f"it is not a valid Python regular expression ({exc})", None
    unsafe = _unsafe(tree)
    if unsafe is not None:
        return unsafe, None
    if pattern.fullmatch("") is not None:
        return "it matches the empty string, so it would refuse every share", None
    return "", pattern


def _unsafe(tree: Any) -> str | None:
    """Why the parsed pattern could backtrack super-linearly, or None."""
    stack: list[tuple[Any, bool]] = [(tree, False)]  # (items, inside a wide repetition)
    while stack:
        items, inside = stack.pop()
        for op, av in items:
            name = str(op)
            if name in _UNSAFE:
                return f"it uses {_UNSAFE[name]}, which cannot be matched in linear time"
            if name in _REPEATS:
                wide = av[1] > _WIDE  # MAXREPEAT (unbounded) is far above it
                if wide and inside:
                    return f"it nests one wide repetition (unbounded, or over {_WIDE}) inside another, e.g. (a+)+"
                stack.append((av[2], inside or wide))
            elif name == "SUBPATTERN":
                stack.append((av[3], inside))
            elif name == "ATOMIC_GROUP":
                stack.append((av, inside))
            elif name == "BRANCH":
                stack.extend((branch, inside) for branch in av[1])
    return None
