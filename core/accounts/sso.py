"""Staff sign-in with the university's account: each institution's OpenID Connect provider (configuration, the
email domain → institution lookup), the authorization request (code flow, PKCE S256, `state`, `nonce`) and every
check of the provider's answer before a staff account is signed in or, when allowed, created.

Why each check is there, and how `amr`/`acr` stand for the second factor: docs/design-notes.md, core/accounts.
"""
from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from urllib.parse import urlsplit

from flask_babel import gettext as _
from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError

from core.accounts.users import normalise_email
from core.config import settings
from core.db import db
from core.errors import Conflict, InvalidInput, NotFound
from core.institutions import institution_name
from core.models import User, utcnow
from core.models.identity import ROLE_ADMIN, ROLE_STAFF
from core.models.accounts import StaffSession
from core.models.sso import SsoConfiguration, SsoDomain, SsoSpentState
from core.models.two_factor import TwoFactorCredential
from core.scoping import InstitutionScope
from core.secret_key import decrypted_or_none, derived_fernet

logger = logging.getLogger("karibu.sso")
# HKDF label of the key that encrypts client secrets (sso_configurations.client_secret_ciphertext).
SECRET_LABEL = b"karibu sso client secrets v1"
CREATE_NONE, CREATE_STAFF = "none", "staff"
CREATE_USERS_CHOICES = (CREATE_NONE, CREATE_STAFF)
SCOPES = "openid email profile"
ID_TOKEN_ALGORITHMS = ["RS256", "ES256"]
CALLBACK_PATH = "/login/sso/callback"
# A sign-in started at the provider must come back within this time.
SIGN_IN_SECONDS = 600
# Clock skew allowed on `exp`, `iat` and `nbf`.
LEEWAY_SECONDS = 60
# Discovery documents and key sets are kept this long (a key set is fetched again at once for an unknown `kid`).
METADATA_SECONDS = 3600
PROVIDER_TIMEOUT_SECONDS = 10
MAX_DOMAINS = 20
_DOMAIN = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")


class SsoRefused(Exception):
    """A sign-in refused: `reason` is the audit's word, `message` the sentence shown to the person."""

    def __init__(self, reason: str, message: str, *, institution: str | None = None, email: str = "",
                 status: int = 403):
        super().__init__(message)
        self.reason, self.message, self.institution, self.email, self.status = (
            reason, message, institution, email, status)


@dataclass(frozen=True)
class SsoSettings:
    """An institution's provider as shown to admins and operators (never the client secret)."""
    institution_id: str
    issuer: str
    client_id: str
    domains: list[str]
    require: bool
    create_users: str

    def as_json(self) -> dict:
        return {"institution_id": self.institution_id, "issuer": self.issuer, "client_id": self.client_id,
                "domains": self.domains, "require": self.require, "create_users": self.create_users,
                "client_secret_set": True, "redirect_uri": redirect_uri()}


@dataclass(frozen=True)
class SignInStart:
    """Where to send the browser, and what it must bring back (kept in its signed session, never shown)."""
    authorization_url: str
    pending: dict


@dataclass(frozen=True)
class SsoSignIn:
    """A person the provider vouched for, matched to (or made into) a staff account."""
    user: User
    created: bool
    amr: list[str] = field(default_factory=list)
    acr: str = ""


def redirect_uri() -> str:
    """The callback address to register at the provider: PUBLIC_BASE_URL + /login/sso/callback."""
    return settings().PUBLIC_BASE_URL.rstrip("/") + CALLBACK_PATH


# --- configuration ----------------------------------------------------------------------------------------------

def _box():
    return derived_fernet(settings().SECRET_KEY, SECRET_LABEL)


def _encrypt(secret: str) -> str:
    return _box().encrypt(secret.encode("utf-8")).decode("ascii")


def _decrypt(ciphertext: str) -> str | None:
    """The client secret, or None when it was encrypted under another SECRET_KEY (it must be set again)."""
    secret = decrypted_or_none(_box(), ciphertext.encode("ascii"))
    return None if secret is None else secret.decode("utf-8")


