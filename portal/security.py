"""Sign-in plumbing, roles, security headers and the audit helper of the portal."""
from __future__ import annotations

import hashlib
import hmac
from functools import wraps
from urllib.parse import urlsplit

from flask import Flask, g, redirect, request, session, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from flask_login import LoginManager, current_user, login_required
from htmx_flask import Htmx

from core.audit.recording import AuditEntry
from core.errors import Forbidden
from core.applications.history import Actor
from core.institutions.sandbox import sandbox_scope
from core.scoping import InstitutionScope
from core.accounts.sessions import live_session
from core.accounts.users import load_active_user

# The key of the signed session cookie that names the browser's server-side session record.
SESSION_RECORD_KEY = "staff_session"

# The key of the signed session cookie that holds the fingerprint of the client the session was started from.
SESSION_CLIENT_KEY = "staff_client"

# Flask-Login: the portal's staff sign-in (initialised by wsgi.register_extensions).
login_manager = LoginManager()

# No inline script or style anywhere in the portal: htmx runs with allowEval off and its indicator styles
# disabled, so the policy needs no 'unsafe-*' source.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
}


def configure_app(app: Flask) -> None:
    """Called once when the blueprint is registered."""
    Htmx(app)
    login_manager.login_view = "portal.login"
    login_manager.login_message = _l("Sign in to continue.")
    login_manager.localize_callback = str  # the lazy message in the language of the request that flashes it
    login_manager.login_message_category = "info"
    # Off: the portal binds sessions to the client itself (`bind_session_to_client`; docs/design-notes.md).
    login_manager.session_protection = None
    app.after_request(_add_security_headers)


def client_fingerprint() -> str:
    """What a signed-in session is bound to: the client address (as trusted per PROXY_COUNT) and the user
    agent."""
    base = f"{request.remote_addr}|{request.headers.get('User-Agent', '')}"
    return hashlib.sha512(base.encode("utf-8", errors="replace")).hexdigest()


def bind_session_to_client() -> None:
    """At sign-in: the session (a signed cookie) keeps the client's fingerprint, checked on every request."""
    session[SESSION_CLIENT_KEY] = client_fingerprint()


def _session_from_its_client() -> bool:
    bound = session.get(SESSION_CLIENT_KEY)
    return isinstance(bound, str) and hmac.compare_digest(bound.encode(), client_fingerprint().encode())


@login_manager.user_loader
def _load_user(user_id: str):
    """The signed-in user of a request, or None: only from the client the session was started from, while the
    account is active and its session record live (else the session is dropped)."""
    if not _session_from_its_client():
        session.clear()
        return None
    user = load_active_user(user_id)
    if user is None or live_session(session.get(SESSION_RECORD_KEY), user.id) is None:
        return None
    return user


@login_manager.unauthorized_handler
def _unauthorized():
    """htmx requests get a 401 with HX-Redirect (htmx follows it as a full page load); others a redirect."""
    target = url_for("portal.login", next=safe_next(request.full_path.rstrip("?")))
    if request.headers.get("HX-Request") == "true":
        return "", 401, {"HX-Redirect": target}
    return redirect(target)


def safe_next(path: str | None) -> str | None:
    """Only same-site paths are followed after sign-in (no open redirect)."""
    if not path:
        return None
    parts = urlsplit(path)
    if parts.scheme or parts.netloc or not path.startswith("/") or path.startswith("//") or "\\" in path:
        return None
    return path



def _add_security_headers(response):
    if request.blueprint == "api":
        return response
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    # A response that chose its own caching (a public logo) does not load the user: no session record is
    # refreshed, and a session from another client is not dropped with a Set-Cookie on a cacheable response.
    if "Cache-Control" not in response.headers and current_user.is_authenticated:
        response.headers["Cache-Control"] = "no-store"
    return response


VIEWING_TEST_DATA = "viewing_test_data"  # the session key of the "Viewing test data" switch
# The pages of applicants, the dashboard, messages and webhooks (its endpoint: the test endpoint) show the sandbox
# while the switch is on; the other settings never do.
TEST_DATA_PAGES = ("portal.applicants", "portal.dashboard", "portal.messages", "portal.webhooks")


def viewing_test_data() -> bool:
    return bool(session.get(VIEWING_TEST_DATA))


def staff_required(view):
    """Signed in; the view gets `g.scope` for the user's institution (its sandbox on a page of data while the
    staff member views test data)."""
    shows_test_data = view.__module__.startswith(TEST_DATA_PAGES)

    @login_required
    @wraps(view)
    def wrapper(*args, **kwargs):
        g.scope = InstitutionScope(current_user.institution_id)
        if shows_test_data and viewing_test_data():
            g.scope = sandbox_scope(g.scope)
        return view(*args, **kwargs)
    return wrapper


def admin_required(view):
    """Signed in as an admin of the institution (keys, webhooks, users)."""
    @staff_required
    @wraps(view)
    def wrapper(*args, **kwargs):
        if not current_user.is_admin:
            raise Forbidden(_("Only admins of your institution can open this page."))
        return view(*args, **kwargs)
    return wrapper


def staff_actor() -> Actor:
    """The signed-in staff member, as the history of the applications they change names them."""
    return Actor.staff(current_user.email)


def audit(action: str, target: str = "", status: int | None = None, user=None) -> None:
    """Declare this request's audit row: a portal action by the signed-in user (or `user` during sign-in),
    written after the response with its status unless `status` gives the action's own outcome."""
    actor = user if user is not None else (current_user if current_user.is_authenticated else None)
    g.audit = AuditEntry(source="portal", actor=getattr(actor, "email", "anonymous"),
                         institution_id=getattr(actor, "institution_id", None), action=action, target=target,
                         status=status)
