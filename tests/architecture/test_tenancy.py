"""Tenancy guards: institution data is reached only through `core.scoping.InstitutionScope`.

Three checks, each failing when the rule is broken:
- the source of `core/` filters by institution nowhere but in `core/scoping.py`;
- no public function of `core/` takes a bare `institution_id` (services take a `scope`);
- every model with an `institution_id` column has cross-tenant probes that call the core services reading
  it: the owner's scope reaches the row, another institution's scope gets nothing or NotFound. A new
  tenant-owned model without probes fails `test_every_tenant_owned_model_is_probed`.
"""
from __future__ import annotations

import ast
import csv
import io
import re
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from werkzeug.datastructures import MultiDict

from core import institutions
from core.accounts import api_keys, links, saved_views, users
from core.applications import (
    applicant_file, applying, counters, credential_checks, csv_export, decision_answers, document_bundles,
    matching_updates, overview, state_updates,
)
from core.applications.listing.counts import count_applications
from core.applications.listing.pages import fetch_application_page, fetch_applications_by_id, fetch_cycle_page
from core.applications.listing.query import parse_application_query, parse_cycle_query
from core.audit import browsing
from core.config import settings
from core.events import feed
from core.institutions import sender_domains
from core.applications.documents import document_storage
from core.errors import InvalidInput, NotFound
from core.applications.history import Actor
from core.db import db
from core.models import (
    ApiKey, Applicant, ApplicantCheck, Application, AuditLog, Base, BulkChange, Cycle, Decision, Document, Event,
    Payment, Program, SavedView, Stage, User, VerificationCharge, utcnow,
)
from core.messages import log as message_log
from core.models.accounts import StaffInvitation
from core.models.counts import ApplicationCount, ApplicationDayCount
from core.models.history import ApplicationChange
from core.models.messages import Message
from core.models.sender_domains import SenderDomain
from core.models.sso import SsoConfiguration, SsoDomain
from core.models.webhooks import WebhookDelivery, WebhookEndpoint
from core.scoping import InstitutionScope
from core.verification import billing
from core.webhooks import endpoints, log
from core.webhooks.runtime import runtime

CORE = Path(__file__).resolve().parents[2] / "core"
STAFF = Actor.staff("probe@example.rw")
HAND_WRITTEN_FILTER = re.compile(r"institution_id\s*(==|!=)|filter_by\([^)]*\binstitution_id\s*=")


def core_sources():
    return sorted(path for path in CORE.rglob("*.py") if path.name != "scoping.py")


def test_no_hand_written_institution_filter_outside_scoping():
    offenders = [f"{path.relative_to(CORE.parent)}:{number}: {line.strip()}"
                 for path in core_sources()
                 for number, line in enumerate(path.read_text().splitlines(), 1)
                 if HAND_WRITTEN_FILTER.search(line)]
    assert offenders == [], "filter through InstitutionScope instead:\n" + "\n".join(offenders)


# Functions that take an institution id as a plain value and query nothing.
NOT_A_QUERY = {"core/webhooks/signing.py:delivery_headers"}  # the X-Karibu-Institution-Id header


