"""SPARQL result formats written straight from ``Cell`` tuples, never through rdflib terms.

SELECT and ASK: application/sparql-results+json, application/sparql-results+xml, text/csv and
text/tab-separated-values (W3C SPARQL 1.1 Query Results JSON, XML, CSV/TSV). CONSTRUCT and
DESCRIBE: application/n-triples and text/turtle. ``serialise(result, media_type)`` picks the
writer for a media type and refuses one that does not fit the result's form.

Choices the W3C formats leave open:

* **ASK in CSV/TSV** (not defined by W3C): one column named ``boolean`` holding ``true`` or
  ``false`` — ``boolean\\r\\ntrue\\r\\n`` in CSV, ``?boolean\\ntrue\\n`` in TSV (where ``true``
  reads back as an xsd:boolean).
* **XML 1.0 cannot carry** U+0000-U+0008, U+000B, U+000C, U+000E-U+001F, U+FFFE, U+FFFF or lone
  surrogates, not even as character references. A result holding one is refused with
  ``BadRequest`` (reason ``not_representable_in_xml``) rather than altered; JSON, CSV, TSV and
  the RDF formats carry every character. Carriage returns are written as ``&#13;`` so XML
  line-end normalisation does not turn them into line feeds.
* **IRIs** in TSV, N-Triples and Turtle escape the characters an IRIREF may not contain (space,
  ``<>"{}|^`\\`` and controls) as ``\\uXXXX``; anything else is written as stored.
* **Blank node labels** are written as stored when they are valid N-Triples labels; any other
  label becomes ``x`` and 24 hex digits of its SHA-256, the same label every time.
* **Numbers and booleans** in TSV and Turtle use the bare Turtle form (``42``, ``1.5``,
  ``1.0E3``, ``true``) only when the lexical form is exactly such a token without a sign, so it
  reads back as the same lexical form and datatype; otherwise ``"lex"^^<datatype>`` (``"-7"``
  too: some readers, rdflib's among them, fail on or rewrite signed numerals).
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from json.encoder import encode_basestring_ascii
from typing import TYPE_CHECKING, Any, Final

from rdflib.term import Node

from quipu.errors import BadRequest, UnknownFormat
from quipu.sparql.cells import BNODE, LITERAL, URI, Cell, from_node

if TYPE_CHECKING:
    from quipu.sparql.engine import QueryResult

XSD: Final = "http://www.w3.org/2001/XMLSchema#"
RDF: Final = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDF_TYPE: Final = RDF + "type"
TABLE_FORMS: Final = ("SELECT", "ASK")
GRAPH_FORMS: Final = ("CONSTRUCT", "DESCRIBE")

SPARQL_JSON: Final = "application/sparql-results+json"
SPARQL_XML: Final = "application/sparql-results+xml"
CSV: Final = "text/csv"
TSV: Final = "text/tab-separated-values"
TURTLE: Final = "text/turtle"
NTRIPLES: Final = "application/n-triples"


# -- shared term syntax (N-Triples / Turtle / TSV) ------------------------------------------------

# Canonical N-Triples: ECHAR for \b \t \n \f \r \" \\, UCHAR for the other C0 controls and DEL.
_NT_STRING_ESCAPES: Final[dict[int, str]] = {c: f"\\u{c:04X}" for c in (*range(0x20), 0x7F)} | {
    0x08: "\\b",
    0x09: "\\t",
    0x0A: "\\n",
    0x0C: "\\f",
    0x0D: "\\r",
    0x22: '\\"',
    0x5C: "\\\\",
}
_NT_STRING_SPECIAL: Final = re.compile(r'[\x00-\x1f\x7f"\\]')
# TSV: escape only what the Turtle string grammar or the TSV line structure requires.
_TSV_STRING_ESCAPES: Final[dict[int, str]] = {
    0x09: "\\t",
    0x0A: "\\n",
    0x0D: "\\r",
    0x22: '\\"',
    0x5C: "\\\\",
}
_TSV_STRING_SPECIAL: Final = re.compile(r'[\t\n\r"\\]')
# IRIREF ::= '<' ([^#x00-#x20<>"{}|^`\] | UCHAR)* '>'
_IRI_SPECIAL: Final = re.compile(r'[\x00-\x20<>"{}|^`\\]')
_BNODE_LABEL: Final = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_\-])?")
# Turtle's INTEGER, DECIMAL, DOUBLE and BooleanLiteral tokens, unsigned: the bare form keeps the
# lexical form. Signed numerals are written quoted: rdflib's TSV reader fails on a negative
# decimal and rewrites other signed numbers ("-0" as "0", "+1.5" as "1.5").
_SHORT_FORMS: Final[dict[str, re.Pattern[str]]] = {
    XSD + "integer": re.compile(r"[0-9]+"),
    XSD + "decimal": re.compile(r"[0-9]*\.[0-9]+"),
    XSD + "double": re.compile(r"(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)[eE][+-]?[0-9]+"),
    XSD + "boolean": re.compile(r"true|false"),
}


def _nt_string(value: str) -> str:
    if _NT_STRING_SPECIAL.search(value) is None:
        return f'"{value}"'
    return f'"{value.translate(_NT_STRING_ESCAPES)}"'


def _tsv_string(value: str) -> str:
    if _TSV_STRING_SPECIAL.search(value) is None:
        return f'"{value}"'
    return f'"{value.translate(_TSV_STRING_ESCAPES)}"'


def _uchar(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04X}"


def _iri(iri: str) -> str:
    if _IRI_SPECIAL.search(iri) is None:
        return f"<{iri}>"
    return f"<{_IRI_SPECIAL.sub(_uchar, iri)}>"


@lru_cache(maxsize=4096)
def _safe_label(label: str) -> str:
    return "x" + hashlib.sha256(label.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _bnode(label: str) -> str:
    return f"_:{label}" if _BNODE_LABEL.fullmatch(label) else f"_:{_safe_label(label)}"


def _term(cell: Cell, string: Callable[[str], str] = _nt_string) -> str:
    """N-Triples syntax for one term (``string`` quotes and escapes a lexical form)."""
    kind, value, datatype, lang = cell
    if kind == LITERAL:
        if lang:
            return f"{string(value)}@{lang}"
        if datatype:
            return f"{string(value)}^^{_iri(datatype)}"
        return string(value)
    if kind == BNODE:
        return _bnode(value)
    return _iri(value)


def _short_term(cell: Cell, string: Callable[[str], str]) -> str:
    """Like ``_term`` but with Turtle's bare numbers and booleans where they keep the lexical form."""
    if cell.datatype is not None and cell.lang is None:
        pattern = _SHORT_FORMS.get(cell.datatype)
        if pattern is not None and pattern.fullmatch(cell.value):
            return cell.value
    return _term(cell, string)


