"""The webhook engine end to end: outbox, worker, local HTTPS receiver, schedule, endpoint health."""
from __future__ import annotations

import json
import time
from datetime import timedelta
from decimal import Decimal

import pytest
from sqlalchemy import event as sqlalchemy_event
from sqlalchemy import func, select

from core.events import emission
from core.errors import Conflict, InvalidInput, NotFound
from core.db import db
from core.models import Application, Decision, Event, Payment, utcnow
from core.models.webhooks import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from core.scoping import InstitutionScope
from core.outbox.leases import claim
from core.webhooks.delivery import CLAIM_BATCH, DELIVERIES, LEASE, drain_due_deliveries
from core.webhooks.endpoints import enable_endpoint, get_endpoint, rotate_secret, save_endpoint
from core.webhooks.log import (
    get_delivery_with_attempts, list_deliveries, recover_since, redeliver, send_test_ping,
)
from core.webhooks.sweep import sweep_due_deliveries
from tests.webhooks.conftest import RECEIVER_HOST, queued_jobs, run_worker
from tests.webhooks.independent_verifier import Rejected, verify


def configure(app, institution, receiver, **options) -> str | None:
    with app.app_context():
        url = options.pop("url", receiver.url(RECEIVER_HOST))
        _, secret = save_endpoint(InstitutionScope(institution.id), url, **options)
        return secret


def emit(app, kind: str, institution, factory=None, **fields):
    """Emit one event of `kind` the way a product path does (change + event in one commit)."""
    with app.app_context():
        if kind == "webhook.test":
            event = emission.emit_webhook_test(InstitutionScope(institution.id))
        elif kind.startswith("application."):
            application = db.session.get(Application, fields["application"].id)
            event = (emission.emit_application_submitted if kind.endswith("submitted")
                     else emission.emit_application_updated)(application)
        elif kind.startswith("decision."):
            application = db.session.get(Application, fields["application"].id)
            decision = Decision(institution_id=institution.id, application_id=application.id, status="accepted",
                                sent_at=utcnow())
            db.session.add(decision)
            db.session.flush()
            if kind == "decision.responded":
                decision.response, decision.responded_at = "declined", utcnow()
                event = emission.emit_decision_responded(decision)
            else:
                event = emission.emit_decision_sent(decision)
        elif kind == "payment.completed":
            payment = Payment(institution_id=institution.id, application_id=fields.get("application_id"),
                              processor="mpesa", processor_reference=f"MPE{time.time_ns()}",
                              amount=Decimal("50000.00"), currency="RWF", status="completed",
                              completed_at=utcnow())
            db.session.add(payment)
            db.session.flush()
            event = emission.emit_payment_completed(payment)
        else:
            raise AssertionError(kind)
        db.session.commit()
        return event.id


def deliveries(app, institution) -> list[WebhookDelivery]:
    with app.app_context():
        rows = db.session.scalars(select(WebhookDelivery).where(WebhookDelivery.institution_id == institution.id)
                                  .order_by(WebhookDelivery.created_at, WebhookDelivery.id)).all()
        for row in rows:
            db.session.expunge(row)
        return rows


def delivery_for(app, event_id: str) -> WebhookDelivery:
    with app.app_context():
        row = db.session.scalars(select(WebhookDelivery).where(WebhookDelivery.event_id == event_id)).one()
        db.session.expunge(row)
        return row


def endpoint_of(app, institution) -> WebhookEndpoint:
    with app.app_context():
        endpoint = get_endpoint(InstitutionScope(institution.id))
        db.session.expunge(endpoint)
        return endpoint


# --- settings -------------------------------------------------------------------------------------------------


def test_secret_shown_once_stored_encrypted_and_settings_updated(engine, factory, receiver):
    institution = factory.institution()
    secret = configure(engine, institution, receiver)
    assert secret.startswith("whsec_")
    again = configure(engine, institution, receiver, events=["decision.sent", "application.updated"],
                      include_name=True)
    assert again is None
    endpoint = endpoint_of(engine, institution)
    assert secret not in endpoint.secret_ciphertext
    assert endpoint.event_types == ["application.updated", "decision.sent"]
    assert endpoint.include_applicant_name is True and endpoint.enabled is True


