"""The language of a page: the signed-in staff member's choice; the applicant's language on the public pages."""
from __future__ import annotations

from flask import g, request
from flask_login import current_user

from core.i18n import DEFAULT_LANGUAGE, LANGUAGES, supported_language
from core.accounts.preferences import user_language


def select_locale() -> str:
    """Flask-Babel's locale selector: what a public view chose for this request, else the signed-in staff
    member's language, else English."""
    if g.get("page_language"):
        return g.page_language
    if current_user and current_user.is_authenticated:
        return user_language(current_user)
    return DEFAULT_LANGUAGE


def visitor_language(fallback: str | None) -> str:
    """A visitor's language: `?lang=` when it names a supported one, else the browser's Accept-Language,
    else `fallback` (the institution's default)."""
    chosen = supported_language(request.args.get("lang"))
    if chosen is None:
        chosen = supported_language(request.accept_languages.best_match(list(LANGUAGES)))
    return chosen or supported_language(fallback) or DEFAULT_LANGUAGE


def use_language(language: str | None) -> str:
    """Render this request's templates in `language` (a supported one, else English)."""
    g.page_language = supported_language(language) or DEFAULT_LANGUAGE
    return g.page_language