def term_text(term: Cell | Node | None) -> str:
    """A compact one-line rendering for tables: N-Triples term syntax, '' for unbound."""
    if term is None:
        return ""
    return _term(term if isinstance(term, Cell) else from_node(term))


# -- SPARQL JSON -----------------------------------------------------------------------------------


def cell_json(cell: Cell) -> dict[str, str]:
    if cell.kind != LITERAL:
        return {"type": cell.kind, "value": cell.value}
    if cell.lang:
        return {"type": "literal", "value": cell.value, "xml:lang": cell.lang}
    if cell.datatype:
        return {"type": "literal", "value": cell.value, "datatype": cell.datatype}
    return {"type": "literal", "value": cell.value}


def _require(result: QueryResult, forms: tuple[str, ...], what: str) -> None:
    if result.form not in forms:
        hint = (
            "text/turtle or application/n-triples"
            if result.form in GRAPH_FORMS
            else "a SPARQL results format"
        )
        raise UnknownFormat(
            f"{what} cannot carry a {result.form} result (use {hint})",
            field="format",
            reason="format_mismatch",
        )


def sparql_json(result: QueryResult) -> dict[str, Any]:
    """application/sparql-results+json for SELECT and ASK, as a dict."""
    _require(result, TABLE_FORMS, "application/sparql-results+json")
    if result.form == "ASK":
        return {"head": {}, "boolean": bool(result.boolean)}
    names = result.variables
    return {
        "head": {"vars": list(names)},
        "results": {
            "bindings": [
                {name: cell_json(cell) for name, cell in zip(names, row, strict=True) if cell is not None}
                for row in result.table
            ]
        },
    }


