"""Privacy: data-subject requests (export, erase), retention of old rows and the monthly partitions it drops."""
