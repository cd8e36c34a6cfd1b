"""Portal exports are what the list shows: its columns and sort, headers and values in the staff member's
language, times in the institution's zone with the zone named, and a distinct dated file name per kind."""
import csv
import io
import re
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from core.applications.csv_export import UTF8_BOM
from core.db import db
from core.models import Institution, Stage
from tests.portal.test_excel_exports import EXCEL_EPOCH, read_sheet

ZONE = "Africa/Kigali"  # UTC+2 all year
LINK_IDS = ("export-link", "export-csv-excel", "export-xlsx")


def _links(portal, list_path: str) -> dict[str, str]:
    page = portal.get(list_path).get_data(as_text=True)
    return {link_id: re.search(rf'id="{link_id}"[^>]*href="([^"]+)"', page).group(1).replace("&amp;", "&")
            for link_id in LINK_IDS}


def _csv(response) -> tuple[list[str], list[list[str]]]:
    rows = list(csv.reader(io.StringIO(response.get_data().decode("utf-8-sig"))))
    return rows[0], rows[1:]


def _filename(response) -> str:
    return re.fullmatch(r'attachment; filename="([^"]+)"', response.headers["Content-Disposition"]).group(1)


def _today_in_zone() -> str:
    return datetime.now(timezone.utc).astimezone(ZoneInfo(ZONE)).date().isoformat()


@pytest.fixture
def applicants(app, factory, staff):
    """Three applications of the staff member's institution (zone Africa/Kigali) and one of another."""
    inst = staff.institution
    with app.app_context():
        db.session.get(Institution, inst.id).time_zone = ZONE
        db.session.commit()
    program = factory.program(inst, name="BSc Nursing")
    cycle = factory.cycle(inst, name="2026 intake", programs=[program])
    base = datetime(2026, 3, 30, 8, 15)  # UTC: 10:15 in Kigali
    made = {
        "zawadi": factory.application(inst, program=program, cycle=cycle, first_name="Zawadi", last_name="Mushi",
                                      stage="interview", decision="waitlisted", paid=True, submitted_at=base,
                                      updated_at=base + timedelta(hours=1)),
        "amani": factory.application(inst, program=program, cycle=cycle, first_name="Amani", last_name="Kato",
                                     stage="documents_review", decision="none", enrolled=True,
                                     submitted_at=base + timedelta(days=1), updated_at=base + timedelta(days=2)),
        "jerome": factory.application(inst, program=program, cycle=cycle, first_name="Jérôme", last_name="Habimana",
                                      stage="completed", decision="accepted", paid=True,
                                      submitted_at=base - timedelta(days=1, hours=7)),
    }
    factory.application(factory.institution(), first_name="Foreign")
    return made


def test_exports_follow_the_chosen_columns_and_sort_in_english(staff, applicants):
    view = "/applicants?sort=name&columns=stage,decision,paid,submitted"
    links = _links(staff, view)
    for link in links.values():
        assert "sort=name" in link and "columns=stage,decision,paid,submitted" in link, link

    response = staff.get(links["export-link"])
    assert response.status_code == 200 and response.mimetype == "text/csv"
    assert _filename(response) == f"applicants-{_today_in_zone()}.csv"
    header, rows = _csv(response)
    assert header == ["Applicant", "Application ID", "Stage", "Decision", "Paid", f"Submitted ({ZONE})"]
    assert rows == [
        ["Amani Kato", applicants["amani"].id, "Documents review", "No decision yet", "Unpaid", "2026-03-31 10:15"],
        ["Jérôme Habimana", applicants["jerome"].id, "Completed", "Accepted", "Paid", "2026-03-29 03:15"],
        ["Zawadi Mushi", applicants["zawadi"].id, "Interview", "Waitlisted", "Paid", "2026-03-30 10:15"],
    ]

    for_excel = staff.get(links["export-csv-excel"])
    assert _filename(for_excel) == f"applicants-{_today_in_zone()}-excel.csv"
    assert for_excel.data.startswith(UTF8_BOM) and _csv(for_excel) == (header, rows)

    workbook = staff.get(links["export-xlsx"])
    assert workbook.status_code == 200 and _filename(workbook) == f"applicants-{_today_in_zone()}.xlsx"
    sheet_header, sheet_rows, formulas = read_sheet(workbook.data)
    assert sheet_header == header and formulas == []
    assert [row["Applicant"][1] for row in sheet_rows] == ["Amani Kato", "Jérôme Habimana", "Zawadi Mushi"]
    zawadi = sheet_rows[2]
    assert zawadi["Stage"][:2] == ("s", "Interview") and zawadi["Decision"][:2] == ("s", "Waitlisted")
    kind, serial, style = zawadi[f"Submitted ({ZONE})"]
    assert kind == "n" and style is not None, "a time is an Excel date with a number format"
    assert EXCEL_EPOCH + timedelta(seconds=round(float(serial) * 86400)) == datetime(2026, 3, 30, 10, 15), "Kigali"


