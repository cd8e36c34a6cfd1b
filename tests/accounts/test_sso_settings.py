"""Setting up university sign-in: `flask sso set|show|remove` and the admins' page; the client secret stored
encrypted and never shown again; bad settings refused with a sentence, nothing half-applied."""
from __future__ import annotations

import json

from sqlalchemy import select

from core.db import db
from core.models import AuditLog
from core.models.sso import SsoConfiguration, SsoDomain
from tests.accounts.sso_fixtures import (  # noqa: F401 (fixtures)
    _provider_as_configured, provider, sso_trust, university, walk_sign_in,
)
from tests.portal.conftest import _fresh_login_counters  # noqa: F401

SECRET = "Ultra-Secret-Client-Value-42"


def cli(app, *args):
    return app.test_cli_runner().invoke(args=list(args))


def stored(app):
    with app.app_context():
        rows = db.session.scalars(select(SsoConfiguration)).all()
        domains = sorted(db.session.scalars(select(SsoDomain.domain)))
        for row in rows:
            db.session.expunge(row)
        return rows, domains


def test_sso_set_show_and_remove_print_the_documented_json(app, factory):
    institution = factory.institution()
    result = cli(app, "sso", "set", "--institution", institution.id, "--issuer", "https://accounts.google.com",
                 "--client-id", "123.apps.googleusercontent.com", "--client-secret", SECRET, "--domains",
                 "UR.ac.rw, cst.ur.ac.rw", "--require", "--create-users", "staff", "--json")
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed == {"institution_id": institution.id, "issuer": "https://accounts.google.com",
                       "client_id": "123.apps.googleusercontent.com", "domains": ["cst.ur.ac.rw", "ur.ac.rw"],
                       "require": True, "create_users": "staff", "client_secret_set": True,
                       "redirect_uri": "http://127.0.0.1:8000/login/sso/callback", "sessions_ended": 0}
    shown = cli(app, "sso", "show", "--institution", institution.id, "--json")
    assert shown.exit_code == 0 and SECRET not in shown.stdout
    assert json.loads(shown.stdout)["domains"] == ["cst.ur.ac.rw", "ur.ac.rw"]
    human = cli(app, "sso", "show", "--institution", institution.id)
    assert "never shown" in human.stdout and SECRET not in human.stdout
    [row], _ = stored(app)
    assert SECRET not in row.client_secret_ciphertext and row.client_secret_ciphertext.startswith("gAAAA")

    # `set` replaces every setting: no --require, default --create-users.
    again = cli(app, "sso", "set", "--institution", institution.id, "--issuer", "https://accounts.google.com",
                "--client-id", "123.apps.googleusercontent.com", "--client-secret", SECRET, "--domains", "ur.ac.rw",
                "--json")
    assert json.loads(again.stdout)["require"] is False and json.loads(again.stdout)["create_users"] == "none"
    assert stored(app)[1] == ["ur.ac.rw"]

    removed = cli(app, "sso", "remove", "--institution", institution.id, "--json")
    assert json.loads(removed.stdout) == {"institution_id": institution.id, "removed": True}
    assert stored(app) == ([], [])
    assert json.loads(cli(app, "sso", "remove", "--institution", institution.id, "--json").stdout)["removed"] is False
    missing = cli(app, "sso", "show", "--institution", institution.id, "--json")
    assert missing.exit_code == 1 and "has no university sign-in" in missing.output
    with app.app_context():
        actions = list(db.session.scalars(select(AuditLog.action).where(AuditLog.source == "cli")))
    assert actions == ["sso.set", "sso.set", "sso.removed"]


