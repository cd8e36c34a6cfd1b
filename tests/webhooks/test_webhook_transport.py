"""The delivery transport against a local HTTPS receiver with trustme certificates."""

import time

import trustme

from core.webhooks.signing import delivery_headers
from core.webhooks.transport import Transport, TransportSettings
from tests.webhooks.independent_verifier import verify
from tests.webhooks.webhook_receiver import FakeResolver, Receiver

SECRET = "whsec_transport_test"


def local_resolver():
    return FakeResolver({"hooks.receiver.test": [["127.0.0.1"]], "localhost": [["127.0.0.1"]]})


def transport_for(receiver, **overrides):
    settings = dict(allow_private=True, ca_bundle=receiver.ca_path)
    settings.update(overrides)
    return Transport(TransportSettings(**settings), resolver=local_resolver())


def signed_headers(body):
    return delivery_headers(secret=SECRET, timestamp=int(time.time()), body=body, event_id="evt_t1",
                            event_type="webhook.test", institution_id="ins_t")


def test_delivers_to_the_vetted_address_with_tls_checked_against_the_host_name(receiver):
    body = b'{"event_id":"evt_t1","type":"webhook.test","data":{"message":"hi"}}'
    outcome = transport_for(receiver).post(receiver.url("hooks.receiver.test"), signed_headers(body), body)

    assert outcome.delivered and outcome.status_code == 200 and outcome.error_class is None
    assert outcome.body_excerpt == "ok"
    [request] = receiver.requests
    assert request.body == body
    assert request.headers["Host"] == f"hooks.receiver.test:{receiver.server.port}"
    assert request.headers["User-Agent"] == "Karibu-Webhooks/1"
    assert verify(SECRET, request.headers, request.body, time.time())["data"] == {"message": "hi"}


def test_private_target_refused_without_the_development_flag(receiver):
    outcome = transport_for(receiver, allow_private=False).post(receiver.url("hooks.receiver.test"), {}, b"{}")
    assert outcome.error_class == "blocked_address"
    assert receiver.server.connections == 0


def test_redirect_is_a_failed_attempt_and_not_followed(receiver):
    receiver.behaviour.status = 302
    receiver.behaviour.location = receiver.url("hooks.receiver.test", "/elsewhere")
    outcome = transport_for(receiver).post(receiver.url("hooks.receiver.test"), {}, b"{}")
    assert not outcome.delivered
    assert (outcome.status_code, outcome.error_class) == (302, "redirect")
    assert [r.path for r in receiver.requests] == ["/hooks"]


def test_slow_answer_is_a_timeout(receiver):
    receiver.behaviour.delay_seconds = 1.5
    started = time.monotonic()
    outcome = transport_for(receiver, deadline_seconds=0.5).post(receiver.url(), {}, b"{}")
    assert (outcome.delivered, outcome.error_class) == (False, "timeout")
    assert time.monotonic() - started < 1.4


def test_deadline_is_total_even_when_the_receiver_keeps_sending_bytes(receiver):
    receiver.behaviour.dribble_seconds = 3.0  # one byte every ~0.15 s, each read well inside the deadline
    started = time.monotonic()
    outcome = transport_for(receiver, deadline_seconds=0.8).post(receiver.url(), {}, b"{}")
    elapsed = time.monotonic() - started
    assert (outcome.delivered, outcome.error_class) == (False, "timeout")
    assert elapsed < 2.5


def test_untrusted_certificate_is_a_tls_failure(receiver):
    outcome = transport_for(receiver, ca_bundle=None).post(receiver.url(), {}, b"{}")
    assert (outcome.delivered, outcome.error_class) == (False, "tls")
    assert receiver.requests == []


def test_certificate_for_another_name_is_a_tls_failure(tmp_path):
    other = Receiver(tmp_path, hostnames=("someone-else.test",)).start()
    try:
        transport = Transport(TransportSettings(allow_private=True, ca_bundle=other.ca_path),
                              resolver=local_resolver())
        outcome = transport.post(other.url("hooks.receiver.test"), {}, b"{}")
        assert outcome.error_class == "tls"
        assert other.requests == []
    finally:
        other.stop()


def test_error_status_keeps_the_first_kilobyte_of_the_body(receiver):
    receiver.behaviour.status = 503
    receiver.behaviour.body = "é".encode() + b"x" * 5000
    outcome = transport_for(receiver).post(receiver.url(), {}, b"{}")
    assert (outcome.delivered, outcome.status_code, outcome.error_class) == (False, 503, "http_status")
    assert outcome.body_excerpt.startswith("é") and len(outcome.body_excerpt.encode()) == 1024


def test_connection_refused_is_a_connection_failure(tmp_path):
    gone = Receiver(tmp_path).start()
    url = gone.url()
    gone.stop()
    outcome = Transport(TransportSettings(allow_private=True, ca_bundle=gone.ca_path),
                        resolver=local_resolver()).post(url, {}, b"{}")
    assert outcome.error_class == "connection"


def test_plain_http_only_with_allow_http(tmp_path):
    plain = Receiver(tmp_path, tls=False).start()
    try:
        refused = Transport(TransportSettings(allow_private=True), resolver=local_resolver()).post(
            plain.url(), {}, b"{}")
        assert refused.error_class == "blocked_address"
        allowed = Transport(TransportSettings(allow_private=True, allow_http=True), resolver=local_resolver()).post(
            plain.url(), {}, b"{}")
        assert allowed.delivered
    finally:
        plain.stop()


def test_connections_are_reused_between_attempts(receiver):
    transport = transport_for(receiver)
    for _ in range(3):
        assert transport.post(receiver.url("hooks.receiver.test"), {}, b"{}").delivered
    assert receiver.server.connections == 1


def test_a_shared_ca_does_not_let_one_host_name_reach_another(tmp_path):
    ca = trustme.CA()
    first = Receiver(tmp_path, hostnames=("first.test",), ca=ca).start()
    try:
        resolver = FakeResolver({"second.test": [["127.0.0.1"]]})
        outcome = Transport(TransportSettings(allow_private=True, ca_bundle=first.ca_path),
                            resolver=resolver).post(first.url("second.test"), {}, b"{}")
        assert outcome.error_class == "tls"
    finally:
        first.stop()