def write_json(result: QueryResult) -> str:
    """application/sparql-results+json text for SELECT and ASK: compact, non-ASCII characters as
    ``\\uXXXX`` escapes (so the text is pure ASCII and any string, even a lone surrogate, encodes).

    Assembled by hand with the C JSON string encoder: 2.5-4x faster than
    ``json.dumps(sparql_json(result))`` on 50k rows (docs/sparql.md, "Result formats").
    """
    _require(result, TABLE_FORMS, "application/sparql-results+json")
    if result.form == "ASK":
        return '{"head":{},"boolean":' + ("true" if result.boolean else "false") + "}"
    enc = encode_basestring_ascii
    body = ""
    if result.table and result.variables:
        body = _json_rows(result, enc)
    elif result.table:
        body = ",".join(["{}"] * len(result.table))
    head = ",".join(enc(name) for name in result.variables)
    return '{"head":{"vars":[' + head + ']},"results":{"bindings":[' + body + "]}}"


def _json_rows(result: QueryResult, enc: Callable[[str], str]) -> str:
    """The bindings array's members: rows as SPARQL JSON objects, written by C-level loops.

    A result repeats its terms, so each distinct (variable, term) member is encoded once and
    columns are mapped through those. An unbound variable has no member, so a column with
    unbound rows writes its members with a leading comma (and "" when unbound) after the
    always-bound columns; member order carries no meaning in a JSON object. Encoding cell by
    cell cost most of the time of a 40k-row result (the SPARQL benchmark's Q2).
    """
    always: list[Any] = []
    sometimes: list[Any] = []
    for name, column in zip(result.variables, zip(*result.table, strict=True), strict=True):
        key = enc(name) + ':{"type":'
        unbound = None in column
        lead = "," if unbound else ""
        member = {cell: lead + _json_member(key, cell, enc) for cell in set(column) if cell is not None}
        if unbound:
            member[None] = ""
        (sometimes if unbound else always).append(map(member.__getitem__, column))
    if not always:  # every column has unbound rows: drop each row's first comma
        return ",".join("{" + "".join(row)[1:] + "}" for row in zip(*sometimes, strict=True))
    fmt = "{" + ",".join(["%s"] * len(always)) + "%s" * len(sometimes) + "}"
    return ",".join(map(fmt.__mod__, zip(*always, *sometimes, strict=True)))


def _json_member(key: str, cell: Cell, enc: Callable[[str], str]) -> str:
    kind, value, datatype, lang = cell
    if kind == LITERAL:
        if lang:
            return f'{key}"literal","value":{enc(value)},"xml:lang":{enc(lang)}}}'
        if datatype:
            return f'{key}"literal","value":{enc(value)},"datatype":{enc(datatype)}}}'
        return f'{key}"literal","value":{enc(value)}}}'
    return f'{key}{enc(kind)},"value":{enc(value)}}}'


# -- SPARQL XML ------------------------------------------------------------------------------------

_XML_SPECIAL: Final = re.compile('[&<>"\r\t\n\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]')
_XML_INVALID: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
_XML_TEXT_ESCAPES: Final[dict[int, str]] = {0x26: "&amp;", 0x3C: "&lt;", 0x3E: "&gt;", 0x0D: "&#13;"}
_XML_ATTR_ESCAPES: Final[dict[int, str]] = _XML_TEXT_ESCAPES | {0x22: "&quot;", 0x09: "&#9;", 0x0A: "&#10;"}