def _configuration(scope: InstitutionScope) -> SsoConfiguration | None:
    return db.session.scalars(scope.select(SsoConfiguration)).one_or_none()


def _domains(scope: InstitutionScope) -> list[str]:
    return list(db.session.scalars(scope.select(SsoDomain, SsoDomain.domain).order_by(SsoDomain.domain)))


def configuration(scope: InstitutionScope) -> SsoSettings | None:
    """The institution's provider, or None when it has none."""
    found = _configuration(scope)
    if found is None:
        return None
    return SsoSettings(institution_id=found.institution_id, issuer=found.issuer, client_id=found.client_id,
                       domains=_domains(scope), require=found.require_sso, create_users=found.create_users)


def parse_domains(text: str) -> list[str]:
    """`a.ac.rw, b.ac.rw` → the distinct domains, lower case; InvalidInput (field `domains`) naming a bad one."""
    domains = []
    for part in re.split(r"[\s,]+", (text or "").strip().lower()):
        part = part.removeprefix("@").rstrip(".")
        if not part:
            continue
        if not _DOMAIN.match(part):
            raise InvalidInput(_("“%(domain)s” is not an email domain (such as ur.ac.rw).", domain=part[:100]),
                               field="domains")
        if part not in domains:
            domains.append(part)
    if not domains:
        raise InvalidInput(_("Give at least one email domain, such as ur.ac.rw."), field="domains")
    if len(domains) > MAX_DOMAINS:
        raise InvalidInput(_("At most %(count)d domains.", count=MAX_DOMAINS), field="domains")
    return domains


def _check_issuer(issuer: str) -> str:
    issuer = (issuer or "").strip()
    parts = urlsplit(issuer)
    if (parts.scheme != "https" or not parts.hostname or parts.query or parts.fragment or parts.username
            or len(issuer) > 500):
        raise InvalidInput(_("The issuer must be the provider's https:// address, such as "
                             "https://login.microsoftonline.com/<tenant id>/v2.0 or https://accounts.google.com."),
                           field="issuer")
    return issuer


def _check_client_id(client_id: str) -> str:
    client_id = (client_id or "").strip()
    if not client_id or len(client_id) > 255 or any(character.isspace() for character in client_id):
        raise InvalidInput(_("Give the client ID the provider gave Karibu (no spaces, at most 255 characters)."),
                           field="client_id")
    return client_id


def configure(scope: InstitutionScope, *, issuer: str, client_id: str, client_secret: str | None,
              domains: list[str] | str, require: bool, create_users: str,
              keep_session_id: str | None = None) -> tuple[SsoSettings, int]:
    """Set or replace the institution's provider; `client_secret` None keeps the stored one. Requiring the
    provider ends the live sessions of the accounts on its domains (but `keep_session_id`): they sign in again
    through it. Returns the settings and how many sessions were ended."""
    if scope.institution() is None:
        raise NotFound("Institution not found")
    issuer, client_id = _check_issuer(issuer), _check_client_id(client_id)
    domains = parse_domains(domains) if isinstance(domains, str) else parse_domains(",".join(domains))
    if create_users not in CREATE_USERS_CHOICES:
        raise InvalidInput(_("New accounts must be “none” or “staff”."), field="create_users")
    existing = _configuration(scope)
    secret = (client_secret or "").strip()
    if not secret and (existing is None or _decrypt(existing.client_secret_ciphertext) is None):
        raise InvalidInput(_("Give the client secret the provider gave Karibu."), field="client_secret")
    if len(secret) > 1000:
        raise InvalidInput(_("The client secret is too long (at most 1000 characters)."), field="client_secret")
    taken = set(db.session.scalars(select(SsoDomain.domain).where(SsoDomain.domain.in_(domains))))
    foreign = sorted(taken - set(_domains(scope)))
    if foreign:
        raise Conflict(_("Another institution signs in the addresses of %(domains)s: a domain leads to one "
                         "institution only.", domains=", ".join(foreign)), field="domains")
    if existing is None:
        existing = SsoConfiguration(institution_id=scope.institution_id)
        db.session.add(existing)
    existing.issuer, existing.client_id = issuer, client_id
    if secret:
        existing.client_secret_ciphertext = _encrypt(secret)
    existing.require_sso, existing.create_users, existing.updated_at = bool(require), create_users, utcnow()
    db.session.execute(delete(SsoDomain).where(scope.owns(SsoDomain)))
    db.session.add_all(SsoDomain(domain=domain, institution_id=scope.institution_id) for domain in domains)
    ended = _end_password_sessions(scope, domains, keep_session_id) if require else 0
    try:
        db.session.commit()
    except IntegrityError:  # another institution took a domain meanwhile
        db.session.rollback()
        raise Conflict(_("Another institution signs in the addresses of one of these domains."),
                       field="domains") from None
    _forget_provider(issuer)
    return configuration(scope), ended


