"""Demo data: "Demo University" with programs, cycles, a pipeline, applicants and their documents.

Idempotent: applications are topped up to the requested count (by COPY on PostgreSQL).
"""
from __future__ import annotations

import itertools
import random
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import SimpleNamespace
from decimal import Decimal
from typing import Callable

from sqlalchemy import func, insert, select, text

from core.applications.documents import document_storage
from core.db import db, note_write
from core.institutions import create_institution, pipeline
from core.models import (
    Applicant, Application, Cycle, Decision, Document, Institution, Payment, Program, new_id, utcnow,
)
from core.accounts.passwords import hash_password
from core.scoping import InstitutionScope
from devtools.pdf import simple_pdf
from core.applications.search_text import fold
from core.accounts.users import account_in, create_user

DEMO_INSTITUTION = "Demo University"
DEMO_STAFF_EMAIL = "admin@demo-university.ac.rw"
DEMO_STAFF_PASSWORD = "karibu-demo-2026"
BATCH_SIZE = 10_000

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
PROGRAMS = (
    ("BSc Computer Science", "50000", "RWF"),
    ("BSc Nursing", "50000", "RWF"),
    ("BSc Civil Engineering", "60000", "RWF"),
    ("Bachelor of Business Administration", "40000", "RWF"),
    ("BSc Agriculture", "40000", "RWF"),
    ("Bachelor of Laws (LLB)", "55000", "RWF"),
    ("Bachelor of Education", "30000", "RWF"),
    ("Master of Public Health", "75", "USD"),
)
STAGE_WEIGHTS = (50, 20, 12, 10, 8)
DECISION_WEIGHTS = {"none": 55, "accepted": 20, "waitlisted": 8, "rejected": 12, "deferred": 5}
DOCUMENT_KINDS = (
    ("transcript", "academic-transcript.pdf", "Academic transcript"),
    ("national_id", "national-id.pdf", "National identity document"),
    ("recommendation", "recommendation-letter.pdf", "Letter of recommendation"),
)


@dataclass(frozen=True)
class SeedResult:
    institution_id: str
    staff_email: str
    staff_password: str
    created_applications: int


def _ensure_institution() -> Institution:
    institution = db.session.scalars(select(Institution).where(Institution.name == DEMO_INSTITUTION)).first()
    if institution is None:
        institution = create_institution(DEMO_INSTITUTION)
        institution.verification_price = Decimal("2.00")
        institution.verification_currency = "USD"
        db.session.commit()
    return institution


def _ensure_programs_and_cycles(institution: Institution, now: datetime) -> tuple[list[Program], list[Cycle]]:
    programs = list(db.session.scalars(select(Program).where(Program.institution_id == institution.id)))
    if not programs:
        programs = [Program(institution_id=institution.id, name=name, fee=Decimal(fee), currency=currency)
                    for name, fee, currency in PROGRAMS]
        db.session.add_all(programs)
    cycles = list(db.session.scalars(
        select(Cycle).where(Cycle.institution_id == institution.id).order_by(Cycle.opens_at)))
    if not cycles:
        year = now.year
        # The next January intake whose applications (June to November before it) have not opened yet.
        january = year + 1 if now.month < 6 else year + 2
        cycles = [
            Cycle(institution_id=institution.id, name=f"{year - 1}/{year} Intake",
                  opens_at=datetime(year - 2, 11, 1), closes_at=datetime(year - 1, 8, 31), programs=programs),
            Cycle(institution_id=institution.id, name=f"{year}/{year + 1} Intake",
                  opens_at=now - timedelta(days=120), closes_at=now + timedelta(days=90), programs=programs),
            Cycle(institution_id=institution.id, name=f"{january} January Intake",
                  opens_at=datetime(january - 1, 6, 1), closes_at=datetime(january - 1, 11, 30),
                  programs=programs[:4]),
        ]
        db.session.add_all(cycles)
    db.session.commit()
    return programs, cycles


def _ensure_admin(institution: Institution) -> None:
    user = account_in(InstitutionScope(institution.id), DEMO_STAFF_EMAIL)
    if user is None:
        create_user(InstitutionScope(institution.id), DEMO_STAFF_EMAIL, DEMO_STAFF_PASSWORD, role="admin",
                    name="Demo Admin")
    else:
        user.password_hash = hash_password(DEMO_STAFF_PASSWORD)
        user.active = True
        db.session.commit()


