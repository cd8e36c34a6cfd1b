"""Search correctness: on a seeded random corpus with accents and mixed case, the API search (`q=` of the
search and the list) and the portal's search find exactly what a plain case- and accent-insensitive
substring match (lower + unaccent, then ILIKE '%q%') finds, or the application whose id is `q`. On
PostgreSQL the planner serves these from the trigram index or by walking the list order (1–2 letter texts
cannot use trigrams); on SQLite by LIKE: each is held to the same answer."""
from __future__ import annotations

import random
import unicodedata

import pytest

from tests.applications.conftest import portal_ids
from tests.api.conftest import walk
from tests.portal.conftest import _fresh_login_counters  # noqa: F401 (autouse fixture: these tests sign in)

SEED = 20261126
CORPUS_SIZE = 240
FIRST_NAMES = ["Aimée", "AIMÉE", "aimee", "Clémentine", "Jean-Paul", "Éric", "Noël", "Zoë", "Ángel", "Josée",
               "Brian", "Grace", "Françoise", "Ngũgĩ", "Chloé", "IRÈNE", "Ọlá", "Désiré"]
LAST_NAMES = ["Uwase", "UWASE", "Nyiramasuhuko", "Habimana", "Otieno", "Nakato", "Müller", "Núñez", "Çelik",
              "Mukamana", "NIYONSÅBA", "Kàmau", "Wanjirũ", "O'Brien"]
DOMAINS = ["example.rw", "Mail.Example.org", "example.ke", "uni.example.ug", "EXAMPLE.com"]


