"""Two-factor pages: the sign-in code step, enrolment (forced when required), recovery codes, turning it off,
and the institution's rule for admins; wrong codes throttled."""
from __future__ import annotations

from flask import flash, g, redirect, request, session, url_for
from flask_babel import gettext
from flask_login import current_user

from core.accounts import sso, two_factor
from core.config import settings
from core.scoping import InstitutionScope
from portal import bp
from portal.accounts.sign_in import complete_sign_in, renew_session_record
from portal.accounts.sso import signed_in_with_provider
from portal.accounts.forms import AdminTwoFactorForm, TwoFactorCodeForm, TwoFactorDisableForm
from portal.forms import ActionForm, submitted
from portal.limiter import limiter
from portal.accounts.pending_sign_in import PENDING_KEY, end_pending_sign_in, pending_sign_in
from portal.rendering import render_page
from portal.security import SESSION_RECORD_KEY, admin_required, audit, staff_required

# What an admin who must enrol may still open before enrolling.
_OPEN_WHILE_ENROLMENT_IS_DUE = {"portal.two_factor_enrol", "portal.logout", "portal.two_factor_page",
                                "portal.account"}


def _account_key() -> str:
    if current_user.is_authenticated:
        return "two-factor-account:" + current_user.id
    state = session.get(PENDING_KEY)
    return "two-factor-account:" + str(state.get("user_id") if isinstance(state, dict) else "none")


def _address_key() -> str:
    return "two-factor-addr:" + (request.remote_addr or "unknown")


def _wrong_code_given(_response) -> bool:
    return bool(g.get("wrong_second_factor"))


def _throttled(_limit):
    user = current_user if current_user.is_authenticated else getattr(pending_sign_in(), "user", None)
    audit("two_factor.throttled", getattr(user, "id", ""), status=429, user=user)
    message = gettext("Too many wrong codes. Wait a few minutes, then try again.")
    headers = {"Retry-After": "60"}
    if request.endpoint == "portal.two_factor_disable":
        return render_page("account/two_factor.html", disable_form=TwoFactorDisableForm(formdata=None),
                           disable_error=message, status=429, headers=headers)
    form = TwoFactorCodeForm(formdata=None)
    form.form_errors.append(message)
    return render_page("auth/two_factor.html", form=form, status=429, headers=headers)


def _throttle(view):
    """Wrong codes per account and per address, counted together for every view that checks one."""
    options = dict(methods=["POST"], deduct_when=_wrong_code_given, on_breach=_throttled)
    view = limiter.shared_limit(lambda: settings().PORTAL_TWO_FACTOR_ADDRESS_RATE_LIMIT,
                                scope="two-factor-address", key_func=_address_key, **options)(view)
    return limiter.shared_limit(lambda: settings().PORTAL_TWO_FACTOR_RATE_LIMIT,
                                scope="two-factor-account", key_func=_account_key, **options)(view)


@bp.before_request
def _enrolment_first():
    """An admin whose institution requires two-factor sign-in, signed in before it did, enrols before anything
    else (checked on each request: one primary-key read, and a second only for such admins). A session opened by
    the university's provider is exempt: the provider answers for the second factor."""
    if (not current_user.is_authenticated or request.endpoint in _OPEN_WHILE_ENROLMENT_IS_DUE
            or signed_in_with_provider()):
        return None
    if not two_factor.must_enrol(current_user):
        return None
    target = url_for("portal.two_factor_enrol")
    if request.headers.get("HX-Request") == "true":
        return "", 403, {"HX-Redirect": target}
    return redirect(target)


@bp.app_template_global("two_factor_status")
def _status_of_current_user():
    """For `account/partial/two_factor.html`, which other pages include without passing anything."""
    return two_factor.status(current_user)


@bp.app_template_global("institution_requires_admin_two_factor")
def _institution_rule():
    return two_factor.admins_must_use_two_factor(InstitutionScope(current_user.institution_id))


def qr_code_data_uri(text: str) -> str:
    """The QR code of `text` as an SVG data URI for an <img> (made here: no external service sees the secret)."""
    import segno  # only while someone enrols

    return segno.make(text, error="m").svg_data_uri(scale=5, border=4, light="#ffffff")


def _enrolment_page(user, form: TwoFactorCodeForm, action: str, status: int = 200):
    enrolment = two_factor.start_enrolment(user)
    secret_groups = " ".join(enrolment.secret[index:index + 4] for index in range(0, len(enrolment.secret), 4))
    return render_page("account/two_factor_enrol.html", form=form, action=action, status=status,
                       secret=secret_groups, qr_code=qr_code_data_uri(enrolment.provisioning_uri),
                       at_sign_in=not current_user.is_authenticated)


def _recovery_codes_page(codes: list[str], continue_url: str, status: int = 200):
    return render_page("account/recovery_codes.html", codes=codes, continue_url=continue_url, status=status)


# --- sign-in ----------------------------------------------------------------------------------------------------

