"""The applicants list and its bulk bar in French: filter labels, the bar, stage and decision badges and the
bulk confirmation, with none of their English left."""
from __future__ import annotations

import html as html_lib


def _text(response) -> str:
    return html_lib.unescape(response.get_data(as_text=True))


def test_the_list_and_its_bulk_bar_read_in_french(staff, factory):
    interview = factory.application(staff.institution, stage="interview", decision="waitlisted")
    other = factory.application(staff.institution)
    staff.post("/account/language", {"language": "fr"})
    page = _text(staff.get("/applicants"))
    for french in ("Rechercher par nom, e-mail ou numéro de candidature", "Tous les cycles", "Payé ou non",
                   "Appliquer les filtres", "Passer à l’étape", "Garder l’étape", "Appliquer à la sélection",
                   "Aller aux résultats", "Aucun candidat sélectionné", ">Entretien</span>", ">Liste d'attente</span>",
                   ">Pas encore de décision</span>"):
        assert french in page, french
    for english in ("Search by name", "All cycles", "Paid or not", "Apply filters", "Move to stage",
                    "Keep stage", "Apply to selected", "Skip to results", "selected<", ">waitlisted<", ">none<",
                    ">Interview<"):
        assert english not in page, english

    asked = _text(staff.post("/applicants/bulk", {"ids": [interview.id, other.id], "stage": "interview",
                                                  "decision": "accepted"}, htmx=True))
    assert "Passer 2 candidats à l’étape « Entretien » avec la décision « Admis(e) » ?" in asked
