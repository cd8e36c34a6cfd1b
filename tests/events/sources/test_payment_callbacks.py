"""payment.completed from the two processors' inbound callbacks, each with its own verification scheme."""
from __future__ import annotations

import hashlib
import hmac
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pytest
from sqlalchemy import func, select

from core.db import db
from core.models import Application, Event, Payment
from tests.events.sources.conftest import (
    FLUTTERWAVE_HASH, MPESA_SECRET, assert_written_and_delivered, audit_rows, events_of, subscribe,
)

FLUTTERWAVE_URL = "/callbacks/payments/flutterwave"
MPESA_URL = "/callbacks/payments/mpesa"


def flutterwave_body(tx_ref: str, amount=45000, currency="RWF", status="successful", charge_id=285959875,
                     event="charge.completed") -> dict:
    """A Flutterwave v3 `charge.completed` webhook, as Flutterwave sends it."""
    return {
        "event": event,
        "data": {
            "id": charge_id, "tx_ref": tx_ref, "flw_ref": "KaribuFLW/FLW270177170",
            "amount": amount, "currency": currency, "charged_amount": amount, "app_fee": 630,
            "processor_response": "Approved by Financial Institution", "status": status,
            "payment_type": "mobilemoneyrw", "created_at": "2026-11-21T08:15:00.000Z",
            "customer": {"id": 215604089, "email": "grace@example.com"},
        },
        "event.type": "MOBILEMONEYRW_TRANSACTION",
    }


def mpesa_body(reference: str, amount=4500, receipt="NLJ7RT61SV", result_code=0) -> dict:
    """A Daraja STK-push callback as the aggregator forwards it, with the account reference it was sent."""
    callback = {"MerchantRequestID": "29115-34620561-1", "CheckoutRequestID": "ws_CO_191220191020363925",
                "ResultCode": result_code, "ResultDesc": "The service request is processed successfully."}
    if result_code == 0:
        callback["CallbackMetadata"] = {"Item": [
            {"Name": "Amount", "Value": amount}, {"Name": "MpesaReceiptNumber", "Value": receipt},
            {"Name": "TransactionDate", "Value": 20261121102115}, {"Name": "PhoneNumber", "Value": 254708374149},
        ]}
    return {"Body": {"stkCallback": callback}, "AccountReference": reference}


def post_flutterwave(client, body: dict, verif_hash: str | None = FLUTTERWAVE_HASH):
    headers = {"verif-hash": verif_hash} if verif_hash is not None else {}
    return client.post(FLUTTERWAVE_URL, json=body, headers=headers)


def mpesa_signature(raw: bytes, secret: str = MPESA_SECRET) -> str:
    return hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()


def post_mpesa(client, body: dict, signature: str | None = None, raw: bytes | None = None):
    raw = raw if raw is not None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json",
               "X-Karibu-Mpesa-Signature": signature if signature is not None else mpesa_signature(raw)}
    return client.post(MPESA_URL, data=raw, headers=headers)


def unpaid_application(factory, institution, fee="45000", currency="RWF"):
    program = factory.program(institution, fee=fee, currency=currency)
    return factory.application(institution, program=program)


def application_row(app, application_id: str) -> Application:
    with app.app_context():
        row = db.session.get(Application, application_id)
        db.session.expunge(row)
        return row


def payments_of(app, application_id: str) -> list[Payment]:
    with app.app_context():
        rows = db.session.scalars(select(Payment).where(Payment.application_id == application_id)).all()
        for row in rows:
            db.session.expunge(row)
        return rows


def event_count(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Event))


def assert_error(response, status: int, text: str, field: str | None = None):
    assert response.status_code == status
    body = response.get_json()
    assert body["code"] == status and text in body["error"]
    if field is not None:
        assert [(e["location"], e["name"]) for e in body["errors"]] == [("body", field)]


# --- Flutterwave --------------------------------------------------------------------------------------------------


