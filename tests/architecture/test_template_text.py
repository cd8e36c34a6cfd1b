"""No visible literal text in a template: every word a person reads goes through a translation call.

Each template under templates/ is parsed with Jinja's own parser and its AST walked in document order. Literal
template text (`TemplateData`) is flattened with a placeholder for every expression, its markup stripped, and
what a person reads is kept: text between tags and the attributes read aloud or shown (title, aria-label,
placeholder, alt, hx-confirm, the value of buttons and submit inputs). String constants printed by an expression
(`{{ 'Never' }}`, `{{ 'Yes' if x else 'No' }}`) or passed to a macro as words (`badge("Active")`) count too.
Anything inside `_()`, `gettext`, `ngettext` or `{% trans %}` is fine: the catalogue test checks it is translated.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from jinja2 import Environment, nodes

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "templates"

# Words that are the same in every language of the portal. Each entry is justified.
ALLOWED_WORDS = {
    "Karibu",                          # the product's name
    "NESA", "UNEB", "KNEC",            # the examination registries' names
    "M-Pesa", "Flutterwave",           # the payment processors' brand names
    "CSV", "API", "JSON", "HTTP", "HTTPS", "URL", "SMS", "UTC", "KB",  # codes, the same in every language
    "Message-ID",                      # the email header's name, shown beside its value
    "ms",                              # the unit symbol of milliseconds
}
# Whole templates exempt from the guard, each justified.
ALLOWED_TEMPLATES = {
    # The partner API reference is a developer page, in English like the OpenAPI document it draws with Swagger UI
    # (`<html lang="en">` whatever the staff member's language): its header and a <noscript> hint to openapi.json.
    "api/reference.html",
}
TRANSLATION_CALLS = {"_", "gettext", "ngettext", "_l", "pgettext", "npgettext"}
READ_ATTRIBUTES = ("title", "aria-label", "placeholder", "alt", "hx-confirm", "aria-description")
PLACEHOLDER = "\x00"
# Skipped whole: comments, scripts, styles and <code>/<kbd>/<samp> (names of events, paths, headers: code).
CHUNKS = r"<!--.*?-->|<(script|style|code|kbd|samp)\b[^>]*>.*?</\1\s*>|<[^<>]*>|[^<]+"
URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S*")
# Attributes written by a macro or a condition apart from their tag (` aria-invalid="true"`): markup, not text.
ATTRIBUTES_ONLY = re.compile(r"""\s*(?:[\w:-]+\s*=\s*(?:"[^"]*"|'[^']*')\s*)+""")
WORD = re.compile(r"[^\W\d_](?:[\w'’.-]*[^\W\d_])?")


def _is_translation(node) -> bool:
    return isinstance(node, nodes.Call) and isinstance(node.node, nodes.Name) and node.node.name in TRANSLATION_CALLS


class _Flattener:
    """The template's literal text in document order, an expression standing as PLACEHOLDER, with the line
    where each piece starts; plus the string constants a person would read."""

    def __init__(self):
        self.pieces: list[tuple[int, str]] = []
        self.constants: list[tuple[int, str]] = []

    def visit(self, node) -> None:
        if isinstance(node, nodes.TemplateData):
            self.pieces.append((node.lineno, node.data))
            return
        if isinstance(node, nodes.Output):
            for child in node.nodes:
                if isinstance(child, nodes.TemplateData):
                    self.visit(child)
                else:
                    # A printed constant stands where it is printed: in a class it is no word, in a button it is.
                    printed = []
                    self._printed(child, printed)
                    self.pieces.append((child.lineno, " ".join(printed) + PLACEHOLDER))
            return
        if isinstance(node, nodes.Assign) and isinstance(node.node, nodes.Const):
            self._words_constant(node.node)
        if isinstance(node, nodes.Call):
            self._call(node)
        for child in node.iter_child_nodes():
            self.visit(child)

    def _printed(self, expression, printed: list[str]) -> None:
        """A printed expression: its constants in printed position go to `printed`; calls are looked into."""
        if _is_translation(expression):
            return
        if isinstance(expression, nodes.Const) and isinstance(expression.value, str):
            printed.append(expression.value)
        elif isinstance(expression, nodes.CondExpr):
            self._printed(expression.expr1, printed)
            if expression.expr2 is not None:
                self._printed(expression.expr2, printed)
        elif isinstance(expression, (nodes.Concat,)):
            for child in expression.nodes:
                self._printed(child, printed)
        elif isinstance(expression, (nodes.Or, nodes.And)):
            self._printed(expression.left, printed)
            self._printed(expression.right, printed)
        elif isinstance(expression, nodes.Filter) and expression.node is not None:
            self._printed(expression.node, printed)
            self.visit_expression(expression)
        else:
            if isinstance(expression, nodes.Call):
                self._call(expression)
            self.visit_expression(expression)

    def visit_expression(self, expression) -> None:
        for child in expression.iter_child_nodes():
            if isinstance(child, nodes.Call):
                self._call(child)
            if not _is_translation(child):
                self.visit_expression(child)

    def _call(self, call) -> None:
        """A macro's arguments that look like words (a capital or a space: `"Active"`, not `"ok"`)."""
        if _is_translation(call):
            return
        for argument in list(call.args) + [keyword.value for keyword in call.kwargs]:
            if isinstance(argument, nodes.Const):
                self._words_constant(argument)
            elif isinstance(argument, nodes.CondExpr):
                for branch in (argument.expr1, argument.expr2):
                    if isinstance(branch, nodes.Const):
                        self._words_constant(branch)

    def _words_constant(self, constant) -> None:
        value = constant.value
        if isinstance(value, str) and re.search(r"[A-Z]", value) and re.search(r"[a-z]", value) \
                and not re.fullmatch(r"[\w.:/-]+", value):
            self.constants.append((constant.lineno, value))
        elif isinstance(value, str) and re.fullmatch(r"[A-Z][a-z]+", value):
            self.constants.append((constant.lineno, value))


