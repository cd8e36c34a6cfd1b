"""Render a message from its templates (`templates/applicant_messages/`) in the recipient's language with
Flask-Babel."""
from __future__ import annotations

from dataclasses import dataclass

from flask import current_app
from flask_babel import force_locale

from core.i18n import DEFAULT_LANGUAGE, supported_language


@dataclass(frozen=True)
class RenderedEmail:
    subject: str
    text: str
    html: str


def _render(name: str, context: dict) -> str:
    return current_app.jinja_env.get_template(name).render(**context)


def render_email(template: str, language: str | None, context: dict,
                 folder: str = "applicant_messages") -> RenderedEmail:
    """Subject, plain-text and HTML parts of `templates/<folder>/<template>.*` in `language` (`folder`:
    `applicant_messages`, or `staff_messages` for staff accounts' emails)."""
    with force_locale(supported_language(language) or DEFAULT_LANGUAGE):
        return RenderedEmail(
            subject=" ".join(_render(f"{folder}/{template}.subject.txt", context).split()),
            text=_render(f"{folder}/{template}.txt", context).strip() + "\n",
            html=_render(f"{folder}/{template}.html", context),
        )


def render_sms(template: str, language: str | None, context: dict) -> str:
    """The text of `templates/applicant_messages/<template>.sms.txt` in `language`, on as few lines as it needs."""
    with force_locale(supported_language(language) or DEFAULT_LANGUAGE):
        rendered = _render(f"applicant_messages/{template}.sms.txt", context)
        return "\n".join(line.strip() for line in rendered.splitlines() if line.strip())
