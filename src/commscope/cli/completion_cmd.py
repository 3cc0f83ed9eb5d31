"""``commscope completion``: the shell completion script, generated from the parser by shtab."""

from __future__ import annotations

import argparse

SHELLS = ("bash", "zsh", "tcsh")
HELP = "print a shell completion script (bash, zsh, tcsh), generated from commscope's parser"
EXAMPLES = """examples:
  commscope completion bash > ~/.local/share/bash-completion/completions/commscope
  commscope completion zsh > "${fpath[1]}/_commscope"
  source <(commscope completion bash)            this shell only"""


def setup_parser(p: argparse.ArgumentParser) -> None:
    """Declare the shell argument."""
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")


def run(args: argparse.Namespace) -> int:
    """Print the script of the parser every command is built from."""
    import shtab

    from commscope.cli import build_parser

    print(shtab.complete(build_parser(), shell=args.shell))
    return 0
