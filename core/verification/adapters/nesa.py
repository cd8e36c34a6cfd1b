"""NESA (Rwanda): JSON over HTTPS with a bearer token.

Wire format: docs/verification.md, "Wire formats".
"""
from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ValidationError

from core.verification.adapters.base import MalformedAnswer, RegistryAdapter, RegistryAnswer, WireRequest
from core.verification.exam_records import OUTCOME_NOT_FOUND, ExamRecord
from core.verification.registries import NESA

WIRE_LEVELS = {"P-Level": "PLEVEL", "O-Level": "OLEVEL", "A-Level": "ALEVEL"}
LEVELS_FROM_WIRE = {wire: level for level, wire in WIRE_LEVELS.items()}
RESULT_STATUSES = {"RELEASED": "authentic", "WITHHELD": "withheld", "CANCELLED": "cancelled"}
SEXES = {"F": "female", "M": "male"}


class _Candidate(BaseModel):
    names: str
    sex: Literal["F", "M"]
    dateOfBirth: str


class _Centre(BaseModel):
    code: str
    name: str


class _Subject(BaseModel):
    name: str
    grade: str


class _Aggregate(BaseModel):
    score: int
    outOf: int


class _Examination(BaseModel):
    level: Literal["PLEVEL", "OLEVEL", "ALEVEL"]
    year: int
    centre: _Centre
    combination: str | None = None
    subjects: list[_Subject]
    aggregate: _Aggregate | None = None
    division: str | None = None


class _Result(BaseModel):
    reference: str
    resultStatus: Literal["RELEASED", "WITHHELD", "CANCELLED"]
    candidate: _Candidate
    examination: _Examination


class _Found(BaseModel):
    status: Literal["FOUND"]
    result: _Result


class NesaAdapter(RegistryAdapter):
    registry = NESA

    def build_request(self, identifiers: dict[str, str]) -> WireRequest:
        body = {"nationalId": identifiers["national_id"], "indexNumber": identifiers["exam_number"],
                "examLevel": WIRE_LEVELS[identifiers["level"]]}
        return WireRequest(
            method="POST", path="/api/v1/results/verify",
            headers={"Authorization": f"Bearer {self.endpoint.token}", "Accept": "application/json",
                     "Content-Type": "application/json"},
            data=json.dumps(body).encode())

    def parse_answer(self, status: int, body: bytes, identifiers: dict[str, str]) -> RegistryAnswer:
        try:
            payload = json.loads(body)
            if status == 404 and isinstance(payload, dict) and payload.get("status") == "NOT_FOUND":
                return RegistryAnswer(OUTCOME_NOT_FOUND, None)
            if status != 200:
                raise MalformedAnswer(f"unexpected status {status}")
            found = _Found.model_validate(payload).result
        except ValidationError as error:
            raise MalformedAnswer(str(error).splitlines()[0]) from None
        exam = found.examination
        summary = {}
        if exam.aggregate is not None:
            summary["aggregate"] = f"{exam.aggregate.score}/{exam.aggregate.outOf}"
        if exam.division is not None:
            summary["division"] = exam.division
        outcome = RESULT_STATUSES[found.resultStatus]
        record = ExamRecord(
            registry=self.registry.code, level=LEVELS_FROM_WIRE[exam.level],
            identifiers=tuple(identifiers.items()), reference=found.reference,
            full_name=found.candidate.names, gender=SEXES[found.candidate.sex],
            date_of_birth=found.candidate.dateOfBirth, year=exam.year, school=exam.centre.name,
            centre_code=exam.centre.code, subjects=tuple((s.name, s.grade) for s in exam.subjects),
            result=outcome, combination=exam.combination, summary=summary)
        return RegistryAnswer(outcome, record)
