"""``commscope manpage``: the manual page, generated from the parser by argparse-manpage."""

from __future__ import annotations

import argparse

HELP = "print commscope's manual page (roff), generated from its parser by argparse-manpage"
EXAMPLES = """examples:
  commscope manpage > commscope.1 && man ./commscope.1
  commscope manpage > ~/.local/share/man/man1/commscope.1   then: man commscope
  commscope manpage -o /usr/local/share/man/man1/commscope.1"""


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the output file."""
    p.add_argument("-o", "--output", metavar="FILE", help="write it here [default: stdout]")


def text() -> str:
    """The manual page of every command, action and kind, in roff."""
    from argparse_manpage.manpage import Manpage

    from commscope import __version__
    from commscope.cli import build_parser

    page = Manpage(
        build_parser(),
        _data={
            "description": "measure, analyse and report how a cluster's communication performs",
            "project_name": "commscope",
            "version": __version__,
        },
    )
    return str(page)


def run(args: argparse.Namespace) -> int:
    """Print (or write) the page."""
    page = text()
    if args.output:
        from commscope import safe_write

        safe_write.check_target(args.output, "--output")
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(page)
    else:
        print(page)
    return 0
