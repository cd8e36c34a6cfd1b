"""Signed, SSRF-safe webhook delivery: endpoint settings, the outbox, attempts, retries and the log."""
