"""The message outbox over a real SMTP server: what is written, what is sent, retries and refusals."""
from __future__ import annotations

import re
from datetime import timedelta

from core.messages.schedule import MAX_ATTEMPTS, RETRY_DELAYS
from tests.messages.conftest import all_messages, drain_now, later, run_message_worker, send_decisions


def _setup(factory, applications=1, **options):
    institution = factory.institution("Kigali Institute of Health")
    _, key = factory.api_key(institution)
    program = factory.program(institution, name="BSc Nursing")
    cycle = factory.cycle(institution, programs=[program], name="2026 Intake")
    apps = [factory.application(institution, program=program, cycle=cycle, **options) for _ in range(applications)]
    return institution, key, apps


def test_a_sent_decision_is_emailed_once_with_both_parts_and_its_own_message_id(mail_app, smtp, factory):
    institution, key, [application] = _setup(factory, first_name="Aimée", last_name="Uwase",
                                             email="aimee@example.com")
    client = mail_app.test_client()
    assert send_decisions(client, key, [application.id]).status_code == 200
    [queued] = all_messages(mail_app)
    assert (queued.status, queued.channel, queued.recipient, queued.attempts) == ("queued", "email",
                                                                                  "aimee@example.com", 0)
    assert smtp.received == []  # written in the request, sent by the worker

    run_message_worker(mail_app)
    [received] = smtp.received
    assert received.recipients == ["aimee@example.com"]
    email = received.message
    assert email["To"] == "Aimée Uwase <aimee@example.com>"
    # the institution's name on the platform's address; no contact address, so no Reply-To
    assert email["From"] == "Kigali Institute of Health <admissions@karibu.test>" and email["Reply-To"] is None
    assert received.mail_from == "admissions@karibu.test"
    assert email["Message-ID"] == queued.message_id_header
    assert re.fullmatch(r"<msg_[A-Za-z0-9]{20}@karibu\.test>", email["Message-ID"])
    assert "Kigali Institute of Health" in email["Subject"] and "BSc Nursing" in email["Subject"]
    assert email.get_content_type() == "multipart/alternative"
    text = email.get_body(("plain",)).get_content()
    html = email.get_body(("html",)).get_content()
    for part in (text, html):
        assert "Kigali Institute of Health" in part and "BSc Nursing" in part and "2026 Intake" in part
        assert "Accepted" in part
    assert "/decisions/respond/" in text and 'href="http://127.0.0.1:8000/decisions/respond/' in html
    [sent] = all_messages(mail_app)
    assert (sent.status, sent.attempts, sent.last_error) == ("sent", 1, None)
    assert sent.provider_id == "250 2.0.0 Ok: queued as Q1" and sent.sent_at is not None

    # A replayed PATCH sends nothing more: one message per sent decision.
    assert send_decisions(client, key, [application.id]).status_code == 200
    run_message_worker(mail_app)
    assert len(all_messages(mail_app)) == 1 and len(smtp.received) == 1


def test_a_rejection_carries_no_link(mail_app, smtp, factory):
    _, key, [application] = _setup(factory)
    send_decisions(mail_app.test_client(), key, [application.id], decision="rejected")
    run_message_worker(mail_app)
    email = smtp.received[0].message
    assert "/decisions/respond/" not in email.get_body(("plain",)).get_content()
    assert "/decisions/respond/" not in email.get_body(("html",)).get_content()
    assert "Not admitted" in email.get_body(("plain",)).get_content()


def test_smtp_4xx_is_retried_on_the_schedule_then_sent(mail_app, smtp, factory, clock):
    _, key, [application] = _setup(factory)
    send_decisions(mail_app.test_client(), key, [application.id])
    smtp.recorder.rcpt_answers = ["451 4.3.0 Mailbox temporarily unavailable"]
    drain_now(mail_app)
    [message] = all_messages(mail_app)
    assert (message.status, message.attempts) == ("retry_scheduled", 1)
    assert message.last_error == "451 4.3.0 Mailbox temporarily unavailable"
    assert message.next_attempt_at == message.updated_at + RETRY_DELAYS[0]
    assert smtp.received == []

    drain_now(mail_app)  # not due yet
    assert all_messages(mail_app)[0].attempts == 1
    later(clock, 1)
    drain_now(mail_app)
    [message] = all_messages(mail_app)
    assert (message.status, message.attempts, message.last_error) == ("sent", 2, None)
    assert len(smtp.received) == 1


def test_smtp_5xx_fails_at_once_with_the_servers_answer_kept(mail_app, smtp, factory, clock):
    _, key, [application] = _setup(factory)
    send_decisions(mail_app.test_client(), key, [application.id])
    smtp.recorder.rcpt_answers = ["550 5.1.1 <applicant@example.com>: Recipient address rejected"]
    drain_now(mail_app)
    [message] = all_messages(mail_app)
    assert (message.status, message.attempts, message.next_attempt_at) == ("failed", 1, None)
    assert message.last_error == "550 5.1.1 <applicant@example.com>: Recipient address rejected"
    later(clock, 60 * 48)
    drain_now(mail_app)
    assert all_messages(mail_app)[0].attempts == 1 and smtp.received == []