@pytest.mark.parametrize("url, reason", [
    ("http://hooks.receiver.test/x", "must use https"),
    ("https://public.example.test@127.0.0.1/", "user name or password"),
    ("https://169.254.169.254/", "metadata"),
    ("https://unknown.example.test/", "could not be resolved"),
])
def test_save_refuses_unsafe_urls_with_the_reason(engine, factory, url, reason):
    institution = factory.institution()
    with engine.app_context(), pytest.raises(InvalidInput) as refused:
        save_endpoint(InstitutionScope(institution.id), url)
    assert reason in refused.value.message and refused.value.name == "url"
    with engine.app_context():
        assert get_endpoint(InstitutionScope(institution.id)) is None


def test_save_refuses_private_targets_unless_allowed(app, factory, resolver, monkeypatch):
    monkeypatch.setitem(app.config, "WEBHOOK_ALLOW_PRIVATE_TARGETS", False)
    institution = factory.institution()
    with app.app_context(), pytest.raises(InvalidInput, match="127.0.0.1 is a loopback address"):
        save_endpoint(InstitutionScope(institution.id), f"https://{RECEIVER_HOST}/hooks")


def test_event_type_validation(engine, factory, receiver):
    institution = factory.institution()
    for bad, message in ([["payment.refunded"], "unknown event type 'payment.refunded'"],
                         [["webhook.test"], "always delivered"], [[], "at least one"]):
        with engine.app_context(), pytest.raises(InvalidInput, match=message):
            save_endpoint(InstitutionScope(institution.id), receiver.url(RECEIVER_HOST), events=bad)


def test_unknown_institution_is_not_found(engine, receiver):
    with engine.app_context(), pytest.raises(NotFound):
        save_endpoint(InstitutionScope("ins_missing"), receiver.url(RECEIVER_HOST))


# --- outbox -------------------------------------------------------------------------------------------------


def test_event_and_delivery_commit_together_and_the_job_is_queued_after_commit(engine, factory, receiver):
    institution = factory.institution()
    configure(engine, institution, receiver)
    with engine.app_context():
        event = emission.emit_webhook_test(InstitutionScope(institution.id))
        db.session.flush()
        assert queued_jobs(engine) == 0  # nothing queued before commit
        db.session.rollback()
    assert deliveries(engine, institution) == [] and queued_jobs(engine) == 0
    with engine.app_context():
        assert db.session.get(Event, event.id) is None

    event_id = emit(engine, "webhook.test", institution)
    [delivery] = deliveries(engine, institution)
    assert (delivery.event_id, delivery.status, delivery.attempts) == (event_id, "pending", 0)
    assert queued_jobs(engine) == 1
    run_worker(engine)
    [delivered] = deliveries(engine, institution)
    assert delivered.status == "delivered" and delivered.attempts == 1 and delivered.last_response_code == 200


def test_unsubscribed_types_are_not_delivered_and_updated_is_accepted(engine, factory, receiver):
    institution = factory.institution()
    configure(engine, institution, receiver, events=["application.updated"])
    application = factory.application(institution)
    emit(engine, "application.submitted", institution, application=application)
    assert deliveries(engine, institution) == []
    emit(engine, "application.updated", institution, application=application)
    emit(engine, "webhook.test", institution)  # always delivered
    run_worker(engine)
    assert sorted(json.loads(r.body)["type"] for r in receiver.requests) == ["application.updated", "webhook.test"]


def test_no_endpoint_means_no_delivery(engine, factory):
    institution = factory.institution()
    emit(engine, "webhook.test", institution)
    assert deliveries(engine, institution) == [] and queued_jobs(engine) == 0


# --- the request ------------------------------------------------------------------------------------------------