def _end_password_sessions(scope: InstitutionScope, domains: list[str], keep_session_id: str | None) -> int:
    """End the live sessions of the institution's accounts on `domains` (in the caller's transaction)."""
    users_on_domains = [user.id for user in db.session.scalars(scope.select(User))
                        if email_domain(user.email) in domains]
    if not users_on_domains:
        return 0
    return db.session.execute(
        update(StaffSession)
        .where(StaffSession.user_id.in_(users_on_domains), StaffSession.ended_at.is_(None),
               StaffSession.id != (keep_session_id or ""))
        .values(ended_at=utcnow(), ended_reason="sso_required")
        .execution_options(synchronize_session=False)).rowcount


def remove(scope: InstitutionScope) -> bool:
    """Remove the institution's provider and its domains; whether there was one."""
    existing = _configuration(scope)
    db.session.execute(delete(SsoDomain).where(scope.owns(SsoDomain)))
    if existing is not None:
        db.session.delete(existing)
    db.session.commit()
    return existing is not None


def email_domain(email: str) -> str:
    return normalise_email(email).rpartition("@")[2]


def _configuration_for_domain(domain: str) -> SsoConfiguration | None:
    """The provider that signs in `domain`'s addresses (a lookup global by nature: the email names it)."""
    row = db.session.get(SsoDomain, domain) if domain else None
    return None if row is None else _configuration(InstitutionScope(row.institution_id))


def password_sign_in_refused(user: User) -> bool:
    """The user's institution requires its provider and the user's email is on one of its domains."""
    found = _configuration(InstitutionScope(user.institution_id))
    return (found is not None and found.require_sso
            and email_domain(user.email) in _domains(InstitutionScope(user.institution_id)))


def institution_requiring_sso(email: str) -> str | None:
    """The name of the institution that requires its provider for `email`'s domain, or None."""
    found = _configuration_for_domain(email_domain(email))
    if found is None or not found.require_sso:
        return None
    return institution_name(InstitutionScope(found.institution_id))


def is_break_glass(user: User) -> bool:
    """An admin of an institution that requires its provider, whose email is not on its domains: signs in with a
    password and two factors, for when the provider cannot be used."""
    found = _configuration(InstitutionScope(user.institution_id))
    return (user.is_admin and found is not None and found.require_sso
            and email_domain(user.email) not in _domains(InstitutionScope(user.institution_id)))


@dataclass(frozen=True)
class BreakGlassAdmin:
    email: str
    two_factor: bool


def break_glass_admins(scope: InstitutionScope) -> list[BreakGlassAdmin]:
    """The active admins whose email is not on the institution's domains, and whether two-factor is on."""
    domains = _domains(scope)
    enrolled = set(db.session.scalars(select(TwoFactorCredential.user_id)
                                      .where(TwoFactorCredential.confirmed_at.is_not(None))))
    admins = db.session.scalars(scope.select(User).where(User.role == ROLE_ADMIN, User.active.is_(True))
                                .order_by(User.email))
    return [BreakGlassAdmin(email=user.email, two_factor=user.id in enrolled)
            for user in admins if email_domain(user.email) not in domains]


