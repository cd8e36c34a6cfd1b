"""Flask-WTF forms of the portal: every POST reads its fields through one of them, so every POST checks its
CSRF token twice (CSRFProtect for the whole app, then the form), and exempting a view loses nothing.
"""
from __future__ import annotations

from flask_babel import lazy_gettext
from flask_wtf import FlaskForm
from wtforms import BooleanField, EmailField, PasswordField, SelectField, SelectMultipleField, StringField
from wtforms.validators import DataRequired, Length, ValidationError

from core.errors import InvalidInput


def _strip(value):
    return value.strip() if isinstance(value, str) else value


def submitted(form: FlaskForm) -> FlaskForm:
    """`form`, validated; otherwise InvalidInput (400) with the first problem (a CSRF token is checked here
    again, for a view that someone exempted from CSRFProtect)."""
    if not form.validate_on_submit():
        name, messages = next(iter(form.errors.items()))
        raise InvalidInput(f"{name}: {messages[0]}", field=name)
    return form


class ActionForm(FlaskForm):
    """A button that changes something and sends no fields besides its CSRF token (revoke, rotate, …)."""


ROLE_CHOICES = [("staff", "Staff: applicants, cycles, verification"),
                ("admin", "Admin: also API keys, webhooks and users")]


class LoginForm(FlaskForm):
    email = EmailField("Email", validators=[DataRequired("Enter your email."), Length(max=254)])
    password = PasswordField("Password", validators=[DataRequired("Enter your password."), Length(max=200)])


class ApiKeyForm(FlaskForm):
    name = StringField("Key name", validators=[DataRequired("Give the key a name."), Length(max=100)])


class NewUserForm(FlaskForm):
    email = EmailField("Email", validators=[DataRequired("Enter an email."),
                                            Length(max=254)])
    role = SelectField("Role", choices=ROLE_CHOICES, default="staff")


class BulkUpdateForm(FlaskForm):
    """The applicants table's bulk change; the view checks the combination, as the API's PATCH does."""
    ids = SelectMultipleField(validate_choice=False)
    stage = StringField(filters=[_strip])
    decision = StringField(filters=[_strip])
    send_decision = BooleanField()


class BulkMatchingForm(FlaskForm):
    """The bulk change applied to every application matching the list: `matching` is the list's query string."""
    matching = StringField()
    stage = StringField(filters=[_strip])
    decision = StringField(filters=[_strip])
    send_decision = BooleanField()


class SavedViewForm(FlaskForm):
    """Save the list as it is (`query`: its query string) under a name of the user's."""
    name = StringField(lazy_gettext("Name of this view"), filters=[_strip], validators=[
        DataRequired(lazy_gettext("Give the view a name.")), Length(max=100)])
    query = StringField()


class RoleForm(FlaskForm):
    role = StringField(filters=[_strip])  # checked by core.users.set_role


class ActiveForm(FlaskForm):
    active = StringField(filters=[_strip])


class WebhookForm(FlaskForm):
    url = StringField(filters=[_strip])
    events = SelectMultipleField(validate_choice=False)  # checked by core.webhooks.endpoints.save_endpoint
    include_name = BooleanField()


class RecoverForm(FlaskForm):
    since = StringField(filters=[_strip])


class VerificationForm(FlaskForm):
    """The issuer's own fields are added per issuer by `verification_form`."""
    issuer = StringField(filters=[_strip])
    application = StringField(filters=[_strip])
    confirm_billing = BooleanField(false_values=("", "false", "no"))


def verification_form(issuer: dict) -> VerificationForm:
    """A VerificationForm with a text field for each of the issuer's request fields."""
    fields = {field["name"]: StringField(filters=[_strip]) for field in issuer["fields"]}
    return type(f"{issuer['code'].title()}VerificationForm", (VerificationForm,), fields)()


class ResendMessageForm(FlaskForm):
    """Resend one failed message; `source` says which page to answer (`file`: the applicant file's timeline)."""
    source = StringField(filters=[_strip])


class DefaultLanguageForm(FlaskForm):
    language = SelectField("Language for applicants who did not choose one", choices=[
        ("en", "English"), ("fr", "Français (French)"), ("sw", "Kiswahili (Swahili)")])


class RecordAnswerForm(FlaskForm):
    response = SelectField("Applicant's answer", choices=[("accepted", "Accepted the decision"),
                                                         ("declined", "Declined the decision")],
                           validators=[DataRequired("Choose the applicant's answer.")])


class DataExportForm(FlaskForm):
    reason = StringField("Why is this export asked for?", validators=[
        DataRequired("Say why (e.g. the applicant's request and its reference)."), Length(max=500)])


class DataErasureForm(FlaskForm):
    reason = StringField("Why is this erasure asked for?", validators=[
        DataRequired("Say why (e.g. the applicant's request and its reference)."), Length(max=500)])
    confirm = StringField("Type ERASE to confirm", validators=[DataRequired("Type ERASE to confirm.")])
    force = BooleanField("Erase even though a sent decision awaits the applicant's answer")

    def validate_confirm(self, field):
        if (field.data or "").strip() != "ERASE":
            raise ValidationError("Type ERASE (in capitals) to confirm.")