def test_headers_and_signature_verified_independently(engine, factory, receiver):
    institution = factory.institution()
    secret = configure(engine, institution, receiver)
    event_id = emit(engine, "webhook.test", institution)
    run_worker(engine)
    [request] = receiver.requests
    headers = request.headers
    assert headers["X-Karibu-Event-Id"] == headers["Idempotency-Key"] == event_id
    assert headers["X-Karibu-Event-Type"] == "webhook.test"
    assert headers["X-Karibu-Institution-Id"] == institution.id
    assert headers["X-Karibu-Mode"] == "live"
    assert headers["User-Agent"] == "Karibu-Webhooks/1"
    assert headers["Content-Type"] == "application/json"
    assert abs(int(headers["X-Karibu-Timestamp"]) - time.time()) < 60
    body = verify(secret, headers, request.body, time.time())
    assert list(body) == ["event_id", "type", "occurred_at", "institution_id", "livemode", "data"]
    assert body["livemode"] is True
    assert body["event_id"] == event_id and body["institution_id"] == institution.id
    assert body["occurred_at"].endswith("Z")
    assert body["data"] == {"message": "This is a test event from Karibu.", "institution_id": institution.id}
    tampered = request.body.replace(b"test event", b"Test event")
    with pytest.raises(Rejected, match="bad signature"):
        verify(secret, headers, tampered, time.time())


def test_rotate_kills_the_old_secret_at_once(engine, factory, receiver, clock):
    institution = factory.institution()
    old = configure(engine, institution, receiver)
    receiver.behaviour.status = 500
    emit(engine, "webhook.test", institution)
    run_worker(engine)
    with engine.app_context():
        new = rotate_secret(InstitutionScope(institution.id))
    assert new != old and new.startswith("whsec_")
    receiver.behaviour.status = 200
    clock.advance(timedelta(minutes=1))
    with engine.app_context():
        sweep_due_deliveries()
    run_worker(engine)
    first, retry = receiver.requests
    verify(old, first.headers, first.body, time.time())
    verify(new, retry.headers, retry.body, time.time())
    with pytest.raises(Rejected):
        verify(old, retry.headers, retry.body, time.time())
    assert first.headers["X-Karibu-Event-Id"] == retry.headers["X-Karibu-Event-Id"]


APPLICATION_KEYS = {"submission_id", "admission_id", "institution_id", "program_id", "cycle_id", "campus_id",
                    "stage_id", "submitted_at", "submitted_by_staff", "applicant"}


@pytest.mark.parametrize("include_name", [False, True])
def test_payload_shape_per_event_type(engine, factory, receiver, include_name):
    institution = factory.institution()
    configure(engine, institution, receiver, include_name=include_name, events=[
        "application.submitted", "application.updated", "decision.sent", "decision.responded",
        "payment.completed"])
    application = factory.application(institution, first_name="Aimée", last_name="Uwase", submitted_by_staff=True)
    for kind in ("application.submitted", "application.updated", "decision.sent", "decision.responded"):
        emit(engine, kind, institution, application=application)
    emit(engine, "payment.completed", institution, application_id=application.id)
    emit(engine, "payment.completed", institution, application_id=None)
    run_worker(engine)
    bodies = {}
    for request in receiver.requests:
        body = json.loads(request.body)
        bodies.setdefault(body["type"], []).append(body["data"])
    assert len(receiver.requests) == 6

    for kind in ("application.submitted", "application.updated"):
        [data] = bodies[kind]
        assert set(data) == APPLICATION_KEYS
        assert data["submission_id"] == application.id and data["admission_id"] == application.applicant_id
        assert data["program_id"] == application.program_id and data["cycle_id"] == application.cycle_id
        assert data["campus_id"] is None and data["stage_id"] == "submitted"
        assert data["submitted_by_staff"] is True and data["submitted_at"].endswith("Z")
        assert data["applicant"] == ({"first_name": "Aimée", "last_name": "Uwase"} if include_name else None)

    [sent] = bodies["decision.sent"]
    assert set(sent) == {"decision_id", "submission_id", "admission_id", "institution_id", "decision_status",
                         "sent_at"}
    assert sent["decision_id"].startswith("dec_") and sent["decision_status"] == "accepted"
    assert sent["admission_id"] == application.applicant_id
    [responded] = bodies["decision.responded"]
    assert set(responded) == {"decision_id", "submission_id", "institution_id", "response", "responded_at"}
    assert responded["response"] == "declined" and responded["submission_id"] == application.id

    with_application, without = sorted(bodies["payment.completed"], key=lambda data: data["submission_id"] is None)
    assert set(with_application) == {"payment_id", "submission_id", "institution_id", "amount", "currency",
                                     "processor"}
    assert with_application["amount"] == 50000.0 and with_application["currency"] == "RWF"
    assert with_application["processor"] == "mpesa" and with_application["submission_id"] == application.id
    assert without["submission_id"] is None


