"""``quipu share`` and ``quipu import``: shares as directories of files (tools-graphs-governance §4).

Shares are files, so the CLI is how people carry them between machines: ``share`` writes the
members of one slice into a directory, ``import`` stages such a directory in another store, and
``import promote`` moves it into ROOT. Only the CLI can attest a share (it reads a private key)
or mark it internal; ``share trust``/``revoke``/``keygen`` manage the receiver's producer sessions.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from quipu.cli import share_trust
from quipu.cli.common import ConfigOption, DbOption, emit, open_store, read_text, stage_bar
from quipu.errors import InvalidField, PayloadTooLarge

if TYPE_CHECKING:
    from quipu.api import KnowledgeBase

share_group = typer.Typer(
    help="Write a share (a portable, hash-sealed slice of the store) into a directory.",
    invoke_without_command=True,
)
share_trust.register(share_group)

MEMBERS = (
    "manifest.json",
    "manifest.ttl",
    "export.nt",
    "shapes.ttl",
    "export.ttl",
    "queries.ttl",
    "alignments.ttl",
)


@share_group.callback()
def share(
    ctx: typer.Context,
    output: Annotated[
        str | None, typer.Option("--output", "-o", help="the directory to write the share into")
    ] = None,
    graph: Annotated[str | None, typer.Option("--graph", help="share one named graph")] = None,
    group_id: Annotated[
        str | None, typer.Option("--group-id", help="share one episode provenance group")
    ] = None,
    construct: Annotated[
        str | None, typer.Option("--construct", help="share a CONSTRUCT/DESCRIBE result")
    ] = None,
    shapes: Annotated[
        list[str] | None, typer.Option("--shapes", help="a shape set to bundle (repeat)")
    ] = None,
    no_shapes: Annotated[bool, typer.Option("--no-shapes", help="bundle no shapes")] = False,
    queries: Annotated[
        list[str] | None, typer.Option("--queries", help="a stored query to carry (repeat)")
    ] = None,
    no_queries: Annotated[bool, typer.Option("--no-queries", help="carry no stored queries")] = False,
    alignments: Annotated[
        str | None, typer.Option("--alignments", help="a Turtle file of alignment evidence to seal")
    ] = None,
    parent_share: Annotated[
        str | None, typer.Option("--parent-share", help="the lineage parent's share id")
    ] = None,
    turtle: Annotated[bool, typer.Option("--turtle", help="also write export.ttl, a readable view")] = False,
    destination: Annotated[
        str | None,
        typer.Option("--destination", help="'internal': skip the outward scrub and mark the share so"),
    ] = None,
    attest_key: Annotated[
        str | None, typer.Option("--attest-key", help="Ed25519 private key (PEM) to attest the share with")
    ] = None,
    attest_session: Annotated[
        str | None, typer.Option("--attest-session", help="the attesting session id")
    ] = None,
    attest_introducer: Annotated[
        str, typer.Option("--attest-introducer", help="who introduced the key")
    ] = "self",
    attest_agent: Annotated[str | None, typer.Option("--attest-agent", help="the attesting agent")] = None,
    attest_ttl: Annotated[int, typer.Option("--attest-ttl", help="seconds the binding stays valid")] = 86_400,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Write the share's members into --output; the manifest goes to stdout."""
    if ctx.invoked_subcommand is not None:
        return
    if output is None:
        raise InvalidField("missing --output: the directory to write the share into", field="output")
    given = [
        (k, v) for k, v in (("graph", graph), ("group", group_id), ("construct", construct)) if v is not None
    ]
    if len(given) > 1:
        raise InvalidField("give at most one of --graph, --group-id, --construct", field=given[1][0])
    if destination not in (None, "internal"):
        raise InvalidField(f"--destination takes only 'internal', got {destination!r}", field="destination")
    if attest_key is not None and attest_session is None:
        raise InvalidField("--attest-key needs --attest-session", field="attest_session")
    scope: dict[str, Any] = (
        {"kind": given[0][0], "value": given[0][1]} if given else {"kind": "root", "value": None}
    )
    from quipu.sharing import manifest as mf
    from quipu.sharing import producing

    with open_store(db, config) as kb:
        manifest, files = producing.members(
            kb.sharing.env,
            scope=scope,
            shapes=shapes or None,
            no_shapes=no_shapes,
            queries=[] if no_queries else (queries or None),
            alignments_turtle=read_text(alignments, "--alignments") if alignments is not None else None,
            parent_share=parent_share,
            with_turtle_view=turtle,
            internal=destination == "internal",
        )
    if attest_key is not None:
        from quipu.sharing import attestation

        manifest["attestation"] = attestation.mint(
            attest_key,
            manifest,
            session=attest_session or "",
            introducer=attest_introducer,
            agent=attest_agent or attest_session or "",
            ttl_seconds=attest_ttl,
        )
        files["manifest.json"] = mf.manifest_text(manifest)
    target = Path(output)
    target.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (target / name).write_text(text, encoding="utf-8")
    if "attestation" in manifest:  # the public half, for the receiver's `quipu share trust`
        binding = mf.canonical_json(manifest["attestation"]["binding"]) + "\n"
        (target / "binding.json").write_text(binding, encoding="utf-8")
    emit({"share_id": manifest["share_id"], "output": str(target), "manifest": manifest})


