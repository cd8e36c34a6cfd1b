"""`Idempotency-Key` on every write of the API: claims, keyed request hashes and stored answers (keys)."""
