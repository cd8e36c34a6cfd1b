"""The university's own sender, proven (issue #39): through the CLI an institution records its domain, publishes the
two TXT records on a real DNS server (dnslib, on loopback) and proves it; only then do its decision emails go From
its contact address, DKIM-signed with d=<its domain> by its own key, which dkimpy verifies against the record the
DNS server serves. Another institution's proof of the same domain counts for nothing, and a record withdrawn stops
the use at the daily re-check (the admins are emailed)."""
from __future__ import annotations

import json
import re

import dkim
import pytest
from sqlalchemy import select

from core.db import db
from core.institutions.identity import update_identity
from core.models.sender_domains import SenderDomain
from core.scoping import InstitutionScope
from jobs.sender_domains import recheck
from tests.messages.conftest import all_messages, run_message_worker, send_decisions
from tests.messages.dns_server import DnsServer

PLATFORM = "admissions@karibu.test"  # the mail_app fixture's MAIL_DEFAULT_SENDER address


@pytest.fixture
def dns_server():
    server = DnsServer().start()
    yield server
    server.stop()


@pytest.fixture
def mail(mail_app, dns_server, monkeypatch, tmp_path):
    """The app resolving on the test DNS server, the operator listing ur.ac.rw, and the platform's own DKIM key on
    (so a signature by the institution's key is told apart from the platform's)."""
    from tests.messages.test_university_email import _key_pair

    monkeypatch.setitem(mail_app.config, "DNS_RESOLVER", dns_server.address)
    monkeypatch.setitem(mail_app.config, "MAIL_ALLOWED_SENDER_DOMAINS", "ur.ac.rw, uonbi.ac.ke")
    private, public = _key_pair()
    (tmp_path / "platform.pem").write_bytes(private)
    monkeypatch.setitem(mail_app.config, "MAIL_DKIM_DOMAIN", "karibu.test")
    monkeypatch.setitem(mail_app.config, "MAIL_DKIM_SELECTOR", "k2026")
    monkeypatch.setitem(mail_app.config, "MAIL_DKIM_PRIVATE_KEY_FILE", str(tmp_path / "platform.pem"))
    dns_server.publish("k2026._domainkey.karibu.test", f"v=DKIM1; k=rsa; p={public}")
    return mail_app


def cli(app, *args):
    result = app.test_cli_runner().invoke(args=["sender-domains", *args])
    return result.exit_code, result.output


def cli_json(app, *args):
    code, output = cli(app, *args, "--json")
    try:
        return code, json.loads(output)
    except ValueError:
        raise AssertionError(output) from None


def _university(factory, app, contact="admissions@ur.ac.rw", name="University of Rwanda"):
    institution = factory.institution(name)
    with app.app_context():
        update_identity(InstitutionScope(institution.id), {"display_name": name, "contact_email": contact})
    _, key = factory.api_key(institution)
    program = factory.program(institution)
    cycle = factory.cycle(institution, programs=[program])
    return institution, key, program, cycle


def _decision_email(app, smtp, factory, university):
    institution, key, program, cycle = university
    application = factory.application(institution, program=program, cycle=cycle, email="aline@example.com")
    before = len(smtp.received)
    assert send_decisions(app.test_client(), key, [application.id]).status_code == 200
    run_message_worker(app)
    assert len(smtp.received) == before + 1
    return smtp.received[-1]


def _publish(dns_server, records):
    for record in records:
        dns_server.publish(record["name"], record["value"])


def _signature_domain(data: bytes) -> str:
    [domain] = re.findall(rb"^DKIM-Signature:.*?\bd=([^;]+);", data, re.M | re.S)
    return domain.decode()