def test_core_services_take_a_scope_not_an_institution_id():
    offenders = []
    for path in core_sources():
        if "models" in path.relative_to(CORE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                name = f"{path.relative_to(CORE.parent)}:{node.name}"
                if any(argument.arg == "institution_id" for argument in arguments) and name not in NOT_A_QUERY:
                    offenders.append(f"{name} (line {node.lineno})")
    assert offenders == [], "take `scope: InstitutionScope` instead:\n" + "\n".join(offenders)


# --- cross-tenant probes ---------------------------------------------------------------------------------------

@dataclass
class Rows:
    """Ids of one institution's rows of every tenant-owned model (a unique tag tells the institutions apart)."""
    tag: str
    institution_id: str
    program_id: str
    cycle_id: str
    stage_key: str
    last_name: str
    application_id: str
    decision_id: str
    payment_id: str
    document_id: str
    check_id: str
    event_id: str
    user_id: str
    key_id: str
    issuer: str
    audit_id: int
    endpoint_id: str
    delivery_id: str
    message_id: str
    invitation_id: str
    change_id: str
    view_id: str = ""
    bulk_change_id: str = ""
    sender_domain: str = ""


def populate(tag: str, issuer: str) -> Rows:
    """An institution with one row of each tenant-owned model (inside an app context)."""
    now = utcnow()
    institution = institutions.create_institution(f"University {tag}")
    scope = InstitutionScope(institution.id)
    stage = Stage(institution_id=institution.id, key=f"stage_{tag}", name=f"Stage {tag}", position=99)
    program = Program(institution_id=institution.id, name=f"Program {tag}", fee=Decimal("100"), currency="RWF")
    cycle = Cycle(institution_id=institution.id, name=f"Cycle {tag}", opens_at=now - timedelta(days=1),
                  closes_at=now + timedelta(days=30), programs=[program])
    db.session.add_all([stage, program, cycle])
    db.session.commit()
    application = applying.submit_application(
        scope, program.id, cycle.id, applying.ApplicantFields("Aimée", f"Surname{tag}", f"a.{tag}@example.rw"))
    event = db.session.scalars(scope.select(Event)).one()
    application.decision = "accepted"
    decision = Decision(institution_id=institution.id, application_id=application.id, status="accepted",
                        sent_at=now)
    payment = Payment(institution_id=institution.id, application_id=application.id, processor="mpesa",
                      processor_reference=f"REF{tag}", amount=Decimal("100"), currency="RWF",
                      status="completed", completed_at=now)
    document = Document(institution_id=institution.id, application_id=application.id, kind="transcript",
                        filename=f"{tag}.pdf", content_type="application/pdf", size=len(tag),
                        sha256=document_storage().put(tag.encode()))
    check = ApplicantCheck(institution_id=institution.id, application_id=application.id, issuer=issuer,
                           level="A", result="authentic", actor="test")
    audit = AuditLog(institution_id=institution.id, actor=f"actor-{tag}", source="portal", status=200)
    charge = VerificationCharge(institution_id=institution.id, actor="test", issuer=issuer, level="A",
                                outcome="authentic", amount=Decimal("1.50"), currency="USD",
                                identifiers_hash="0" * 64, period=now.strftime("%Y-%m"))
    endpoint = WebhookEndpoint(institution_id=institution.id, url=f"https://{tag}.example.org/hooks",
                               event_types=["application.submitted"], enabled=True,
                               secret_ciphertext=runtime.secret_box().encrypt("whsec_test"))
    db.session.add_all([decision, payment, document, check, audit, charge, endpoint])
    db.session.flush()
    message = Message(institution_id=institution.id, application_id=application.id, decision_id=decision.id,
                      channel="email", recipient=f"a.{tag}@example.rw", template="decision", language="en",
                      body_text=f"Dear {tag}", status="failed", attempts=8, last_error="550 no such user")
    change = ApplicationChange(institution_id=institution.id, application_id=application.id, kind="stage",
                               old_value="submitted", new_value=stage.key, actor_kind="staff", actor_name=tag)
    db.session.add_all([message, change])
    delivery = WebhookDelivery(institution_id=institution.id, endpoint_id=endpoint.id, event_id=event.id,
                               event_type=event.type, status="dead", created_at=now)
    db.session.add(delivery)
    db.session.commit()
    user = users.create_user(scope, f"staff.{tag}@example.rw", "correct-horse-1", role="admin")
    key, _ = api_keys.create_api_key(scope, name=tag)
    invitation = StaffInvitation(institution_id=institution.id, email=f"invitee.{tag}@example.rw", role="staff",
                                 token_hash=f"{tag:0<64}", invited_by=user.id, expires_at=now + timedelta(days=3))
    db.session.add(invitation)
    db.session.commit()
    view = saved_views.save_view(scope, user.id, f"View {tag}", f"stage=stage_{tag}")
    bulk = BulkChange(institution_id=institution.id, actor=user.email, filters={}, change={"decision": "accepted"},
                      status="done", total=1, done=1, changed=0, refused=0)
    db.session.add(bulk)
    sender = SenderDomain(institution_id=institution.id, domain=f"{tag}.ac.rw", verification_token=tag,
                          dkim_selector=f"karibu-{tag}", dkim_public_key="", dkim_private_key_ciphertext="",
                          status="verified")
    db.session.add(sender)
    db.session.commit()
    return Rows(view_id=view.id, bulk_change_id=bulk.id, sender_domain=sender.domain, tag=tag,
                institution_id=institution.id,
                program_id=program.id, cycle_id=cycle.id,
                stage_key=stage.key, last_name=f"Surname{tag}", application_id=application.id,
                decision_id=decision.id, payment_id=payment.id, document_id=document.id, check_id=check.id,
                event_id=event.id, user_id=user.id, key_id=key.id, issuer=issuer, audit_id=audit.id,
                endpoint_id=endpoint.id, delivery_id=delivery.id, message_id=message.id,
                invitation_id=invitation.id, change_id=change.id)


def reached(call) -> bool:
    """False when the service refuses the row as missing (NotFound) or unknown (InvalidInput)."""
    try:
        call()
    except (NotFound, InvalidInput):
        db.session.rollback()
        return False
    return True


PROBES: dict[type, list] = {}


def probe(*models):
    """Register `check(scope, own, target) -> bool`: does `scope` (whose own rows are `own`) reach `target`?"""
    def register(check):
        for model in models:
            PROBES.setdefault(model, []).append(check)
        return check
    return register


def _page(scope, **args):
    return fetch_application_page(scope, parse_application_query(args))


@probe(Program)
def overview_programs(scope, own, target):
    return target.program_id in {program.id for program in overview.programs(scope)}


@probe(Program)
def listing_program_filter(scope, own, target):
    return reached(lambda: _page(scope, program=target.program_id))


@probe(Program)
def applying_program(scope, own, target):
    fields = applying.ApplicantFields("New", "Applicant", f"new.{own.tag}@example.rw")
    return reached(lambda: applying.submit_application(scope, target.program_id, own.cycle_id, fields))


@probe(Cycle)
def overview_cycles(scope, own, target):
    return target.cycle_id in {cycle.id for cycle in overview.cycles(scope)}


@probe(Cycle)
def overview_current_cycle(scope, own, target):
    return overview.current_cycle(scope).id == target.cycle_id


@probe(Cycle, Program, Application)
def overview_cycle_summaries(scope, own, target):
    return any(summary.cycle.id == target.cycle_id and summary.applications == 1
               and [program.id for program, _ in summary.programs] == [target.program_id]
               for summary in overview.cycle_summaries(scope))


@probe(Cycle)
def listing_cycle_page(scope, own, target):
    page = fetch_cycle_page(scope, parse_cycle_query({}))
    return target.cycle_id in {cycle.id for cycle in page.rows}


@probe(Cycle)
def listing_cycle_filter(scope, own, target):
    return reached(lambda: _page(scope, cycle=target.cycle_id))


@probe(Cycle)
def applying_open_cycles(scope, own, target):
    return target.cycle_id in {cycle.id for cycle in applying.open_cycles(scope)}


@probe(Cycle)
def applying_cycle(scope, own, target):
    """Refused as an unknown cycle: a later check on the program would name the foreign cycle."""
    fields = applying.ApplicantFields("New", "Applicant", f"new.{own.tag}@example.rw")
    try:
        applying.submit_application(scope, own.program_id, target.cycle_id, fields)
    except InvalidInput as error:
        db.session.rollback()
        return error.name != "cycle_id"
    return True


@probe(Stage)
def institutions_pipeline(scope, own, target):
    return target.stage_key in {stage.key for stage in institutions.pipeline(scope)}


@probe(Stage)
def institutions_describe(scope, own, target):
    return target.stage_key in {stage["id"] for stage in institutions.describe_institution(scope)["stages"]}


@probe(Stage)
def updates_stage(scope, own, target):
    batch = state_updates.parse_updates({"updates": [{"id": own.application_id, "stage": target.stage_key}]})
    return reached(lambda: state_updates.apply_updates(scope, batch, actor=STAFF, emit_application_updated=False))


@probe(Stage, Application)
def overview_dashboard(scope, own, target):
    cycle = db.session.get(Cycle, target.cycle_id)  # the service must count only the scope's applications
    figures = overview.dashboard(scope, cycle)
    return figures.total == 1 and target.stage_key in {count.key for count in figures.by_stage}


@probe(Applicant)
def listing_search(scope, own, target):
    return target.application_id in {row.id for row in _page(scope, q=target.last_name).rows}


@probe(Applicant, Application, Payment, Decision, Document, ApplicantCheck, ApplicationChange)
def applicant_file_everything(scope, own, target):
    try:
        file = applicant_file.applicant_file(scope, target.application_id)
    except NotFound:
        return False
    seen = ({payment.id for payment in file.payments} | {decision.id for decision in file.decisions}
            | {document.id for document in file.documents} | {check.id for check in file.checks}
            | {entry.item.id for entry in file.timeline})
    assert file.applicant.last_name == target.last_name
    return {target.payment_id, target.decision_id, target.document_id, target.check_id, target.change_id} <= seen


@probe(Application)
def listing_page(scope, own, target):
    return target.application_id in {row.id for row in _page(scope).rows}


@probe(Application)
def listing_by_id(scope, own, target):
    rows, missing = fetch_applications_by_id(scope, [target.application_id])
    return [row.id for row in rows] == [target.application_id] and missing == []


@probe(Application)
def updates_records(scope, own, target):
    try:
        return [record["id"] for record in state_updates.records(scope, [target.application_id])] == [
            target.application_id]
    except KeyError:  # callers pass only ids that apply_updates accepted; a foreign one is simply not there
        return False


@probe(Application, Decision)
def updates_apply(scope, own, target):
    batch = state_updates.parse_updates({"updates": [{"id": target.application_id, "decision": "rejected"}]})
    return reached(lambda: state_updates.apply_updates(scope, batch, actor=STAFF, emit_application_updated=False))


@probe(Application)
def csv_export_applications(scope, own, target):
    text = b"".join(csv_export.export_applications_csv(scope, {})).decode()
    return target.application_id in {row["id"] for row in csv.DictReader(io.StringIO(text))}


@probe(Application)
def applicant_checks_record(scope, own, target):
    return reached(lambda: credential_checks.record_check(
        scope, target.application_id, issuer="NESA", level="A", answer={"result": "authentic"}, actor="test"))


@probe(ApplicantCheck)
def applicant_checks_for(scope, own, target):
    return target.check_id in {check.id for check in credential_checks.checks_for(scope, target.application_id)}


@probe(Decision)
def decisions_response_by_staff(scope, own, target):
    return reached(lambda: decision_answers.record_decision_response_by_staff(scope, target.decision_id, "accepted",
                                                                            STAFF))


@probe(Document)
def applicant_file_document(scope, own, target):
    return reached(lambda: applicant_file.application_document(scope, target.application_id, target.document_id))


@probe(Document)
def bundles_page(scope, own, target):
    [bundle] = document_bundles.page_applications(scope, [target.application_id])
    return target.document_id in {document.id for document in bundle.documents}


@probe(AuditLog)
def audit_trail_page(scope, own, target):
    return target.audit_id in {row.id for row in browsing.audit_page(scope, browsing.AuditFilters()).rows}


@probe(User)
def users_list(scope, own, target):
    return target.user_id in {user.id for user in users.list_users(scope)}


@probe(User)
def users_set_role(scope, own, target):
    return reached(lambda: users.set_role(scope, target.user_id, "admin"))


@probe(User)
def users_set_active(scope, own, target):
    return reached(lambda: users.set_active(scope, target.user_id, True))


@probe(User)
def users_account_in(scope, own, target):
    return users.account_in(scope, f"staff.{target.tag}@example.rw") is not None


@probe(StaffInvitation)
def invitations_pending(scope, own, target):
    return target.invitation_id in {invitation.id for invitation in links.pending_invitations(scope)}


@probe(StaffInvitation)
def invitations_resend(scope, own, target):
    inviter = db.session.get(User, own.user_id)
    return reached(lambda: links.resend_invitation(scope, target.invitation_id, inviter))


@probe(StaffInvitation)
def invitations_revoke(scope, own, target):
    return reached(lambda: links.revoke_invitation(scope, target.invitation_id))


@probe(StaffInvitation)
def invitations_invite_the_same_address(scope, own, target):
    """Inviting the address another institution invited makes an invitation of our own; theirs is untouched."""
    inviter = db.session.get(User, own.user_id)
    before = db.session.get(StaffInvitation, target.invitation_id).token_hash
    mine = links.invite(scope, f"invitee.{target.tag}@example.rw", "staff", inviter)
    db.session.expire_all()
    return mine.id == target.invitation_id or db.session.get(StaffInvitation, target.invitation_id).token_hash != before


@probe(ApiKey)
def keys_list(scope, own, target):
    return target.key_id in {key.id for key in api_keys.list_api_keys(scope)}


@probe(ApiKey)
def keys_revoke(scope, own, target):
    return reached(lambda: api_keys.revoke_api_key(target.key_id, scope=scope))


@probe(VerificationCharge)
def billing_usage_by_month(scope, own, target):
    return target.issuer in {row["issuer"] for row in billing.usage_by_month(scope)}


@probe(VerificationCharge)
def billing_usage_csv(scope, own, target):
    return target.issuer in {row["issuer"] for row in csv.DictReader(io.StringIO("".join(billing.usage_csv(scope))))}


@probe(WebhookEndpoint)
def webhooks_get_endpoint(scope, own, target):
    return endpoints.get_endpoint(scope).id == target.endpoint_id


@probe(WebhookEndpoint)
def webhooks_rotate_secret(scope, own, target):
    before = db.session.get(WebhookEndpoint, target.endpoint_id).secret_ciphertext
    endpoints.rotate_secret(scope)
    db.session.expire_all()
    return db.session.get(WebhookEndpoint, target.endpoint_id).secret_ciphertext != before


@probe(ApplicationCount)
def counts_of_a_cycle(scope, own, target):
    return counters.cycle_counts(scope, target.cycle_id).total > 0


@probe(ApplicationCount)
def counts_per_cycle_and_program(scope, own, target):
    return (target.cycle_id, target.program_id) in counters.per_cycle_and_program(scope)


@probe(ApplicationCount)
def counts_by_dimensions(scope, own, target):
    return counters.count_by_dimensions(scope, {"cycle_ids": [target.cycle_id]}) > 0


@probe(ApplicationDayCount)
def counts_per_day(scope, own, target):
    return bool(counters.per_day(scope, target.cycle_id))


@probe(Message)
def messages_list(scope, own, target):
    return target.message_id in {message.id for message in message_log.list_messages(scope).rows}


@probe(Message)
def messages_list_before(scope, own, target):
    return reached(lambda: message_log.list_messages(scope, before=target.message_id))


@probe(Message)
def messages_of_application(scope, own, target):
    return bool(message_log.messages_of_application(scope, target.application_id))


@probe(Message)
def messages_get(scope, own, target):
    return reached(lambda: message_log.get_message(scope, target.message_id))


@probe(Message)
def messages_resend(scope, own, target):
    return reached(lambda: message_log.resend_message(scope, target.message_id))


@probe(Event)
def events_feed_page(scope, own, target):
    page = feed.fetch_event_page(scope, feed.parse_event_query(MultiDict()), None)
    return target.event_id in {row.id for row in page.rows}


@probe(Event)
def events_feed_get(scope, own, target):
    return reached(lambda: feed.get_event(scope, target.event_id))


@probe(WebhookDelivery)
def webhooks_list_deliveries(scope, own, target):
    return target.delivery_id in {delivery.id for delivery in log.list_deliveries(scope).rows}


@probe(WebhookDelivery)
def webhooks_list_before(scope, own, target):
    return reached(lambda: log.list_deliveries(scope, before=target.delivery_id))


@probe(WebhookDelivery)
def webhooks_delivery_with_attempts(scope, own, target):
    return reached(lambda: log.get_delivery_with_attempts(scope, target.delivery_id))


@probe(WebhookDelivery)
def webhooks_redeliver(scope, own, target):
    return reached(lambda: log.redeliver(scope, target.delivery_id))


@probe(WebhookDelivery)
def webhooks_recover(scope, own, target):
    log.recover_since(scope, utcnow() - timedelta(days=1))
    db.session.expire_all()
    return db.session.get(WebhookDelivery, target.delivery_id).status == "pending"


@probe(SavedView)
def saved_views_list(scope, own, target):
    return target.view_id in {view.id for view in saved_views.list_views(scope, target.user_id)}


@probe(SavedView)
def saved_views_get(scope, own, target):
    return reached(lambda: saved_views.get_view(scope, target.user_id, target.view_id))


@probe(SenderDomain)
def sender_domains_list(scope, own, target):
    return target.sender_domain in {row.domain for row in sender_domains.sender_domains(scope)}


@probe(SenderDomain)
def sender_domains_get(scope, own, target):
    return reached(lambda: sender_domains.sender_domain(scope, target.sender_domain))


@probe(SenderDomain)
def sender_domains_may_send_from(scope, own, target):
    return sender_domains.may_send_from(scope, f"admissions@{target.sender_domain}", settings())


@probe(SenderDomain)
def sender_domains_remove(scope, own, target):
    return reached(lambda: sender_domains.remove_sender_domain(scope, target.sender_domain))


@probe(BulkChange)
def bulk_changes_get(scope, own, target):
    return reached(lambda: matching_updates.get_bulk_change(scope, target.bulk_change_id))


@probe(BulkChange)
def bulk_changes_run(scope, own, target):
    return reached(lambda: matching_updates.run_bulk_change(scope, target.bulk_change_id))


@probe(Cycle, Application)
def bulk_changes_start(scope, own, target):
    return reached(lambda: matching_updates.start_bulk_change(
        scope, "test", {"cycle": target.cycle_id}, {"decision": "accepted"}).total == 1)


@probe(Cycle)
def listing_count_by_cycle(scope, own, target):
    return reached(lambda: count_applications(scope, {"cycle": target.cycle_id}))


@probe(Applicant)
def listing_count_search(scope, own, target):
    return count_applications(scope, {"q": target.last_name}) == 1


# University sign-in (core/accounts/sso.py): the target's provider is set up by the probe itself.
def _university_sign_in_of(target) -> None:
    from core.accounts import sso
    owner = InstitutionScope(target.institution_id)
    if sso.configuration(owner) is None:
        sso.configure(owner, issuer="https://login.example.org", client_id=f"client-{target.tag}",
                      client_secret="secret", domains=f"{target.tag}.ac.rw", require=False, create_users="none")


@probe(SsoConfiguration, SsoDomain)
def sso_configuration(scope, own, target):
    from core.accounts import sso
    _university_sign_in_of(target)
    found = sso.configuration(scope)
    return found is not None and found.client_id == f"client-{target.tag}" and found.domains == [
        f"{target.tag}.ac.rw"]


@probe(SsoConfiguration, SsoDomain)
def sso_remove(scope, own, target):
    from core.accounts import sso
    _university_sign_in_of(target)
    sso.remove(scope)
    return sso.configuration(InstitutionScope(target.institution_id)) is None


@probe(SsoDomain)
def sso_configure_a_domain(scope, own, target):
    from core.accounts import sso
    from core.errors import Conflict
    _university_sign_in_of(target)
    try:
        sso.configure(scope, issuer="https://login.example.org", client_id=f"client-{target.tag}",
                      client_secret="secret", domains=f"{target.tag}.ac.rw", require=False, create_users="none")
    except Conflict:
        db.session.rollback()
        return False
    return True


def tenant_owned_models() -> set[type]:
    return {mapper.class_ for mapper in Base.registry.mappers if "institution_id" in mapper.columns}


def test_every_tenant_owned_model_is_probed():
    unprobed = sorted(model.__name__ for model in tenant_owned_models() - set(PROBES))
    assert unprobed == [], "add cross-tenant probes (the core services that read them) for: " + ", ".join(unprobed)


ALL_PROBES = sorted({(check.__name__, check) for checks in PROBES.values() for check in checks})


@pytest.mark.parametrize("check", [check for _, check in ALL_PROBES], ids=[name for name, _ in ALL_PROBES])
def test_another_institutions_scope_never_reaches_the_rows(app, check):
    """Asked with institution A's scope for B's rows the service finds nothing; B's own scope finds them (so
    the probe really exercises the rows). A goes first, so a leak that changed B's rows is seen too."""
    with app.app_context():
        alpha, beta = populate("alpha", issuer="KNEC"), populate("beta", issuer="NESA")
        assert check(InstitutionScope(alpha.institution_id), alpha, beta) is False
        db.session.rollback()
        db.session.expire_all()
        assert check(InstitutionScope(beta.institution_id), beta, beta) is True