def _xml_escape(text: str, table: dict[int, str]) -> str:
    if _XML_SPECIAL.search(text) is None:
        return text
    bad = _XML_INVALID.search(text)
    if bad is not None:
        raise BadRequest(
            f"the result holds U+{ord(bad.group()):04X}, which XML 1.0 cannot carry; "
            "ask for application/sparql-results+json instead",
            reason="not_representable_in_xml",
            field="format",
        )
    return text.translate(table)


def _xml_cell(cell: Cell) -> str:
    kind, value, datatype, lang = cell
    text = _xml_escape(value, _XML_TEXT_ESCAPES)
    if kind == URI:
        return f"<uri>{text}</uri>"
    if kind == BNODE:
        return f"<bnode>{text}</bnode>"
    if lang:
        return f'<literal xml:lang="{_xml_escape(lang, _XML_ATTR_ESCAPES)}">{text}</literal>'
    if datatype:
        return f'<literal datatype="{_xml_escape(datatype, _XML_ATTR_ESCAPES)}">{text}</literal>'
    return f"<literal>{text}</literal>"


def write_xml(result: QueryResult) -> str:
    """application/sparql-results+xml for SELECT and ASK (W3C SPARQL Query Results XML Format)."""
    _require(result, TABLE_FORMS, "application/sparql-results+xml")
    out = ['<?xml version="1.0"?>\n<sparql xmlns="http://www.w3.org/2005/sparql-results#">\n']
    if result.form == "ASK":
        out.append("  <head/>\n  <boolean>" + ("true" if result.boolean else "false") + "</boolean>\n")
        out.append("</sparql>\n")
        return "".join(out)
    opens = [f'      <binding name="{_xml_escape(name, _XML_ATTR_ESCAPES)}">' for name in result.variables]
    out.append("  <head>\n")
    out.extend(f'    <variable name="{_xml_escape(n, _XML_ATTR_ESCAPES)}"/>\n' for n in result.variables)
    out.append("  </head>\n  <results>\n")
    memo: dict[Cell, str] = {}
    for row in result.table:
        out.append("    <result>\n")
        for open_tag, cell in zip(opens, row, strict=True):
            if cell is None:
                continue
            text = memo.get(cell)
            if text is None:
                text = memo[cell] = _xml_cell(cell)
            out.append(f"{open_tag}{text}</binding>\n")
        out.append("    </result>\n")
    out.append("  </results>\n</sparql>\n")
    return "".join(out)


# -- SPARQL CSV and TSV ----------------------------------------------------------------------------


def _csv_cell(cell: Cell | None) -> str:
    if cell is None:
        return ""
    if cell.kind == BNODE:
        return f"_:{cell.value}"
    return cell.value


def write_csv(result: QueryResult) -> str:
    """text/csv for SELECT (W3C): CRLF line ends, IRIs bare, blank nodes ``_:label``, literals
    by lexical form only (no datatype or language), unbound as an empty field.

    ASK (not defined by W3C): a ``boolean`` column with one row, ``true`` or ``false``.
    """
    _require(result, TABLE_FORMS, "text/csv")
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    if result.form == "ASK":
        writer.writerow(["boolean"])
        writer.writerow(["true" if result.boolean else "false"])
        return buf.getvalue()
    writer.writerow(result.variables)
    writer.writerows([_csv_cell(cell) for cell in row] for row in result.table)
    return buf.getvalue()


sparql_csv = write_csv


def write_tsv(result: QueryResult) -> str:
    """text/tab-separated-values for SELECT (W3C): ``?var`` header, LF line ends, terms in
    Turtle syntax (bare numbers and booleans where lossless), unbound as an empty field.

    ASK (not defined by W3C): ``?boolean`` and one row, ``true`` or ``false``.
    """
    _require(result, TABLE_FORMS, "text/tab-separated-values")
    if result.form == "ASK":
        return "?boolean\n" + ("true" if result.boolean else "false") + "\n"
    memo: dict[Cell, str] = {}
    lines = ["\t".join("?" + name for name in result.variables)]
    for row in result.table:
        fields: list[str] = []
        for cell in row:
            if cell is None:
                fields.append("")
                continue
            text = memo.get(cell)
            if text is None:
                text = memo[cell] = _short_term(cell, _tsv_string)
            fields.append(text)
        lines.append("\t".join(fields))
    return "\n".join(lines) + "\n"


