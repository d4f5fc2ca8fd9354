"""A deterministic, seeded, LUBM-shaped data generator (N-Triples).

The shape follows the Lehigh University Benchmark's univ-bench ontology: universities contain
departments; a department has research groups, full/associate/assistant professors and
lecturers, undergraduate and graduate students, courses, graduate courses and publications.
It is written from scratch for quipu's benchmarks and is not the original UBA generator: the
counts are scaled down to about 2,300 triples per department, and no OWL inference is assumed.

Determinism: every university draws from its own ``random.Random`` seeded from ``(seed, u)``,
so the same seed always gives byte-identical output (on a given Python), and a smaller data set
is a prefix of a larger one with the same seed (generation stops after a whole department).

    python -m bench.lubm --triples 100000 --out data.nt
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

ONTOLOGY: Final = "http://quipu.bench/univ-bench#"
RDF_TYPE: Final = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
XSD_INTEGER: Final = "http://www.w3.org/2001/XMLSchema#integer"

# How many universities degrees may come from (as in LUBM, most are never generated themselves).
DEGREE_UNIVERSITIES: Final = 1000


def _o(name: str) -> str:
    return f"<{ONTOLOGY}{name}>"


# Classes
UNIVERSITY, DEPARTMENT, RESEARCH_GROUP = _o("University"), _o("Department"), _o("ResearchGroup")
FULL_PROFESSOR, ASSOCIATE_PROFESSOR = _o("FullProfessor"), _o("AssociateProfessor")
ASSISTANT_PROFESSOR, LECTURER = _o("AssistantProfessor"), _o("Lecturer")
UNDERGRADUATE, GRADUATE = _o("UndergraduateStudent"), _o("GraduateStudent")
COURSE, GRADUATE_COURSE, PUBLICATION = _o("Course"), _o("GraduateCourse"), _o("Publication")

# Properties
NAME, EMAIL, TELEPHONE, AGE = _o("name"), _o("emailAddress"), _o("telephone"), _o("age")
MEMBER_OF, WORKS_FOR, HEAD_OF = _o("memberOf"), _o("worksFor"), _o("headOf")
SUB_ORGANIZATION_OF = _o("subOrganizationOf")
TAKES_COURSE, TEACHER_OF, TEACHING_ASSISTANT_OF = (
    _o("takesCourse"),
    _o("teacherOf"),
    _o("teachingAssistantOf"),
)
ADVISOR, PUBLICATION_AUTHOR, RESEARCH_INTEREST = (
    _o("advisor"),
    _o("publicationAuthor"),
    _o("researchInterest"),
)
UNDERGRADUATE_DEGREE_FROM = _o("undergraduateDegreeFrom")
MASTERS_DEGREE_FROM, DOCTORAL_DEGREE_FROM = _o("mastersDegreeFrom"), _o("doctoralDegreeFrom")

# (class, class local name, how many per department, publications per person)
_FACULTY: Final = (
    (FULL_PROFESSOR, "FullProfessor", (4, 6), (3, 5)),
    (ASSOCIATE_PROFESSOR, "AssociateProfessor", (5, 7), (2, 4)),
    (ASSISTANT_PROFESSOR, "AssistantProfessor", (4, 6), (1, 3)),
    (LECTURER, "Lecturer", (2, 4), (0, 2)),
)
_RESEARCH_AREAS: Final = tuple(f"Research{i}" for i in range(30))


def _university(u: int) -> str:
    return f"<http://www.University{u}.edu>"


def _distinct(rng: random.Random, population: int, k: int) -> list[int]:
    """``k`` distinct ints in ``range(population)``, in draw order (plain randrange calls only)."""
    k = min(k, population)
    seen: set[int] = set()
    out: list[int] = []
    while len(out) < k:
        n = rng.randrange(population)
        if n not in seen:
            seen.add(n)
            out.append(n)
    return out


def _department(rng: random.Random, u: int, d: int) -> list[str]:
    """All triples of one department, as N-Triples lines (each ending in a newline)."""
    out: list[str] = []
    add = out.append
    rand, randint = rng.random, rng.randint
    base = f"http://www.Department{d}.University{u}.edu"
    dept = f"<{base}>"
    univ = _university(u)

    def lit(text: str) -> str:
        return f'"{text}"'

    def integer(n: int) -> str:
        return f'"{n}"^^<{XSD_INTEGER}>'

    def phone() -> str:
        return f'"xxx-xxx-{rng.randrange(10000):04d}"'

    add(f"{dept} {RDF_TYPE} {DEPARTMENT} .\n")
    add(f"{dept} {NAME} {lit(f'Department{d}')} .\n")
    add(f"{dept} {SUB_ORGANIZATION_OF} {univ} .\n")

    for i in range(randint(3, 6)):
        group = f"<{base}/ResearchGroup{i}>"
        add(f"{group} {RDF_TYPE} {RESEARCH_GROUP} .\n")
        add(f"{group} {SUB_ORGANIZATION_OF} {dept} .\n")

    # Faculty first: courses and publications hang off them.
    courses = 0
    grad_courses = 0
    professors: list[str] = []
    faculty: list[tuple[str, tuple[int, int]]] = []
    for cls, local, (lo, hi), pubs in _FACULTY:
        for i in range(randint(lo, hi)):
            person_local = f"{local}{i}"
            person = f"<{base}/{person_local}>"
            faculty.append((person, pubs))
            if cls is not LECTURER:
                professors.append(person)
            add(f"{person} {RDF_TYPE} {cls} .\n")
            add(f"{person} {NAME} {lit(person_local)} .\n")
            add(f"{person} {EMAIL} {lit(f'{person_local}@Department{d}.University{u}.edu')} .\n")
            add(f"{person} {TELEPHONE} {phone()} .\n")
            add(f"{person} {AGE} {integer(randint(28, 70))} .\n")
            add(f"{person} {WORKS_FOR} {dept} .\n")
            add(f"{person} {UNDERGRADUATE_DEGREE_FROM} {_university(rng.randrange(DEGREE_UNIVERSITIES))} .\n")
            add(f"{person} {MASTERS_DEGREE_FROM} {_university(rng.randrange(DEGREE_UNIVERSITIES))} .\n")
            add(f"{person} {DOCTORAL_DEGREE_FROM} {_university(rng.randrange(DEGREE_UNIVERSITIES))} .\n")
            area = _RESEARCH_AREAS[rng.randrange(len(_RESEARCH_AREAS))]
            add(f"{person} {RESEARCH_INTEREST} {lit(area)} .\n")
            for _ in range(randint(1, 2)):
                add(f"{person} {TEACHER_OF} <{base}/Course{courses}> .\n")
                courses += 1
            if cls is not LECTURER:
                add(f"{person} {TEACHER_OF} <{base}/GraduateCourse{grad_courses}> .\n")
                grad_courses += 1
    add(f"{professors[0]} {HEAD_OF} {dept} .\n")

    for i in range(courses):
        add(f"<{base}/Course{i}> {RDF_TYPE} {COURSE} .\n")
        add(f"<{base}/Course{i}> {NAME} {lit(f'Course{i}')} .\n")
    for i in range(grad_courses):
        add(f"<{base}/GraduateCourse{i}> {RDF_TYPE} {GRADUATE_COURSE} .\n")
        add(f"<{base}/GraduateCourse{i}> {NAME} {lit(f'GraduateCourse{i}')} .\n")

    n_faculty = len(faculty)
    graduates = [f"<{base}/GraduateStudent{i}>" for i in range(randint(2 * n_faculty, 3 * n_faculty))]
    for i, student in enumerate(graduates):
        add(f"{student} {RDF_TYPE} {GRADUATE} .\n")
        add(f"{student} {NAME} {lit(f'GraduateStudent{i}')} .\n")
        add(f"{student} {MEMBER_OF} {dept} .\n")
        add(f"{student} {EMAIL} {lit(f'GraduateStudent{i}@Department{d}.University{u}.edu')} .\n")
        add(f"{student} {TELEPHONE} {phone()} .\n")
        add(f"{student} {AGE} {integer(randint(22, 40))} .\n")
        add(f"{student} {UNDERGRADUATE_DEGREE_FROM} {_university(rng.randrange(DEGREE_UNIVERSITIES))} .\n")
        add(f"{student} {ADVISOR} {professors[rng.randrange(len(professors))]} .\n")
        for c in _distinct(rng, grad_courses, randint(1, 3)):
            add(f"{student} {TAKES_COURSE} <{base}/GraduateCourse{c}> .\n")
        if rand() < 0.25:
            add(f"{student} {TEACHING_ASSISTANT_OF} <{base}/Course{rng.randrange(courses)}> .\n")

    for i in range(randint(6 * n_faculty, 9 * n_faculty)):
        student = f"<{base}/UndergraduateStudent{i}>"
        add(f"{student} {RDF_TYPE} {UNDERGRADUATE} .\n")
        add(f"{student} {NAME} {lit(f'UndergraduateStudent{i}')} .\n")
        add(f"{student} {MEMBER_OF} {dept} .\n")
        add(f"{student} {TELEPHONE} {phone()} .\n")
        add(f"{student} {AGE} {integer(randint(17, 25))} .\n")
        if rand() < 0.5:
            add(f"{student} {EMAIL} {lit(f'UndergraduateStudent{i}@Department{d}.University{u}.edu')} .\n")
        for c in _distinct(rng, courses, randint(2, 4)):
            add(f"{student} {TAKES_COURSE} <{base}/Course{c}> .\n")
        if rand() < 0.2:
            add(f"{student} {ADVISOR} {professors[rng.randrange(len(professors))]} .\n")

    for person, (lo, hi) in faculty:
        stem = person[:-1]  # without the closing '>'
        for j in range(randint(lo, hi)):
            pub = f"{stem}/Publication{j}>"
            add(f"{pub} {RDF_TYPE} {PUBLICATION} .\n")
            add(f"{pub} {NAME} {lit(f'Publication{j}')} .\n")
            add(f"{pub} {PUBLICATION_AUTHOR} {person} .\n")
            for g in _distinct(rng, len(graduates), randint(0, 2)):
                add(f"{pub} {PUBLICATION_AUTHOR} {graduates[g]} .\n")
    return out


def generate(triples: int, seed: int = 42) -> Iterator[str]:
    """N-Triples lines (each ending in ``\\n``): whole departments until at least ``triples``."""
    produced = 0
    u = 0
    while produced < triples:
        rng = random.Random(seed * 1_000_003 + u)
        univ = _university(u)
        head = [f"{univ} {RDF_TYPE} {UNIVERSITY} .\n", f'{univ} {NAME} "University{u}" .\n']
        produced += len(head)
        yield from head
        for d in range(rng.randint(15, 25)):
            lines = _department(rng, u, d)
            produced += len(lines)
            yield from lines
            if produced >= triples:
                return
        u += 1


def write_ntriples(path: str | Path, triples: int, seed: int = 42) -> int:
    """Write the data set to ``path`` (atomically, via a sibling temp file); returns lines written."""
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    count = 0
    with tmp.open("w", encoding="utf-8", newline="\n") as fh:
        batch: list[str] = []
        for line in generate(triples, seed):
            batch.append(line)
            if len(batch) >= 50_000:
                fh.write("".join(batch))
                count += len(batch)
                batch.clear()
        fh.write("".join(batch))
        count += len(batch)
    tmp.replace(target)
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.lubm", description=__doc__.splitlines()[0])
    parser.add_argument("--triples", type=int, default=100_000, help="at least this many (default 100000)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out", required=True, help="N-Triples file to write ('-' for stdout)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.out == "-":
        lines = list(generate(args.triples, args.seed))
        sys.stdout.write("".join(lines))
        count = len(lines)
    else:
        count = write_ntriples(args.out, args.triples, args.seed)
    print(f"wrote {count:,} triples in {time.perf_counter() - started:.2f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
