"""Routes of the zip area, registered on `api.bp`."""
