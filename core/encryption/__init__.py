"""What the key ring encrypts at rest: the registry of encrypted columns and their re-encryption under SECRET_KEY."""