def test_flutterwave_charge_completes_the_payment_and_emits(sources, client, factory, receiver):
    institution = factory.institution()
    secret = subscribe(sources, institution, receiver)
    application = unpaid_application(factory, institution)

    response = post_flutterwave(client, flutterwave_body(application.id))
    assert response.status_code == 200
    body = response.get_json()
    assert body["code"] == 200 and body["result"] == "completed" and body["submission_id"] == application.id

    [payment] = payments_of(sources, application.id)
    assert (payment.id, payment.processor, payment.processor_reference, payment.status) == (
        body["payment_id"], "flutterwave", "285959875", "completed")
    assert (payment.amount, payment.currency, payment.completed_at is not None) == (Decimal("45000.00"), "RWF", True)
    paid = application_row(sources, application.id)
    assert (paid.paid, paid.amount, paid.currency) == (True, Decimal("45000.00"), "RWF")
    assert paid.updated_at > application.updated_at
    expected = {"payment_id": payment.id, "submission_id": application.id, "institution_id": institution.id,
                "amount": 45000.0, "currency": "RWF", "processor": "flutterwave"}
    assert_written_and_delivered(sources, institution, "payment.completed", expected, secret, receiver)


def test_flutterwave_replay_answers_200_and_emits_nothing(sources, client, factory):
    institution = factory.institution()
    application = unpaid_application(factory, institution)
    first = post_flutterwave(client, flutterwave_body(application.id)).get_json()
    replay = post_flutterwave(client, flutterwave_body(application.id))
    assert replay.status_code == 200
    assert replay.get_json() == {**first, "result": "duplicate"}
    assert len(payments_of(sources, application.id)) == 1
    assert len(events_of(sources, institution, "payment.completed")) == 1


def test_flutterwave_reference_may_carry_an_attempt_suffix(sources, client, factory):
    institution = factory.institution()
    application = unpaid_application(factory, institution)
    response = post_flutterwave(client, flutterwave_body(f"{application.id}:attempt-2"))
    assert response.status_code == 200 and response.get_json()["submission_id"] == application.id


@pytest.mark.parametrize("verif_hash, message", [
    (None, "missing verif-hash header"),
    ("", "missing verif-hash header"),
    ("flw-dashboard-secret-hasH", "invalid verif-hash header"),
    (FLUTTERWAVE_HASH + "x", "invalid verif-hash header"),
])
def test_flutterwave_without_the_right_hash_is_401(sources, client, factory, verif_hash, message):
    institution = factory.institution()
    application = unpaid_application(factory, institution)
    assert_error(post_flutterwave(client, flutterwave_body(application.id), verif_hash), 401, message)
    assert payments_of(sources, application.id) == [] and event_count(sources) == 0


@pytest.mark.parametrize("change, status, text, field", [
    ({"amount": 40000}, 400, "amount must be 45000.00 RWF", "data.amount"),
    ({"amount": "lots"}, 400, "amount must be a number", "data.amount"),
    ({"currency": "USD"}, 400, "currency must be RWF", "data.currency"),
    ({"tx_ref": "app_unknown"}, 400, "no application 'app_unknown'", "data.tx_ref"),
    ({"tx_ref": None}, 400, "data.tx_ref is required", "data.tx_ref"),
    ({"id": None}, 400, "data.id is required", "data.id"),
])
def test_flutterwave_inconsistent_charges_are_400_and_write_nothing(sources, client, factory, change, status,
                                                                     text, field):
    institution = factory.institution()
    application = unpaid_application(factory, institution)
    body = flutterwave_body(application.id)
    body["data"].update(change)
    assert_error(post_flutterwave(client, body), status, text, field)
    assert payments_of(sources, application.id) == [] and event_count(sources) == 0
    assert application_row(sources, application.id).paid is False


@pytest.mark.parametrize("change", [{"id": "28595\x009875"}, {"tx_ref": "app_\x00"}])
def test_flutterwave_nul_characters_are_400_and_write_nothing(sources, client, factory, change):
    institution = factory.institution()
    application = unpaid_application(factory, institution)
    body = flutterwave_body(application.id)
    body["data"].update(change)
    assert_error(post_flutterwave(client, body), 400, "must not contain the NUL character")
    assert payments_of(sources, application.id) == [] and event_count(sources) == 0


@pytest.mark.parametrize("body_change", [{"status": "failed"}, {"event": "transfer.completed"}])
def test_flutterwave_other_events_and_failed_charges_are_acknowledged_and_ignored(sources, client, factory,
                                                                                  body_change):
    institution = factory.institution()
    application = unpaid_application(factory, institution)
    response = post_flutterwave(client, flutterwave_body(application.id, **body_change))
    assert response.status_code == 200 and response.get_json()["result"] == "ignored"
    assert payments_of(sources, application.id) == [] and event_count(sources) == 0