# -- N-Triples and Turtle --------------------------------------------------------------------------


def _graph_triples(result: QueryResult, what: str) -> list[tuple[Cell, Cell, Cell]]:
    """The result's triples, less any that RDF cannot hold (a literal subject, a predicate that
    is not an IRI): SPARQL leaves such template instances out of a CONSTRUCT result."""
    _require(result, GRAPH_FORMS, what)
    return [t for t in result.triples if t[0].kind != LITERAL and t[1].kind == URI]


def ntriples(triples: Iterable[tuple[Cell, Cell, Cell]]) -> str:
    """Canonical N-Triples, one line per distinct triple, lines sorted."""
    memo: dict[Cell, str] = {}

    def term(cell: Cell) -> str:
        text = memo.get(cell)
        if text is None:
            text = memo[cell] = _term(cell)
        return text

    lines = {f"{term(s)} {term(p)} {term(o)} .\n" for s, p, o in triples}
    return "".join(sorted(lines))


def write_ntriples(result: QueryResult) -> str:
    """application/n-triples for CONSTRUCT and DESCRIBE: sorted lines, canonical escapes."""
    return ntriples(_graph_triples(result, "application/n-triples"))


# Prefixes a Turtle document may use; each is declared only when used.
TURTLE_PREFIXES: Final[dict[str, str]] = {
    "rdf": RDF,
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "xsd": XSD,
    "owl": "http://www.w3.org/2002/07/owl#",
}
_LOCAL_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")


def turtle(triples: Iterable[tuple[Cell, Cell, Cell]]) -> str:
    """Turtle grouped by subject (``;`` and ``,``): subjects, predicates and objects sorted by
    their N-Triples form (rdf:type first, as ``a``), the prefixes of ``TURTLE_PREFIXES`` where
    the local name is a plain name."""
    used: set[str] = set()

    def iri(value: str) -> str:
        for prefix, ns in TURTLE_PREFIXES.items():
            if value.startswith(ns) and _LOCAL_NAME.fullmatch(value, len(ns)):
                used.add(prefix)
                return f"{prefix}:{value[len(ns) :]}"
        return _iri(value)

    def term(cell: Cell) -> str:
        if cell.kind == URI:
            return iri(cell.value)
        if cell.kind == LITERAL and cell.datatype is not None and cell.lang is None:
            short = _short_term(cell, _nt_string)
            return short if short[0] != '"' else f"{_nt_string(cell.value)}^^{iri(cell.datatype)}"
        return _term(cell)

    nt_memo: dict[Cell, str] = {}

    def key(cell: Cell) -> str:
        text = nt_memo.get(cell)
        if text is None:
            text = nt_memo[cell] = _term(cell)
        return text

    rdf_type = Cell(URI, RDF_TYPE)
    grouped: dict[Cell, dict[Cell, set[Cell]]] = {}
    for s, p, o in triples:
        grouped.setdefault(s, {}).setdefault(p, set()).add(o)
    blocks: list[str] = []
    for s in sorted(grouped, key=key):
        preds = grouped[s]
        lines: list[str] = []
        for p in sorted(preds, key=lambda p: (p != rdf_type, key(p))):
            verb = "a" if p == rdf_type else term(p)
            objects = " ,\n        ".join(term(o) for o in sorted(preds[p], key=key))
            lines.append(f"{verb} {objects}")
        blocks.append(f"{term(s)}\n    " + " ;\n    ".join(lines) + " .\n")
    head = "".join(f"@prefix {prefix}: <{TURTLE_PREFIXES[prefix]}> .\n" for prefix in sorted(used))
    return head + ("\n" if head and blocks else "") + "\n".join(blocks)


