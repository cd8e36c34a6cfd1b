"""Sample applicants with realistic East African names, their applications, payments, decisions and documents,
generated in batches and written in bulk (PostgreSQL COPY, else executemany): the demo seeder's and the sandboxes'."""
from __future__ import annotations

import itertools
import random
from datetime import datetime, timedelta
from types import SimpleNamespace

from sqlalchemy import insert, select, text

from core.applications.references import candidate_reference, institution_prefix
from core.applications.search_text import fold
from core.db import db, note_write
from core.models import Applicant, Application, Decision, Document, Payment, new_id
from core.scoping import InstitutionScope

FIRST_NAMES = (
    "Aimée", "Jean-Paul", "Clémentine", "Eric", "Divine", "Olivier", "Grâce", "Emmanuel", "Claudine", "Patrick",
    "Josiane", "Théogène", "Ange", "Innocent", "Solange", "Fabrice", "Diane", "Jérôme", "Chantal", "Didier",
    "Akello", "Okello", "Nakato", "Mugisha", "Namukasa", "Ssemakula", "Atim", "Kato", "Babirye", "Opio",
    "Wanjiru", "Kamau", "Achieng", "Otieno", "Njeri", "Kiprono", "Chebet", "Mwangi", "Wambui", "Omondi",
    "Amani", "Neema", "Baraka", "Zawadi", "Juma", "Rehema", "Imani", "Halima", "Faraji", "Upendo",
)
LAST_NAMES = (
    "Uwase", "Habimana", "Mukamana", "Niyonzima", "Uwimana", "Nsengiyumva", "Ingabire", "Mugabo", "Nyiransabimana",
    "Hakizimana", "Iradukunda", "Mutoni", "Ndayisaba", "Umutoni", "Bizimana", "Kwizera", "Murekatete", "Tuyisenge",
    "Ochieng", "Kariuki", "Njoroge", "Wafula", "Mutua", "Chepkoech", "Kipchumba", "Odhiambo", "Muthoni", "Barasa",
    "Nakamya", "Ssekandi", "Tumusiime", "Byaruhanga", "Namutebi", "Kaggwa", "Asiimwe", "Kyomuhendo", "Lubega",
    "Mwakyusa", "Massawe", "Mushi", "Kimaro", "Lyimo", "Mrema", "Shirima", "Mollel",
)
EMAIL_DOMAINS = ("gmail.com", "yahoo.com", "outlook.com", "students.example.ac.rw")
PHONE_PREFIXES = ("+25078", "+25072", "+25677", "+25670", "+25471", "+25472", "+25575")
STAGE_WEIGHTS = (50, 20, 12, 10, 8)
DECISION_WEIGHTS = {"none": 55, "accepted": 20, "waitlisted": 8, "rejected": 12, "deferred": 5}
DOCUMENT_KINDS = (
    ("transcript", "academic-transcript.pdf", "Academic transcript"),
    ("national_id", "national-id.pdf", "National identity document"),
    ("recommendation", "recommendation-letter.pdf", "Letter of recommendation"),
)

BULK_TABLES = (Applicant.__table__, Application.__table__, Payment.__table__, Decision.__table__,
               Document.__table__)
REBUILD_INDEXES_FROM = 50_000