def test_flutterwave_not_configured_is_503(sources, client, factory, monkeypatch):
    monkeypatch.setitem(sources.config, "FLUTTERWAVE_SECRET_HASH", "")
    institution = factory.institution()
    application = unpaid_application(factory, institution)
    assert_error(post_flutterwave(client, flutterwave_body(application.id), verif_hash=""), 503,
                 "Flutterwave callbacks are not configured on this server: set FLUTTERWAVE_SECRET_HASH")


def test_a_pending_payment_row_is_completed_rather_than_duplicated(sources, client, factory):
    institution = factory.institution()
    application = unpaid_application(factory, institution)
    with sources.app_context():
        db.session.add(Payment(id="pay_pendingcheckout01", institution_id=institution.id,
                               application_id=application.id, processor="flutterwave",
                               processor_reference="checkout-started", status="pending"))
        db.session.commit()
    response = post_flutterwave(client, flutterwave_body(application.id))
    assert response.get_json()["payment_id"] == "pay_pendingcheckout01"
    [payment] = payments_of(sources, application.id)
    assert (payment.status, payment.processor_reference) == ("completed", "285959875")


def test_a_second_payment_for_a_paid_application_is_409(sources, client, factory):
    institution = factory.institution()
    application = unpaid_application(factory, institution)
    assert post_flutterwave(client, flutterwave_body(application.id)).status_code == 200
    again = post_flutterwave(client, flutterwave_body(application.id, charge_id=285959999))
    assert_error(again, 409, f"application {application.id} is already paid")
    assert len(payments_of(sources, application.id)) == 1 and event_count(sources) == 1


# --- M-Pesa -------------------------------------------------------------------------------------------------------


def test_mpesa_callback_completes_the_payment_and_emits(sources, client, factory, receiver):
    institution = factory.institution()
    secret = subscribe(sources, institution, receiver)
    application = unpaid_application(factory, institution, fee="4500", currency="KES")

    response = post_mpesa(client, mpesa_body(application.id))
    assert response.status_code == 200 and response.get_json()["result"] == "completed"
    [payment] = payments_of(sources, application.id)
    assert (payment.processor, payment.processor_reference, payment.amount, payment.currency) == (
        "mpesa", "NLJ7RT61SV", Decimal("4500.00"), "KES")
    assert application_row(sources, application.id).paid is True
    expected = {"payment_id": payment.id, "submission_id": application.id, "institution_id": institution.id,
                "amount": 4500.0, "currency": "KES", "processor": "mpesa"}
    assert_written_and_delivered(sources, institution, "payment.completed", expected, secret, receiver)


def test_mpesa_replay_is_idempotent_on_the_receipt_number(sources, client, factory):
    institution = factory.institution()
    application = unpaid_application(factory, institution, fee="4500", currency="KES")
    assert post_mpesa(client, mpesa_body(application.id)).get_json()["result"] == "completed"
    replay = post_mpesa(client, mpesa_body(application.id))
    assert replay.status_code == 200 and replay.get_json()["result"] == "duplicate"
    assert len(payments_of(sources, application.id)) == 1 and event_count(sources) == 1


def test_mpesa_signature_is_checked_over_the_raw_body(sources, client, factory):
    institution = factory.institution()
    application = unpaid_application(factory, institution, fee="4500", currency="KES")
    raw = json.dumps(mpesa_body(application.id)).encode()
    tampered = raw.replace(b'"Value": 4500', b'"Value": 4501')
    assert tampered != raw
    assert_error(post_mpesa(client, {}, signature=mpesa_signature(raw), raw=tampered), 401,
                 "invalid X-Karibu-Mpesa-Signature header")
    assert_error(post_mpesa(client, {}, signature=mpesa_signature(raw, "wrong-secret"), raw=raw), 401,
                 "invalid X-Karibu-Mpesa-Signature header")
    assert_error(post_mpesa(client, {}, signature="", raw=raw), 401, "missing X-Karibu-Mpesa-Signature header")
    assert payments_of(sources, application.id) == [] and event_count(sources) == 0
    # The same bytes with their own signature pass, even re-serialised differently from json.dumps.
    spaced = json.dumps(mpesa_body(application.id), indent=2).encode()
    assert post_mpesa(client, {}, raw=spaced).status_code == 200


