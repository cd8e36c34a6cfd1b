"""Karibu's domain: models, queries, cursors, events, billing. Knows nothing of HTTP or RQ."""
