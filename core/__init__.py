"""Karibu's domain, by area (accounts, applications, audit, events, outbox, webhooks, messages, verification,
privacy, models) over a small platform layer (config, db, queue, errors, …). Knows nothing of HTTP or RQ."""
