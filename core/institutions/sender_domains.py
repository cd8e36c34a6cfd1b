"""An institution's sending domains: recorded with a TXT token and a DKIM key pair of their own, proven by looking
both records up in DNS (dnspython), re-checked daily; mail goes From a domain only while its own institution has
it proven (docs/messages.md, "The university's own sending domain")."""
from __future__ import annotations

import base64
import logging
import re
import secrets
from dataclasses import asdict, dataclass
from email.utils import parseaddr

import dns.exception
import dns.resolver
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from flask_babel import gettext as _
from sqlalchemy import select

from core.config import ConfigurationError, Settings, settings
from core.db import db
from core.errors import Conflict, InvalidInput, NotFound
from core.messages.addresses import address_of, domain_of, mailbox, on_domains
from core.messages.runtime import runtime
from core.messages.signing import DkimSigner
from core.models import User
from core.models.identity import ROLE_ADMIN
from core.models.sender_domains import (
    SENDER_DOMAIN_LOST, SENDER_DOMAIN_PENDING, SENDER_DOMAIN_VERIFIED, SenderDomain,
)
from core.scoping import InstitutionScope
from core.secret_key import decrypted_or_none, derived_fernet

log = logging.getLogger(__name__)

# The key-derivation label of `sender_domains.dkim_private_key_ciphertext` (registered in core/encryption/columns.py).
KEY_LABEL = b"karibu sender-domain DKIM private keys v1"
OWNERSHIP_PREFIX = "_karibu"  # the ownership record is TXT `_karibu.<domain>`
OWNERSHIP_VALUE = "karibu-domain-verification={token}"
DKIM_KEY_BITS = 2048
# Seconds one look-up (every retry included) may take before it counts as failed (not as a missing record).
LOOKUP_SECONDS = 5.0
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


@dataclass(frozen=True)
class DnsRecord:
    """One record to publish: its type, full name and exact value, and what it is for."""
    type: str
    name: str
    value: str
    purpose: str  # ownership | dkim


@dataclass(frozen=True)
class Finding:
    """One thing a check found missing or wrong; `lookup_failed` when DNS gave no answer (nothing is concluded)."""
    record: str  # ownership | dkim
    name: str
    issue: str  # missing | wrong | lookup_failed
    detail: str = ""

    def sentence(self) -> str:
        if self.issue == "lookup_failed":
            return _("The TXT record %(name)s could not be looked up (%(detail)s); try again later.",
                     name=self.name, detail=self.detail)
        if self.record == "ownership":
            if self.issue == "missing":
                return _("The ownership TXT record %(name)s was not found.", name=self.name)
            return _("The ownership TXT record %(name)s does not hold the value to publish.", name=self.name)
        if self.issue == "missing":
            return _("The DKIM TXT record %(name)s was not found.", name=self.name)
        return _("The DKIM TXT record %(name)s does not hold the key to publish (%(detail)s).", name=self.name,
                 detail=self.detail)


@dataclass(frozen=True)
class Check:
    """The outcome of one check of one domain."""
    domain: SenderDomain
    findings: list[Finding]

    @property
    def verified(self) -> bool:
        return not self.findings

    @property
    def problems(self) -> list[str]:
        return [finding.sentence() for finding in self.findings]


def normalised_domain(text: str | None) -> str:
    """`text` as a domain name: lower case, ASCII (an IDN in its xn-- form), no trailing dot; InvalidInput (field
    `domain`) unless at least two valid labels."""
    raw = (text or "").strip().rstrip(".").lower()
    try:
        domain = raw.encode("idna").decode("ascii") if raw else ""
    except UnicodeError:
        domain = ""
    labels = domain.split(".")
    if len(domain) > 253 or len(labels) < 2 or not all(_LABEL.match(label) for label in labels) \
            or labels[-1].isdigit():
        raise InvalidInput(_("Give a domain name such as ur.ac.rw (no address, no https://)."), field="domain")
    return domain


def records_to_publish(row: SenderDomain) -> list[DnsRecord]:
    """The two TXT records that prove `row`: the ownership token and the DKIM public key."""
    return [DnsRecord("TXT", f"{OWNERSHIP_PREFIX}.{row.domain}", OWNERSHIP_VALUE.format(token=row.verification_token),
                      "ownership"),
            DnsRecord("TXT", f"{row.dkim_selector}._domainkey.{row.domain}",
                      f"v=DKIM1; k=rsa; p={row.dkim_public_key}", "dkim")]


def _box(config: Settings):
    return derived_fernet(config.SECRET_KEY, KEY_LABEL)


def _new_key_pair() -> tuple[str, str]:
    """(the PEM private key encrypted for storage, the base64 DER public key) of a new RSA key."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=DKIM_KEY_BITS)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.DER,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return _box(settings()).encrypt(private).decode("ascii"), base64.b64encode(public).decode("ascii")


def _operator_allows(domain: str, config: Settings) -> bool:
    """MAIL_ALLOWED_SENDER_DOMAINS, when set, is the operator's list on top of proof; empty allows every domain."""
    return not config.MAIL_ALLOWED_SENDER_DOMAINS.strip() or on_domains(f"x@{domain}",
                                                                         config.MAIL_ALLOWED_SENDER_DOMAINS)


