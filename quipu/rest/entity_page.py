"""The small HTML page of ``GET /entity/{iri}`` for a browser (tools-core §1.6).

Built from the expanded JSON-LD description; every piece of stored text is escaped, and links
to other entities are relative paths with the IRI percent-encoded, so no stored IRI can become
a script URL or break out of an attribute.
"""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import quote

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"

_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2rem;max-width:60rem}"
    "code{word-break:break-all}table{border-collapse:collapse;width:100%}"
    "td,th{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}"
    ".note{color:#666;font-size:.85em}"
)


def entity_link(iri: str, suffix: str = "html") -> str:
    """The path of an entity's page: ``/`` and ``:`` stay readable, ``#``, ``?`` and ``%`` are
    encoded so the IRI survives the trip (the router decodes them)."""
    return f"/entity/{quote(iri, safe=':/')}/{suffix}"


def _text(item: Any) -> str:
    if isinstance(item, dict):
        if "@id" in item:
            iri = str(item["@id"])
            labels = item.get(RDFS_LABEL)
            shown = _first_text(labels) if labels is not None else iri
            return f'<a href="{escape(entity_link(iri))}">{escape(shown)}</a>'
        lexical = escape(str(item.get("@value", "")))
        if "@language" in item:
            return f'{lexical} <span class="note">@{escape(str(item["@language"]))}</span>'
        return f'{lexical} <span class="note">{escape(str(item.get("@type", "")))}</span>'
    if isinstance(item, bool):
        return "true" if item else "false"
    return escape(str(item))


def _first_text(labels: Any) -> str:
    first = labels[0] if isinstance(labels, list) and labels else labels
    if isinstance(first, dict):
        return str(first.get("@value", first.get("@id", "")))
    return str(first)


def render(doc: dict[str, Any]) -> str:
    """The page for one expanded entity document (``@id``, ``@type``, full-IRI keys)."""
    iri = str(doc["@id"])
    label = doc.get(RDFS_LABEL)
    title = _first_text(label) if label is not None else iri
    rows: list[str] = []
    types = doc.get("@type")
    if types is not None:
        for t in types if isinstance(types, list) else [types]:
            rows.append(f"<tr><th>type</th><td>{_text({'@id': t})}</td></tr>")
    for key, item in doc.items():
        if key.startswith("@"):
            continue
        cells = "<br>".join(_text(x) for x in (item if isinstance(item, list) else [item]))
        rows.append(f"<tr><th><code>{escape(key)}</code></th><td>{cells}</td></tr>")
    table = (
        f"<table><tbody>{''.join(rows)}</tbody></table>"
        if rows
        else '<p class="note">No current statements have this IRI as their subject.</p>'
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>\n"
        f"<body><main><h1>{escape(title)}</h1><p><code>{escape(iri)}</code></p>\n{table}\n"
        f'<p class="note">Also as <a href="{escape(entity_link(iri, "json"))}">JSON-LD</a> or '
        f'<a href="{escape(entity_link(iri, "ttl"))}">Turtle</a>.</p></main></body></html>\n'
    )