class BulkWriter:
    """Bulk writer: PostgreSQL COPY when available, batched executemany otherwise."""

    def __init__(self):
        self.connection = db.session.connection()
        self.use_copy = self.connection.dialect.name == "postgresql"

    def without_secondary_indexes(self):
        """Drop the bulk tables' secondary indexes (PostgreSQL); the returned callable rebuilds them."""
        definitions = self.connection.execute(text(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
            "AND tablename = ANY(:tables) "
            "AND indexname NOT IN (SELECT conname FROM pg_constraint)"  # keep primary keys and uniques
        ), {"tables": [table.name for table in BULK_TABLES]}).all()
        for name, _ in definitions:
            self.connection.execute(text(f'DROP INDEX "{name}"'))

        def rebuild():
            for _, definition in definitions:
                self.connection.execute(text(definition))
        return rebuild

    def write(self, table, columns: tuple[str, ...], rows: list[tuple]) -> None:
        if not rows:
            return
        if self.use_copy:
            note_write(self.connection)
            raw = self.connection.connection.driver_connection
            with raw.cursor() as cursor:
                with cursor.copy(f"COPY {table.name} ({', '.join(columns)}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
        else:
            self.connection.execute(insert(table), [dict(zip(columns, row)) for row in rows])


APPLICANT_COLUMNS = ("id", "institution_id", "first_name", "last_name", "email", "phone", "gender",
                     "date_of_birth", "search_text", "created_at")
APPLICATION_COLUMNS = ("id", "reference", "institution_id", "applicant_id", "program_id", "cycle_id", "campus_id",
                       "stage", "decision", "enrolled", "paid", "amount", "currency", "submitted_at", "submitted_by_staff",
                       "created_at", "updated_at")
PAYMENT_COLUMNS = ("id", "institution_id", "application_id", "processor", "processor_reference", "amount",
                   "currency", "status", "created_at", "completed_at")
DECISION_COLUMNS = ("id", "institution_id", "application_id", "status", "created_at", "sent_at", "response",
                    "responded_at")
DOCUMENT_COLUMNS = ("id", "institution_id", "application_id", "kind", "filename", "content_type", "size",
                    "sha256", "created_at")


_FOLDED = {name: fold(name) for name in FIRST_NAMES + LAST_NAMES}
_DECISION_NAMES = list(DECISION_WEIGHTS)
_DECISION_CUMULATIVE = list(itertools.accumulate(DECISION_WEIGHTS.values()))
_STAGE_CUMULATIVE = list(itertools.accumulate(STAGE_WEIGHTS))


class SampleReferences:
    """Distinct references for generated applications, none already taken (by any institution of the prefix)."""

    def __init__(self, institution_name: str):
        self.prefix = institution_prefix(institution_name)
        self.taken = set(db.session.scalars(select(Application.reference)
                                            .where(Application.reference.like(f"{self.prefix}-%"))))

    def draw(self, year: int) -> str:
        reference = candidate_reference(self.prefix, year)
        while reference in self.taken:
            reference = candidate_reference(self.prefix, year)
        self.taken.add(reference)
        return reference


def generate_batch(rng: random.Random, count: int, scope: InstitutionScope, programs: list[SimpleNamespace],
                   cycles: list[SimpleNamespace], stage_keys: list[str], documents: dict, now: datetime,
                   serial: int, references: SampleReferences):
    """`count` applicants numbered from `serial` with an application each (a payment, decision and documents for
    some), as rows of APPLICANT_COLUMNS, APPLICATION_COLUMNS, …; no documents when `documents` is empty."""
    institution_id = scope.institution_id
    applicants, applications, payments, decisions, docs = [], [], [], [], []
    submitting_cycles = [cycle for cycle in cycles if cycle.opens_at <= now] or cycles
    stage_cumulative = _STAGE_CUMULATIVE[: len(stage_keys)]
    for offset in range(count):
        number = serial + offset
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        email = f"{_FOLDED[first]}.{_FOLDED[last]}{number}@{rng.choice(EMAIL_DOMAINS)}"
        cycle = rng.choice(submitting_cycles)
        program = rng.choice(programs)
        window_end = min(now, cycle.closes_at)
        span = max((window_end - cycle.opens_at).total_seconds(), 1)
        submitted_at = cycle.opens_at + timedelta(seconds=rng.random() * span)
        closed = cycle.closes_at <= now
        decision = (rng.choices(_DECISION_NAMES, cum_weights=_DECISION_CUMULATIVE)[0]
                    if closed or rng.random() < 0.3 else "none")
        paid = rng.random() < 0.72
        updated_at = min(now, submitted_at + timedelta(hours=rng.randint(0, 24 * 30)))
        applicant_id, application_id = new_id("apl"), new_id("app")
        applicants.append((applicant_id, institution_id, first, last, email,
                           f"{rng.choice(PHONE_PREFIXES)}{rng.randint(1000000, 9999999)}",
                           rng.choice(("female", "male")),
                           datetime(rng.randint(1995, 2008), rng.randint(1, 12), rng.randint(1, 28)).date(),
                           f"{_FOLDED[first]} {_FOLDED[last]} {email}", submitted_at))
        applications.append((application_id, references.draw(submitted_at.year), institution_id, applicant_id,
                             program.id, cycle.id, None,
                             rng.choices(stage_keys, cum_weights=stage_cumulative)[0], decision,
                             decision == "accepted" and closed and rng.random() < 0.6, paid, program.fee,
                             program.currency, submitted_at, rng.random() < 0.08, submitted_at, updated_at))
        if paid:
            processor = rng.choice(("mpesa", "flutterwave"))
            payments.append((new_id("pay"), institution_id, application_id, processor,
                             f"{processor[:3].upper()}{number:09d}", program.fee, program.currency, "completed",
                             submitted_at, submitted_at + timedelta(minutes=rng.randint(1, 120))))
        if decision != "none":
            sent_at = updated_at if rng.random() < 0.8 else None
            responded = sent_at is not None and decision == "accepted" and rng.random() < 0.5
            decisions.append((new_id("dec"), institution_id, application_id, decision, updated_at, sent_at,
                              rng.choice(("accepted", "declined")) if responded else None,
                              updated_at + timedelta(days=2) if responded else None))
        for kind, filename, _ in (DOCUMENT_KINDS[: 2 + (number % 2)] if documents else ()):
            sha256, size = rng.choice(documents[kind])
            docs.append((new_id("doc"), institution_id, application_id, kind, filename, "application/pdf", size,
                         sha256, submitted_at))
    return applicants, applications, payments, decisions, docs