def test_an_unproven_domain_on_the_operators_list_sends_from_the_platform_address(mail, smtp, factory, dns_server):
    university = _university(factory, mail)
    code, added = cli_json(mail, "add", "--institution", university[0].id, "UR.ac.rw.")
    assert code == 0 and added["domain"] == "ur.ac.rw" and added["status"] == "pending"
    ownership, dkim_key = added["records"]
    assert ownership["name"] == "_karibu.ur.ac.rw" and ownership["value"].startswith("karibu-domain-verification=")
    assert re.fullmatch(r"karibu-[0-9a-f]{8}\._domainkey\.ur\.ac\.rw", dkim_key["name"])
    assert re.fullmatch(r"v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]{300,}", dkim_key["value"])

    code, checked = cli_json(mail, "verify", "--institution", university[0].id, "ur.ac.rw")
    assert code == 1 and checked["verified"] is False
    assert checked["problems"] == ["The ownership TXT record _karibu.ur.ac.rw was not found.",
                                   f"The DKIM TXT record {dkim_key['name']} was not found."]

    received = _decision_email(mail, smtp, factory, university)
    assert received.message["From"] == f"University of Rwanda <{PLATFORM}>"
    assert received.message["Reply-To"] == "admissions@ur.ac.rw"
    assert _signature_domain(received.data) == "karibu.test"
    assert dkim.verify(received.data, dnsfunc=dns_server.txt_lookup)
    [row] = all_messages(mail, institution_id=university[0].id)
    assert row.sender == f"University of Rwanda <{PLATFORM}>"  # chosen so when written, not only when sent


def test_after_publishing_its_records_it_sends_from_its_address_signed_with_its_own_key(
        mail, smtp, factory, dns_server):
    university = _university(factory, mail)
    _, added = cli_json(mail, "add", "--institution", university[0].id, "ur.ac.rw")
    _publish(dns_server, added["records"])
    code, checked = cli_json(mail, "verify", "--institution", university[0].id, "ur.ac.rw")
    assert (code, checked["verified"], checked["problems"], checked["status"]) == (0, True, [], "verified")

    received = _decision_email(mail, smtp, factory, university)
    assert received.message["From"] == "University of Rwanda <admissions@ur.ac.rw>"
    assert received.mail_from == PLATFORM  # bounces still go to the operator
    assert _signature_domain(received.data) == "ur.ac.rw"
    assert dkim.verify(received.data, dnsfunc=dns_server.txt_lookup)
    forged = received.data.replace(b"You have been offered a place.", b"You have been offered a plate.", 1)
    assert forged != received.data and not dkim.verify(forged, dnsfunc=dns_server.txt_lookup)

    code, listed = cli_json(mail, "list", "--institution", university[0].id)
    assert code == 0 and [(d["domain"], d["status"], d["problems"]) for d in listed["domains"]] == [
        ("ur.ac.rw", "verified", [])]
    assert listed["domains"][0]["records"] == added["records"]


def test_the_private_key_is_stored_encrypted(mail, factory):
    university = _university(factory, mail)
    cli_json(mail, "add", "--institution", university[0].id, "ur.ac.rw")
    with mail.app_context():
        row = db.session.scalars(select(SenderDomain)).one()
        assert row.dkim_private_key_ciphertext.startswith("gAAAAA")  # a Fernet token
        assert "PRIVATE KEY" not in row.dkim_private_key_ciphertext


def test_a_second_institution_adding_the_same_domain_is_not_proven_by_the_firsts_records(
        mail, smtp, factory, dns_server):
    first = _university(factory, mail)
    _, added = cli_json(mail, "add", "--institution", first[0].id, "ur.ac.rw")
    _publish(dns_server, added["records"])
    assert cli_json(mail, "verify", "--institution", first[0].id, "ur.ac.rw")[1]["verified"] is True

    second = _university(factory, mail, name="Beta College")
    code, other = cli_json(mail, "add", "--institution", second[0].id, "ur.ac.rw")
    assert code == 0
    assert {r["value"] for r in other["records"]}.isdisjoint(r["value"] for r in added["records"])
    assert other["records"][1]["name"] != added["records"][1]["name"]
    code, checked = cli_json(mail, "verify", "--institution", second[0].id, "ur.ac.rw")
    assert code == 1 and checked["verified"] is False
    assert checked["problems"] == [
        "The ownership TXT record _karibu.ur.ac.rw does not hold the value to publish.",
        f"The DKIM TXT record {other['records'][1]['name']} was not found."]

    received = _decision_email(mail, smtp, factory, second)
    assert received.message["From"] == f"Beta College <{PLATFORM}>"
    assert _signature_domain(received.data) == "karibu.test"
    # the first still sends from its own address
    assert _decision_email(mail, smtp, factory, first).message["From"] == \
        "University of Rwanda <admissions@ur.ac.rw>"
    # and neither can see or remove the other's row
    assert cli(mail, "remove", "--institution", second[0].id, "uonbi.ac.ke")[0] == 1
    assert [d["domain"] for d in cli_json(mail, "list", "--institution", second[0].id)[1]["domains"]] == ["ur.ac.rw"]


