"""Analysis of stored records: pure functions from records to figures."""