# --- failures, the schedule and endpoint health ------------------------------------------------------------------


def test_whole_schedule_with_a_controllable_clock_then_dead(engine, factory, receiver, clock):
    institution = factory.institution()
    configure(engine, institution, receiver)
    receiver.behaviour.status = 500
    receiver.behaviour.body = b"receiver broken"
    emit(engine, "webhook.test", institution)
    start = clock.now()
    run_worker(engine)

    expected_gaps = [timedelta(minutes=1), timedelta(minutes=5), timedelta(minutes=30), timedelta(hours=2),
                     timedelta(hours=12), timedelta(hours=24), timedelta(hours=24)]
    for number, gap in enumerate(expected_gaps, start=1):
        [delivery] = deliveries(engine, institution)
        assert (delivery.status, delivery.attempts) == ("retry_scheduled", number)
        with engine.app_context():
            last = db.session.scalars(select(WebhookAttempt).where(WebhookAttempt.number == number)).one()
        assert delivery.next_attempt_at == last.attempted_at + gap
        clock.move_to(delivery.next_attempt_at - timedelta(seconds=1))
        with engine.app_context():
            assert sweep_due_deliveries() == 0  # not due yet
        clock.advance(timedelta(seconds=1))
        with engine.app_context():
            assert sweep_due_deliveries() == 1
        run_worker(engine)

    [delivery] = deliveries(engine, institution)
    assert (delivery.status, delivery.attempts, delivery.next_attempt_at) == ("dead", 8, None)
    with engine.app_context():
        _, attempts = get_delivery_with_attempts(InstitutionScope(institution.id), delivery.id)
    times = [a.attempted_at - start for a in attempts]
    assert times == [timedelta(0), timedelta(minutes=1), timedelta(minutes=6), timedelta(minutes=36),
                     timedelta(hours=2, minutes=36), timedelta(hours=14, minutes=36),
                     timedelta(hours=38, minutes=36), timedelta(hours=62, minutes=36)]
    assert {(a.response_code, a.error_class, a.response_excerpt) for a in attempts} == {
        (500, "http_status", "receiver broken")}
    clock.advance(timedelta(days=3))
    with engine.app_context():
        assert sweep_due_deliveries() == 0
    assert len(receiver.requests) == 8


def test_disabled_at_exactly_twenty_consecutive_failures_then_nothing_is_sent(engine, factory, receiver):
    institution = factory.institution()
    configure(engine, institution, receiver)
    receiver.behaviour.status = 503
    for _ in range(19):
        emit(engine, "webhook.test", institution)
    run_worker(engine)
    endpoint = endpoint_of(engine, institution)
    assert (endpoint.enabled, endpoint.consecutive_failures) == (True, 19)

    emit(engine, "webhook.test", institution)
    run_worker(engine)
    endpoint = endpoint_of(engine, institution)
    assert (endpoint.enabled, endpoint.consecutive_failures) == (False, 20)
    assert len(receiver.requests) == 20
    assert {d.status for d in deliveries(engine, institution)} == {"endpoint_disabled"}

    application = factory.application(institution)
    skipped = emit(engine, "application.submitted", institution, application=application)
    run_worker(engine)
    assert len(receiver.requests) == 20
    assert delivery_for(engine, skipped).status == "endpoint_disabled"
    with engine.app_context(), pytest.raises(Conflict, match="disabled"):
        send_test_ping(InstitutionScope(institution.id))

    with engine.app_context():
        enable_endpoint(InstitutionScope(institution.id))
    endpoint = endpoint_of(engine, institution)
    assert (endpoint.enabled, endpoint.consecutive_failures) == (True, 0)
    receiver.behaviour.status = 200
    sent = emit(engine, "webhook.test", institution)
    run_worker(engine)
    assert len(receiver.requests) == 21 and delivery_for(engine, sent).status == "delivered"


