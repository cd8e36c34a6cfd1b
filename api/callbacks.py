"""Inbound payment callbacks of Flutterwave (`verif-hash`) and M-Pesa (`X-Karibu-Mpesa-Signature`), not part of the
partner API: unsigned or badly signed is a 401, a processor without a secret a 503 (docs/event-sources.md).
"""
from __future__ import annotations

import hashlib
import hmac

from flask import Blueprint, g, jsonify, request

from api.bodies import json_object, raw_body
from core.audit.recording import AuditEntry
from core.config import settings
from core.errors import InvalidInput, NotAuthenticated, ServiceUnavailable
from core.applications.payments import application_id_of_reference, complete_payment

CALLBACKS_PREFIX = "/callbacks"
MPESA_SIGNATURE_HEADER = "X-Karibu-Mpesa-Signature"
FLUTTERWAVE_SIGNATURE_HEADER = "verif-hash"
MPESA_CURRENCY = "KES"

callbacks_bp = Blueprint("callbacks", __name__, url_prefix=CALLBACKS_PREFIX)
PROCESSOR_OF_ENDPOINT = {"callbacks.flutterwave_callback": "flutterwave", "callbacks.mpesa_callback": "mpesa"}


@callbacks_bp.before_request
def _declare_audit():
    """One audit row per callback, refused ones included: who called, what it paid, how it was answered."""
    g.audit = AuditEntry(source="callback", actor=PROCESSOR_OF_ENDPOINT.get(request.endpoint or "", "unknown"),
                         action=request.endpoint or "")


def _secret(setting: str, processor: str) -> bytes:
    secret = getattr(settings(), setting)
    if not secret:
        raise ServiceUnavailable(f"{processor} callbacks are not configured on this server: set {setting}")
    return secret.encode()


def _field(container: dict, name: str, path: str):
    value = container.get(name) if isinstance(container, dict) else None
    if value is None or value == "":
        raise InvalidInput(f"{path} is required", field=path)
    return value


def _payment_id(value, path: str) -> str:
    """The processor's payment id: text, or a whole number (Flutterwave's ids are numbers)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise InvalidInput(f"{path} must be a string or an integer", field=path)
    return value


def _complete(processor: str, payment_id: str, amount, currency, reference: str, field_names: dict):
    """complete_payment, with errors naming the processor's own field instead of ours."""
    try:
        payment, completed_now = complete_payment(processor, payment_id, amount, currency,
                                                  application_id_of_reference(reference))
    except InvalidInput as error:
        raise error.renamed(field_names) from None
    g.audit.institution_id, g.audit.target = payment.institution_id, payment.id
    return jsonify({"code": 200, "result": "completed" if completed_now else "duplicate",
                    "payment_id": payment.id, "submission_id": payment.application_id})


def _metadata_values(items: list, path: str) -> dict:
    """Daraja's `[{"Name": …, "Value": …}, …]` as a dict; an item of any other shape is a 400."""
    values = {}
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise InvalidInput(f"{path}[{index}] must be an object", field=f"{path}[{index}]")
        if not isinstance(item.get("Name"), str):
            raise InvalidInput(f"{path}[{index}].Name must be a string", field=f"{path}[{index}].Name")
        values[item["Name"]] = item.get("Value")
    return values


def _ignored(reason: str):
    return jsonify({"code": 200, "result": "ignored", "reason": reason})


@callbacks_bp.post("/payments/flutterwave")
def flutterwave_callback():
    secret = _secret("FLUTTERWAVE_SECRET_HASH", "Flutterwave")
    given = request.headers.get(FLUTTERWAVE_SIGNATURE_HEADER)
    if not given:
        raise NotAuthenticated(f"missing {FLUTTERWAVE_SIGNATURE_HEADER} header")
    if not hmac.compare_digest(given.encode(), secret):
        raise NotAuthenticated(f"invalid {FLUTTERWAVE_SIGNATURE_HEADER} header")
    body = json_object(require_json_content_type=False)
    event = body.get("event")
    if event != "charge.completed":
        return _ignored(f"event {event!r} is not charge.completed")
    data = body.get("data")
    if not isinstance(data, dict):
        raise InvalidInput("data must be an object", field="data")
    if data.get("status") != "successful":
        return _ignored(f"charge status {data.get('status')!r} is not successful")
    payment_id = _payment_id(_field(data, "id", "data.id"), "data.id")
    reference = _field(data, "tx_ref", "data.tx_ref")
    if not isinstance(reference, str):
        raise InvalidInput("data.tx_ref must be a string", field="data.tx_ref")
    return _complete("flutterwave", payment_id, _field(data, "amount", "data.amount"),
                     _field(data, "currency", "data.currency"), reference,
                     {"application_id": "data.tx_ref", "amount": "data.amount", "currency": "data.currency",
                      "processor_reference": "data.id"})


@callbacks_bp.post("/payments/mpesa")
def mpesa_callback():
    secret = _secret("MPESA_CALLBACK_SECRET", "M-Pesa")
    given = request.headers.get(MPESA_SIGNATURE_HEADER)
    if not given:
        raise NotAuthenticated(f"missing {MPESA_SIGNATURE_HEADER} header")
    expected = hmac.new(secret, raw_body(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(given.strip().lower().encode(), expected.encode()):
        raise NotAuthenticated(f"invalid {MPESA_SIGNATURE_HEADER} header")
    body = json_object(require_json_content_type=False)
    callback = body.get("Body", {}).get("stkCallback") if isinstance(body.get("Body"), dict) else None
    if not isinstance(callback, dict):
        raise InvalidInput("Body.stkCallback must be an object", field="Body.stkCallback")
    result_code = callback.get("ResultCode")
    if result_code != 0:
        return _ignored(f"ResultCode {result_code!r}: the payment did not complete")
    metadata = callback.get("CallbackMetadata")
    items = metadata.get("Item") if isinstance(metadata, dict) else None
    if not isinstance(items, list):
        raise InvalidInput("Body.stkCallback.CallbackMetadata.Item must be a list",
                           field="Body.stkCallback.CallbackMetadata.Item")
    item_path = "Body.stkCallback.CallbackMetadata.Item"
    values = _metadata_values(items, item_path)
    receipt = _field(values, "MpesaReceiptNumber", f"{item_path}.MpesaReceiptNumber")
    if not isinstance(receipt, str):
        raise InvalidInput(f"{item_path}.MpesaReceiptNumber must be a string",
                           field=f"{item_path}.MpesaReceiptNumber")
    amount = _field(values, "Amount", f"{item_path}.Amount")
    reference = _field(body, "AccountReference", "AccountReference")
    if not isinstance(reference, str):
        raise InvalidInput("AccountReference must be a string", field="AccountReference")
    return _complete("mpesa", receipt, amount, MPESA_CURRENCY, reference,
                     {"application_id": "AccountReference", "amount": f"{item_path}.Amount",
                      "processor_reference": f"{item_path}.MpesaReceiptNumber"})
