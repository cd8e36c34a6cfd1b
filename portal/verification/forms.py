"""The verification form: the issuer, the applicant and the billing confirmation, plus the issuer's own fields."""
from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import BooleanField, StringField

from portal.forms import strip


class VerificationForm(FlaskForm):
    """The issuer's own fields are added per issuer by `verification_form`."""
    issuer = StringField(filters=[strip])
    application = StringField(filters=[strip])
    confirm_billing = BooleanField(false_values=("", "false", "no"))


def verification_form(issuer: dict) -> VerificationForm:
    """A VerificationForm with a text field for each of the issuer's request fields."""
    fields = {field["name"]: StringField(filters=[strip]) for field in issuer["fields"]}
    return type(f"{issuer['code'].title()}VerificationForm", (VerificationForm,), fields)()
