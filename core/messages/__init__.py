"""Messages to applicants: an outbox of emails and SMS with the webhook engine's discipline (docs/messages.md)."""