# --- the provider: discovery and keys ---------------------------------------------------------------------------

class _ProviderCache:
    """Discovery documents by issuer and key sets by URL, each with the time it was fetched."""

    def __init__(self):
        self.lock = threading.Lock()
        self.metadata: dict[str, tuple[float, dict]] = {}
        self.keys: dict[str, tuple[float, dict]] = {}


_cache = _ProviderCache()


def _forget_provider(issuer: str) -> None:
    with _cache.lock:
        _cache.metadata.pop(issuer, None)


def _http_session(config: SsoConfiguration | None = None, secret: str | None = None):
    """Authlib's OAuth 2 client session (requests): the provider's TLS checked against SSO_CA_BUNDLE or the
    system store."""
    from authlib.integrations.requests_client import OAuth2Session

    client = OAuth2Session(
        client_id=config.client_id if config else None, client_secret=secret, scope=SCOPES,
        redirect_uri=redirect_uri(), code_challenge_method="S256",
        token_endpoint_auth_method="client_secret_basic")
    client.verify = settings().SSO_CA_BUNDLE or True
    client.trust_env = False
    return client


class _ProviderUnavailable(Exception):
    pass


def _get_json(url: str) -> dict:
    import requests

    if urlsplit(url).scheme != "https":
        raise _ProviderUnavailable(f"not an https address: {url[:200]}")
    with _http_session() as client:
        try:
            response = client.request("GET", url, withhold_token=True, timeout=PROVIDER_TIMEOUT_SECONDS,
                                      allow_redirects=False)
            response.raise_for_status()
            document = response.json()
        except (requests.RequestException, ValueError) as error:
            raise _ProviderUnavailable(str(error)[:300]) from None
    if not isinstance(document, dict):
        raise _ProviderUnavailable("not a JSON object")
    return document


def _metadata(issuer: str) -> dict:
    """The provider's discovery document (`/.well-known/openid-configuration`), whose `issuer` must be the
    configured one."""
    now = time.monotonic()
    with _cache.lock:
        kept = _cache.metadata.get(issuer)
    if kept is not None and now - kept[0] < METADATA_SECONDS:
        return kept[1]
    document = _get_json(issuer.rstrip("/") + "/.well-known/openid-configuration")
    if document.get("issuer") != issuer:
        raise _ProviderUnavailable(f"its discovery document names another issuer: {str(document.get('issuer'))[:200]}")
    for name in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        if not isinstance(document.get(name), str) or urlsplit(document[name]).scheme != "https":
            raise _ProviderUnavailable(f"its discovery document has no https {name}")
    with _cache.lock:
        _cache.metadata[issuer] = (now, document)
    return document


def _key_set(jwks_uri: str, refresh: bool = False):
    from joserfc.jwk import KeySet

    now = time.monotonic()
    with _cache.lock:
        kept = _cache.keys.get(jwks_uri)
    if refresh or kept is None or now - kept[0] >= METADATA_SECONDS:
        document = _get_json(jwks_uri)
        with _cache.lock:
            _cache.keys[jwks_uri] = kept = (now, document)
    try:
        return KeySet.import_key_set(kept[1])
    except Exception as error:  # noqa: BLE001 - a malformed key set is the provider's fault, whatever it is
        raise _ProviderUnavailable(f"its key set cannot be read: {str(error)[:200]}") from None


# --- sign-in: the request ---------------------------------------------------------------------------------------

def _unavailable(config: SsoConfiguration, email: str, error: Exception) -> SsoRefused:
    logger.warning("The OpenID Connect provider %s of institution %s cannot be used: %s", config.issuer,
                   config.institution_id, error)
    return SsoRefused("provider_unavailable", _(
        "Your university's sign-in service did not answer properly. Try again in a few minutes; if it goes on, "
        "tell your IT office."), institution=config.institution_id, email=email, status=503)