def folded(text: str) -> str:
    """The reference semantics: accents dropped (unaccent), then lower-case."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()


def plain(text: str) -> str:
    return folded(text).replace("'", "").replace(" ", ".")


@pytest.fixture
def corpus(factory, tenant):
    """(application id, first name, last name, email) of CORPUS_SIZE applications, in a seeded random mix."""
    chosen = random.Random(SEED)
    people = []
    for number in range(CORPUS_SIZE):
        first, last = chosen.choice(FIRST_NAMES), chosen.choice(LAST_NAMES)
        local = chosen.choice([f"{plain(first)}.{plain(last)}", f"{plain(first)[0]}_{plain(last)}",
                               f"{first[:3]}{number}", f"{plain(last).upper()}{number}%x"])
        email = f"{local}@{chosen.choice(DOMAINS)}"
        application = factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle,
                                          first_name=first, last_name=last, email=email)
        people.append((application.id, first, last, email))
    return people


def queries(corpus) -> list[str]:
    """Query shapes drawn like real ones: names and full names (case and accents varied), partial emails,
    ids, one- and two-letter texts, wildcard characters and text that matches nothing."""
    chosen = random.Random(SEED + 1)

    def vary(text: str) -> str:
        return chosen.choice([text, text.upper(), text.lower(), folded(text), f"  {text} "])

    drawn = [vary(name) for name in FIRST_NAMES + LAST_NAMES]
    for _, first, last, email in chosen.sample(corpus, 12):
        drawn += [vary(f"{first} {last}"), email, email[:chosen.randint(3, 8)], email.split("@")[1].upper(),
                  "@" + email.split("@")[1][:5]]
    drawn += [application_id for application_id, *_ in chosen.sample(corpus, 4)]
    drawn += [corpus[0][0][:-1], "app_doesnotexist", "APP_" + corpus[1][0][4:]]
    drawn += ["a", "É", "z", "ng", "Ü", "mu", "e.", "o'", "%", "_", "\\", "%x", "_u", "10%", "1"]
    # Longer texts without three letters or digits in a row (PostgreSQL matches them by their pairs).
    drawn += ["e.u", "o'b", "é.h", "_u_", "%x@", "1%x", "a e", "w@w", "l.n"]
    # Words of letters and three or more digits (PostgreSQL narrows by that word, then checks the whole text).
    drawn += ["uwase123%x@example.ke", "HABIMANA45%x@", "abc1234 zzz", "Otieno999%x@example.ke"]
    drawn += ["qqxz", "nobody@nowhere.example", "Aimée Habimana Otieno", "zzzz", "é é"]
    return list(dict.fromkeys(drawn))


def expected(corpus, q: str) -> set[str]:
    text = q.strip()
    return {application_id for application_id, first, last, email in corpus
            if folded(text) in folded(f"{first} {last} {email}") or application_id == text}


@pytest.fixture(params=["few contain", "many contain"])
def planner_expects(request, monkeypatch):
    """Both answers PostgreSQL's estimate can give to "do few applications contain this text?", which decides
    whether a text without a trigram word, or with a sign before its first word, is narrowed by its pairs."""
    if request.param == "many contain":
        from core.applications.listing import statements
        monkeypatch.setattr(statements, "_few_contain", lambda folded: False)
    return request.param


def test_api_search_equals_the_plain_match(api_get, tenant, corpus, planner_expects):
    assert len(queries(corpus)) >= 90
    differences = {}
    for q in queries(corpus):
        want = expected(corpus, q)
        for path in ("/api/v1/applications/search", "/api/v1/applications"):
            got = [record["id"] for record in walk(api_get, tenant, path, {"q": q, "limit": 100})]
            assert len(got) == len(set(got)), f"{path} q={q!r} repeated records"
            if set(got) != want:
                differences[(path, q)] = (sorted(set(got) - want), sorted(want - set(got)))
    assert differences == {}


def test_portal_search_equals_the_plain_match(tenant, corpus, staff_of):
    staff = staff_of(tenant)
    differences = {}
    for q in queries(corpus)[::3]:  # a third of the shapes: the portal reads the same query as the API
        want = expected(corpus, q)
        got = portal_ids(staff, f"/applicants?q={q.replace('%', '%25').replace('&', '%26').replace('#', '%23')}")
        if set(got) != want or len(got) != len(want):
            differences[q] = (sorted(set(got) - want), sorted(want - set(got)))
    assert differences == {}


def test_short_gram_index_finds_exactly_the_containing_applications(app, corpus):
    """PostgreSQL's short-gram index read on its own: each one- or two-character text, and each longer text's
    set of adjacent pairs, finds exactly the applications whose folded text holds it. The applications' other
    indexes are dropped inside the transaction (rolled back afterwards), so the plan cannot avoid the index
    under test."""
    from sqlalchemy import text

    from core.applications.search_text import fold
    from core.db import db

    with app.app_context():
        if db.engine.dialect.name != "postgresql":
            pytest.skip("the short-gram index exists on PostgreSQL only")
        texts = sorted({fold(q.strip()) for q in queries(corpus) if len(fold(q.strip())) >= 1})
        grams = {short: [short] for short in texts if len(short) <= 2}
        grams.update({longer: sorted({longer[at:at + 2] for at in range(len(longer) - 1)})
                      for longer in texts if len(longer) > 2})
        assert sum(len(short) <= 2 for short in grams) >= 10
        differences = {}
        with db.engine.connect() as connection, connection.begin() as transaction:
            others = connection.scalars(text(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'applications' "
                "AND indexname <> 'ix_applications_search_text_short_grams'"
                " AND indexname NOT IN (SELECT conname FROM pg_constraint)")).all()
            for name in others:
                connection.execute(text(f'DROP INDEX "{name}"'))
            connection.execute(text("SET LOCAL enable_seqscan = off"))
            for searched, wanted_grams in grams.items():
                matching = "FROM applications WHERE short_text_grams(search_text) @> CAST(:grams AS text[])"
                plan = "\n".join(connection.scalars(text(f"EXPLAIN SELECT id {matching}"),
                                                    {"grams": wanted_grams}))
                assert "ix_applications_search_text_short_grams" in plan, plan
                got = set(connection.scalars(text(f"SELECT id {matching}"), {"grams": wanted_grams}))
                want = {application_id for application_id, first, last, email in corpus
                        if all(gram in fold(f"{first} {last} {email}") for gram in wanted_grams)}
                if got != want:
                    differences[searched] = (sorted(got - want), sorted(want - got))
            transaction.rollback()
        assert differences == {}