def test_a_success_resets_the_consecutive_failures(engine, factory, receiver):
    institution = factory.institution()
    configure(engine, institution, receiver)
    receiver.behaviour.status = 500
    for _ in range(5):
        emit(engine, "webhook.test", institution)
    run_worker(engine)
    assert endpoint_of(engine, institution).consecutive_failures == 5
    receiver.behaviour.status = 204
    emit(engine, "webhook.test", institution)
    run_worker(engine)
    assert endpoint_of(engine, institution).consecutive_failures == 0


def test_redirect_is_a_failed_attempt(engine, factory, receiver):
    institution = factory.institution()
    configure(engine, institution, receiver)
    receiver.behaviour.status = 307
    receiver.behaviour.location = receiver.url(RECEIVER_HOST, "/moved")
    emit(engine, "webhook.test", institution)
    run_worker(engine)
    [delivery] = deliveries(engine, institution)
    assert (delivery.status, delivery.last_response_code, delivery.last_error_class) == (
        "retry_scheduled", 307, "redirect")
    assert [r.path for r in receiver.requests] == ["/hooks"]


def test_tls_failure_is_a_failed_attempt(engine, factory, receiver, monkeypatch):
    institution = factory.institution()
    configure(engine, institution, receiver)
    monkeypatch.setitem(engine.config, "WEBHOOK_CA_BUNDLE", "")  # the receiver's CA is no longer trusted
    emit(engine, "webhook.test", institution)
    run_worker(engine)
    [delivery] = deliveries(engine, institution)
    assert (delivery.status, delivery.last_error_class, delivery.last_response_code) == (
        "retry_scheduled", "tls", None)
    assert receiver.requests == []


def test_an_answer_after_ten_seconds_is_a_timeout(engine, factory, receiver):
    institution = factory.institution()
    configure(engine, institution, receiver)
    receiver.behaviour.delay_seconds = 15
    emit(engine, "webhook.test", institution)
    started = time.monotonic()
    run_worker(engine)
    assert time.monotonic() - started < 13
    [delivery] = deliveries(engine, institution)
    assert (delivery.status, delivery.last_error_class) == ("retry_scheduled", "timeout")
    with engine.app_context():
        _, [attempt] = get_delivery_with_attempts(InstitutionScope(institution.id), delivery.id)
    assert 9_900 <= attempt.duration_ms < 12_000


def test_address_turning_private_after_save_is_refused_at_send(engine, factory, receiver, resolver, monkeypatch):
    institution = factory.institution()
    monkeypatch.setitem(engine.config, "WEBHOOK_ALLOW_PRIVATE_TARGETS", False)
    resolver.answers["rebind.example.test"] = [["93.184.216.34"], ["127.0.0.1"]]
    configure(engine, institution, receiver, url=f"https://rebind.example.test:{receiver.server.port}/hooks")
    emit(engine, "webhook.test", institution)
    run_worker(engine)
    [delivery] = deliveries(engine, institution)
    assert (delivery.status, delivery.last_error_class) == ("retry_scheduled", "blocked_address")
    assert receiver.server.connections == 0


# --- claim, sweep and recovery ----------------------------------------------------------------------------------