def add_sender_domain(scope: InstitutionScope, domain: str) -> SenderDomain:
    """Record `domain` for the institution with a new ownership token and DKIM key pair (pending until proven).
    InvalidInput for a malformed domain or one the operator's list leaves out; Conflict when already recorded."""
    if scope.institution() is None:
        raise NotFound("Institution not found")
    domain = normalised_domain(domain)
    config = settings()
    if not _operator_allows(domain, config):
        raise InvalidInput(_("The operator of this Karibu lets institutions send only from: %(domains)s.",
                             domains=config.MAIL_ALLOWED_SENDER_DOMAINS), field="domain")
    if db.session.scalars(scope.select(SenderDomain).where(SenderDomain.domain == domain)).first() is not None:
        raise Conflict(_("%(domain)s is already a sending domain of this institution.", domain=domain),
                       field="domain")
    ciphertext, public_key = _new_key_pair()
    row = SenderDomain(institution_id=scope.institution_id, domain=domain,
                       verification_token=secrets.token_urlsafe(24), dkim_selector=f"karibu-{secrets.token_hex(4)}",
                       dkim_public_key=public_key, dkim_private_key_ciphertext=ciphertext,
                       status=SENDER_DOMAIN_PENDING, last_problems=[], created_at=runtime.clock.now())
    db.session.add(row)
    db.session.commit()
    return row


def sender_domains(scope: InstitutionScope) -> list[SenderDomain]:
    """The institution's sending domains, by name."""
    return list(db.session.scalars(scope.select(SenderDomain).order_by(SenderDomain.domain)))


def sender_domain(scope: InstitutionScope, domain: str) -> SenderDomain:
    """The institution's row for `domain`; NotFound when it has none (another institution's is not seen)."""
    try:
        domain = normalised_domain(domain)
    except InvalidInput:
        raise NotFound(_("This institution has no sending domain %(domain)s.", domain=(domain or "")[:253])) from None
    row = db.session.scalars(scope.select(SenderDomain).where(SenderDomain.domain == domain)).one_or_none()
    if row is None:
        raise NotFound(_("This institution has no sending domain %(domain)s.", domain=domain))
    return row


def remove_sender_domain(scope: InstitutionScope, domain: str) -> str:
    """Forget the domain and its key (returns its name): mail From it stops at once (queued mail goes from the
    platform's address)."""
    row = sender_domain(scope, domain)
    db.session.delete(row)
    db.session.commit()
    return row.domain


# --- looking the records up -----------------------------------------------------------------------------------

def resolver_address(value: str) -> tuple[str, int] | None:
    """(host, port) of a DNS_RESOLVER value `host:port` (`[::1]:53` for IPv6); None when empty; ConfigurationError
    when malformed."""
    value = value.strip()
    if not value:
        return None
    host, _colon, port = value.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigurationError(f"DNS_RESOLVER must be host:port (e.g. 127.0.0.1:53, [::1]:53), not {value!r}.")
    return host, int(port)


def _resolver() -> dns.resolver.Resolver:
    address = resolver_address(settings().DNS_RESOLVER)
    if address is None:
        resolver = dns.resolver.Resolver()
    else:
        resolver = dns.resolver.Resolver(configure=False)
        resolver.nameservers, resolver.port = [address[0]], address[1]
    resolver.lifetime = LOOKUP_SECONDS
    return resolver


def _txt_values(resolver: dns.resolver.Resolver, name: str) -> list[str] | str:
    """The TXT values at `name` (each record's strings joined), [] when there is none, or why the look-up failed."""
    try:
        answer = resolver.resolve(name, "TXT", search=False)
    except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
        return []
    except dns.exception.Timeout:
        return "no answer in time"
    except dns.exception.DNSException as error:
        return error.__class__.__name__
    return [b"".join(record.strings).decode("utf-8", "replace") for record in answer]


def _dkim_tags(value: str) -> dict[str, str]:
    tags = {}
    for part in value.split(";"):
        name, equals, tag_value = part.partition("=")
        if equals:
            tags[name.strip().lower()] = "".join(tag_value.split())
    return tags


def _look_up(row: SenderDomain) -> list[Finding]:
    """What is missing or wrong in DNS for `row` (nothing: proven)."""
    resolver = _resolver()
    ownership, dkim_record = records_to_publish(row)
    findings = []
    values = _txt_values(resolver, ownership.name)
    if isinstance(values, str):
        findings.append(Finding("ownership", ownership.name, "lookup_failed", values))
    elif ownership.value not in (value.strip() for value in values):
        findings.append(Finding("ownership", ownership.name, "wrong" if values else "missing"))
    values = _txt_values(resolver, dkim_record.name)
    if isinstance(values, str):
        findings.append(Finding("dkim", dkim_record.name, "lookup_failed", values))
    elif not values:
        findings.append(Finding("dkim", dkim_record.name, "missing"))
    else:
        keys = [_dkim_tags(value) for value in values]
        if not any(tags.get("p") == row.dkim_public_key and tags.get("k", "rsa").lower() == "rsa"
                   and tags.get("v", "DKIM1") == "DKIM1" for tags in keys):
            detail = "p= differs" if any(tags.get("p") for tags in keys) else "no p="
            findings.append(Finding("dkim", dkim_record.name, "wrong", detail))
    return findings


