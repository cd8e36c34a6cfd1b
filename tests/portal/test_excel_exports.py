"""Exports for Excel: the .xlsx workbook (typed cells, no formula anywhere) read by unzipping its sheet XML,
the CSV with a byte order mark on request, and phone numbers without a quote in front (API exports)."""
import csv
import io
import re
import zipfile
from datetime import datetime, timedelta

from defusedxml import ElementTree

from core.applications.csv_export import UTF8_BOM
from tests.conftest import auth_header

NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}
EXCEL_EPOCH = datetime(1899, 12, 30)


def _text(response) -> str:
    return response.get_data(as_text=True)


def _column_index(reference: str) -> int:
    letters = re.match(r"[A-Z]+", reference).group(0)
    index = 0
    for letter in letters:
        index = index * 26 + ord(letter) - 64
    return index - 1


def read_sheet(data: bytes):
    """(header, rows, formulas) of the first sheet; each cell a (type, value) pair as stored in the XML."""
    with zipfile.ZipFile(io.BytesIO(data)) as book:
        names = book.namelist()
        shared = []
        if "xl/sharedStrings.xml" in names:
            shared = ["".join(t.text or "" for t in item.iter(f"{{{NS['m']}}}t"))
                      for item in ElementTree.fromstring(book.read("xl/sharedStrings.xml")).findall("m:si", NS)]
        sheet = ElementTree.fromstring(book.read("xl/worksheets/sheet1.xml"))
    formulas = sheet.findall(".//m:f", NS)
    table = []
    for row in sheet.findall(".//m:sheetData/m:row", NS):
        cells = {}
        for cell in row.findall("m:c", NS):
            kind = cell.get("t", "n")
            if kind == "inlineStr":
                value = "".join(t.text or "" for t in cell.iter(f"{{{NS['m']}}}t"))
                kind = "s"
            elif kind == "s":
                value = shared[int(cell.find("m:v", NS).text)]
            else:
                value = cell.find("m:v", NS).text
            cells[_column_index(cell.get("r"))] = (kind, value, cell.get("s"))
        table.append(cells)
    header = [value for _, value, _ in (table[0][i] for i in sorted(table[0]))]
    rows = [{header[i]: cell for i, cell in cells.items()} for cells in table[1:]]
    return header, rows, formulas


def test_xlsx_export_has_typed_cells_and_no_formulas(staff, factory):
    inst = staff.institution
    submitted = datetime(2026, 3, 30, 8, 15, 0)
    program = factory.program(inst, name="=HYPERLINK(\"http://evil\")", fee="50000.50")
    cycle = factory.cycle(inst, programs=[program])
    formula = factory.application(inst, program=program, cycle=cycle, first_name="=1+2", last_name="@SUM(A1)",
                                  paid=True, submitted_at=submitted)
    plain = factory.application(inst, program=program, cycle=cycle, first_name="Jérôme",
                                submitted_at=submitted + timedelta(days=1))
    factory.application(factory.institution(), first_name="Foreign")

    page = _text(staff.get("/applicants"))
    link = re.search(r'id="export-xlsx"[^>]*href="([^"]+)"', page)
    assert link and link.group(1) == "/applicants/export.xlsx" and "Export to Excel (.xlsx)" in page
    response = staff.get(link.group(1))
    assert response.status_code == 200
    assert response.mimetype == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    assert re.match(r'attachment; filename="applicants-\d{4}-\d{2}-\d{2}\.xlsx"', response.headers["Content-Disposition"])
    assert response.headers["X-Total-Rows"] == "2"
    assert int(response.headers["Content-Length"]) == len(response.data)

    header, rows, formulas = read_sheet(response.data)
    assert formulas == [], "no cell of the workbook is a formula"
    assert header[:3] == ["Applicant", "Application ID", "Program"]
    by_id = {row["Application ID"][1]: row for row in rows}
    assert set(by_id) == {formula.id, plain.id}
    first = by_id[formula.id]
    assert first["Applicant"][:2] == ("s", "=1+2 @SUM(A1)")
    assert first["Program"][:2] == ("s", '=HYPERLINK("http://evil")')
    assert by_id[plain.id]["Applicant"][1] == "Jérôme Uwase"
    [submitted_header] = [name for name in header if name.startswith("Submitted (")]
    kind, serial, date_style = first[submitted_header]
    assert kind == "n" and date_style is not None, "dates are Excel dates with their number format"
    assert first["Paid"][:2] == ("s", "Paid") and by_id[plain.id]["Paid"][:2] == ("s", "Unpaid")


def test_xlsx_export_follows_the_filters_and_refuses_a_bad_one(staff, factory):
    inst = staff.institution
    paid = factory.application(inst, paid=True)
    factory.application(inst, paid=False)
    page = _text(staff.get("/applicants?paid=true"))
    link = re.search(r'id="export-xlsx"[^>]*href="([^"]+)"', page).group(1).replace("&amp;", "&")
    assert link == "/applicants/export.xlsx?paid=true"
    _, rows, _ = read_sheet(staff.get(link).data)
    assert [row["Application ID"][1] for row in rows] == [paid.id]
    empty = staff.get("/applicants/export.xlsx?q=nobody-matches-this")
    header, rows, _ = read_sheet(empty.data)
    assert empty.headers["X-Total-Rows"] == "0" and rows == [] and header[0] == "Applicant"
    assert staff.get("/applicants/export.xlsx?cycle=cyc_doesnotexist").status_code == 400


def test_csv_for_excel_starts_with_a_byte_order_mark(staff, factory):
    factory.application(staff.institution, first_name="Jérôme")
    page = _text(staff.get("/applicants"))
    link = re.search(r'id="export-csv-excel"[^>]*href="([^"]+)"', page).group(1)
    assert link == "/applicants/export.csv?excel=1" and "CSV for Excel" in page
    for_excel = staff.get(link).data
    assert for_excel.startswith(UTF8_BOM + b"Applicant,Application ID,")
    assert "Jérôme" in for_excel.decode("utf-8-sig")
    plain = staff.get("/applicants/export.csv").data
    assert plain.startswith(b"Applicant,Application ID,") and plain == for_excel[len(UTF8_BOM):]


def test_phone_numbers_are_not_quoted_but_formulas_still_are(staff, factory, client):
    """The API's CSV exports; the portal's exports hold the list's columns, which show no phone."""
    inst = staff.institution
    phones = ["+250 788 123 456", "+256-772-123456", "+254 (0) 712 345 678", "+250788123456"]
    for phone in phones:
        factory.application(inst, phone=phone, first_name="+250 788 123 456")
    for risky in ("+1+cmd|' /C calc'!A0", "+HYPERLINK(\"x\")", "+12", "=1+2", "-2+3"):
        factory.application(inst, phone=risky, first_name="Risky")
    _, raw_key = factory.api_key(inst)

    exports = [client.get("/api/v1/applications?format=csv&limit=100", headers=auth_header(raw_key)).data.decode(),
               client.get("/api/v1/applications/export?format=csv", headers=auth_header(raw_key)).data.decode()]
    for text in exports:
        rows = list(csv.DictReader(io.StringIO(text)))
        assert len(rows) == 9
        assert sorted(row["personal.phone"] for row in rows if row["personal.first_name"] != "Risky") == sorted(phones)
        assert sorted(row["personal.phone"] for row in rows if row["personal.first_name"] == "Risky") == sorted(
            "'" + value for value in ("+1+cmd|' /C calc'!A0", "+HYPERLINK(\"x\")", "+12", "=1+2", "-2+3"))