def test_a_claimed_delivery_is_not_sent_twice(engine, factory, receiver, clock):
    institution = factory.institution()
    configure(engine, institution, receiver)
    emit(engine, "webhook.test", institution)
    [delivery] = deliveries(engine, institution)
    with engine.app_context():
        assert claim(DELIVERIES, clock.now(), CLAIM_BATCH).ids == [delivery.id]
        assert claim(DELIVERIES, clock.now(), CLAIM_BATCH).ids == []  # no second lease while the first holds
        assert drain_due_deliveries().attempts == []  # another worker holds the lease
        clock.advance(LEASE + timedelta(seconds=1))
        [report] = drain_due_deliveries().attempts  # a lapsed lease can be taken over
        assert report.status == "delivered"
        assert drain_due_deliveries().attempts == []  # final: nothing more to do
    assert len(receiver.requests) == 1


def test_many_commits_wake_one_drain_which_delivers_them_all(engine, factory, receiver):
    institution = factory.institution()
    configure(engine, institution, receiver)
    for _ in range(20):
        emit(engine, "webhook.test", institution)
    assert queued_jobs(engine) == 1
    run_worker(engine)
    assert {d.status for d in deliveries(engine, institution)} == {"delivered"}
    assert len({r.headers["X-Karibu-Event-Id"] for r in receiver.requests}) == 20
    emit(engine, "webhook.test", institution)  # the drain has started: a new commit wakes another
    assert queued_jobs(engine) == 1


def test_sweep_recovers_deliveries_after_redis_loses_its_data(engine, factory, receiver, redis_client):
    institution = factory.institution()
    configure(engine, institution, receiver)
    for _ in range(3):
        emit(engine, "webhook.test", institution)
    redis_client.flushdb()
    run_worker(engine)
    assert receiver.requests == []
    with engine.app_context():
        assert sweep_due_deliveries() == 3
    assert queued_jobs(engine) == 1
    run_worker(engine)
    assert {d.status for d in deliveries(engine, institution)} == {"delivered"}
    assert len({r.headers["X-Karibu-Event-Id"] for r in receiver.requests}) == 3
    with engine.app_context():
        assert sweep_due_deliveries() == 0


def test_sweep_runs_when_redis_was_down_at_commit(engine, factory, receiver, monkeypatch):
    institution = factory.institution()
    configure(engine, institution, receiver)
    with monkeypatch.context() as redis_down:
        redis_down.setitem(engine.config, "REDIS_URL", "redis://127.0.0.1:1/0")
        redis_down.delitem(engine.extensions, "karibu_redis", raising=False)
        event_id = emit(engine, "webhook.test", institution)  # the commit succeeds; waking a worker fails
    engine.extensions.pop("karibu_redis", None)
    assert delivery_for(engine, event_id).status == "pending"
    assert queued_jobs(engine) == 0
    with engine.app_context():
        assert sweep_due_deliveries() == 1
    run_worker(engine)
    assert delivery_for(engine, event_id).status == "delivered"


# --- log, redeliver, recover -------------------------------------------------------------------------------------


def test_log_filter_newest_first_and_pages(engine, factory, receiver, clock):
    institution = factory.institution()
    other = factory.institution()
    configure(engine, institution, receiver)
    configure(engine, other, receiver)
    receiver.behaviour.status = 500
    for _ in range(2):
        emit(engine, "webhook.test", institution)
        clock.advance(timedelta(seconds=1))
    run_worker(engine)
    receiver.behaviour.status = 200
    for _ in range(3):
        emit(engine, "webhook.test", institution)
        clock.advance(timedelta(seconds=1))
    emit(engine, "webhook.test", other)
    run_worker(engine)
    scope = InstitutionScope(institution.id)
    with engine.app_context():
        everything = list_deliveries(scope).rows
        assert len(everything) == 5
        assert [d.created_at for d in everything] == sorted((d.created_at for d in everything), reverse=True)
        failing = list_deliveries(scope, "retry_scheduled").rows
        assert len(failing) == 2 and {d.last_response_code for d in failing} == {500}
        assert len(list_deliveries(scope, "delivered").rows) == 3
        first = list_deliveries(scope, limit=2)
        second = list_deliveries(scope, limit=2, before=first.next_before)
        third = list_deliveries(scope, limit=2, before=second.next_before)
        paged = [d.id for page in (first, second, third) for d in page.rows]
        assert paged == [d.id for d in everything] and third.next_before is None
        with pytest.raises(InvalidInput, match="status must be one of"):
            list_deliveries(scope, "failed")
        with pytest.raises(NotFound):
            get_delivery_with_attempts(scope, list_deliveries(InstitutionScope(other.id)).rows[0].id)


