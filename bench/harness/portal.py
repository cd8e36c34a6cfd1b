"""Signing in to the staff portal over HTTP, as a browser does."""
from __future__ import annotations

import re

import requests

CSRF_META = re.compile(r'<meta name="csrf-token" content="([^"]+)"')


def sign_in(base: str, email: str, password: str) -> requests.Session:
    """A session signed in as that staff user; SystemExit if the portal refuses."""
    session = requests.Session()
    token = CSRF_META.search(session.get(f"{base}/login", timeout=60).text).group(1)
    response = session.post(f"{base}/login", data={"email": email, "password": password, "csrf_token": token},
                            allow_redirects=False, timeout=60)
    if response.status_code != 302:
        raise SystemExit(f"staff sign-in as {email} failed ({response.status_code})")
    return session
