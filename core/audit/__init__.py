"""The audit log: one row per request or command, and browsing it."""