def _readable(markup: str) -> str:
    """What a person reads of a tag or comment: its read attributes."""
    markup = re.sub(r"<!--.*?-->", " ", markup, flags=re.S)
    def tag(match):
        text = match.group(0)
        kept = []
        for name, value in re.findall(r"""([\w:-]+)\s*=\s*("[^"]*"|'[^']*')""", text):
            name = name.lower()
            if name in READ_ATTRIBUTES:
                # An example address (placeholder="https://hooks.…") is not words of the interface.
                kept.append(URL.sub(" ", value[1:-1]))
            elif name == "value" and text.lower().startswith("<input") and re.search(
                    r"""type\s*=\s*["']?(submit|button|reset)""", text, re.I):
                # A <button>'s value is sent, never shown: its content is the text a person reads.
                kept.append(value[1:-1])
        return " " + " ".join(kept) + " "

    markup = re.sub(r"<[^<>]*>", tag, markup)
    return re.sub(r"&#?\w+;", " ", markup)


def _offences(source: str, name: str) -> list[str]:
    environment = Environment(extensions=["jinja2.ext.i18n"])
    tree = environment.parse(source, name=name)
    flattener = _Flattener()
    flattener.visit(tree)
    text, starts = "", []
    for line, piece in flattener.pieces:
        starts.append((len(text), line, piece))
        text += piece
    readable = _readable_with_positions(text)
    by_line: dict[int, list[str]] = {}
    for offset, word in readable:
        if word in ALLOWED_WORDS:
            continue
        line = next(line + piece[:offset - start].count("\n")
                    for start, line, piece in reversed(starts) if start <= offset)
        by_line.setdefault(line, []).append(word)
    found = [f"templates/{name}:{line}: {' '.join(words)!r}" for line, words in sorted(by_line.items())]
    for line, value in flattener.constants:
        words = [word for word in WORD.findall(value) if word not in ALLOWED_WORDS]
        if words:
            found.append(f"templates/{name}:{line}: {value!r}")
    return found


def _readable_with_positions(text: str) -> list[tuple[int, str]]:
    """The words a person reads, each with its offset in the flattened text (to name its line)."""
    found = []
    for match in re.finditer(CHUNKS, text, re.S | re.I):
        chunk = match.group(0)
        if match.group(1):  # a script, a style or code: not words of the interface
            continue
        if chunk.startswith("<"):
            readable = _readable(chunk)
        elif ATTRIBUTES_ONLY.fullmatch(chunk.replace(PLACEHOLDER, "")):
            readable = _readable(f"<tag {chunk}>")
        else:
            readable = re.sub(r"&#?\w+;", " ", chunk)
        for word in WORD.finditer(readable.replace(PLACEHOLDER, " ")):
            found.append((match.start(), word.group(0)))
    return found


def _templates() -> list[str]:
    return sorted(str(path.relative_to(TEMPLATES)) for path in TEMPLATES.rglob("*")
                  if path.is_file() and path.suffix in (".html", ".txt"))


def test_every_template_is_checked():
    names = _templates()
    assert "applicants/detail.html" in names and "applicant_messages/decision.txt" in names


@pytest.mark.parametrize("name", [name for name in _templates() if name not in ALLOWED_TEMPLATES])
def test_template_has_no_untranslated_text(name):
    offences = _offences((TEMPLATES / name).read_text(encoding="utf-8"), name)
    assert not offences, "Text a person reads outside a translation call:\n" + "\n".join(offences)


SAMPLE = """{% extends "base.html" %}
{% block content %}
<h1>{{ _("Users") }}</h1>
<p class="lead">Search by name</p>
<input type="search" placeholder="Name or email" aria-label="{{ _('Search') }}">
<button type="submit" title="Apply filters">{{ _("Apply") }}</button>
{% trans %}Translated words{% endtrans %}
<td>{{ 'Never' if x else user.seen }}</td>
{{ badge("Active", "ok") }}
<img alt="Chart" src="/c.png"> {{ status_badge('payment', p.status, p.status) }} &middot; Karibu CSV
<form hx-confirm="Delete {{ key.name }}?"><input type="submit" value="Remove"><button name="go" value="yes">{{ _("Go") }}</button></form>
<p class="{{ 'alert-ok' if ok else 'alert-bad' }}"><code>GET /api/v1/events</code></p>
{% endblock %}"""


def test_the_guard_finds_untranslated_text_in_a_sample():
    offences = _offences(SAMPLE, "sample.html")
    joined = "\n".join(offences)
    assert "templates/sample.html:4: 'Search by name'" in joined
    assert "templates/sample.html:5: 'Name or email'" in joined
    assert "templates/sample.html:6: 'Apply filters'" in joined
    assert "templates/sample.html:8: 'Never'" in joined and "templates/sample.html:9: 'Active'" in joined
    assert "templates/sample.html:10: 'Chart'" in joined
    assert "templates/sample.html:11: 'Delete Remove'" in joined
    for fine in ("Users", "Translated", "Karibu", "CSV", "payment", "ok", "middot", "Search'", "yes", "alert", "GET",
                 "events", ":12:"):
        assert f"'{fine}" not in joined, joined
