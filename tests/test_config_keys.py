"""docs/config.md documents every settings key, each one the code reads, with its real default.

The "Every key" table of docs/config.md is parsed and held against ``quipu.config.Settings``: a
documented key that is not a field, a field that is not documented, a documented default that is
not the code's, or a documented key that nothing reads (its attribute never accessed as ``.name``
in ``quipu/**/*.py`` outside ``quipu/config.py``) each fail.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import get_args, get_origin

import pytest
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from quipu.config import Settings

# Never reaches the backend under test: the PostgreSQL half skips it (tests/conftest.py).
pytestmark = pytest.mark.backend_independent

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "config.md"
ROW = re.compile(r"^\|\s*`(?P<key>[^`]+)`\s*\|\s*(?P<default>.*?)\s*\|\s*(?P<meaning>.*?)\s*\|$")
# Keys the code reads through a property of the config object, not by their own name.
READ_AS = {"server.credentials[].id": "credential_id"}


def documented() -> dict[str, str]:
    """Key -> default cell of every row of the "Every key" table."""
    text = DOC.read_text(encoding="utf-8")
    assert "\n## Every key\n" in text, "docs/config.md lost its '## Every key' section"
    section = text.split("\n## Every key\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        match = ROW.match(line)
        if match is None:
            continue
        key = match["key"]
        assert key not in rows, f"{key} is documented twice"
        assert match["meaning"], f"{key} has no meaning"
        rows[key] = match["default"]
    return rows


def settings_fields(model: type[BaseModel] = Settings, prefix: str = "") -> Iterator[tuple[str, FieldInfo]]:
    """Dotted key and field of every setting; a list of tables also yields ``key[].sub``."""
    for name, field in model.model_fields.items():
        key = prefix + name
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from settings_fields(annotation, key + ".")
            continue
        yield key, field
        if get_origin(annotation) is list:
            (item,) = get_args(annotation)
            if isinstance(item, type) and issubclass(item, BaseModel):
                yield from settings_fields(item, key + "[].")


def _code_text() -> str:
    files = sorted((ROOT / "quipu").rglob("*.py"))
    return "\n".join(p.read_text(encoding="utf-8") for p in files if p != ROOT / "quipu" / "config.py")


FIELDS = dict(settings_fields())
DOCUMENTED = documented()
_CODE = _code_text()


def test_the_table_was_found_and_is_not_trivial() -> None:
    assert len(DOCUMENTED) >= 15
    assert "store.db" in DOCUMENTED and "base_ns" in DOCUMENTED


def test_every_documented_key_is_a_settings_field() -> None:
    assert sorted(DOCUMENTED.keys() - FIELDS.keys()) == []
    assert sorted(READ_AS.keys() - FIELDS.keys()) == []


def test_every_settings_field_is_documented() -> None:
    assert sorted(FIELDS.keys() - DOCUMENTED.keys()) == []


@pytest.mark.parametrize("key", sorted(DOCUMENTED))
def test_documented_default_is_the_codes(key: str) -> None:
    if key not in FIELDS:
        pytest.skip("not a field (reported by test_every_documented_key_is_a_settings_field)")
    field, cell = FIELDS[key], DOCUMENTED[key]
    if cell == "required":
        assert field.is_required(), f"{key} is documented as required but has a default"
        return
    assert not field.is_required(), f"{key} is required but documented with default {cell}"
    default = field.get_default(call_default_factory=True)
    if cell == "unset":
        assert default is None, f"{key} defaults to {default!r}, documented as unset"
        return
    literal = re.fullmatch(r"`(.+)`", cell)
    assert literal is not None, f"{key}: default {cell!r} is neither `TOML`, unset nor required"
    assert tomllib.loads(f"v = {literal[1]}")["v"] == default


@pytest.mark.parametrize("key", sorted(DOCUMENTED))
def test_documented_key_is_read_by_the_code(key: str) -> None:
    attribute = READ_AS.get(key, re.split(r"\.|\[\]\.", key)[-1])
    assert re.search(rf"\.{re.escape(attribute)}\b", _CODE), (
        f"{key} is documented but nothing outside quipu/config.py reads .{attribute}"
    )
