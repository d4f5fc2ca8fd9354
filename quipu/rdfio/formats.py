"""Names of the RDF formats quipu reads and writes."""

from __future__ import annotations

from typing import Final

from quipu.errors import UnknownFormat

INPUT_FORMATS: Final = {
    "turtle": "turtle",
    "ttl": "turtle",
    "nt": "nt",
    "ntriples": "nt",
    "n-triples": "nt",
    "nq": "nq",
    "nquads": "nq",
    "n-quads": "nq",
    "trig": "trig",
    "jsonld": "jsonld",
    "json-ld": "jsonld",
    "rdfxml": "rdfxml",
    "rdf/xml": "rdfxml",
    "xml": "rdfxml",
}
OUTPUT_FORMATS: Final = {"turtle": "turtle", "ttl": "turtle", "ntriples": "ntriples", "nt": "ntriples"}
_BY_SUFFIX: Final = {
    ".ttl": "turtle",
    ".nt": "nt",
    ".nq": "nq",
    ".trig": "trig",
    ".jsonld": "jsonld",
    ".json": "jsonld",
    ".rdf": "rdfxml",
    ".owl": "rdfxml",
    ".xml": "rdfxml",
}


def input_format(name: str) -> str:
    try:
        return INPUT_FORMATS[name.strip().lower()]
    except (KeyError, AttributeError):
        raise UnknownFormat(
            f"unknown input format: {name!r} (try: turtle, nt, nq, trig, jsonld, rdfxml)",
            field="format",
        ) from None


def output_format(name: str) -> str:
    try:
        return OUTPUT_FORMATS[name.strip().lower()]
    except (KeyError, AttributeError):
        raise UnknownFormat(
            f"unknown export format: {name} (try: turtle, ntriples)", field="format"
        ) from None


def guess_input_format(filename: str) -> str:
    """A format from a file name's suffix; Turtle when the suffix says nothing."""
    lower = filename.lower()
    for suffix, fmt in _BY_SUFFIX.items():
        if lower.endswith(suffix):
            return fmt
    return "turtle"