def start_sign_in(email: str, next_url: str | None = None) -> SignInStart:
    """The provider's authorization URL for `email`'s domain (PKCE S256, state, nonce, login_hint), and the
    pending sign-in the browser keeps until it comes back."""
    email = normalise_email(email)
    domain = email_domain(email)
    if "@" not in email or not _DOMAIN.match(domain):
        raise SsoRefused("invalid_email", _("Type your university email address, such as name@ur.ac.rw."),
                         email="", status=422)
    config = _configuration_for_domain(domain)
    if config is None:
        raise SsoRefused("unknown_domain", _(
            "No university sign-in is set up for %(domain)s. Sign in with your email and password.",
            domain=domain), email=email, status=404)
    try:
        metadata = _metadata(config.issuer)
    except _ProviderUnavailable as error:
        raise _unavailable(config, email, error) from None
    from authlib.common.security import generate_token

    state, nonce, verifier = secrets.token_urlsafe(32), secrets.token_urlsafe(32), generate_token(64)
    with _http_session(config) as client:
        url, _state = client.create_authorization_url(
            metadata["authorization_endpoint"], state=state, code_verifier=verifier, nonce=nonce, login_hint=email)
    pending = {"state": state, "nonce": nonce, "verifier": verifier, "institution": config.institution_id,
               "issuer": config.issuer, "email": email, "started": int(time.time()), "next": next_url}
    return SignInStart(authorization_url=url, pending=pending)


# --- sign-in: the answer ----------------------------------------------------------------------------------------

def _spend_state(state: str) -> bool:
    """Record `state` as used; False when it was used already (a replayed answer). Old marks are dropped."""
    db.session.execute(delete(SsoSpentState).where(
        SsoSpentState.spent_at < utcnow() - timedelta(seconds=2 * SIGN_IN_SECONDS)))
    db.session.add(SsoSpentState(state_hash=hashlib.sha256(state.encode()).hexdigest()))
    try:
        db.session.commit()
    except IntegrityError:
        db.session.rollback()
        return False
    return True


def finish_sign_in(pending: object, *, state: str | None, code: str | None, error: str | None = None,
                   error_description: str | None = None) -> SsoSignIn:
    """Check the provider's answer to the browser's pending sign-in and return the account it signs in.

    Refused (SsoRefused, nothing signed in) for: no or expired pending sign-in, another `state`, an answer used
    before, the provider's own error, a code the token endpoint refuses, an ID token not signed by the provider's
    keys (RS256/ES256), of another issuer or audience, expired, with another nonce, an unverified email or one off
    the institution's domains, and an account that is missing (unless staff are created) or switched off.
    """
    answer = _("The answer from your university's sign-in could not be used. Start again from the sign-in page.")
    if not isinstance(pending, dict) or not isinstance(pending.get("state"), str):
        raise SsoRefused("no_pending_sign_in", answer, status=400)
    institution, email = pending.get("institution"), str(pending.get("email") or "")
    if not isinstance(state, str) or not hmac.compare_digest(state.encode(), pending["state"].encode()):
        raise SsoRefused("state", answer, institution=institution, email=email, status=400)
    if time.time() - int(pending.get("started") or 0) > SIGN_IN_SECONDS:
        raise SsoRefused("expired_sign_in", _("The sign-in took too long. Start again."), institution=institution,
                         email=email, status=400)
    if not _spend_state(state):
        raise SsoRefused("replayed", answer, institution=institution, email=email, status=400)
    if error:
        raise SsoRefused("provider_error", _("Your university's sign-in did not sign you in (%(error)s).",
                                             error=(error_description or error)[:200]),
                         institution=institution, email=email, status=401)
    if not code:
        raise SsoRefused("no_code", answer, institution=institution, email=email, status=400)
    scope = InstitutionScope(str(institution))
    config = _configuration(scope)
    if config is None or config.issuer != pending.get("issuer"):
        raise SsoRefused("not_configured", _("Your university's sign-in was changed meanwhile. Start again."),
                         institution=institution, email=email, status=409)
    secret = _decrypt(config.client_secret_ciphertext)
    if secret is None:
        raise SsoRefused("client_secret_unreadable", _(
            "University sign-in is not working for %(institution)s: an admin must enter the client secret again.",
            institution=institution_name(scope)), institution=institution, email=email, status=503)
    try:
        metadata = _metadata(config.issuer)
        token = _exchange_code(config, secret, metadata, code, str(pending.get("verifier") or ""))
        claims = _checked_id_token(config, metadata, token, str(pending.get("nonce") or ""))
    except _ProviderUnavailable as failure:
        raise _unavailable(config, email, failure) from None
    except SsoRefused as refusal:
        refusal.institution, refusal.email = institution, email
        raise
    return _account_for(scope, config, claims)


