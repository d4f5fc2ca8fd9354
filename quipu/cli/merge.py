"""``quipu merge``: a three-way merge of a share directory into ROOT, in two steps
(tools-graphs-governance §4.4, §4.5; the same services as ``/merge/decisions`` and ``/merge/apply``).

    quipu merge <share-dir> --emit-decisions <file> [--propose] [--base <share-dir>]
    quipu merge <share-dir> --decisions <file> --reviewer <who> [--dry-run] [--actor <id>] [--base <share-dir>]

The base is the incoming share's ``parent_share``: ``--base`` names its directory, or else it is
looked for among the share directories beside the incoming one. Share directories are read as the
wire carries them (``quipu.cli.sharing.read_share``). The decisions document goes into the named
file; the apply result goes to stdout; one-line summaries go to stderr.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from quipu.cli.common import ConfigOption, DbOption, emit, open_store, read_text
from quipu.cli.sharing import read_share
from quipu.errors import InvalidField


def _find_base(incoming: Path, parent: object, limit: int) -> dict[str, Any]:
    """The one sibling share directory whose manifest names ``parent`` as its share id."""
    if not isinstance(parent, str):
        raise InvalidField(
            "incoming share has no parent_share; three-way merge has no base", field="parent_share"
        )
    found = []
    for candidate in sorted(incoming.resolve().parent.iterdir()):
        manifest = candidate / "manifest.json"
        if candidate == incoming.resolve() or not manifest.is_file():
            continue
        try:
            share_id = json.loads(manifest.read_text(encoding="utf-8")).get("share_id")
        except (json.JSONDecodeError, AttributeError):
            continue  # not a share: not a candidate
        if share_id == parent:
            found.append(candidate)
    if len(found) != 1:
        what = "not found" if not found else f"ambiguous ({len(found)} copies)"
        raise InvalidField(
            f"base share {parent} {what} beside {incoming}: name its directory with --base", field="base"
        )
    return read_share(str(found[0]), limit)


def _decisions(path: str) -> dict[str, Any]:
    try:
        document = json.loads(read_text(path, "--decisions", what="decisions"))
    except json.JSONDecodeError as exc:
        raise InvalidField(f"the decisions file is not JSON: {exc}", field="decisions") from None
    if not isinstance(document, dict):
        raise InvalidField("the decisions file must hold a JSON object", field="decisions")
    return document


def merge_command(
    share_dir: Annotated[str, typer.Argument(metavar="SHARE-DIR", help="the incoming share directory")],
    base: Annotated[
        str | None, typer.Option("--base", help="the base share directory (default: found beside SHARE-DIR)")
    ] = None,
    emit_decisions: Annotated[
        str | None, typer.Option("--emit-decisions", help="write the merge-decisions/v1 document here")
    ] = None,
    propose: Annotated[bool, typer.Option("--propose", help="give each row a mechanical proposal")] = False,
    decisions: Annotated[
        str | None, typer.Option("--decisions", help="a decided merge-decisions/v1 file to apply")
    ] = None,
    reviewer: Annotated[
        str | None, typer.Option("--reviewer", help="who decided (recorded in the source)")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="check everything, report counts, write nothing")
    ] = False,
    actor: Annotated[str | None, typer.Option("--actor", help="the transaction actor")] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Emit the decisions of merging SHARE-DIR into ROOT, or apply a decided file."""
    if (emit_decisions is None) == (decisions is None):
        raise InvalidField(
            "give exactly one of --emit-decisions FILE and --decisions FILE", field="decisions"
        )
    if emit_decisions is not None and (reviewer is not None or dry_run or actor is not None):
        raise InvalidField("--reviewer, --dry-run and --actor go with --decisions", field="emit_decisions")
    if decisions is not None and propose:
        raise InvalidField("--propose goes with --emit-decisions", field="propose")
    if decisions is not None and reviewer is None:
        raise InvalidField("--decisions needs --reviewer WHO", field="reviewer")
    document = _decisions(decisions) if decisions is not None else None
    with open_store(db, config) as kb:
        limit = kb.sharing.max_share_bytes
        incoming = read_share(share_dir, limit)
        parent = incoming["manifest"].get("parent_share") if isinstance(incoming["manifest"], dict) else None
        base_share = (
            read_share(base, limit) if base is not None else _find_base(Path(share_dir), parent, limit)
        )
        if document is None:
            assert emit_decisions is not None
            out = kb.sharing.merge_decisions(incoming=incoming, base=base_share, propose=propose)
            Path(emit_decisions).write_text(
                json.dumps(out, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
            )
            rows = len(out["rows"])
            sys.stderr.write(
                f"{rows} conflict(s) written to {emit_decisions}"
                + (": set each row's decision, then apply it with --decisions\n" if rows else "\n")
            )
            return
        result = kb.sharing.merge_apply(
            incoming=incoming,
            base=base_share,
            decisions=document,
            reviewer=reviewer or "",
            actor=actor,
            dry_run=dry_run,
        )
    emit(result)
    sys.stderr.write(
        f"{result['outcome']}: {result['asserted']} asserted, {result['retracted']} retracted"
        + (f" (tx {result['tx_id']})\n" if result["tx_id"] is not None else "\n")
    )


def register(app: typer.Typer) -> None:
    """Add ``merge`` to the root command."""
    app.command("merge")(merge_command)
