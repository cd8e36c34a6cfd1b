"""Routes of the verifications area, registered on `api.bp`."""