def _exchange_code(config: SsoConfiguration, secret: str, metadata: dict, code: str, verifier: str) -> dict:
    import requests
    from authlib.integrations.base_client.errors import OAuthError

    with _http_session(config, secret) as client:
        try:
            token = client.fetch_token(metadata["token_endpoint"], grant_type="authorization_code", code=code,
                                       code_verifier=verifier, timeout=PROVIDER_TIMEOUT_SECONDS,
                                       allow_redirects=False)
        except OAuthError as refusal:
            raise SsoRefused("token_exchange", _(
                "Your university's sign-in refused this answer (%(error)s). Start again from the sign-in page.",
                error=str(refusal.error)[:100]), status=401) from None
        except requests.RequestException as failure:
            raise _ProviderUnavailable(str(failure)[:300]) from None
        except ValueError:
            raise _ProviderUnavailable("the token endpoint answered something other than JSON") from None
    if not isinstance(token, dict) or not isinstance(token.get("id_token"), str):
        raise SsoRefused("no_id_token", _("Your university's sign-in sent no identity. Tell your IT office."),
                         status=401)
    return dict(token)


_CLAIM_REASONS = {"iss": "issuer", "aud": "audience", "azp": "audience", "exp": "expired", "nonce": "nonce"}


def _checked_id_token(config: SsoConfiguration, metadata: dict, token: dict, nonce: str) -> dict:
    """The ID token's claims once its signature (the provider's key set, fetched again once for an unknown
    `kid`), issuer, audience, expiry and nonce are checked."""
    from joserfc import jwt
    from joserfc.errors import (
        BadSignatureError, ClaimError, ExpiredTokenError, InvalidKeyIdError, JoseError, MissingClaimError,
        UnsupportedAlgorithmError,
    )
    from joserfc.jws import JWSRegistry
    from authlib.oidc.core import CodeIDToken

    registry = JWSRegistry(algorithms=ID_TOKEN_ALGORITHMS)
    answer = _("Your university's sign-in sent an identity Karibu cannot accept (%(reason)s). Tell your IT office.")
    try:
        try:
            decoded = jwt.decode(token["id_token"], _key_set(metadata["jwks_uri"]), registry=registry)
        except InvalidKeyIdError:  # the provider rotated its keys since they were fetched
            decoded = jwt.decode(token["id_token"], _key_set(metadata["jwks_uri"], refresh=True), registry=registry)
    except InvalidKeyIdError:
        raise SsoRefused("unknown_key", answer % {"reason": "unknown key"}, status=401) from None
    except UnsupportedAlgorithmError:
        raise SsoRefused("algorithm", answer % {"reason": "algorithm"}, status=401) from None
    except BadSignatureError:
        raise SsoRefused("signature", answer % {"reason": "signature"}, status=401) from None
    except (JoseError, ValueError, TypeError):
        raise SsoRefused("signature", answer % {"reason": "malformed"}, status=401) from None
    # The audience explicitly: Authlib's own checks would pass another audience with `azp` naming Karibu. The
    # nonce is checked by CodeIDToken against the one sent (`params`), and must be there.
    options = {"iss": {"essential": True, "value": config.issuer},
               "aud": {"essential": True, "value": config.client_id},
               "exp": {"essential": True}, "iat": {"essential": True}}
    claims = CodeIDToken(decoded.claims, decoded.header, options,
                         {"nonce": nonce, "client_id": config.client_id, "access_token": token.get("access_token")})
    try:
        claims.validate(leeway=LEEWAY_SECONDS)
    except ExpiredTokenError:
        raise SsoRefused("expired", answer % {"reason": "expired"}, status=401) from None
    except (MissingClaimError, ClaimError) as failure:
        reason = next((word for name, word in _CLAIM_REASONS.items() if name in failure.claim.split(",")),
                      "claims")
        raise SsoRefused(reason, answer % {"reason": reason}, status=401) from None
    return dict(claims)


