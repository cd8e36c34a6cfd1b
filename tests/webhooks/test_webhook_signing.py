import base64
import json
import time

import pytest

from core.webhooks.signing import SecretBox, delivery_headers, generate_secret, sign
from tests.webhooks.independent_verifier import Rejected, verify


def signed(secret, body, timestamp):
    return delivery_headers(secret=secret, timestamp=timestamp, body=body, event_id="evt_abc",
                            event_type="webhook.test", institution_id="ins_1")


def test_independent_verifier_accepts_karibu_signature():
    secret = generate_secret()
    body = json.dumps({"event_id": "evt_abc", "data": {"message": "héllo"}}, ensure_ascii=False).encode()
    now = int(time.time())
    event = verify(secret, signed(secret, body, now), body, now + 10)
    assert event["data"]["message"] == "héllo"


@pytest.mark.parametrize("position", [0, 10, -1])
def test_one_changed_body_byte_fails(position):
    secret = generate_secret()
    body = b'{"event_id":"evt_abc","type":"webhook.test","data":{}}'
    headers = signed(secret, body, 1_700_000_000)
    tampered = bytearray(body)
    tampered[position] ^= 0x01
    with pytest.raises(Rejected, match="bad signature"):
        verify(secret, headers, bytes(tampered), 1_700_000_000)


def test_other_secret_timestamp_and_tolerance_fail():
    secret, other = generate_secret(), generate_secret()
    body = b"{}"
    headers = signed(secret, body, 1_700_000_000)
    with pytest.raises(Rejected, match="bad signature"):
        verify(other, headers, body, 1_700_000_000)
    moved = dict(headers, **{"X-Karibu-Timestamp": "1700000001"})
    with pytest.raises(Rejected, match="bad signature"):
        verify(secret, moved, body, 1_700_000_000)
    verify(secret, headers, body, 1_700_000_000 + 300)
    with pytest.raises(Rejected, match="tolerance"):
        verify(secret, headers, body, 1_700_000_000 + 301)


def test_signature_format_and_headers():
    secret = "whsec_test"
    headers = signed(secret, b"{}", 1_700_000_000)
    assert headers["X-Karibu-Signature"] == sign(secret, 1_700_000_000, b"{}")
    assert headers["X-Karibu-Signature"].startswith("v1=")
    digest = headers["X-Karibu-Signature"][3:]
    assert len(digest) == 64 and digest == digest.lower()
    assert headers["X-Karibu-Timestamp"] == "1700000000"
    assert headers["X-Karibu-Event-Id"] == headers["Idempotency-Key"] == "evt_abc"
    assert headers["X-Karibu-Event-Type"] == "webhook.test"
    assert headers["X-Karibu-Institution-Id"] == "ins_1"
    assert headers["User-Agent"] == "Karibu-Webhooks/1"


def test_generated_secrets_are_prefixed_and_unique():
    secrets = {generate_secret() for _ in range(50)}
    assert len(secrets) == 50
    assert all(s.startswith("whsec_") and len(base64.b64decode(s[6:], validate=True)) == 32 for s in secrets)


def test_secret_box_round_trips_and_depends_on_secret_key():
    box = SecretBox("one secret key")
    token = box.encrypt("whsec_abc")
    assert "whsec_abc" not in token
    assert box.decrypt(token) == "whsec_abc"
    assert box.encrypt("whsec_abc") != token  # fresh IV every time
    with pytest.raises(ValueError, match="cannot be decrypted"):
        SecretBox("another secret key").decrypt(token)
