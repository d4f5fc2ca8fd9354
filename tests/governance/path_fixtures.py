"""Recorded trajectories for the golden-path tests (tools-graphs-governance §6), as Turtle.

The exemplar ``ex:traj`` (work item ``ex:wi``, topic "service-deploy") has five steps:

    s1-implement  edit    "src"        produces art  -> art consumedBy s3       InCone, depth 3
    s2-detour     cache   (none)       produces junk; verifiedBy eyeball (no falsifier)  OutOfCone
    s3-test       run     <art> (ex:Artifact)   verifiedBy verif (falsifier-gated)       InCone, depth 1
    s4-verify     verify  (none)       produces report -> report feeds verif    InCone, depth 2
    s5-mail       (no actionKind, no derivation edge)                               CannotEvaluate

``stepOrder`` of s4 is the string "4". The candidate omitting s2 and s5 compiles to
``edit:literal, run:<ex:Artifact>, verify:none``. Its population (topic "service-deploy"), by IRI:

    t-blind    done    one step without actionKind   CannotEvaluate, 1 unevaluated
    t-empty    done    no steps                      CannotEvaluate, 0 unevaluated
    t-follow   done    edit, read, run, verify       Conforms (a gap)
    t-gappy    Done    edit, ?, run, verify          Conforms, 1 unevaluated; "Done" is not done
    t-multi    done    two topics, one shared: edit, run, verify   Conforms
    t-open     (open)  edit, run                     DeviatesAt 2
    t-stray    failed  edit, verify                  DeviatesAt 1

and ``t-other`` (topic "retry-loop", conforming steps) is off-topic.
"""

from __future__ import annotations

from typing import Final

EX: Final = "http://ex/"
NS: Final = "http://aegis.gastown.local/ontology/"  # the default base_ns
TRAJ: Final = EX + "traj"
VIA: Final = [EX + "produces", EX + "consumedBy", EX + "feeds"]
OMIT: Final = [EX + "s2-detour", EX + "s5-mail"]
PATTERN: Final = [
    {"action_kind": "edit", "target_class": "literal"},
    {"action_kind": "run", "target_class": EX + "Artifact"},
    {"action_kind": "verify", "target_class": "none"},
]

PREFIXES: Final = f"@prefix a: <{NS}> . @prefix ex: <{EX}> .\n"

EXEMPLAR: Final = (
    PREFIXES
    + """
ex:traj a:trajectoryOf ex:wi . ex:wi a:about "service-deploy" ; a:outcome "done" .
ex:s1-implement a:stepOf ex:traj ; a:stepOrder 1 ; a:actionKind "edit" ; a:actionTarget "src" ;
    ex:produces ex:art .
ex:art ex:consumedBy ex:s3-test ; a ex:Artifact .
ex:s2-detour a:stepOf ex:traj ; a:stepOrder 2 ; a:actionKind "cache" ; ex:produces ex:junk ;
    a:verifiedBy ex:eyeball .
ex:eyeball ex:note "looked fine" .
ex:s3-test a:stepOf ex:traj ; a:stepOrder 3 ; a:actionKind "run" ; a:actionTarget ex:art ;
    a:verifiedBy ex:verif .
ex:verif a:falsifier "the deploy smoke test fails" .
ex:s4-verify a:stepOf ex:traj ; a:stepOrder "4" ; a:actionKind "verify" ; ex:produces ex:report .
ex:report ex:feeds ex:verif .
ex:s5-mail a:stepOf ex:traj ; a:stepOrder 5 .
"""
)


def _trajectory(name: str, topics: list[str], outcome: str | None, steps: list[str]) -> str:
    """One trajectory of the population: ``steps`` are "kind target" pairs ("-" for no actionKind,
    target "lit", "art" or "" for none)."""
    about = " , ".join(f'"{t}"' for t in topics)
    lines = [f"ex:{name} a:trajectoryOf ex:wi-{name} . ex:wi-{name} a:about {about} ."]
    if outcome is not None:
        lines.append(f'ex:wi-{name} a:outcome "{outcome}" .')
    for i, step in enumerate(steps, start=1):
        kind, _, target = step.partition(" ")
        facts = [f"a:stepOf ex:{name}", f"a:stepOrder {i}"]
        if kind != "-":
            facts.append(f'a:actionKind "{kind}"')
        if target == "lit":
            facts.append('a:actionTarget "x"')
        elif target == "art":
            facts.append(f"a:actionTarget ex:art-{name}-{i}")
            lines.append(f"ex:art-{name}-{i} a ex:Artifact .")
        lines.append(f"ex:{name}-{i} {' ; '.join(facts)} .")
    return "\n".join(lines)


HISTORY: Final = PREFIXES + "\n".join(
    [
        _trajectory("t-follow", ["service-deploy"], "done", ["edit lit", "read lit", "run art", "verify"]),
        _trajectory("t-stray", ["service-deploy"], "failed", ["edit lit", "verify"]),
        _trajectory("t-open", ["service-deploy"], None, ["edit lit", "run art"]),
        _trajectory("t-blind", ["service-deploy"], "done", ["-"]),
        _trajectory("t-empty", ["service-deploy"], "done", []),
        _trajectory("t-gappy", ["service-deploy"], "Done", ["edit lit", "- lit", "run art", "verify"]),
        _trajectory("t-multi", ["billing", "service-deploy"], "done", ["edit lit", "run art", "verify"]),
        _trajectory("t-other", ["retry-loop"], "done", ["edit lit", "run art", "verify"]),
    ]
)

# A minimal verified trajectory: what a route sample needs to succeed.
MINIMAL: Final = (
    PREFIXES
    + """
ex:mini a:trajectoryOf ex:mini-wi . ex:mini-wi a:about "mini" .
ex:mini-1 a:stepOf ex:mini ; a:stepOrder 1 ; a:actionKind "run" ; a:verifiedBy ex:mini-check .
ex:mini-check a:falsifier "it fails" .
"""
)