def test_mpesa_failed_stk_push_is_acknowledged_and_ignored(sources, client, factory):
    institution = factory.institution()
    application = unpaid_application(factory, institution, fee="4500", currency="KES")
    response = post_mpesa(client, mpesa_body(application.id, result_code=1032))
    assert response.status_code == 200 and response.get_json()["result"] == "ignored"
    assert "1032" in response.get_json()["reason"]
    assert payments_of(sources, application.id) == [] and event_count(sources) == 0


@pytest.mark.parametrize("mutate, text, field", [
    (lambda b: b.update(AccountReference=None), "AccountReference is required", "AccountReference"),
    (lambda b: b["Body"]["stkCallback"]["CallbackMetadata"]["Item"].pop(1),
     "MpesaReceiptNumber is required", "Body.stkCallback.CallbackMetadata.Item.MpesaReceiptNumber"),
    (lambda b: b["Body"]["stkCallback"]["CallbackMetadata"]["Item"][0].update(Value=10),
     "amount must be 4500.00 KES", "Body.stkCallback.CallbackMetadata.Item.Amount"),
    (lambda b: b.update(Body=[]), "Body.stkCallback must be an object", "Body.stkCallback"),
])
def test_mpesa_malformed_or_inconsistent_callbacks_are_400(sources, client, factory, mutate, text, field):
    institution = factory.institution()
    application = unpaid_application(factory, institution, fee="4500", currency="KES")
    body = mpesa_body(application.id)
    mutate(body)
    assert_error(post_mpesa(client, body), 400, text, field)
    assert payments_of(sources, application.id) == [] and event_count(sources) == 0


def test_mpesa_for_a_fee_in_another_currency_is_400(sources, client, factory):
    institution = factory.institution()
    application = unpaid_application(factory, institution, fee="4500", currency="RWF")
    assert_error(post_mpesa(client, mpesa_body(application.id)), 400, "currency must be RWF", "currency")


def test_mpesa_not_configured_is_503_and_non_json_is_400(sources, client, factory, monkeypatch):
    assert_error(post_mpesa(client, {}, raw=b"not json"), 400, "Request body is not valid JSON")
    monkeypatch.setitem(sources.config, "MPESA_CALLBACK_SECRET", "")
    assert_error(post_mpesa(client, {}, raw=b"{}"), 503,
                 "M-Pesa callbacks are not configured on this server: set MPESA_CALLBACK_SECRET")


def test_callbacks_answer_json_for_wrong_methods_and_need_no_csrf_or_api_key(sources, client):
    response = client.get(MPESA_URL)
    assert response.status_code == 405 and response.get_json()["code"] == 405
    assert "POST" in response.headers["Allow"]
    assert client.get("/callbacks/payments/unknown").get_json() == {"code": 404, "error": "Not found", "errors": []}


def test_concurrent_deliveries_of_one_charge_complete_it_once(sources, factory):
    """Processors retry eagerly: parallel copies of one callback give one payment, one event, no error."""
    institution = factory.institution()
    application = unpaid_application(factory, institution)
    body = flutterwave_body(application.id)
    start = threading.Barrier(4)

    def deliver(_):
        client = sources.test_client()
        start.wait()
        return post_flutterwave(client, body)

    with ThreadPoolExecutor(4) as pool:
        responses = list(pool.map(deliver, range(4)))
    assert [r.status_code for r in responses] == [200] * 4
    assert sorted(r.get_json()["result"] for r in responses) == ["completed", "duplicate", "duplicate",
                                                                  "duplicate"]
    assert len({r.get_json()["payment_id"] for r in responses}) == 1
    assert len(payments_of(sources, application.id)) == 1 and event_count(sources) == 1


def test_every_callback_is_audited_without_its_secret(sources, client, factory):
    institution = factory.institution()
    application = unpaid_application(factory, institution)
    paid = post_flutterwave(client, flutterwave_body(application.id)).get_json()
    post_flutterwave(client, flutterwave_body(application.id), verif_hash="forged")
    post_mpesa(client, mpesa_body(application.id), signature="00")
    assert audit_rows(sources, "callback") == [
        (institution.id, "flutterwave", "callbacks.flutterwave_callback", paid["payment_id"], 200),
        (None, "flutterwave", "callbacks.flutterwave_callback", "", 401),
        (None, "mpesa", "callbacks.mpesa_callback", "", 401),
    ]