VERBS = ("promote", "reject", "expire", "reopen")


def _review_verb(kb: KnowledgeBase, verb: str, share_id: str, actor: str | None) -> dict[str, Any]:
    if verb == "promote":
        return kb.sharing.promote(share_id=share_id, actor=actor)
    from quipu.sharing import reviews

    if verb == "reopen":
        return reviews.reopen(kb.db, share_id)
    return reviews.close(kb.db, share_id, "rejected" if verb == "reject" else "expired")


def read_share(directory: str, limit: int) -> dict[str, Any]:
    """A share directory as the wire carries it; refused before any member is read when the
    members together are larger than ``limit`` (``[quipu.sharing] max_share_bytes``)."""
    root = Path(directory)
    if not (root / "manifest.json").is_file():
        raise InvalidField(f"not a share directory (no manifest.json): {directory}", field="share")
    present = {name: root / name for name in MEMBERS if (root / name).is_file()}
    size = sum(p.stat().st_size for p in present.values())
    if size > limit:
        raise PayloadTooLarge(
            f"the share is {size} bytes, over max_share_bytes {limit} ([quipu.sharing]); nothing was read"
        )
    try:
        manifest = json.loads(present["manifest.json"].read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InvalidField(f"manifest.json is not JSON: {exc}", field="manifest") from None

    def member(name: str) -> str | None:
        return present[name].read_text(encoding="utf-8") if name in present else None

    return {
        "manifest": manifest,
        "export_ntriples": member("export.nt") or "",
        "shapes_turtle": member("shapes.ttl") or "",
        "queries_turtle": member("queries.ttl"),
        "alignments_turtle": member("alignments.ttl"),
    }


def import_command(
    target: Annotated[str, typer.Argument(help="a share directory, or promote, reject, expire or reopen")],
    share_id: Annotated[str | None, typer.Argument(help="with a verb: the share id it acts on")] = None,
    source: Annotated[
        str | None, typer.Option("--source", help="where the share came from (default: its path)")
    ] = None,
    actor: Annotated[str | None, typer.Option("--actor", help="a claimed actor, recorded as a claim")] = None,
    accept_exact: Annotated[
        bool, typer.Option("--accept-exact", help="rewrite exact name matches to local IRIs")
    ] = False,
    query_namespace: Annotated[
        str | None, typer.Option("--query-namespace", help="where carried queries install")
    ] = None,
    replace_queries: Annotated[
        bool, typer.Option("--replace-queries", help="let the namespace follow the share")
    ] = False,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Stage a share directory (quarantined when it does not fit this store); or act on an
    imported share: `import promote ID`, `import reject ID`, `import expire ID`, `import reopen ID`."""
    with open_store(db, config) as kb:
        if target in VERBS:
            if share_id is None:
                raise InvalidField(f"import {target} needs the share id it acts on", field="share_id")
            emit(_review_verb(kb, target, share_id, actor))
            return
        if share_id is not None:
            raise InvalidField(
                f"unexpected argument {share_id!r} after the share directory", field="share_id"
            )
        wire = read_share(target, kb.sharing.max_share_bytes)
        with stage_bar() as bar:
            task = bar.add_task("verifying", total=None)
            answer = kb.sharing.import_share(
                source=source or str(Path(target).resolve()),
                actor=actor,
                accept_exact=accept_exact,
                query_namespace=query_namespace,
                replace_queries=replace_queries,
                progress=lambda phase: bar.update(task, description=phase),
                **wire,
            )
    emit(answer)
    sys.stderr.write(f"{answer['outcome']}: {answer['staging_graph']}\n")