def _record_check(row: SenderDomain, findings: list[Finding]) -> bool:
    """Store what a check found and move the state; True when a proven domain was lost. A failed look-up decides
    nothing: the state stays as it was."""
    now = runtime.clock.now()
    row.last_checked_at = now
    row.last_problems = [asdict(finding) for finding in findings]
    if not findings:
        row.status, row.verified_at = SENDER_DOMAIN_VERIFIED, now
        return False
    if any(finding.issue == "lookup_failed" for finding in findings):
        return False
    if row.status == SENDER_DOMAIN_VERIFIED:
        row.status = SENDER_DOMAIN_LOST
        return True
    return False


def check_sender_domain(scope: InstitutionScope, domain: str) -> Check:
    """Look `domain`'s two records up now and store the outcome (a domain proven before and now missing a record
    is no longer used, and the institution's admins are told)."""
    row = sender_domain(scope, domain)
    findings = _look_up(row)
    if _record_check(row, findings):
        _tell_admins(scope, row, findings)
    db.session.commit()
    return Check(row, findings)


def recheck_sender_domains() -> dict[str, int]:
    """The daily re-check of every institution's domains (one commit each): counts of those proven, lost now and
    still unproven."""
    counts = {"verified": 0, "lost": 0, "unproven": 0}
    for domain_id in list(db.session.scalars(select(SenderDomain.id).order_by(SenderDomain.id))):
        row = db.session.get(SenderDomain, domain_id)
        if row is None:  # removed meanwhile
            continue
        findings = _look_up(row)
        lost = _record_check(row, findings)
        if lost:
            _tell_admins(InstitutionScope(row.institution_id), row, findings)
            log.warning("sending domain %s of %s lost its proof: %s", row.domain, row.institution_id,
                        "; ".join(finding.sentence() for finding in findings))
        db.session.commit()
        counts["lost" if lost else "verified" if not findings else "unproven"] += 1
    return counts


def _tell_admins(scope: InstitutionScope, row: SenderDomain, findings: list[Finding]) -> None:
    """Email each active admin of the institution that `row` is no longer used, in the session's transaction."""
    from core.messages.composition import queue_staff_email  # composition chooses senders with this module

    institution = scope.institution()
    settings_link = settings().PUBLIC_BASE_URL.rstrip("/") + "/settings#sending-domain-title"
    admins = db.session.scalars(scope.select(User).where(User.role == ROLE_ADMIN, User.active.is_(True)))
    for admin in admins:
        queue_staff_email(scope, admin.email, "sender_domain_lost", admin.language,
                          {"institution": institution.display_name or institution.name, "domain": row.domain,
                           "problems": findings, "link": settings_link})


# --- sending --------------------------------------------------------------------------------------------------

def _proven(scope: InstitutionScope, domain: str, config: Settings) -> SenderDomain | None:
    if not domain or not _operator_allows(domain, config):
        return None
    return db.session.scalars(scope.select(SenderDomain).where(
        SenderDomain.domain == domain, SenderDomain.status == SENDER_DOMAIN_VERIFIED)).one_or_none()


def may_send_from(scope: InstitutionScope, address: str, config: Settings) -> bool:
    """Whether mail may go From `address`: its exact domain is proven by this institution (and on the operator's
    list, when there is one)."""
    return address.isascii() and _proven(scope, domain_of(address), config) is not None


def sending_identity(scope: InstitutionScope, sender: str | None, config: Settings
                     ) -> tuple[str | None, DkimSigner | None]:
    """The From header and DKIM signer one email of the institution goes out with: `sender` signed with its
    domain's key while that domain is proven by this institution; else the platform's address under the same
    display name, and None (the platform's signer)."""
    if not sender:
        return sender, None
    name, address = parseaddr(sender)
    platform = address_of(config.MAIL_DEFAULT_SENDER)
    if address.lower() == platform.lower():
        return sender, None
    row = _proven(scope, domain_of(address), config) if address.isascii() else None
    if row is None:
        return mailbox(name, platform), None
    private_key = decrypted_or_none(_box(config), row.dkim_private_key_ciphertext.encode("ascii"))
    if private_key is None:
        log.error("the DKIM key of %s cannot be decrypted (was SECRET_KEY changed?): sending from the platform's "
                  "address", row.domain)
        return mailbox(name, platform), None
    return sender, DkimSigner(domain=row.domain, selector=row.dkim_selector, private_key=private_key)
