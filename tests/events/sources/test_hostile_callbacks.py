"""Hostile values in correctly signed payment callbacks: each is a 400 in the API's error shape, nothing written.

Absurd amounts (`1e999999`, NaN, too many decimals), lone UTF-16 surrogates (`"\\ud800"`, valid JSON that no
database can store) in references and ids, and wrong types anywhere in M-Pesa's callback metadata.
"""
from __future__ import annotations

import json

import pytest

from tests.events.sources.conftest import FLUTTERWAVE_HASH
from tests.events.sources.test_payment_callbacks import (
    FLUTTERWAVE_URL, application_row, event_count, flutterwave_body, mpesa_body, payments_of, post_mpesa,
    unpaid_application,
)

ITEMS = "Body.stkCallback.CallbackMetadata.Item"
LONE_SURROGATE = "\ud800"


def post_flutterwave_raw(client, raw: str):
    """The body as given (json.dumps writes a lone surrogate as the escape `\\ud800`, as an attacker would)."""
    return client.post(FLUTTERWAVE_URL, data=raw.encode("ascii"),
                       headers={"verif-hash": FLUTTERWAVE_HASH, "Content-Type": "application/json"})


def post_mpesa_raw(client, raw: str):
    return post_mpesa(client, {}, raw=raw.encode("ascii"))


# The request-body rules of every JSON endpoint (api/bodies.py) refuse some of these values before the
# callback reads its fields: the same 400, in the body rules' words.
BODY_RULE_WORDS = {
    "valid Unicode text": "Strings in the request body must not contain unpaired surrogates",
    "amount must be at most": "Numbers in the request body must be between",
    "amount must be a positive number": "Numbers in the request body must be between",
    "payment id must be at most 100 characters": "Numbers in the request body must be between",
}


def assert_refused(response, text: str, sources, application):
    assert response.status_code == 400, response.get_data(as_text=True)
    body = response.get_json()
    accepted = [text] + [words for fragment, words in BODY_RULE_WORDS.items() if fragment in text]
    assert body["code"] == 400 and any(words in body["error"] for words in accepted), body
    assert payments_of(sources, application.id) == [] and event_count(sources) == 0
    assert application_row(sources, application.id).paid is False


@pytest.mark.parametrize("amount, text", [
    ("1e999999", "amount must be at most 1,000,000,000,000"),
    ("-1e999999", "amount must be a positive number"),
    ("1e-999999", "amount must have at most 0 decimals in RWF"),
    ("NaN", "amount must be a positive number"),
    ("Infinity", "amount must be a positive number"),
    ("-45000", "amount must be a positive number"),
    ("45000.5", "amount must have at most 0 decimals in RWF"),
    (10 ** 3000, "amount must be at most"),
    ([45000], "amount must be a number"),
    (True, "amount must be a number"),
])
def test_flutterwave_absurd_amounts_are_400(sources, client, factory, amount, text):
    application = unpaid_application(factory, factory.institution())
    body = flutterwave_body(application.id, amount=amount)
    assert_refused(post_flutterwave_raw(client, json.dumps(body)), text, sources, application)


def test_flutterwave_amount_as_a_json_number_too_large_for_a_float_is_400(sources, client, factory):
    application = unpaid_application(factory, factory.institution())
    raw = json.dumps(flutterwave_body(application.id, amount=45000)).replace('"amount": 45000', '"amount": 1e999999')
    assert '"amount": 1e999999' in raw
    assert_refused(post_flutterwave_raw(client, raw), "amount must be a positive number", sources, application)


def test_an_amount_with_more_decimals_than_the_currency_has_is_400_but_trailing_zeros_are_fine(
        sources, client, factory):
    application = unpaid_application(factory, factory.institution(), fee="75.50", currency="USD")
    refused = flutterwave_body(application.id, amount="75.501", currency="USD")
    assert_refused(post_flutterwave_raw(client, json.dumps(refused)), "amount must have at most 2 decimals in USD",
                   sources, application)
    accepted = flutterwave_body(application.id, amount="75.500", currency="USD")
    response = post_flutterwave_raw(client, json.dumps(accepted))
    assert response.status_code == 200 and response.get_json()["result"] == "completed"


