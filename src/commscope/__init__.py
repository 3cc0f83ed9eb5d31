"""commscope: measure, analyse, predict and report cluster communication performance."""

__version__ = "0.1.0"