def test_a_proven_domain_is_used_only_for_the_exact_domain(mail, smtp, factory, dns_server):
    university = _university(factory, mail, contact="admissions@mail.ur.ac.rw")
    _, added = cli_json(mail, "add", "--institution", university[0].id, "ur.ac.rw")
    _publish(dns_server, added["records"])
    assert cli_json(mail, "verify", "--institution", university[0].id, "ur.ac.rw")[1]["verified"] is True
    assert _decision_email(mail, smtp, factory, university).message["From"] == \
        f"University of Rwanda <{PLATFORM}>"


def test_a_withdrawn_record_stops_the_use_at_the_daily_recheck_and_the_admins_are_told(
        mail, smtp, factory, dns_server):
    university = _university(factory, mail)
    admin = factory.user(university[0], role="admin", email="head@ur.ac.rw")
    factory.user(university[0], role="staff", email="clerk@ur.ac.rw")
    _, added = cli_json(mail, "add", "--institution", university[0].id, "ur.ac.rw")
    _publish(dns_server, added["records"])
    assert cli_json(mail, "verify", "--institution", university[0].id, "ur.ac.rw")[1]["verified"] is True
    with mail.app_context():
        assert recheck() == {"verified": 1, "lost": 0, "unproven": 0}

    # a decision queued while the domain is proven, sent only after the record went away
    institution, key, program, cycle = university
    waiting = factory.application(institution, program=program, cycle=cycle, email="jean@example.com")
    assert send_decisions(mail.test_client(), key, [waiting.id]).status_code == 200
    [queued] = all_messages(mail, application_id=waiting.id)
    assert queued.sender == "University of Rwanda <admissions@ur.ac.rw>"

    dns_server.withdraw(added["records"][1]["name"])
    with mail.app_context():
        assert recheck() == {"verified": 0, "lost": 1, "unproven": 0}
        assert db.session.scalars(select(SenderDomain)).one().status == "lost"
    run_message_worker(mail)
    sent = {r.recipients[0]: r for r in smtp.received}
    assert sent["jean@example.com"].message["From"] == f"University of Rwanda <{PLATFORM}>"
    assert _signature_domain(sent["jean@example.com"].data) == "karibu.test"
    told = sent[admin.email].message
    assert "ur.ac.rw" in told["Subject"] and "clerk@ur.ac.rw" not in sent
    assert "The DKIM TXT record" in told.get_body(("plain",)).get_content()
    assert _decision_email(mail, smtp, factory, university).message["From"] == \
        f"University of Rwanda <{PLATFORM}>"

    code, checked = cli_json(mail, "verify", "--institution", university[0].id, "ur.ac.rw")
    assert (code, checked["status"]) == (1, "lost")
    with mail.app_context():  # told once: a domain already lost is not announced again
        recheck()
    run_message_worker(mail)
    assert [r.recipients[0] for r in smtp.received].count(admin.email) == 1


def test_a_dns_server_that_does_not_answer_decides_nothing(mail, smtp, factory, dns_server, monkeypatch):
    university = _university(factory, mail)
    _, added = cli_json(mail, "add", "--institution", university[0].id, "ur.ac.rw")
    _publish(dns_server, added["records"])
    assert cli_json(mail, "verify", "--institution", university[0].id, "ur.ac.rw")[1]["verified"] is True
    from tests.messages.smtp_server import free_port
    monkeypatch.setitem(mail.config, "DNS_RESOLVER", f"127.0.0.1:{free_port()}")  # nothing listens there
    code, checked = cli_json(mail, "verify", "--institution", university[0].id, "ur.ac.rw")
    assert code == 1 and checked["status"] == "verified"
    assert all("could not be looked up" in problem for problem in checked["problems"])


