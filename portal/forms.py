"""Flask-WTF forms of the portal (CSRF included in every one)."""
from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import BooleanField, EmailField, PasswordField, SelectField, StringField
from wtforms.validators import DataRequired, Length, ValidationError

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


class SendDecisionForm(FlaskForm):
    confirm = BooleanField("I have checked the decision and want to send it to the applicant",
                           validators=[DataRequired("Tick the box to confirm.")])


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
