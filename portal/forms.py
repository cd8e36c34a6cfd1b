"""The form helpers of every area and the forms two areas share; an area's own forms are in its `forms.py`."""
from __future__ import annotations

from flask_babel import gettext
from flask_wtf import FlaskForm
from wtforms import StringField

from core.errors import InvalidInput, KaribuError


def strip(value):
    """A field filter: the typed text without the spaces around it."""
    return value.strip() if isinstance(value, str) else value


def submitted(form: FlaskForm) -> FlaskForm:
    """`form`, validated; otherwise InvalidInput (400) with the first problem (a CSRF token is checked here
    again, for a view that someone exempted from CSRFProtect)."""
    if not form.validate_on_submit():
        name, messages = next(iter(form.errors.items()))
        if name == "csrf_token":
            # Worded apart from CSRFProtect's refusal, so a test can tell which of the two checks refused.
            raise InvalidInput(gettext("The form's security token is missing or expired. Reload the page and try "
                                       "again."), field=name)
        raise InvalidInput(f"{field_label(form, name)}: {messages[0]}", field=name)
    return form


def field_label(form: FlaskForm, name: str) -> str:
    """What a person calls a field: its label, never its raw name (`confirm_billing`)."""
    field = form._fields.get(name)
    return str(field.label.text) if field is not None else name.replace("_", " ").capitalize()


def labelled(error: KaribuError, labels: dict) -> KaribuError:
    """A core error whose message starts with a raw parameter name (`since must be …`), told with the field's
    label instead (`From must be …`); other errors unchanged."""
    name = error.name
    if name in labels and error.message.startswith(f"{name} "):
        message = f"{labels[name]} {error.message.removeprefix(name).lstrip()}"
        return type(error)(message, errors=[{**item, "message": message} if item["name"] == name else item
                                            for item in error.errors], **error.extra)
    return error


class ActionForm(FlaskForm):
    """A button that changes something and sends no fields besides its CSRF token (revoke, rotate, …)."""


class ResendMessageForm(FlaskForm):
    """Resend one failed message; `source` says which page to answer (`file`: the applicant file's timeline)."""
    source = StringField(filters=[strip])
