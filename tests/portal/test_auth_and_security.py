from sqlalchemy import select

from core.db import db
from core.models import AuditLog
from tests.portal.conftest import PASSWORD, csrf_token, sign_in


def _audit_actions(app, institution_id=None):
    with app.app_context():
        statement = select(AuditLog.action, AuditLog.status).where(AuditLog.source == "portal").order_by(AuditLog.id)
        if institution_id:
            statement = statement.where(AuditLog.institution_id == institution_id)
        return [tuple(row) for row in db.session.execute(statement)]


def test_pages_need_sign_in_and_come_back_after_it(client, factory):
    institution = factory.institution()
    user = factory.user(institution)
    response = client.get("/applicants?stage=interview")
    assert response.status_code == 302
    assert response.headers["Location"] == "/login?next=/applicants?stage%3Dinterview"

    token = csrf_token(client, response.headers["Location"])
    signed = client.post("/login?next=/applicants?stage%3Dinterview",
                         data={"email": user.email, "password": PASSWORD, "csrf_token": token})
    assert signed.status_code == 302
    assert signed.headers["Location"] == "/applicants?stage=interview"


def test_htmx_request_without_session_is_told_to_reload_the_sign_in_page(client):
    response = client.get("/applicants", headers={"HX-Request": "true"})
    assert response.status_code == 401
    assert response.headers["HX-Redirect"].startswith("/login?next=")


def test_sign_in_refuses_foreign_redirect_targets(client, factory):
    user = factory.user(factory.institution())
    for target in ("https://evil.example/", "//evil.example/x", "/\\evil.example"):
        token = csrf_token(client)  # sign-in and sign-out rotate the session, its CSRF token included
        response = client.post("/login", query_string={"next": target},
                               data={"email": user.email, "password": PASSWORD, "csrf_token": token})
        assert response.status_code == 302
        assert response.headers["Location"] == "/dashboard"
        client.post("/logout", data={"csrf_token": csrf_token(client, "/dashboard")})


def test_wrong_password_is_refused_and_audited(app, client, factory):
    institution = factory.institution()
    user = factory.user(institution)
    response = sign_in(client, user.email, "wrong-password")
    assert response.status_code == 401
    assert "do not match an active account" in response.get_data(as_text=True)
    assert client.get("/dashboard").status_code == 302
    assert ("login.failed", 401) in _audit_actions(app)


def test_deactivated_user_cannot_sign_in_and_is_signed_out(app, portal_as, factory):
    admin = portal_as("admin")
    colleague = factory.user(admin.institution)
    other = app.test_client()
    assert sign_in(other, colleague.email).status_code == 302
    assert other.get("/dashboard").status_code == 200

    response = admin.post(f"/users/{colleague.id}/active", {"active": "false"}, htmx=True)
    assert response.status_code == 200
    assert "Deactivated" in response.get_data(as_text=True)

    assert other.get("/dashboard").status_code == 302
    assert sign_in(app.test_client(), colleague.email).status_code == 401


def test_failed_sign_ins_are_throttled(app, client, factory):
    user = factory.user(factory.institution())
    statuses = [sign_in(client, user.email, f"wrong-{attempt}").status_code for attempt in range(6)]
    assert statuses == [401] * 5 + [429]
    blocked = sign_in(client, user.email)  # even the right password waits now
    assert blocked.status_code == 429
    assert blocked.headers["Retry-After"]
    assert "Too many failed sign-in attempts" in blocked.get_data(as_text=True)
    assert ("login.throttled", 429) in _audit_actions(app)


def test_successful_sign_ins_do_not_count_towards_the_limit(client, factory):
    user = factory.user(factory.institution())
    for _ in range(7):
        assert sign_in(client, user.email).status_code == 302
        client.post("/logout", data={"csrf_token": csrf_token(client, "/dashboard")})


def test_forms_without_csrf_token_are_refused(staff, admin):
    response = staff.client.post("/logout")
    assert response.status_code == 400
    assert "form expired" in response.get_data(as_text=True)
    assert staff.get("/dashboard").status_code == 200, "still signed in"

    response = admin.post("/api-keys", {"name": "sync"}, htmx=True, csrf=False)
    assert response.status_code == 400
    response = admin.post("/api-keys", {"name": "sync", "csrf_token": "forged"}, csrf=False)
    assert response.status_code == 400
    assert "No API keys yet" in admin.get("/api-keys").get_data(as_text=True)


def test_portal_pages_carry_security_headers(client, staff):
    for response in (client.get("/login"), staff.get("/dashboard"), staff.get("/nowhere")):
        csp = response.headers["Content-Security-Policy"]
        assert "frame-ancestors 'none'" in csp
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.headers["Referrer-Policy"] == "same-origin"
    assert staff.get("/dashboard").headers["Cache-Control"] == "no-store"


def test_pages_have_no_inline_script_or_style(staff):
    html = staff.get("/dashboard").get_data(as_text=True)
    assert "<script>" not in html and "<style" not in html and " style=" not in html
    assert " on" + "click=" not in html


def test_staff_cannot_reach_admin_pages(staff):
    for path in ("/api-keys", "/users"):
        assert staff.get(path).status_code == 403
        assert staff.get(path, htmx=True).status_code == 403
    assert staff.post("/api-keys", {"name": "sneaky"}).status_code == 403
    html = staff.get("/dashboard").get_data(as_text=True)
    assert 'href="/api-keys"' not in html and 'href="/users"' not in html


def test_sign_out_ends_the_session_and_is_audited(app, staff):
    response = staff.post("/logout")
    assert response.status_code == 302
    assert staff.get("/dashboard").status_code == 302
    actions = [action for action, _ in _audit_actions(app, staff.institution.id)]
    assert actions[:1] == ["login"] and "logout" in actions