def write_turtle(result: QueryResult) -> str:
    """text/turtle for CONSTRUCT and DESCRIBE (deterministic; see ``turtle``)."""
    return turtle(_graph_triples(result, "text/turtle"))


# -- media types -----------------------------------------------------------------------------------

Writer = Callable[["QueryResult"], str]
_WRITERS: Final[dict[str, tuple[Writer, tuple[str, ...]]]] = {
    SPARQL_JSON: (write_json, TABLE_FORMS),
    SPARQL_XML: (write_xml, TABLE_FORMS),
    CSV: (write_csv, TABLE_FORMS),
    TSV: (write_tsv, TABLE_FORMS),
    TURTLE: (write_turtle, GRAPH_FORMS),
    NTRIPLES: (write_ntriples, GRAPH_FORMS),
}
# Common spellings clients send for the same formats.
ALIASES: Final[dict[str, str]] = {
    "application/json": SPARQL_JSON,
    "application/xml": SPARQL_XML,
    "text/xml": SPARQL_XML,
    "application/x-turtle": TURTLE,
    "text/plain": NTRIPLES,  # N-Triples' media type before RDF 1.1
}


def media_types(form: str | None = None) -> dict[str, Writer]:
    """Canonical media type -> writer, for every form or only those that fit ``form``
    (first entry is the preferred default)."""
    return {mt: writer for mt, (writer, forms) in _WRITERS.items() if form is None or form in forms}


def _essence(media_type: str) -> str:
    base = media_type.split(";", 1)[0].strip().lower()
    return ALIASES.get(base, base)


def serialise(result: QueryResult, media_type: str, *, field: str = "accept") -> tuple[str, str]:
    """``(body, content type)`` of ``result`` in ``media_type`` (parameters ignored, aliases
    accepted). Raises ``UnknownFormat`` for an unknown media type or one that does not fit the
    result's form (a graph in a SPARQL results format, a table in Turtle)."""
    base = _essence(media_type)
    entry = _WRITERS.get(base)
    if entry is None:
        raise UnknownFormat(
            f"unknown result media type: {media_type!r} (try: {', '.join(media_types(result.form))})",
            field=field,
        )
    writer, forms = entry
    if result.form not in forms:
        raise UnknownFormat(
            f"{base} cannot carry a {result.form} result (try: {', '.join(media_types(result.form))})",
            field=field,
            reason="format_mismatch",
        )
    return writer(result), f"{base}; charset=utf-8"


def media_ranges(header: str | None) -> list[tuple[str, float]]:
    """``(media range, q)`` of each part of an Accept header, lower-cased, in the client's
    order; ranges with q = 0 (or an unreadable q) are dropped."""
    out: list[tuple[str, float]] = []
    for item in (header or "").split(","):
        kind, *params = (part.strip() for part in item.split(";"))
        if not kind:
            continue
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if q > 0:
            out.append((kind.lower(), q))
    return out


def negotiate(accept: str | None, form: str) -> str | None:
    """The canonical media type an Accept header prefers for a ``form`` result, or None when it
    accepts none of them. No header, ``*/*`` and ``type/*`` pick the form's default: SPARQL JSON
    for SELECT/ASK, Turtle for CONSTRUCT/DESCRIBE. Ties on q go to the more specific range, then the earlier one."""
    offered = list(media_types(form))
    if form in GRAPH_FORMS:
        offered.sort(key=lambda mt: mt != TURTLE)
    if not accept or not accept.strip():
        return offered[0]
    best: tuple[float, int, int, str] | None = None  # q, specificity, -position, choice
    for position, (kind, q) in enumerate(media_ranges(accept)):
        base = ALIASES.get(kind, kind)
        if base == "*/*":
            choice, specificity = offered[0], 0
        elif base.endswith("/*"):
            choice, specificity = next((mt for mt in offered if mt.startswith(base[:-1])), ""), 1
        else:
            choice, specificity = (base if base in offered else ""), 2
        candidate = (q, specificity, -position, choice)
        if choice and (best is None or candidate[:3] > best[:3]):
            best = candidate
    return None if best is None else best[3]