@pytest.mark.parametrize("change, text", [
    ({"tx_ref": LONE_SURROGATE}, "the payment reference must be valid Unicode text"),
    ({"tx_ref": f"app_{LONE_SURROGATE}:1"}, "the payment reference must be valid Unicode text"),
    ({"id": LONE_SURROGATE}, "the processor's payment id must be valid Unicode text"),
    ({"id": f"FLW{LONE_SURROGATE}"}, "the processor's payment id must be valid Unicode text"),
    ({"id": "9" * 101}, "the processor's payment id must be at most 100 characters"),
    ({"id": 10 ** 200}, "the processor's payment id must be at most 100 characters"),
    ({"id": [285959875]}, "data.id must be a string or an integer"),
    ({"id": True}, "data.id must be a string or an integer"),
    ({"id": 2.5}, "data.id must be a string or an integer"),
    ({"tx_ref": {"id": "app_1"}}, "data.tx_ref must be a string"),
])
def test_flutterwave_hostile_references_are_400(sources, client, factory, change, text):
    application = unpaid_application(factory, factory.institution())
    body = flutterwave_body(application.id)
    body["data"].update(change)
    assert_refused(post_flutterwave_raw(client, json.dumps(body)), text, sources, application)


def _items(body) -> list:
    return body["Body"]["stkCallback"]["CallbackMetadata"]["Item"]


@pytest.mark.parametrize("mutate, text", [
    (lambda b: _items(b)[1].update(Value=LONE_SURROGATE), "the processor's payment id must be valid Unicode text"),
    (lambda b: _items(b)[1].update(Value=f"NLJ{LONE_SURROGATE}"),
     "the processor's payment id must be valid Unicode text"),
    (lambda b: b.update(AccountReference=LONE_SURROGATE), "the payment reference must be valid Unicode text"),
    (lambda b: _items(b)[0].update(Name=["Amount"]), f"{ITEMS}[0].Name must be a string"),
    (lambda b: _items(b)[2].update(Name={"n": 1}), f"{ITEMS}[2].Name must be a string"),
    (lambda b: _items(b)[3].pop("Name"), f"{ITEMS}[3].Name must be a string"),
    (lambda b: _items(b).append("Amount"), f"{ITEMS}[4] must be an object"),
    (lambda b: _items(b).append(None), f"{ITEMS}[4] must be an object"),
    (lambda b: _items(b)[1].update(Value=["NLJ7RT61SV"]), f"{ITEMS}.MpesaReceiptNumber must be a string"),
    (lambda b: _items(b)[1].update(Value=123456), f"{ITEMS}.MpesaReceiptNumber must be a string"),
    (lambda b: _items(b)[0].update(Value="1e999999"), "amount must be at most"),
    (lambda b: _items(b)[0].update(Value={"KES": 4500}), "amount must be a number"),
    (lambda b: _items(b)[0].update(Value="4500.001"), "amount must have at most 2 decimals in KES"),
    (lambda b: b["Body"]["stkCallback"].update(CallbackMetadata={"Item": {"Name": "Amount"}}),
     f"{ITEMS} must be a list"),
    (lambda b: b["Body"]["stkCallback"].update(CallbackMetadata=[]), f"{ITEMS} must be a list"),
    (lambda b: b.update(AccountReference=["app_1"]), "AccountReference must be a string"),
])
def test_mpesa_hostile_metadata_is_400(sources, client, factory, mutate, text):
    application = unpaid_application(factory, factory.institution(), fee="4500", currency="KES")
    body = mpesa_body(application.id)
    mutate(body)
    assert_refused(post_mpesa_raw(client, json.dumps(body)), text, sources, application)


def test_a_valid_callback_still_completes_after_hostile_ones(sources, client, factory):
    application = unpaid_application(factory, factory.institution(), fee="4500", currency="KES")
    hostile = mpesa_body(application.id)
    _items(hostile)[0]["Name"] = ["Amount"]
    assert post_mpesa_raw(client, json.dumps(hostile)).status_code == 400
    response = post_mpesa_raw(client, json.dumps(mpesa_body(application.id)))
    assert response.status_code == 200 and response.get_json()["result"] == "completed"
    assert application_row(sources, application.id).paid is True