@bp.route("/login/two-factor", methods=["GET", "POST"])
@_throttle
def two_factor_sign_in():
    if current_user.is_authenticated:
        return redirect(url_for("portal.dashboard"))
    pending = pending_sign_in()
    if pending is None:
        end_pending_sign_in()
        flash(gettext("Your sign-in expired. Sign in again."), "info")
        return redirect(url_for("portal.login"))
    if pending.enrol:
        return redirect(url_for("portal.two_factor_enrol_at_sign_in"))
    form = TwoFactorCodeForm()
    if not form.validate_on_submit():
        return render_page("auth/two_factor.html", form=form, status=422 if request.method == "POST" else 200)
    factor = two_factor.verify(pending.user, form.code.data)
    if factor is None:
        g.wrong_second_factor = True
        audit("two_factor.failed", pending.user.id, user=pending.user)
        form.form_errors.append(gettext("That code is not valid (or was used already). Type the newest code from "
                                        "your app, or one of your recovery codes."))
        return render_page("auth/two_factor.html", form=form, status=401)
    end_pending_sign_in()
    complete_sign_in(pending.user)
    # The sign-in's audit row names the factor that completed it.
    audit("two_factor.used", f"{pending.user.id} ({factor})", user=pending.user)
    if factor == two_factor.RECOVERY:
        left = two_factor.status(pending.user).recovery_codes_left
        flash(gettext("You signed in with a recovery code; %(left)d left. Make new ones on your account page if "
                      "you are running out.", left=left), "warn")
    return redirect(pending.next_url or url_for("portal.dashboard"))


@bp.route("/login/two-factor/enrol", methods=["GET", "POST"])
def two_factor_enrol_at_sign_in():
    """Forced enrolment: the institution requires two-factor sign-in of this admin, who has none yet."""
    if current_user.is_authenticated:
        return redirect(url_for("portal.dashboard"))
    pending = pending_sign_in()
    if pending is None or not pending.enrol:
        end_pending_sign_in()
        flash(gettext("Your sign-in expired. Sign in again."), "info")
        return redirect(url_for("portal.login"))
    form = TwoFactorCodeForm()
    action = url_for("portal.two_factor_enrol_at_sign_in")
    if not form.validate_on_submit():
        return _enrolment_page(pending.user, form, action, status=422 if request.method == "POST" else 200)
    codes = two_factor.confirm_enrolment(pending.user, form.code.data)
    if codes is None:
        form.code.errors.append(gettext("That code does not match. Check the time on your phone and type the "
                                        "newest code."))
        return _enrolment_page(pending.user, form, action, status=422)
    end_pending_sign_in()
    complete_sign_in(pending.user)
    audit("two_factor.enrolled", pending.user.id, user=pending.user)
    return _recovery_codes_page(codes, pending.next_url or url_for("portal.dashboard"), status=201)


# --- the signed-in user's own set-up ----------------------------------------------------------------------------

@bp.get("/account/two-factor")
@staff_required
def two_factor_page():
    return render_page("account/two_factor.html", disable_form=TwoFactorDisableForm(formdata=None))


@bp.route("/account/two-factor/enrol", methods=["GET", "POST"])
@staff_required
def two_factor_enrol():
    if two_factor.is_enrolled(current_user):
        flash(gettext("Two-factor sign-in is already on."), "info")
        return redirect(url_for("portal.account"))
    form = TwoFactorCodeForm()
    action = url_for("portal.two_factor_enrol")
    if not form.validate_on_submit():
        return _enrolment_page(current_user, form, action, status=422 if request.method == "POST" else 200)
    codes = two_factor.confirm_enrolment(current_user, form.code.data)
    if codes is None:
        form.code.errors.append(gettext("That code does not match. Check the time on your phone and type the "
                                        "newest code."))
        return _enrolment_page(current_user, form, action, status=422)
    renew_session_record(current_user)  # enrolling ended every session of the user, this browser's too
    audit("two_factor.enrolled", current_user.id)
    return _recovery_codes_page(codes, url_for("portal.account"), status=201)


@bp.post("/account/two-factor/recovery-codes")
@staff_required
def two_factor_recovery_codes():
    submitted(ActionForm())
    codes = two_factor.regenerate_recovery_codes(current_user)
    audit("two_factor.recovery_codes_regenerated", current_user.id)
    return _recovery_codes_page(codes, url_for("portal.account"))


@bp.post("/account/two-factor/disable")
@staff_required
@_throttle
def two_factor_disable():
    form = TwoFactorDisableForm()
    if not form.validate_on_submit():
        return render_page("account/two_factor.html", disable_form=form, status=422)
    if sso.is_break_glass(current_user):
        return render_page("account/two_factor.html", disable_form=form, status=409, disable_error=gettext(
            "Your institution signs its staff in with their university account, and yours is a break-glass admin "
            "account: it keeps two-factor sign-in."))
    if not two_factor.disable(current_user, form.proof.data):
        g.wrong_second_factor = True
        audit("two_factor.failed", current_user.id)
        return render_page("account/two_factor.html", disable_form=form, status=422,
                           disable_error=gettext("That is neither your password nor a valid code."))
    audit("two_factor.disabled", current_user.id)
    flash(gettext("Two-factor sign-in is off."), "ok")
    return redirect(url_for("portal.account"))


# --- the institution's rule --------------------------------------------------------------------------------------

@bp.post("/users/two-factor-rule")
@admin_required
def two_factor_rule():
    required = submitted(AdminTwoFactorForm()).required.data
    two_factor.set_admin_requirement(g.scope, required, keep_session_id=session.get(SESSION_RECORD_KEY))
    audit("institution.admin_two_factor", "required" if required else "optional")
    flash(gettext("Admins must now sign in with two-factor.") if required
          else gettext("Two-factor sign-in is now optional for admins."), "ok")
    return redirect(url_for("portal.users"))
