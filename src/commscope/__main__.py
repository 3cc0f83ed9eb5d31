"""Allow ``python -m commscope``."""

from commscope.cli import main

raise SystemExit(main())
