"""UNEB (Uganda): XML over HTTPS with an API key header; not found is a 200 whose Status is NOT_FOUND.

Wire format: docs/verification.md, "Wire formats".
"""
from __future__ import annotations

from datetime import datetime
from xml.etree.ElementTree import Element, ParseError, SubElement, tostring

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from core.verification.adapters.base import MalformedAnswer, RegistryAdapter, RegistryAnswer, WireRequest, require
from core.verification.exam_records import OUTCOME_NOT_FOUND, ExamRecord
from core.verification.registries import UNEB

STATUSES = {"FOUND": "authentic", "WITHHELD": "withheld", "CANCELLED": "cancelled"}
SEXES = {"F": "female", "M": "male"}


def request_xml(index_number: str, year: str, examination: str) -> bytes:
    root = Element("ResultVerificationRequest")
    SubElement(root, "IndexNumber").text = index_number
    SubElement(root, "ExamYear").text = year
    SubElement(root, "Examination").text = examination
    return tostring(root, encoding="utf-8", xml_declaration=True)


def _text(parent, tag: str) -> str:
    node = parent.find(tag)
    require(node is not None and node.text is not None and node.text.strip() != "", f"missing <{tag}>")
    return node.text.strip()


def _optional_text(parent, tag: str) -> str | None:
    node = parent.find(tag)
    return node.text.strip() if node is not None and node.text else None


class UnebAdapter(RegistryAdapter):
    registry = UNEB

    def build_request(self, identifiers: dict[str, str]) -> WireRequest:
        return WireRequest(
            method="POST", path="/ResultVerification/verify",
            headers={"X-UNEB-Api-Key": self.endpoint.token, "Content-Type": "application/xml",
                     "Accept": "application/xml"},
            data=request_xml(identifiers["index_number"], identifiers["year"], identifiers["level"]))

    def parse_answer(self, status: int, body: bytes, identifiers: dict[str, str]) -> RegistryAnswer:
        require(status == 200, f"unexpected status {status}")
        try:
            root = fromstring(body, forbid_dtd=True)
        except (ParseError, DefusedXmlException) as error:
            raise MalformedAnswer(f"XML: {error}") from None
        require(root.tag == "ResultVerificationResponse", f"unexpected root <{root.tag}>")
        wire_status = _text(root, "Status")
        if wire_status == "NOT_FOUND":
            return RegistryAnswer(OUTCOME_NOT_FOUND, None)
        require(wire_status in STATUSES, f"unknown status {wire_status!r}")
        candidate = root.find("Candidate")
        centre = root.find("Centre")
        examination = root.find("Examination")
        results = root.find("Results")
        require(None not in (candidate, centre, examination, results), "incomplete answer")
        sex = _text(candidate, "Sex")
        require(sex in SEXES, f"unknown sex {sex!r}")
        born = datetime.strptime(_text(candidate, "DateOfBirth"), "%d/%m/%Y").date().isoformat()
        subjects = []
        for subject in results.findall("Subject"):
            name, grade = subject.get("name"), subject.get("grade")
            require(bool(name) and bool(grade), "subject without name or grade")
            subjects.append((name, grade))
        summary = {}
        if (division := _optional_text(root, "Division")) is not None:
            summary["division"] = division
        if (points := _optional_text(root, "Points")) is not None:
            summary["points"] = int(points)
        level = (examination.text or "").strip()
        require(level in UNEB.levels, f"unknown examination {level!r}")
        outcome = STATUSES[wire_status]
        record = ExamRecord(
            registry=self.registry.code, level=level, identifiers=tuple(identifiers.items()),
            reference=_text(candidate, "SerialNumber"), full_name=_text(candidate, "Name"),
            gender=SEXES[sex], date_of_birth=born, year=int(examination.get("year", "")),
            school=(centre.text or "").strip(), centre_code=centre.get("number", ""),
            subjects=tuple(subjects), result=outcome, combination=examination.get("combination"),
            summary=summary)
        return RegistryAnswer(outcome, record)