def test_redeliver_sends_one_delivery_again_with_the_same_event_id(engine, factory, receiver):
    institution = factory.institution()
    configure(engine, institution, receiver)
    emit(engine, "webhook.test", institution)
    run_worker(engine)
    [delivery] = deliveries(engine, institution)
    with engine.app_context():
        redeliver(InstitutionScope(institution.id), delivery.id)
    run_worker(engine)
    [again] = deliveries(engine, institution)
    assert (again.status, again.attempts) == ("delivered", 2)
    first, second = receiver.requests
    assert first.headers["X-Karibu-Event-Id"] == second.headers["X-Karibu-Event-Id"]
    assert first.body == second.body


def test_recover_resends_failed_dead_and_skipped_since_a_time(engine, factory, receiver, clock):
    institution = factory.institution()
    configure(engine, institution, receiver)
    receiver.behaviour.status = 500
    emit(engine, "webhook.test", institution)  # before the recovery window
    clock.advance(timedelta(hours=1))
    since = clock.now()
    for _ in range(19):
        emit(engine, "webhook.test", institution)
    run_worker(engine)  # 20 failures: the endpoint is disabled
    emit(engine, "webhook.test", institution)  # skipped while disabled
    receiver.behaviour.status = 200
    with engine.app_context():
        with pytest.raises(Conflict):
            recover_since(InstitutionScope(institution.id), since)
        enable_endpoint(InstitutionScope(institution.id))
        assert recover_since(InstitutionScope(institution.id), since) == 20
    run_worker(engine)
    statuses = [d.status for d in deliveries(engine, institution)]
    assert statuses == ["endpoint_disabled"] + ["delivered"] * 20
    assert len(receiver.requests) == 40


def test_ping_queues_a_test_event(engine, factory, receiver):
    institution = factory.institution()
    configure(engine, institution, receiver, events=["payment.completed"])
    with engine.app_context():
        delivery = send_test_ping(InstitutionScope(institution.id))
        assert delivery.event_type == "webhook.test"
    run_worker(engine)
    [request] = receiver.requests
    assert request.headers["X-Karibu-Event-Type"] == "webhook.test"


def test_attempt_log_keeps_the_first_kilobyte(engine, factory, receiver):
    institution = factory.institution()
    configure(engine, institution, receiver)
    receiver.behaviour.status = 422
    receiver.behaviour.body = b"e" * 3000
    emit(engine, "webhook.test", institution)
    run_worker(engine)
    [delivery] = deliveries(engine, institution)
    with engine.app_context():
        _, [attempt] = get_delivery_with_attempts(InstitutionScope(institution.id), delivery.id)
        count = db.session.scalar(select(func.count()).select_from(WebhookAttempt))
    assert count == 1
    assert (attempt.number, attempt.response_code, attempt.error_class) == (1, 422, "http_status")
    assert attempt.response_excerpt == "e" * 1024 and attempt.duration_ms >= 0


def test_a_bulk_change_emitting_many_events_looks_the_endpoint_up_once(engine, factory, receiver):
    institution = factory.institution()
    configure(engine, institution, receiver)
    with engine.app_context():
        statements = []
        listener = lambda *args: statements.append(args[2])  # noqa: E731
        sqlalchemy_event.listen(db.engine, "before_cursor_execute", listener)
        try:
            for _ in range(50):
                emission.emit_webhook_test(InstitutionScope(institution.id))
            db.session.commit()
        finally:
            sqlalchemy_event.remove(db.engine, "before_cursor_execute", listener)
    assert sum("FROM webhook_endpoints" in statement for statement in statements) == 1
    assert queued_jobs(engine) == 1
    run_worker(engine)
    assert {d.status for d in deliveries(engine, institution)} == {"delivered"}
    assert len(receiver.requests) == 50