def _store_demo_documents() -> dict[str, list[tuple[str, int]]]:
    """A few real PDFs per kind, stored once (content-addressed) and shared by the demo applications."""
    storage = document_storage()
    stored: dict[str, list[tuple[str, int]]] = {}
    for kind, _, title in DOCUMENT_KINDS:
        stored[kind] = []
        for variant, school in enumerate(("Lycée de Kigali", "Makerere College School", "Alliance High School")):
            body = simple_pdf(f"{title}", [f"Issued by: {school}", "Demo University applicant document",
                                           f"Reference: DEMO-{kind.upper()}-{variant + 1:03d}",
                                           "This is demonstration data generated by Karibu."])
            stored[kind].append((storage.put(body), len(body)))
    return stored


BULK_TABLES = (Applicant.__table__, Application.__table__, Payment.__table__, Decision.__table__,
               Document.__table__)
REBUILD_INDEXES_FROM = 50_000


class _Writer:
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
APPLICATION_COLUMNS = ("id", "institution_id", "applicant_id", "program_id", "cycle_id", "campus_id", "stage",
                       "decision", "enrolled", "paid", "amount", "currency", "submitted_at", "submitted_by_staff",
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


def _generate_batch(rng: random.Random, count: int, institution_id: str, programs: list[SimpleNamespace],
                    cycles: list[SimpleNamespace], stage_keys: list[str], documents: dict, now: datetime,
                    serial: int):
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
        applications.append((application_id, institution_id, applicant_id, program.id, cycle.id, None,
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
        for kind, filename, _ in DOCUMENT_KINDS[: 2 + (number % 2)]:
            sha256, size = rng.choice(documents[kind])
            docs.append((new_id("doc"), institution_id, application_id, kind, filename, "application/pdf", size,
                         sha256, submitted_at))
    return applicants, applications, payments, decisions, docs


def seed_demo(applications: int = 200, on_progress: Callable[[int], None] | None = None,
              random_seed: int | None = None) -> SeedResult:
    now = utcnow()
    institution = _ensure_institution()
    programs, cycles = _ensure_programs_and_cycles(institution, now)
    _ensure_admin(institution)
    stage_keys = [stage.key for stage in pipeline(InstitutionScope(institution.id))]
    existing = db.session.scalar(
        select(func.count()).select_from(Application).where(Application.institution_id == institution.id))
    to_create = max(applications - existing, 0)
    documents = _store_demo_documents()
    rng = random.Random(random_seed)
    writer = _Writer()
    rebuild_indexes = (writer.without_secondary_indexes()
                       if writer.use_copy and to_create >= REBUILD_INDEXES_FROM else None)
    # Plain copies: the generator runs in a worker thread, away from the ORM session.
    program_rows = [SimpleNamespace(id=p.id, fee=p.fee, currency=p.currency) for p in programs]
    cycle_rows = [SimpleNamespace(id=c.id, opens_at=c.opens_at, closes_at=c.closes_at) for c in cycles]

    def generate(offset: int):
        count = min(BATCH_SIZE, to_create - offset)
        return count, _generate_batch(rng, count, institution.id, program_rows, cycle_rows, stage_keys,
                                      documents, now, existing + offset)

    created = 0
    # The next batch is generated while the current one is written: Python and the database work at once.
    with ThreadPoolExecutor(max_workers=1) as generator:
        pending = generator.submit(generate, 0) if to_create else None
        while pending is not None:
            count, (applicants, apps, payments, decisions, docs) = pending.result()
            pending = generator.submit(generate, created + count) if created + count < to_create else None
            writer.write(Applicant.__table__, APPLICANT_COLUMNS, applicants)
            writer.write(Application.__table__, APPLICATION_COLUMNS, apps)
            writer.write(Payment.__table__, PAYMENT_COLUMNS, payments)
            writer.write(Decision.__table__, DECISION_COLUMNS, decisions)
            writer.write(Document.__table__, DOCUMENT_COLUMNS, docs)
            created += count
            if on_progress:
                on_progress(count)
    if rebuild_indexes:
        rebuild_indexes()
    db.session.commit()
    if created and writer.use_copy:
        db.session.execute(db.text("ANALYZE applicants; ANALYZE applications"))
        db.session.commit()
    return SeedResult(institution.id, DEMO_STAFF_EMAIL, DEMO_STAFF_PASSWORD, created)

