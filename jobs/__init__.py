"""RQ job functions (grouped by domain) and the worker entry point. Jobs call `core`."""
