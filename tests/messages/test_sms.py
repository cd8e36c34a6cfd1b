"""SMS through the local Africa's Talking stand-in (devtools/sms_gateway.py), which speaks the gateway's format."""
from __future__ import annotations

import threading

import pytest

from devtools.sms_gateway import create_server
from tests.messages.conftest import all_messages, drain_now, run_message_worker, send_decisions


@pytest.fixture
def gateway():
    server, state = create_server("127.0.0.1", 0, "karibu-test", "at-test-key")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, state
    server.shutdown()
    thread.join(timeout=10)


@pytest.fixture
def sms_app(mail_app, gateway, monkeypatch):
    server, _ = gateway
    for name, value in {"SMS_PROVIDER": "africastalking", "AFRICASTALKING_USERNAME": "karibu-test",
                        "AFRICASTALKING_API_KEY": "at-test-key", "SMS_SENDER_ID": "KARIBU",
                        "AFRICASTALKING_API_URL": f"http://127.0.0.1:{server.server_port}/version1/messaging"
                        }.items():
        monkeypatch.setitem(mail_app.config, name, value)
    return mail_app


def _decide(factory, app, phone, decision="accepted"):
    institution = factory.institution("University of Rwanda")
    _, key = factory.api_key(institution)
    program = factory.program(institution, name="BSc Computer Science")
    application = factory.application(institution, program=program, phone=phone)
    assert send_decisions(app.test_client(), key, [application.id], decision).status_code == 200
    return application


def test_a_decision_goes_by_sms_too_and_the_gateways_message_id_is_kept(sms_app, smtp, gateway, factory):
    _, state = gateway
    application = _decide(factory, sms_app, "+250788123456")
    by_channel = {m.channel: m for m in all_messages(sms_app)}
    assert set(by_channel) == {"email", "sms"}
    assert by_channel["sms"].status == "queued" and by_channel["sms"].recipient == "+250788123456"
    run_message_worker(sms_app)

    [sms] = state.sent
    assert (sms.username, sms.to, sms.sender) == ("karibu-test", "+250788123456", "KARIBU")
    assert "University of Rwanda" in sms.message and "BSc Computer Science" in sms.message
    assert "Accepted" in sms.message and "http://127.0.0.1:8000/decisions/respond/" in sms.message
    sent = {m.channel: m for m in all_messages(sms_app)}["sms"]
    assert (sent.status, sent.attempts, sent.provider_id) == ("sent", 1, sms.message_id)
    assert sent.provider_id.startswith("ATXid_") and len(smtp.received) == 1
    assert application.id == sent.application_id


def test_a_local_number_is_failed_without_calling_the_gateway(sms_app, smtp, gateway, factory):
    _decide(factory, sms_app, "0788123456")
    sms = {m.channel: m for m in all_messages(sms_app)}["sms"]
    assert sms.status == "failed" and "international format" in sms.last_error
    run_message_worker(sms_app)
    assert gateway[1].sent == []


def test_a_number_the_gateway_refuses_is_failed_with_its_answer(sms_app, smtp, gateway, factory, monkeypatch):
    from core.messages import composition
    monkeypatch.setattr(composition, "valid_international_phone", lambda number: True)  # let it reach the gateway
    _decide(factory, sms_app, "+12")
    drain_now(sms_app)
    sms = {m.channel: m for m in all_messages(sms_app)}["sms"]
    assert (sms.status, sms.last_error) == ("failed", "403 InvalidPhoneNumber")


def test_gateway_errors_are_retried_and_sms_is_off_unless_configured(sms_app, smtp, gateway, factory, clock,
                                                                     monkeypatch):
    _, state = gateway
    state.mode = "error"
    _decide(factory, sms_app, "+254711000111")
    drain_now(sms_app)
    sms = {m.channel: m for m in all_messages(sms_app)}["sms"]
    assert sms.status == "retry_scheduled" and sms.last_error.startswith("SMS gateway answered HTTP 500")
    state.mode = "normal"
    clock.advance(sms.next_attempt_at - sms.updated_at)
    drain_now(sms_app)
    assert {m.channel: m for m in all_messages(sms_app)}["sms"].status == "sent" and len(state.sent) == 1

    monkeypatch.setitem(sms_app.config, "SMS_PROVIDER", "")
    before = len(all_messages(sms_app))
    _decide(factory, sms_app, "+254711000222")
    assert [m.channel for m in all_messages(sms_app)[before:]] == ["email"]
