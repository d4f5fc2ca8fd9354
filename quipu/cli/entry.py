"""The console scripts' first code: answers that need no command-line library come first.

``quipu mcp`` and ``quipu-server --mcp-stdio`` with well-formed flags start the stdio server
without importing typer (its client is waiting for ``initialize``), and ``quipu version`` prints
the version; every other command line goes to the typer apps, which own ``--help``, parsing and
errors (issue 16: each entry point imports only what its first answer needs).
"""

from __future__ import annotations

import sys


def main() -> None:
    """``quipu``."""
    args = sys.argv[1:]
    if args[:1] == ["mcp"]:
        from quipu.cli.stdio_launch import parse, run

        flags = parse(args[1:], server=False)
        if flags is not None:
            sys.exit(run(flags))
    elif args in (["version"], ["--version"]):
        import quipu

        print(quipu.__version__)
        return
    from quipu.cli.main import app

    app()


def server_main() -> None:
    """``quipu-server``."""
    args = sys.argv[1:]
    if "--mcp-stdio" in args:
        from quipu.cli.stdio_launch import parse, run

        flags = parse(args, server=True)
        if flags is not None:
            sys.exit(run(flags))
    from quipu.cli.server import main as typer_main

    typer_main()
