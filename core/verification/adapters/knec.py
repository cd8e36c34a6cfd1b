"""KNEC (Kenya): JSON over HTTPS with a `Token` credential and the index number in the path.

Wire format: docs/verification.md, "Wire formats".
"""
from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ValidationError

from core.verification.adapters.base import MalformedAnswer, RegistryAdapter, RegistryAnswer, WireRequest
from core.verification.exam_records import OUTCOME_NOT_FOUND, ExamRecord
from core.verification.registries import KNEC

RESULT_STATUSES = {"RELEASED": "authentic", "WITHHELD": "withheld", "CANCELLED": "cancelled"}


class _Candidate(BaseModel):
    index_number: str
    name: str
    gender: Literal["FEMALE", "MALE"]
    dob: str


class _School(BaseModel):
    code: str
    name: str


class _Subject(BaseModel):
    code: str
    name: str
    grade: str


class _Data(BaseModel):
    candidate: _Candidate
    school: _School
    exam: Literal["KCPE", "KCSE"]
    year: int
    certificate_number: str
    result_status: Literal["RELEASED", "WITHHELD", "CANCELLED"]
    subjects: list[_Subject]
    mean_grade: str | None = None
    total_points: int | None = None
    total_marks: int | None = None


class _Found(BaseModel):
    success: Literal[True]
    data: _Data


class KnecAdapter(RegistryAdapter):
    registry = KNEC

    def build_request(self, identifiers: dict[str, str]) -> WireRequest:
        # The index number is validated as 11 digits, so it is safe in the path.
        return WireRequest(
            method="GET", path=f"/v2/candidates/{identifiers['index_number']}/results",
            headers={"Authorization": f"Token {self.endpoint.token}", "Accept": "application/json"},
            params={"year": identifiers["year"], "exam": identifiers["examination"]})

    def parse_answer(self, status: int, body: bytes, identifiers: dict[str, str]) -> RegistryAnswer:
        try:
            payload = json.loads(body)
            if status == 404 and isinstance(payload, dict) and payload.get("success") is False \
                    and (payload.get("error") or {}).get("code") == "CANDIDATE_NOT_FOUND":
                return RegistryAnswer(OUTCOME_NOT_FOUND, None)
            if status != 200:
                raise MalformedAnswer(f"unexpected status {status}")
            data = _Found.model_validate(payload).data
        except ValidationError as error:
            raise MalformedAnswer(str(error).splitlines()[0]) from None
        summary = {name: getattr(data, name) for name in ("mean_grade", "total_points", "total_marks")
                   if getattr(data, name) is not None}
        outcome = RESULT_STATUSES[data.result_status]
        record = ExamRecord(
            registry=self.registry.code, level=data.exam, identifiers=tuple(identifiers.items()),
            reference=data.certificate_number, full_name=data.candidate.name,
            gender=data.candidate.gender.lower(), date_of_birth=data.candidate.dob, year=data.year,
            school=data.school.name, centre_code=data.school.code,
            subjects=tuple((s.name, s.grade) for s in data.subjects), result=outcome, summary=summary)
        return RegistryAnswer(outcome, record)