def test_removing_the_domain_sends_from_the_platform_again(mail, smtp, factory, dns_server):
    university = _university(factory, mail)
    _, added = cli_json(mail, "add", "--institution", university[0].id, "ur.ac.rw")
    _publish(dns_server, added["records"])
    cli_json(mail, "verify", "--institution", university[0].id, "ur.ac.rw")
    code, removed = cli_json(mail, "remove", "--institution", university[0].id, "UR.AC.RW")
    assert (code, removed) == (0, {"removed": True, "domain": "ur.ac.rw"})
    assert _decision_email(mail, smtp, factory, university).message["From"] == \
        f"University of Rwanda <{PLATFORM}>"


def test_the_operators_list_restricts_on_top_of_proof(mail, smtp, factory, dns_server, monkeypatch):
    university = _university(factory, mail, contact="admissions@strathmore.edu")
    code, output = cli(mail, "add", "--institution", university[0].id, "strathmore.edu")
    assert code == 1 and "Error: The operator of this Karibu lets institutions send only from: ur.ac.rw, " \
                         "uonbi.ac.ke." in output
    monkeypatch.setitem(mail.config, "MAIL_ALLOWED_SENDER_DOMAINS", "")  # no list: proof alone decides
    _, added = cli_json(mail, "add", "--institution", university[0].id, "strathmore.edu")
    _publish(dns_server, added["records"])
    assert cli_json(mail, "verify", "--institution", university[0].id, "strathmore.edu")[1]["verified"] is True
    assert _decision_email(mail, smtp, factory, university).message["From"] == \
        "University of Rwanda <admissions@strathmore.edu>"
    monkeypatch.setitem(mail.config, "MAIL_ALLOWED_SENDER_DOMAINS", "ur.ac.rw")  # the operator narrows it later
    assert _decision_email(mail, smtp, factory, university).message["From"] == \
        f"University of Rwanda <{PLATFORM}>"


@pytest.mark.parametrize(("args", "message"), [
    (("add", "--institution", "ins_missing", "ur.ac.rw"), "Error: Institution not found"),
    (("add", "--institution", "{institution}", "https://ur.ac.rw"), "Error: Give a domain name such as ur.ac.rw"),
    (("add", "--institution", "{institution}", "admissions@ur.ac.rw"), "Error: Give a domain name"),
    (("add", "--institution", "{institution}", "localhost"), "Error: Give a domain name"),
    (("verify", "--institution", "{institution}", "uonbi.ac.ke"),
     "Error: This institution has no sending domain uonbi.ac.ke."),
    (("remove", "--institution", "{institution}", "uonbi.ac.ke"),
     "Error: This institution has no sending domain uonbi.ac.ke."),
])
def test_the_cli_refuses_in_one_line(mail, factory, args, message):
    institution = factory.institution()
    code, output = cli(mail, *(arg.format(institution=institution.id) for arg in args))
    assert code == 1 and output.startswith(message), output


def test_adding_a_domain_twice_is_refused_and_changes_nothing(mail, factory):
    institution = factory.institution()
    _, added = cli_json(mail, "add", "--institution", institution.id, "ur.ac.rw")
    code, output = cli(mail, "add", "--institution", institution.id, "ur.ac.rw")
    assert code == 1 and "Error: ur.ac.rw is already a sending domain of this institution." in output
    assert cli_json(mail, "list", "--institution", institution.id)[1]["domains"][0]["records"] == added["records"]


def test_the_daily_recheck_is_one_chain_however_many_workers_ask(mail, redis_client):
    from jobs import sender_domains as recheck_job
    from rq.job import Job

    redis_client.delete(recheck_job.CHAIN_KEY)
    with mail.app_context():
        assert recheck_job.ensure_recheck_scheduled() is True
        assert recheck_job.ensure_recheck_scheduled() is False
        job = Job.fetch(redis_client.get(recheck_job.CHAIN_KEY).decode(), connection=redis_client)
        assert job.func_name == "jobs.sender_domains.recheck"