def test_exports_are_in_the_staff_members_language(staff, applicants):
    assert staff.post("/account/language", {"language": "fr"}).status_code == 302
    view = "/applicants?sort=-stage&columns=stage,decision,enrolled,updated"
    links = _links(staff, view)

    header, rows = _csv(staff.get(links["export-link"]))
    assert header == ["Candidat", "Identifiant de la candidature", "Étape", "Décision", "Inscrit",
                      f"Dernière mise à jour ({ZONE})"]
    # The pipeline in reverse: completed, interview, documents review.
    assert rows == [
        ["Jérôme Habimana", applicants["jerome"].id, "Terminé", "Admis(e)", "Non", "2026-03-29 03:15"],
        ["Zawadi Mushi", applicants["zawadi"].id, "Entretien", "Liste d'attente", "Non", "2026-03-30 11:15"],
        ["Amani Kato", applicants["amani"].id, "Examen des documents", "Pas encore de décision", "Oui", "2026-04-01 10:15"],
    ]
    sheet_header, sheet_rows, _ = read_sheet(staff.get(links["export-xlsx"]).data)
    assert sheet_header == header
    assert [row["Étape"][1] for row in sheet_rows] == ["Terminé", "Entretien", "Examen des documents"]


def test_default_view_filters_and_an_institutions_own_stage_name(app, staff, applicants):
    with app.app_context():
        stage = db.session.query(Stage).filter_by(institution_id=staff.institution.id, key="interview").one()
        stage.name = "Oral with the panel"
        db.session.commit()
    links = _links(staff, "/applicants?paid=true&stage=interview")
    assert links["export-link"] == "/applicants/export.csv?stage=interview&paid=true"
    response = staff.get(links["export-link"])
    header, rows = _csv(response)
    assert header == ["Applicant", "Application ID", "Program", "Cycle", "Stage", "Decision", "Paid", "Enrolled",
                      f"Submitted ({ZONE})"]
    assert rows == [["Zawadi Mushi", applicants["zawadi"].id, "BSc Nursing", "2026 intake", "Oral with the panel",
                     "Waitlisted", "Paid", "No", "2026-03-30 10:15"]]
    assert response.headers["X-Total-Rows"] == "1"
    # No optional column chosen: the applicant and the id remain.
    header, rows = _csv(staff.get("/applicants/export.csv?columns="))
    assert header == ["Applicant", "Application ID"] and len(rows) == 3


def test_cells_that_would_run_as_formulas_are_neutralised(staff, factory):
    factory.application(staff.institution, first_name="=HYPERLINK(\"http://evil\")", last_name="x")
    header, rows = _csv(staff.get("/applicants/export.csv"))
    assert rows[0][0] == "'=HYPERLINK(\"http://evil\") x"
    _, sheet_rows, formulas = read_sheet(staff.get("/applicants/export.xlsx").data)
    assert formulas == [] and sheet_rows[0]["Applicant"][:2] == ("s", "=HYPERLINK(\"http://evil\") x")


@pytest.mark.parametrize("path", ["/applicants/export.csv", "/applicants/export.xlsx"])
def test_a_bad_filter_is_a_clear_400_before_any_file(staff, path):
    response = staff.get(path + "?cycle=cyc_doesnotexist&sort=name")
    assert response.status_code == 400 and response.mimetype == "text/html"
    assert "Content-Disposition" not in response.headers
