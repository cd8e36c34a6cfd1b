"""Routes of the cycles area, registered on `api.bp`."""
