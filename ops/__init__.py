"""Operating surface of the web app: `/healthz`, `/readyz`, `/metrics`, request logging, gunicorn settings.

Thin like `api` and `portal`: it reads `core` (metrics, models) and never imports `api`, `portal` or `jobs`.
"""
