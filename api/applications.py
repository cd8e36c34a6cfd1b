"""Routes of the applications area, registered on `api.bp`."""
