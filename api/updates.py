"""Routes of the updates area, registered on `api.bp`."""
