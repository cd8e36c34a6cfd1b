"""Every validation rule of every registry, table-driven, through `validate_request`."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from core.errors import InvalidInput
from core.verification import REGISTRIES, validate_request

NEXT_YEAR = str(datetime.now(timezone.utc).year + 1)
THIS_YEAR = str(datetime.now(timezone.utc).year)

VALID = {
    "NESA": {"issuer": "NESA", "national_id": "1200370015963021", "exam_number": "0101010452", "level": "A-Level"},
    "UNEB": {"issuer": "UNEB", "index_number": "U0035/512", "year": "2019", "level": "UCE"},
    "KNEC": {"issuer": "KNEC", "index_number": "20403001045", "year": "2022", "examination": "KCSE"},
}


def problems(body) -> list[dict]:
    with pytest.raises(InvalidInput) as raised:
        validate_request(body)
    assert raised.value.message == "Invalid verification request"
    assert {problem["location"] for problem in raised.value.errors} == {"body"}
    return [{"name": problem["name"], "message": problem["message"]} for problem in raised.value.errors]


def with_changes(issuer: str, **changes) -> dict:
    body = dict(VALID[issuer])
    for name, value in changes.items():
        if value is ...:
            body.pop(name)
        else:
            body[name] = value
    return body


@pytest.mark.parametrize("issuer", sorted(VALID))
def test_valid_request_returns_registry_and_exactly_its_fields(issuer):
    registry, fields = validate_request(VALID[issuer])
    assert registry is REGISTRIES[issuer]
    assert fields == {name: value for name, value in VALID[issuer].items() if name != "issuer"}


@pytest.mark.parametrize("issuer, field, value, message", [
    # NESA
    ("NESA", "national_id", ..., "is required for NESA"),
    ("NESA", "national_id", "120037001596302", "must be exactly 16 digits"),
    ("NESA", "national_id", "12003700159630211", "must be exactly 16 digits"),
    ("NESA", "national_id", "120037001596302A", "must be exactly 16 digits"),
    ("NESA", "national_id", "12003700\n15963021", "must be exactly 16 digits"),
    ("NESA", "national_id", 1200370015963021, "must be a string"),
    ("NESA", "exam_number", ..., "is required for NESA"),
    ("NESA", "exam_number", "01", "must be 4 to 24 characters: digits, capital letters, '/' or '-'"),
    ("NESA", "exam_number", "0101 010452", "must be 4 to 24 characters: digits, capital letters, '/' or '-'"),
    ("NESA", "level", ..., "is required for NESA: one of P-Level, O-Level, A-Level"),
    ("NESA", "level", "S6", "must be one of P-Level, O-Level, A-Level"),
    ("NESA", "year", "2021", "is not a field of NESA: NESA takes national_id, exam_number, level"),
    ("NESA", "index_number", "U0035/512", "is not a field of NESA: NESA takes national_id, exam_number, level"),
    # UNEB
    ("UNEB", "index_number", ..., "is required for UNEB"),
    ("UNEB", "index_number", "U35/512", "must look like U0035/512 (UCE, UACE) or 005012/045 (PLE)"),
    ("UNEB", "index_number", "U0035-512", "must look like U0035/512 (UCE, UACE) or 005012/045 (PLE)"),
    ("UNEB", "year", ..., "is required for UNEB"),
    ("UNEB", "year", "19", "must be a 4-digit year such as 2021"),
    ("UNEB", "year", 19, "must be a 4-digit year such as 2021"),
    ("UNEB", "year", 2019.0, "must be a string"),
    ("UNEB", "year", True, "must be a string"),
    ("UNEB", "year", NEXT_YEAR, "must not be in the future"),
    ("UNEB", "level", ..., "is required for UNEB: one of PLE, UCE, UACE"),
    ("UNEB", "level", "A-Level", "must be one of PLE, UCE, UACE"),
    ("UNEB", "examination", "UCE", "is not a field of UNEB: UNEB calls the examination level level "
                                   "(PLE, UCE, UACE) where KNEC calls it examination; UNEB takes index_number, year, level"),
    ("UNEB", "national_id", "1200370015963021", "is not a field of UNEB: UNEB takes index_number, year, level"),
    # KNEC
    ("KNEC", "index_number", ..., "is required for KNEC"),
    ("KNEC", "index_number", "2040300104", "must be exactly 11 digits"),
    ("KNEC", "index_number", "20403001045A", "must be exactly 11 digits"),
    ("KNEC", "year", ..., "is required for KNEC"),
    ("KNEC", "year", "two thousand", "must be a 4-digit year such as 2021"),
    ("KNEC", "year", NEXT_YEAR, "must not be in the future"),
    ("KNEC", "examination", ..., "is required for KNEC: one of KCPE, KCSE"),
    ("KNEC", "examination", "KCE", "must be one of KCPE, KCSE"),
    ("KNEC", "level", "KCSE", "is not a field of KNEC: KNEC calls the examination level examination "
                              "(KCPE, KCSE) where NESA and UNEB call it level; KNEC takes index_number, year, examination"),
])
def test_each_field_rule(issuer, field, value, message):
    assert problems(with_changes(issuer, **{field: value})) == [{"name": field, "message": message}]


@pytest.mark.parametrize("issuer, sent", [
    ("NESA", {"issuer": "nesa", "level": "a-level"}),
    ("NESA", {"issuer": " Nesa ", "national_id": " 1200370015963021 ", "exam_number": "0101010452\t"}),
    ("UNEB", {"issuer": "uneb", "year": 2019, "level": "uce", "index_number": " U0035/512"}),
    ("KNEC", {"year": 2022, "examination": " kcse "}),
])
def test_issuer_codes_and_enumerations_match_any_case_spaces_trimmed_years_as_numbers(issuer, sent):
    registry, fields = validate_request({**VALID[issuer], **sent})
    assert registry is REGISTRIES[issuer]
    assert fields == {name: value for name, value in VALID[issuer].items() if name != "issuer"}


@pytest.mark.parametrize("issuer", sorted(VALID))
def test_the_current_year_is_accepted(issuer):
    if "year" not in VALID[issuer]:
        pytest.raises(InvalidInput, validate_request, with_changes(issuer, year=THIS_YEAR))
        return
    _, fields = validate_request(with_changes(issuer, year=THIS_YEAR))
    assert fields["year"] == THIS_YEAR


@pytest.mark.parametrize("issuer", sorted(VALID))
@pytest.mark.parametrize("name_field", ["full_name", "first_name", "last_name", "surname", "candidate_name"])
def test_candidate_names_are_refused(issuer, name_field):
    assert problems(with_changes(issuer, **{name_field: "Aline Uwase"})) == [
        {"name": name_field, "message": "candidate names are never sent; the registry returns them"}]


def test_every_problem_is_listed_at_once_in_definition_order():
    body = {"issuer": "NESA", "level": "Level 9", "national_id": "123", "full_name": "X", "colour": "blue"}
    assert problems(body) == [
        {"name": "national_id", "message": "must be exactly 16 digits"},
        {"name": "exam_number", "message": "is required for NESA"},
        {"name": "level", "message": "must be one of P-Level, O-Level, A-Level"},
        {"name": "full_name", "message": "candidate names are never sent; the registry returns them"},
        {"name": "colour", "message": "is not a field of NESA: NESA takes national_id, exam_number, level"},
    ]


@pytest.mark.parametrize("body, expected", [
    ({"index_number": "U0035/512"}, [{"name": "issuer", "message": "is required: one of NESA, UNEB, KNEC"}]),
    ({"issuer": "WAEC"}, [{"name": "issuer", "message": "unknown issuer 'WAEC': expected one of NESA, UNEB, KNEC"}]),
    ({"issuer": 7}, [{"name": "issuer", "message": "must be a string: one of NESA, UNEB, KNEC"}]),
    ({"issuer": "WAEC", "name": "Ama"}, [
        {"name": "issuer", "message": "unknown issuer 'WAEC': expected one of NESA, UNEB, KNEC"},
        {"name": "name", "message": "candidate names are never sent; the registry returns them"}]),
    (["NESA"], [{"name": "body", "message": "must be a JSON object"}]),
    ("NESA", [{"name": "body", "message": "must be a JSON object"}]),
])
def test_issuer_and_body_problems(body, expected):
    assert problems(body) == expected