def _email_verified(claims: dict) -> bool:
    """`email_verified` true; where it is absent, Entra ID's `xms_edov` (the email's domain verified by its
    owner) true (docs/portal.md, "University sign-in")."""
    verified = claims.get("email_verified", claims.get("xms_edov"))
    return verified is True or verified == "true"


def _account_for(scope: InstitutionScope, config: SsoConfiguration, claims: dict) -> SsoSignIn:
    email = normalise_email(str(claims.get("email") or ""))
    name = institution_name(scope)
    institution = scope.institution()
    if institution is None or not institution.is_active:
        raise SsoRefused("institution_inactive", _("%(institution)s no longer uses Karibu.", institution=name),
                         institution=scope.institution_id, status=403)
    amr = [str(value) for value in claims.get("amr") or [] if isinstance(value, str)][:10]
    acr = str(claims.get("acr") or "")[:100]
    if not email or "@" not in email:
        raise SsoRefused("no_email", _("Your university's sign-in did not say your email address. Tell your IT "
                                       "office that Karibu needs the “email” claim."),
                         institution=scope.institution_id, status=403)
    if not _email_verified(claims):
        raise SsoRefused("email_unverified", _(
            "Your university's sign-in does not vouch for the address %(email)s (it is not verified), so Karibu "
            "cannot sign you in with it.", email=email), institution=scope.institution_id, email=email)
    if email_domain(email) not in _domains(scope):
        raise SsoRefused("domain", _(
            "%(email)s is not an address of %(institution)s, so its sign-in cannot open an account there.",
            email=email, institution=name), institution=scope.institution_id, email=email)
    user = db.session.scalars(scope.select(User).where(User.email == email)).one_or_none()
    if user is not None and not user.active:
        raise SsoRefused("account_deactivated", _(
            "Your account at %(institution)s is switched off. Ask an admin of %(institution)s to switch it on.",
            institution=name), institution=scope.institution_id, email=email)
    if user is None and config.create_users != CREATE_STAFF:
        raise SsoRefused("no_account", _(
            "You have no account at %(institution)s yet. Ask an admin of %(institution)s to invite you: %(admins)s.",
            institution=name, admins=_admin_names(scope)), institution=scope.institution_id, email=email)
    created = user is None
    if created:
        user = User(institution_id=scope.institution_id, email=email, password_hash="", role=ROLE_STAFF,
                    name=str(claims.get("name") or "")[:200])
        db.session.add(user)
        try:
            db.session.commit()
        except IntegrityError:  # the same person's other browser made it a moment ago
            db.session.rollback()
            user = db.session.scalars(scope.select(User).where(User.email == email)).one()
            created = False
    return SsoSignIn(user=user, created=created, amr=amr, acr=acr)


def _admin_names(scope: InstitutionScope) -> str:
    """Up to three of the institution's active admins, by email."""
    emails = list(db.session.scalars(scope.select(User, User.email).where(
        User.role == ROLE_ADMIN, User.active.is_(True)).order_by(User.email).limit(3)))
    return ", ".join(emails) if emails else _("your IT office")

