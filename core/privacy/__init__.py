"""Privacy: data-subject requests (export, erase) and retention of old rows."""
