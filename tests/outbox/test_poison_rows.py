"""A poison row fails alone, whatever the kind (core/outbox/drain.py `Failed`): here the message kind, with one
message whose load raises, one whose send raises and one whose record raises, among messages that go normally."""
from __future__ import annotations

from prometheus_client import REGISTRY

from core.messages import delivery
from tests.messages.conftest import all_messages, drain_now, send_decisions
from tests.messages.test_outbox import _setup


def row_failures(step: str) -> float:
    return REGISTRY.get_sample_value("karibu_outbox_row_failures_total",
                                     {"outbox": "messages", "step": step}) or 0.0


def test_a_message_whose_load_send_or_record_raises_fails_alone(mail_app, smtp, factory, monkeypatch):
    _, key, applications = _setup(factory, applications=6)
    assert send_decisions(mail_app.test_client(), key, [a.id for a in applications]).status_code == 200
    messages = all_messages(mail_app)
    unloadable, unsendable, unrecordable = (messages[1].id, messages[3].id, messages[0].id)
    before = {step: row_failures(step) for step in ("load", "send", "record")}

    load, send, answer = delivery.MessageKind.load, delivery.MessageKind.send, delivery.MessageKind.answer

    def poisoned_load(self, ids, lease_expires):
        if unloadable in ids:
            raise ValueError("this row cannot be read")
        return load(self, ids, lease_expires)

    def poisoned_send(self, message):
        if message.id == unsendable:
            raise RuntimeError("a bug in the sender")
        return send(self, message)

    def poisoned_answer(self, message, outcome, now):
        if message.id == unrecordable:
            raise KeyError("a bug in the record")
        return answer(self, message, outcome, now)

    monkeypatch.setattr(delivery.MessageKind, "load", poisoned_load)
    monkeypatch.setattr(delivery.MessageKind, "send", poisoned_send)
    monkeypatch.setattr(delivery.MessageKind, "answer", poisoned_answer)
    drain_now(mail_app)

    by_id = {message.id: message for message in all_messages(mail_app)}
    poisoned = {unloadable: "could not prepare this row: ValueError: this row cannot be read",
                unsendable: "could not send this row: RuntimeError: a bug in the sender",
                unrecordable: "could not record the attempt of this row: KeyError"}
    for message_id, reason in poisoned.items():
        message = by_id[message_id]
        assert (message.status, message.attempts, message.lease_token) == ("retry_scheduled", 1, None), message_id
        assert reason in message.last_error and message.next_attempt_at is not None
    others = [message for message_id, message in by_id.items() if message_id not in poisoned]
    assert [(m.status, m.attempts) for m in others] == [("sent", 1)] * 3
    # the email whose record raised was handed over before (and its DATA gate let the following ones go)
    assert sorted(received.message["Message-ID"] for received in smtp.received) == sorted(
        by_id[m].message_id_header for m in [*(o.id for o in others), unrecordable])
    assert {step: row_failures(step) - before[step] for step in before} == {"load": 1, "send": 1, "record": 1}
