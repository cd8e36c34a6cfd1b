"""The Messages page's form: the language of applicants who did not choose one."""
from __future__ import annotations

from flask_babel import lazy_gettext as _l
from flask_wtf import FlaskForm
from wtforms import SelectField

from core.i18n import LANGUAGES


class DefaultLanguageForm(FlaskForm):
    language = SelectField(_l("Language for applicants who did not choose one"),
                           choices=[(code, name) for code, name in LANGUAGES.items()])
