"""Grading rules, demo records and simulated records: realistic, self-consistent and valid requests."""
from __future__ import annotations

import pytest

from core.verification import REGISTRIES, list_issuers, validate_request
from core.verification.demo import DEMO_RECORDS, find_demo_record
from core.verification.exam_records import build_record, kcpe_grade, knec_summary, uneb_summary
from devtools.simulated_records import SIMULATED_RECORDS, find_simulated_record


@pytest.mark.parametrize("grades, division", [
    (("D1", "D1", "D1", "D1"), "1"), (("D2", "C3", "C4", "C5"), "2"), (("C6", "C6", "C6", "C6"), "3"),
    (("P8", "P8", "P8", "P7"), "4"), (("F9", "F9", "F9", "F9"), "U"),
])
def test_uneb_ple_division_from_aggregate(grades, division):
    assert uneb_summary("PLE", tuple(zip("abcd", grades))) == {"division": division}


@pytest.mark.parametrize("grades, expected", [
    (("A",) * 8, {"mean_grade": "A", "total_points": 84}),
    (("A", "A", "A", "A", "A", "A", "B-", "E"), {"mean_grade": "A-", "total_points": 80}),
    (("B+",) * 8, {"mean_grade": "B+", "total_points": 70}),
    (("C",) * 8, {"mean_grade": "C", "total_points": 42}),
    (("E",) * 8, {"mean_grade": "E", "total_points": 7}),
])
def test_kcse_total_of_best_seven_and_mean_grade_band(grades, expected):
    assert knec_summary("KCSE", tuple(zip("abcdefgh", grades))) == expected


def test_kcpe_grades_and_total_marks():
    assert [kcpe_grade(mark) for mark in (100, 80, 79, 55, 29)] == ["A", "A", "A-", "C+", "E"]
    record = build_record(registry="KNEC", level="KCPE", identifiers={}, reference="r", full_name="n",
                          gender="female", date_of_birth="2001-01-01", year=2015, school="s", centre_code="c",
                          grades=(80, 70, 60, 50, 40))
    assert record.summary == {"total_marks": 300}
    assert [grade for _, grade in record.subjects] == ["A", "B+", "B-", "C", "D+"]


def test_nesa_a_level_aggregate_is_a_score_out_of_a_total():
    record = build_record(registry="NESA", level="A-Level", identifiers={}, reference="r", full_name="n",
                          gender="male", date_of_birth="2003-01-01", year=2021, school="s", centre_code="c",
                          grades=("A", "B", "C", "S", "F"), combination="PCM")
    assert record.summary == {"aggregate": "16/20"}
    assert record.response_record()["combination"] == "PCM"


def test_a_record_needs_one_grade_per_subject():
    with pytest.raises(ValueError, match="needs 5 grades"):
        build_record(registry="NESA", level="P-Level", identifiers={}, reference="r", full_name="n",
                     gender="male", date_of_birth="2003-01-01", year=2015, school="s", centre_code="c",
                     grades=("A",))


@pytest.mark.parametrize("records", [DEMO_RECORDS, SIMULATED_RECORDS], ids=["demo", "simulated"])
def test_several_records_for_every_registry_and_level_all_findable_with_valid_requests(records):
    for registry in REGISTRIES.values():
        for level in registry.levels:
            matching = [record for record in records if record.registry == registry.code and record.level == level]
            assert len(matching) >= 3, (registry.code, level)
    for record in records:
        found_registry, fields = validate_request(record.request)
        assert found_registry.code == record.registry
        finder = find_demo_record if records is DEMO_RECORDS else find_simulated_record
        assert finder(record.registry, fields) is record


def test_demo_and_simulated_records_are_distinct():
    demo_requests = {tuple(sorted(record.request.items())) for record in DEMO_RECORDS}
    assert not demo_requests & {tuple(sorted(record.request.items())) for record in SIMULATED_RECORDS}


def test_nesa_national_ids_encode_birth_year_and_gender():
    for record in (r for r in (*DEMO_RECORDS, *SIMULATED_RECORDS) if r.registry == "NESA"):
        national_id = dict(record.identifiers)["national_id"]
        assert national_id[1:5] == record.date_of_birth[:4]
        assert national_id[5] == ("7" if record.gender == "female" else "8")


def test_list_issuers_mirrors_the_definitions():
    issuers = list_issuers(include_demo=False)
    assert [issuer["code"] for issuer in issuers] == ["NESA", "UNEB", "KNEC"]
    assert all("demo_requests" not in issuer for issuer in issuers)
    knec = list_issuers(include_demo=True)[2]
    assert knec["country"] == "Kenya"
    assert [field["name"] for field in knec["fields"]] == ["index_number", "year", "examination"]
    assert knec["fields"][2]["enum"] == ["KCPE", "KCSE"]
    assert len(knec["demo_requests"]) == 6
    assert all(validate_request(body)[0].code == "KNEC" for body in knec["demo_requests"])


def test_the_docs_publish_every_demo_record():
    from pathlib import Path
    docs = (Path(__file__).resolve().parents[2] / "docs" / "verification.md").read_text()
    for record in DEMO_RECORDS:
        for value in dict(record.identifiers).values():
            assert f"`{value}`" in docs, (record.registry, value)
        assert record.full_name in docs
