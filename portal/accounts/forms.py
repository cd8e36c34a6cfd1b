"""The forms of sign-in, passwords, two-factor and staff accounts."""
from __future__ import annotations

from flask_babel import lazy_gettext as _l
from flask_wtf import FlaskForm
from wtforms import BooleanField, EmailField, PasswordField, SelectField, StringField
from wtforms.validators import DataRequired, EqualTo, Length

from portal.forms import strip


ROLE_CHOICES = [("staff", _l("Staff: applicants, cycles, verification")),
                ("admin", _l("Admin: also API keys, webhooks and users"))]


class LoginForm(FlaskForm):
    email = EmailField(_l("Email"), validators=[DataRequired(_l("Enter your email.")), Length(max=254)])
    password = PasswordField(_l("Password"), validators=[DataRequired(_l("Enter your password.")), Length(max=200)])


class NewUserForm(FlaskForm):
    """An admin's invitation of a colleague (an email with a link to choose their own password)."""
    email = EmailField(_l("Email"), validators=[DataRequired(_l("Enter an email.")), Length(max=254)])
    role = SelectField(_l("Role"), choices=ROLE_CHOICES, default="staff")


class ForgotPasswordForm(FlaskForm):
    email = EmailField(_l("Email"), validators=[DataRequired(_l("Enter your email.")), Length(max=254)])


class ChooseAccountForm(FlaskForm):
    """Second sign-in step when one email and password open accounts at several institutions."""
    account = SelectField(_l("Institution"), choices=[], validate_choice=True)


_PASSWORD_HINT = _l("At least 12 characters; not a common password; not your email's name part.")


class SetPasswordForm(FlaskForm):
    """Choose a password: from an invitation or a reset link (the rules are core.accounts.passwords')."""
    password = PasswordField(_l("New password"), description=_PASSWORD_HINT,
                             validators=[DataRequired(_l("Enter a password.")), Length(max=200)])
    confirm = PasswordField(_l("New password again"), validators=[
        DataRequired(_l("Enter the password again.")), EqualTo("password", _l("The two passwords differ."))])


class ChangePasswordForm(SetPasswordForm):
    current_password = PasswordField(_l("Current password"), validators=[
        DataRequired(_l("Enter your current password.")), Length(max=200)])


class RoleForm(FlaskForm):
    role = StringField(filters=[strip])  # checked by core.accounts.users.set_role


class ActiveForm(FlaskForm):
    active = StringField(filters=[strip])


class TwoFactorCodeForm(FlaskForm):
    code = StringField(_l("Code"), filters=[strip], validators=[
        DataRequired(_l("Type the code.")), Length(max=40)])


class TwoFactorDisableForm(FlaskForm):
    proof = PasswordField(_l("Your password, or a code from your app or a recovery code"), validators=[
        DataRequired(_l("Type your password or a code.")), Length(max=200)])


class AdminTwoFactorForm(FlaskForm):
    required = BooleanField(_l("Require two-factor sign-in for admins"))


class SsoSettingsForm(FlaskForm):
    """An admin's university sign-in (OpenID Connect) settings; checked by core.accounts.sso.configure."""
    issuer = StringField(_l("Issuer"), filters=[strip], validators=[
        DataRequired(_l("Enter the provider's issuer address.")), Length(max=500)])
    client_id = StringField(_l("Client ID"), filters=[strip], validators=[
        DataRequired(_l("Enter the client ID.")), Length(max=255)])
    client_secret = PasswordField(_l("Client secret"), validators=[Length(max=1000)])
    domains = StringField(_l("Email domains"), filters=[strip], validators=[
        DataRequired(_l("Enter at least one email domain.")), Length(max=2000)])
    require = BooleanField(_l("Require the university account: refuse password sign-in on these domains"))
    create_users = SelectField(_l("People without an account"), choices=[
        ("none", _l("Refused: an admin invites them first")),
        ("staff", _l("Let in as staff on their first sign-in (never as admin)"))], default="none")