def test_sso_set_refuses_bad_settings_and_changes_nothing(app, factory):
    institution, other = factory.institution(), factory.institution()
    base = ["sso", "set", "--institution", institution.id, "--client-id", "abc", "--client-secret", SECRET]
    cases = {
        "http://accounts.google.com": ("ur.ac.rw", "https:// address"),
        "https://accounts.google.com": ("not a domain!", "is not an email domain"),
    }
    for issuer, (domains, message) in cases.items():
        refused = cli(app, *base, "--issuer", issuer, "--domains", domains)
        assert refused.exit_code == 1 and message in refused.output
    assert cli(app, *base, "--issuer", "https://accounts.google.com", "--domains", "ur.ac.rw",
               "--create-users", "admin").exit_code == 2
    assert cli(app, "sso", "set", "--institution", "ins_missing", "--issuer", "https://accounts.google.com",
               "--client-id", "a", "--client-secret", "b", "--domains", "ur.ac.rw").exit_code == 1
    assert stored(app) == ([], [])
    assert cli(app, *base, "--issuer", "https://accounts.google.com", "--domains", "ur.ac.rw").exit_code == 0
    taken = cli(app, "sso", "set", "--institution", other.id, "--issuer", "https://accounts.google.com",
                "--client-id", "a", "--client-secret", "b", "--domains", "mak.ac.ug,ur.ac.rw")
    assert taken.exit_code == 1 and "Another institution signs in the addresses of ur.ac.rw" in taken.output
    rows, domains = stored(app)
    assert [row.institution_id for row in rows] == [institution.id] and domains == ["ur.ac.rw"]


def test_admins_set_it_on_the_portal_and_never_see_the_secret_again(app, portal_as, provider, sso_trust):
    admin = portal_as("admin")
    page = admin.get("/settings/sso")
    assert page.status_code == 200 and "/login/sso/callback" in page.get_data(as_text=True)
    saved = admin.post("/settings/sso", {"issuer": provider.issuer, "client_id": "karibu-client",
                                         "client_secret": provider.client.client_secret, "domains": "ur.ac.rw",
                                         "create_users": "staff"})
    assert saved.status_code == 302
    shown = admin.get("/settings/sso").get_data(as_text=True)
    assert provider.client.client_secret not in shown and "never shown again" in shown
    assert 'value="ur.ac.rw"' in shown
    # Saved again with the secret left empty: the stored one is kept and still signs people in.
    assert admin.post("/settings/sso", {"issuer": provider.issuer, "client_id": "karibu-client",
                                        "client_secret": "", "domains": "ur.ac.rw",
                                        "create_users": "staff"}).status_code == 302
    walk = walk_sign_in(app.test_client(), sso_trust, "new.person@ur.ac.rw")
    assert walk.response.status_code == 302
    assert "University sign-in" in admin.get("/users").get_data(as_text=True)

    removed = admin.post("/settings/sso/remove")
    assert removed.status_code == 302 and stored(app) == ([], [])


def test_the_portal_refuses_bad_settings_with_a_sentence(app, portal_as):
    admin = portal_as("admin")
    missing_secret = admin.post("/settings/sso", {"issuer": "https://accounts.google.com", "client_id": "a",
                                                  "client_secret": "", "domains": "ur.ac.rw",
                                                  "create_users": "none"})
    assert missing_secret.status_code == 422
    assert "Give the client secret" in missing_secret.get_data(as_text=True)
    bad_domain = admin.post("/settings/sso", {"issuer": "https://accounts.google.com", "client_id": "a",
                                              "client_secret": "b", "domains": "ur.ac.rw, -bad-",
                                              "create_users": "none"})
    assert bad_domain.status_code == 422 and "is not an email domain" in bad_domain.get_data(as_text=True)
    bad_choice = admin.post("/settings/sso", {"issuer": "https://accounts.google.com", "client_id": "a",
                                              "client_secret": "b", "domains": "ur.ac.rw",
                                              "create_users": "admin"})
    assert bad_choice.status_code == 422
    assert stored(app) == ([], [])


def test_only_admins_open_the_page(app, portal_as):
    staff = portal_as("staff")
    assert staff.get("/settings/sso").status_code == 403
    assert staff.post("/settings/sso", {"issuer": "https://accounts.google.com", "client_id": "a",
                                        "client_secret": "b", "domains": "ur.ac.rw"}).status_code == 403
    assert staff.post("/settings/sso/remove").status_code == 403


def test_the_pages_speak_the_admins_language(app, portal_as):
    admin = portal_as("admin")
    assert admin.post("/account/language", {"language": "fr"}).status_code in (200, 302)
    page = admin.get("/settings/sso").get_data(as_text=True)
    assert "Connexion par le compte universitaire" in page and "Administrateurs de secours" in page
    assert "Réglages de la connexion universitaire" in admin.get("/users").get_data(as_text=True)
