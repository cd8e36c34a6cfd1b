"""SECRET_KEY_FALLBACKS through the public surface, one signer at a time: the same browser and API client
before a rotation (old key), during it (new key, old key a fallback) and after it (fallback dropped).

Each "server" is an app of its own on the test database; the browser keeps its cookies across them, as a real
one keeps them across a restart."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import click
import pyotp
import pytest
from sqlalchemy import select

from core.config import ConfigurationError
from core.db import db
from core.models import TwoFactorCredential
from core.secret_key import RETIRED_DEFAULT_SECRET_KEYS, derived_fernet
from core.webhooks.endpoints import save_endpoint
from core.scoping import InstitutionScope
from tests.accounts.conftest import form_token
from tests.conftest import app_config, auth_header
from tests.messages.conftest import send_decisions
from tests.ops.processes import ROOT
from tests.portal.bulk_confirmation import confirmation_token
from tests.portal.conftest import PASSWORD, sign_in
from tests.verification.conftest import post_json
from wsgi import create_app

OLD_KEY = "old-key-Xq3vT9pL2mZ8rK4wN7bY6cH1jF5dG0sA"
NEW_KEY = "new-key-Lw8Rt2Yx5Kp9Mz3Qv7Nb4Hc6Jf1Dg0Sa"
LOST_KEY = "lost-key-Pz4Wq8Ey2Rt6Yu1Io9Pa5Sd3Fg7Hj0Kl"
TRIAL_BODY = {"issuer": "KNEC", "index_number": "20403001045", "year": "2022", "examination": "KCSE"}


@pytest.fixture
def servers(app, database_url, tmp_path):
    """`servers(key, *fallbacks)`: an app on the test database under that key ring."""
    made = {}

    def make(key: str, *fallbacks: str):
        ring = (key, *fallbacks)
        if ring not in made:
            made[ring] = create_app({**app_config(database_url, tmp_path / "documents"), "SECRET_KEY": key,
                                     "SECRET_KEY_FALLBACKS": ",".join(fallbacks)})
        return made[ring]
    yield make
    for server in made.values():
        with server.app_context():
            db.engine.dispose()


def restarted(client, server):
    """The same client (its cookies) talking to `server`."""
    client.application = server
    return client


def test_a_weak_fallback_stops_the_start_as_a_weak_secret_key_does(database_url, tmp_path):
    base = {**app_config(database_url, tmp_path), "SECRET_KEY": NEW_KEY}
    for fallbacks, complaint in [
        (f"{OLD_KEY},short-key", "SECRET_KEY_FALLBACKS (key 2 of 2) is too short"),
        (next(iter(RETIRED_DEFAULT_SECRET_KEYS)), "SECRET_KEY_FALLBACKS (key 1 of 1) is the old public default"),
        ("0123456789abcdef" * 3, "SECRET_KEY_FALLBACKS (key 1 of 1) is not random enough"),
        (NEW_KEY, "SECRET_KEY_FALLBACKS (key 1 of 1) is SECRET_KEY itself"),
    ]:
        with pytest.raises(ConfigurationError) as refused:
            create_app({**base, "SECRET_KEY_FALLBACKS": fallbacks})
        assert complaint in str(refused.value)
        assert "short-key" not in str(refused.value) and OLD_KEY not in str(refused.value)
    assert create_app({**base, "SECRET_KEY_FALLBACKS": f" {OLD_KEY} , {LOST_KEY} ,"}).config[
        "SECRET_KEY_FALLBACKS"] == [OLD_KEY, LOST_KEY]


def test_the_process_refuses_to_start_with_a_weak_fallback_in_its_environment(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "SECRET_KEY": NEW_KEY, "SECRET_KEY_FALLBACKS": f"{OLD_KEY},aaaaaaaaaaaaaaaa",
           "DATABASE_URL": f"sqlite:///{tmp_path / 'k.db'}", "KARIBU_INSTANCE_DIR": str(tmp_path / "instance")}
    started = subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", "secrets", "reencrypt"], env=env,
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert started.returncode == 1
    assert "Karibu cannot start: SECRET_KEY_FALLBACKS (key 2 of 2) is too short" in started.stderr
    assert "aaaaaaaaaaaaaaaa" not in started.stderr


def test_sessions_signed_links_cursors_and_replays_across_a_rotation(servers, factory):
    institution = factory.institution()
    user = factory.user(institution, role="admin", password=PASSWORD)
    _, api_key = factory.api_key(institution)
    applications = [factory.application(institution) for _ in range(3)]
    old, rotated, new = servers(OLD_KEY), servers(NEW_KEY, OLD_KEY), servers(NEW_KEY)

    browser, idle = old.test_client(), old.test_client()
    for client in (browser, idle):
        assert sign_in(client, user.email).status_code == 302
    form = form_token(browser, "/applicants")
    bulk = {"ids": [applications[0].id], "stage": "interview", "csrf_token": form}
    htmx = {"HX-Request": "true"}
    confirmations = [confirmation_token(browser.post("/applicants/bulk", data=bulk, headers=htmx))
                     for _ in range(2)]
    api = old.test_client()
    assert send_decisions(api, api_key, [applications[1].id]).status_code == 200
    with old.app_context():
        from core.applications.decision_answers import decision_response_token
        from core.models import Decision
        decision = db.session.scalars(select(Decision)).one()
        decision_link = f"/decisions/respond/{decision_response_token(decision)}"
    list_cursor = api.get("/api/v1/applications?limit=1", headers=auth_header(api_key)).json["cursor"]
    feed_cursor = api.get("/api/v1/events?limit=1", headers=auth_header(api_key)).json["cursor"]
    assert feed_cursor
    first_lookup = post_json(api, "/api/v1/verifications", TRIAL_BODY,
                             {**auth_header("sk_trial_demo"), "Idempotency-Key": "rotation-1"})
    assert first_lookup.status_code == 200

    # New key, the old one a fallback: all of it is accepted.
    restarted(browser, rotated)
    assert browser.get("/account").status_code == 200
    done = browser.post("/applicants/bulk", data={**bulk, "confirmation": confirmations[0]},  # old CSRF token too
                        headers=htmx)
    assert done.status_code == 200 and "1 of 1 selected application changed" in done.get_data(as_text=True)
    restarted(api, rotated)
    assert api.get(decision_link).status_code == 200
    assert api.get(f"/api/v1/applications?limit=1&cursor={list_cursor}", headers=auth_header(api_key)).status_code \
        == 200
    assert api.get(f"/api/v1/events?limit=1&cursor={feed_cursor}", headers=auth_header(api_key)).status_code == 200
    replay = post_json(api, "/api/v1/verifications", TRIAL_BODY,
                       {**auth_header("sk_trial_demo"), "Idempotency-Key": "rotation-1"})
    assert replay.status_code == 200 and replay.headers["Idempotent-Replayed"] == "true"

    # The fallback dropped: what only the old key signed is refused.
    restarted(idle, new)
    assert idle.get("/account").status_code == 302
    restarted(browser, new)
    assert sign_in(browser, user.email).status_code == 302  # a new session, under the new key
    asked_again = browser.post("/applicants/bulk", headers=htmx, data={
        **bulk, "confirmation": confirmations[1], "csrf_token": form_token(browser, "/applicants")})
    assert asked_again.status_code == 200 and 'name="confirmation"' in asked_again.get_data(as_text=True)
    restarted(api, new)
    refused = api.get(decision_link)
    assert refused.status_code == 404
    stale = api.get(f"/api/v1/applications?limit=1&cursor={list_cursor}", headers=auth_header(api_key))
    assert stale.status_code == 400 and stale.json["errors"][0]["name"] == "cursor"
    assert api.get(f"/api/v1/events?limit=1&cursor={feed_cursor}", headers=auth_header(api_key)).status_code == 400


def test_a_form_opened_before_the_rotation_posts_after_it(servers, factory):
    institution = factory.institution()
    user = factory.user(institution, password=PASSWORD)
    old, rotated = servers(OLD_KEY), servers(NEW_KEY, OLD_KEY)
    browser = old.test_client()
    assert sign_in(browser, user.email).status_code == 302
    token = form_token(browser, "/account")
    restarted(browser, rotated)
    assert browser.post("/logout", data={"csrf_token": token}).status_code == 302
    assert browser.get("/account").status_code == 302  # signed out: the post was accepted


def test_two_factor_codes_need_the_secret_readable_by_the_ring(servers, factory):
    institution = factory.institution()
    user = factory.user(institution, password=PASSWORD)
    old, rotated, new = servers(OLD_KEY), servers(NEW_KEY, OLD_KEY), servers(NEW_KEY)
    browser = old.test_client()
    assert sign_in(browser, user.email).status_code == 302
    page = browser.get("/account/two-factor/enrol").get_data(as_text=True)
    secret = page.split('<code id="two-factor-secret">')[1].split("</code>")[0].replace(" ", "")
    totp, step = pyotp.TOTP(secret), [0]

    def code() -> str:  # a fresh step each time (a code is accepted once; one step of drift is allowed)
        step[0] = max(step[0] + 1, int(time.time() // 30) - 1)
        while step[0] > int(time.time() // 30) + 1:
            time.sleep(1)
        return totp.at(step[0] * 30)

    assert browser.post("/account/two-factor/enrol", data={"code": code(), "csrf_token": form_token(
        browser, "/account/two-factor/enrol")}).status_code == 201

    def signs_in(server, typed: str | None = None) -> bool:
        client = server.test_client()
        sign_in(client, user.email)
        client.post("/login/two-factor", data={"code": typed or code(),
                                               "csrf_token": form_token(client, "/login/two-factor")})
        return client.get("/account").status_code == 200

    assert signs_in(rotated)
    assert not signs_in(new, totp.now())  # not re-encrypted: no key of the ring reads it any more
    result = rotated.test_cli_runner().invoke(args=["secrets", "reencrypt", "--json"])
    assert json.loads(result.stdout)["reencrypted"] == 1
    assert signs_in(new)


def test_a_box_from_the_secret_key_alone_opens_under_its_fallbacks(servers):
    """A later use of `derived_fernet(settings().SECRET_KEY, label)` is covered by the ring without knowing it."""
    old, rotated = servers(OLD_KEY), servers(NEW_KEY, OLD_KEY)
    with old.app_context():
        sealed = derived_fernet(old.config["SECRET_KEY"], b"some later use").encrypt(b"private key")
    with rotated.app_context():
        assert derived_fernet(rotated.config["SECRET_KEY"], b"some later use").decrypt(sealed) == b"private key"


def test_reencrypt_reports_unreadable_rows_and_resumes_after_a_stop(servers, factory, monkeypatch):
    institution = factory.institution()
    users = [factory.user(institution) for _ in range(3)]
    old, lost, rotated = servers(OLD_KEY), servers(LOST_KEY), servers(NEW_KEY, OLD_KEY)
    for server, user in zip((old, old, lost), users):
        with server.app_context():
            box = derived_fernet(server.config["SECRET_KEY"], b"karibu two-factor secrets v1")
            db.session.add(TwoFactorCredential(user_id=user.id, secret_ciphertext=box.encrypt(
                pyotp.random_base32().encode()).decode()))
            db.session.commit()
    with old.app_context():
        old.config["WEBHOOK_ALLOW_PRIVATE_TARGETS"] = old.config["WEBHOOK_ALLOW_HTTP"] = True
        save_endpoint(InstitutionScope(institution.id), "http://127.0.0.1:9/hooks?token=abc")

    stops = iter([False, True])  # Ctrl-C once both webhook columns' batches are committed
    real_update = click._termui_impl.ProgressBar.update

    def interrupted(bar, steps, current_item=None):
        if next(stops, False):
            raise KeyboardInterrupt
        real_update(bar, steps, current_item)
    monkeypatch.setattr(click._termui_impl.ProgressBar, "update", interrupted)
    runner = rotated.test_cli_runner()
    assert runner.invoke(args=["secrets", "reencrypt", "--batch-size", "1"]).exit_code != 0
    monkeypatch.setattr(click._termui_impl.ProgressBar, "update", real_update)

    result = runner.invoke(args=["secrets", "reencrypt", "--batch-size", "1", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)  # one JSON object on stdout; the progress bar went to stderr
    columns = {column["column"]: column for column in summary["columns"]}
    assert columns["webhook_endpoints.secret_ciphertext"]["already_current"] == 1  # done before the stop
    assert columns["webhook_endpoints.url_query_ciphertext"]["already_current"] == 1
    assert columns["two_factor_credentials.secret_ciphertext"]["reencrypted"] == 2
    assert columns["two_factor_credentials.secret_ciphertext"]["unreadable_ids"] == [users[2].id]
    assert (summary["reencrypted"], summary["unreadable"], summary["already_current"]) == (2, 1, 2)

    human = runner.invoke(args=["secrets", "reencrypt"])
    assert human.exit_code == 0  # unreadable rows are reported, not fatal
    assert f"1 unreadable under every key: {users[2].id}" in human.stdout
    assert "webhook_endpoints.secret_ciphertext: 0 re-encrypted, 1 already under SECRET_KEY" in human.stdout
    assert "add that key to SECRET_KEY_FALLBACKS" in human.stderr
