"""The settings forms: time zone, portal language, identity, logo, sending domain and API key."""
from __future__ import annotations

from flask_babel import lazy_gettext as _l
from flask_wtf import FlaskForm
from flask_wtf.file import FileField
from wtforms import SelectField, StringField
from wtforms.validators import DataRequired, Length

from core.i18n import STAFF_LANGUAGES
from portal.forms import strip


class ApiKeyForm(FlaskForm):
    name = StringField(_l("Key name"),
                       validators=[DataRequired(_l("Give the key a name.")), Length(max=100)])
    mode = SelectField(_l("Mode"), default="live", choices=[
        ("live", _l("Live (sk_live_…): your institution's real applicants")),
        ("test", _l("Test (sk_test_…): the sandbox, never a real applicant")),
    ])


class TimeZoneForm(FlaskForm):
    """The institution's time zone; the empty choice follows the zone of the institution's country."""
    time_zone = SelectField(_l("Time zone"), validate_choice=False, filters=[strip])


class LanguageForm(FlaskForm):
    language = SelectField(_l("Language of the portal"),
                           choices=[(code, name) for code, name in STAFF_LANGUAGES.items()],
                           validators=[DataRequired(_l("Choose a language."))])


class IdentityForm(FlaskForm):
    """What applicants see of the institution; every value is checked by core.institutions.identity (an empty
    one restores the default)."""
    display_name = StringField(_l("Name shown to applicants"))
    brand_colour = StringField(_l("Brand colour"))
    contact_email = StringField(_l("Contact email"))
    website = StringField(_l("Website"))
    footer = StringField(_l("Footer line"))


class LogoForm(FlaskForm):
    """The institution's logo (checked and re-encoded by core.institutions.identity.set_logo)."""
    logo = FileField(_l("Logo file"))


class SenderDomainForm(FlaskForm):
    """A sending domain to add (checked by core.institutions.sender_domains)."""
    domain = StringField(_l("Domain"), validators=[DataRequired(_l("Give a domain name.")), Length(max=253)],
                         filters=[strip])
