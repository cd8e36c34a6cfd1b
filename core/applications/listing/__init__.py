"""Filtered, keyset-paginated listings (applications, search, cycles) with signed cursors bound to the query.

Cursors, sorts and the lenient reading of values: docs/design-notes.md; the contract: docs/api.md.
"""
