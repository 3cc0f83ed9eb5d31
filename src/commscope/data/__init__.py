"""Data: the record types, their JSON-lines parsing against the schema, and the SQLite store.

Imports nothing from commscope but errors, units and the input rules.
"""
