"""Flask-WTF forms of the portal (CSRF included in every one)."""
from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import BooleanField, EmailField, PasswordField, SelectField, StringField
from wtforms.validators import DataRequired, Length

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


class ResendMessageForm(FlaskForm):
    """Resend one failed message (the form carries only its CSRF token)."""


class DefaultLanguageForm(FlaskForm):
    language = SelectField("Language for applicants who did not choose one", choices=[
        ("en", "English"), ("fr", "Français (French)"), ("sw", "Kiswahili (Swahili)")])


class RecordAnswerForm(FlaskForm):
    response = SelectField("Applicant's answer", choices=[("accepted", "Accepted the decision"),
                                                         ("declined", "Declined the decision")],
                           validators=[DataRequired("Choose the applicant's answer.")])
