"""Each application's copy of its applicant's search text (migration 0021_search_text_on_applications) is kept
by the database's triggers, on both databases: an application takes its applicant's text when inserted or moved,
a change of the applicant's text reaches every one of their applications, a direct write cannot make the copy
differ, and an erased applicant's applications are no longer found by their old name."""
from __future__ import annotations

from sqlalchemy import text

from core.applications.references import new_reference
from core.applications.search_text import applicant_search_text
from core.db import db
from core.models import Application, utcnow
from tests.api.conftest import walk


def copies(app, applicant_id: str) -> dict[str, str]:
    with app.app_context():
        return dict(db.session.execute(text("SELECT id, search_text FROM applications WHERE applicant_id = :id"),
                                       {"id": applicant_id}).all())


def applicant_text(app, applicant_id: str) -> str:
    with app.app_context():
        return db.session.scalar(text("SELECT search_text FROM applicants WHERE id = :id"), {"id": applicant_id})


def second_application(app, first: Application, program_id: str) -> str:
    """Another application of the same applicant (another programme), inserted as the app inserts one."""
    with app.app_context():
        application = Application(reference=new_reference("Second Application", utcnow()),
                                  institution_id=first.institution_id, applicant_id=first.applicant_id,
                                  program_id=program_id, cycle_id=first.cycle_id, stage="submitted")
        db.session.add(application)
        db.session.commit()
        return application.id


def test_an_inserted_application_takes_its_applicants_text(app, factory, tenant):
    first = factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle,
                                first_name="Clémentine", last_name="Nyiramasuhuko", email="Clem@Example.rw")
    second_id = second_application(app, first, tenant.other_program.id)
    expected = applicant_search_text("Clémentine", "Nyiramasuhuko", "Clem@Example.rw")
    assert copies(app, first.applicant_id) == {first.id: expected, second_id: expected}


def test_a_change_of_the_applicants_text_reaches_all_their_applications(app, factory, tenant, api_get):
    first = factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle,
                                first_name="Brian", last_name="Otieno")
    second_id = second_application(app, first, tenant.other_program.id)
    renamed = applicant_search_text("Brian", "Odhiambo", "brian@example.ke")
    with app.app_context():
        db.session.execute(text("UPDATE applicants SET search_text = :text WHERE id = :id"),
                           {"text": renamed, "id": first.applicant_id})
        db.session.commit()
    assert copies(app, first.applicant_id) == {first.id: renamed, second_id: renamed}
    found = {record["id"] for record in walk(api_get, tenant, "/api/v1/applications/search", {"q": "odhiambo"})}
    assert found == {first.id, second_id}
    assert walk(api_get, tenant, "/api/v1/applications/search", {"q": "otieno"}) == []


def test_a_direct_write_or_a_move_cannot_make_the_copy_differ(app, factory, tenant):
    one = factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle,
                              first_name="Noël", last_name="Habimana")
    other = factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle,
                                first_name="Zoë", last_name="Mukamana")
    with app.app_context():
        db.session.execute(text("UPDATE applications SET search_text = 'someone else' WHERE id = :id"),
                           {"id": one.id})
        db.session.commit()
    assert copies(app, one.applicant_id) == {one.id: applicant_text(app, one.applicant_id)}
    with app.app_context():
        db.session.execute(text("UPDATE applications SET applicant_id = :other WHERE id = :id"),
                           {"other": other.applicant_id, "id": one.id})
        db.session.commit()
    assert copies(app, other.applicant_id) == {one.id: applicant_text(app, other.applicant_id),
                                               other.id: applicant_text(app, other.applicant_id)}


def test_an_erased_applicants_applications_are_not_found_by_their_old_name(app, factory, tenant, api_get):
    erased = factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle,
                                 first_name="Désiré", last_name="Kàmau", email="desire.kamau@example.ke",
                                 phone="+254700000001")
    kept = factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle,
                               first_name="Grace", last_name="Kamau", email="grace.kamau@example.ke",
                               phone="+254700000002")
    result = app.test_cli_runner().invoke(args=[
        "applicants", "erase", erased.applicant_id, "--institution", tenant.institution.id,
        "--requested-by", "dpo@example.rw", "--reason", "Applicant's request, ticket 2911", "--yes"])
    assert result.exit_code == 0, result.output
    assert copies(app, erased.applicant_id) == {erased.id: applicant_text(app, erased.applicant_id)}
    assert "desire" not in applicant_text(app, erased.applicant_id)
    found = [record["id"] for record in walk(api_get, tenant, "/api/v1/applications/search", {"q": "kamau"})]
    assert found == [kept.id]
