"""How many nights a recent step alarms for: the history verdict's window.

Light on purpose (no NumPy): the command line reads it while building its parser. The rule
is :mod:`commscope.check.history_verdict`'s.
"""

from __future__ import annotations

# A step shows to the history from its third night (3 runs must follow a change point), so
# 5 nights let it alarm on its nights 3, 4 and 5: a weekend's checks.
DEFAULT_HISTORY_NIGHTS = 5