def test_a_refused_message_body_is_failed_too(mail_app, smtp, factory):
    _, key, [application] = _setup(factory)
    send_decisions(mail_app.test_client(), key, [application.id])
    smtp.recorder.data_answers = ["554 5.7.1 Message rejected as spam"]
    drain_now(mail_app)
    [message] = all_messages(mail_app)
    assert (message.status, message.last_error) == ("failed", "554 5.7.1 Message rejected as spam")


def test_smtp_down_then_up_delivers_each_message_once(mail_app, smtp, factory, clock):
    """A server that does not answer is no answer about the messages: they wait for the next probe (15–30 s)
    with their attempts untouched, and all go once it answers."""
    _, key, applications = _setup(factory, applications=3)
    smtp.stop()
    send_decisions(mail_app.test_client(), key, [a.id for a in applications])
    drain_now(mail_app)
    messages = all_messages(mail_app)
    assert {(m.status, m.attempts) for m in messages} == {("retry_scheduled", 0)}
    assert all("Connection" in m.last_error or "refused" in m.last_error for m in messages)
    assert all(15 <= (m.next_attempt_at - m.updated_at).total_seconds() <= 30 for m in messages)
    later(clock, 1)
    drain_now(mail_app)  # still down: the probe finds it so, nothing is counted
    assert {(m.status, m.attempts) for m in all_messages(mail_app)} == {("retry_scheduled", 0)}

    smtp.start()
    later(clock, 1)
    drain_now(mail_app)
    assert {(m.status, m.attempts) for m in all_messages(mail_app)} == {("sent", 1)}
    assert sorted(r.recipients[0] for r in smtp.received) == sorted(m.recipient for m in messages)


def test_temporary_failures_give_up_after_about_a_day(mail_app, smtp, factory, clock):
    _, key, [application] = _setup(factory)
    smtp.recorder.rcpt_answers = ["450 4.2.1 Mailbox busy"] * (len(RETRY_DELAYS) + 1)
    send_decisions(mail_app.test_client(), key, [application.id])
    for delay in (*RETRY_DELAYS, None):
        drain_now(mail_app)
        if delay is not None:
            clock.advance(delay)
    [message] = all_messages(mail_app)
    assert (message.status, message.attempts) == ("failed", MAX_ATTEMPTS)
    assert 20 <= sum(d.total_seconds() for d in RETRY_DELAYS) / 3600 <= 26


def test_two_drains_never_send_one_message_twice(mail_app, smtp, factory):
    from core.messages.delivery import MESSAGES
    from core.messages.runtime import runtime
    from core.outbox.leases import claim
    _, key, applications = _setup(factory, applications=4)
    send_decisions(mail_app.test_client(), key, [a.id for a in applications])
    with mail_app.app_context():
        first = claim(MESSAGES, runtime.clock.now(), 2).ids
        second = claim(MESSAGES, runtime.clock.now(), 10).ids
        third = claim(MESSAGES, runtime.clock.now(), 10).ids
    assert len(first) == 2 and len(second) == 2 and third == []
    assert not set(first) & set(second)


def test_header_injection_through_names_and_emails_is_impossible(mail_app, smtp, factory):
    institution, key, [named] = _setup(factory, first_name="Eve\r\nBcc: victim@example.org",
                                       last_name="X\nSubject: pwned", email="eve@example.com")
    other = factory.application(institution, email="mallory@example.com\r\nBcc: victim@example.org")
    send_decisions(mail_app.test_client(), key, [named.id, other.id])
    run_message_worker(mail_app)
    [received] = smtp.received
    assert received.recipients == ["eve@example.com"]
    email = received.message
    assert email["Bcc"] is None and len(email.get_all("Subject")) == 1
    assert "victim@example.org" in email["To"]  # only inside the quoted display name
    assert email["To"].addresses[0].addr_spec == "eve@example.com"
    refused = all_messages(mail_app, application_id=other.id)[0]
    assert (refused.status, refused.attempts) == ("failed", 0)
    assert refused.last_error == "Not a valid email address; nothing was sent."


def test_the_sweep_wakes_a_worker_for_messages_whose_job_was_lost(mail_app, smtp, factory, redis_client):
    from core.messages.sweep import sweep_due_messages
    _, key, [application] = _setup(factory)
    send_decisions(mail_app.test_client(), key, [application.id])
    redis_client.flushdb()  # the queued job is lost with Redis's data
    run_message_worker(mail_app)
    assert smtp.received == [] and all_messages(mail_app)[0].status == "queued"
    with mail_app.app_context():
        assert sweep_due_messages() == 1
    run_message_worker(mail_app)
    assert len(smtp.received) == 1 and all_messages(mail_app)[0].status == "sent"
    with mail_app.app_context():
        assert sweep_due_messages() == 0


def test_a_worker_that_died_mid_batch_leaves_its_claim_to_lapse(mail_app, smtp, factory, clock):
    from core.messages.delivery import LEASE, MESSAGES
    from core.messages.runtime import runtime
    from core.outbox.leases import claim
    _, key, [application] = _setup(factory)
    send_decisions(mail_app.test_client(), key, [application.id])
    with mail_app.app_context():
        [claimed] = claim(MESSAGES, runtime.clock.now(), 50).ids  # ...and the worker is killed before sending
    drain_now(mail_app)
    assert smtp.received == []  # the lease is still held: nobody else may send it
    clock.advance(LEASE + timedelta(seconds=1))
    drain_now(mail_app)
    assert len(smtp.received) == 1 and all_messages(mail_app)[0].status == "sent"
