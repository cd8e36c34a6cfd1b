"""Completing an application-fee payment reported by a payment processor, idempotent per `processor_reference`."""
from __future__ import annotations

from decimal import Decimal, InvalidOperation

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from core.events import emission
from core.errors import Conflict, InvalidInput, KaribuError
from core.db import db
from core.models import Application, Payment, utcnow
from core.models.admissions import PAYMENT_COMPLETED, PAYMENT_PROCESSORS

PENDING = "pending"
CENTS = Decimal("0.01")
# No fee is anywhere near this; it keeps absurd amounts (1e999999) away from decimal arithmetic and the database.
MAX_AMOUNT = Decimal(10) ** 12
MAX_REFERENCE_LENGTH = 100  # payments.processor_reference and application ids fit in it
# ISO 4217 currencies without minor units (the others here have two).
ZERO_DECIMAL_CURRENCIES = frozenset({"BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX",
                                     "VND", "VUV", "XAF", "XOF", "XPF"})


def application_id_of_reference(reference: str) -> str:
    """Our payment reference is the application id, optionally `:<suffix>` to make each attempt unique."""
    return reference.split(":", 1)[0].strip()


def _amount(value) -> Decimal:
    """A finite, positive amount of at most MAX_AMOUNT; anything else (`1e999999`, `NaN`, `-5`) is a 400."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str, Decimal)):
        raise InvalidInput("amount must be a number", field="amount")
    try:
        amount = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):  # ValueError: an int too long to turn into text
        raise InvalidInput("amount must be a number", field="amount") from None
    if not amount.is_finite() or amount <= 0:
        raise InvalidInput("amount must be a positive number", field="amount")
    if amount > MAX_AMOUNT:
        raise InvalidInput(f"amount must be at most {MAX_AMOUNT:,}", field="amount")
    return amount


def currency_decimals(currency: str) -> int:
    """Digits after the decimal point of an amount in `currency` (ISO 4217 minor units)."""
    return 0 if currency in ZERO_DECIMAL_CURRENCIES else 2


def _reference_text(value, field: str, what: str) -> str:
    """A processor's or our reference: text of at most MAX_REFERENCE_LENGTH characters, storable as UTF-8."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{what} is required", field=field)
    if "\x00" in value:
        raise InvalidInput("payment references must not contain NUL characters", field=field)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate such as "\ud800", which JSON can carry but UTF-8 cannot
        raise InvalidInput(f"{what} must be valid Unicode text", field=field) from None
    value = value.strip()
    if len(value) > MAX_REFERENCE_LENGTH:
        raise InvalidInput(f"{what} must be at most {MAX_REFERENCE_LENGTH} characters", field=field)
    return value


def _completed(processor: str, processor_reference: str) -> Payment | None:
    return db.session.scalars(select(Payment).where(
        Payment.processor == processor, Payment.processor_reference == processor_reference,
        Payment.status == PAYMENT_COMPLETED)).one_or_none()


def complete_payment(processor: str, processor_reference: str, amount, currency: str,
                     application_id: str | None = None) -> tuple[Payment, bool]:
    """Record a completed payment; returns (payment, whether it completed now). A replay changes nothing.

    Raises InvalidInput when the amount or currency is not the application's fee, Conflict when already paid.
    """
    if processor not in PAYMENT_PROCESSORS:
        raise InvalidInput(f"processor must be one of {', '.join(PAYMENT_PROCESSORS)}", field="processor")
    processor_reference = _reference_text(processor_reference, "processor_reference",
                                          "the processor's payment id")
    if application_id:  # may be empty when a pending payment row already names the application
        application_id = _reference_text(application_id, "application_id", "the payment reference")
    replay = _completed(processor, processor_reference)
    if replay is not None:
        return replay, False
    try:
        return _complete(processor, processor_reference, _amount(amount), currency, application_id)
    except IntegrityError:
        # A concurrent delivery of the same callback completed it first: this one is the replay.
        db.session.rollback()
        replay = _completed(processor, processor_reference)
        if replay is None:
            raise
        return replay, False
    except KaribuError:
        db.session.rollback()
        raise


def _complete(processor: str, processor_reference: str, amount: Decimal, currency,
              application_id) -> tuple[Payment, bool]:
    payment = db.session.scalars(select(Payment).where(
        Payment.processor == processor, Payment.processor_reference == processor_reference)).one_or_none()
    application_id = payment.application_id if payment is not None else application_id
    if not application_id:
        raise InvalidInput("the payment reference must name an application", field="application_id")
    application = db.session.scalars(
        select(Application).where(Application.id == application_id).with_for_update()
        .execution_options(populate_existing=True)).one_or_none()
    if application is None:
        raise InvalidInput(f"no application {application_id!r} to pay for", field="application_id")
    replay = _completed(processor, processor_reference)
    if replay is not None:  # a concurrent delivery completed it while this one waited for the lock
        db.session.rollback()
        return replay, False
    if not isinstance(currency, str) or currency.strip().upper() != application.currency:
        raise InvalidInput(f"currency must be {application.currency}, the currency of the application fee",
                           field="currency")
    decimals = currency_decimals(application.currency)
    if amount != amount.quantize(Decimal(1).scaleb(-decimals)):
        raise InvalidInput(f"amount must have at most {decimals} decimals in {application.currency}",
                           field="amount")
    if amount.quantize(CENTS) != Decimal(application.amount).quantize(CENTS):
        raise InvalidInput(f"amount must be {application.amount} {application.currency}, the application fee",
                           field="amount")
    if application.paid:
        raise Conflict(f"application {application.id} is already paid", field="application_id")
    if payment is None:
        payment = db.session.scalars(select(Payment).where(
            Payment.application_id == application.id, Payment.processor == processor,
            Payment.status == PENDING).order_by(Payment.created_at).limit(1)).first()
    if payment is None:
        payment = Payment(institution_id=application.institution_id, application_id=application.id,
                          processor=processor)
        db.session.add(payment)
    now = utcnow()
    payment.processor_reference = processor_reference
    payment.amount = application.amount
    payment.currency = application.currency
    payment.status = PAYMENT_COMPLETED
    payment.completed_at = now
    application.paid = True
    application.amount = payment.amount
    application.currency = payment.currency
    application.updated_at = now
    db.session.flush()
    emission.emit_payment_completed(payment)
    db.session.commit()
    return payment, True
