"""Demo records answered for the public trial key: several per registry and level, published in the docs.

Any identifiers not listed here get 404 with the trial key. Summary figures are computed by `build_record`.
"""
from __future__ import annotations

from core.verification.exam_records import (
    RESULT_CANCELLED, RESULT_WITHHELD, ExamRecord, build_record, lookup_key, record_key,
)


def _nesa(national_id, exam_number, level, reference, name, gender, dob, year, school, centre, grades,
          combination=None, result="authentic"):
    return build_record(
        registry="NESA", level=level,
        identifiers={"national_id": national_id, "exam_number": exam_number, "level": level},
        reference=reference, full_name=name, gender=gender, date_of_birth=dob, year=year, school=school,
        centre_code=centre, grades=grades, combination=combination, result=result)


def _uneb(index_number, year, level, reference, name, gender, dob, school, grades, combination=None,
          result="authentic"):
    return build_record(
        registry="UNEB", level=level,
        identifiers={"index_number": index_number, "year": str(year), "level": level},
        reference=reference, full_name=name, gender=gender, date_of_birth=dob, year=year, school=school,
        centre_code=index_number.split("/")[0], grades=grades, combination=combination, result=result)


def _knec(index_number, year, examination, reference, name, gender, dob, school, grades, result="authentic"):
    return build_record(
        registry="KNEC", level=examination,
        identifiers={"index_number": index_number, "year": str(year), "examination": examination},
        reference=reference, full_name=name, gender=gender, date_of_birth=dob, year=year, school=school,
        centre_code=index_number[:8], grades=grades, result=result)


DEMO_RECORDS: tuple[ExamRecord, ...] = (
    # NESA, Rwanda: P-Level (letter grades), O-Level (1 best .. 9), A-Level (principals A..F + subsidiaries)
    _nesa("1200270014582031", "0103020117", "P-Level", "NESA-PL-2014-0103020117", "Aline Uwase", "female",
          "2002-03-14", 2014, "Ecole Primaire Kacyiru II", "010302", ("A", "B", "A", "B", "A")),
    _nesa("1200280036614052", "0207010045", "P-Level", "NESA-PL-2014-0207010045", "Eric Habimana", "male",
          "2002-07-30", 2014, "Groupe Scolaire Kimisagara", "020701", ("B", "C", "B", "C", "B")),
    _nesa("1201370041208014", "0411050021", "P-Level", "NESA-PL-2025-0411050021", "Divine Mukamana", "female",
          "2013-01-09", 2025, "Ecole Primaire Nyamirambo", "041105", ("A", "A", "A", "B", "A")),
    _nesa("1200580007321046", "0105120233", "O-Level", "NESA-OL-2021-0105120233", "Jean Claude Niyonzima",
          "male", "2005-05-21", 2021, "Groupe Scolaire Officiel de Butare", "010512",
          ("2", "3", "1", "4", "2", "3", "2", "5", "3", "2")),
    _nesa("1200670029817025", "0302110064", "O-Level", "NESA-OL-2021-0302110064", "Grace Ingabire", "female",
          "2006-02-11", 2021, "FAWE Girls School Gahini", "030211",
          ("1", "1", "2", "2", "1", "2", "1", "3", "2", "1")),
    _nesa("1200680051190037", "0509030118", "O-Level", "NESA-OL-2022-0509030118", "Patrick Nshimiyimana",
          "male", "2006-09-02", 2022, "Ecole des Sciences de Musanze", "050903",
          ("4", "5", "3", "6", "5", "6", "4", "7", "6", "5"), result=RESULT_WITHHELD),
    _nesa("1200370015963021", "0101010452", "A-Level", "NESA-AL-2021-0101010452", "Diane Umutoni", "female",
          "2003-04-12", 2021, "Lycée de Kigali", "010101", ("A", "B", "A", "S", "S"), combination="PCM"),
    _nesa("1200380062481049", "0503020087", "A-Level", "NESA-AL-2022-0503020087", "Olivier Mugisha", "male",
          "2003-11-27", 2022, "Ecole des Sciences de Musanze", "050302", ("B", "C", "B", "S", "S"),
          combination="MCB"),
    _nesa("1200470039105012", "0102040019", "A-Level", "NESA-AL-2023-0102040019", "Josiane Uwimana", "female",
          "2004-08-05", 2023, "Riviera High School", "010204", ("A", "A", "B", "S", "S"), combination="MEG"),
    # UNEB, Uganda: PLE and UCE (D1 .. F9, divisions 1-4/U), UACE (principals A..F + subsidiaries, points of 20)
    _uneb("005012/045", 2012, "PLE", "PLE/2012/005012045", "Mercy Namutebi", "female", "1999-06-18",
          "Nakasero Primary School", ("D1", "D1", "D2", "D1")),
    _uneb("002117/103", 2015, "PLE", "PLE/2015/002117103", "Daniel Kato", "male", "2002-10-03",
          "Buganda Road Primary School", ("D2", "C3", "D2", "C4")),
    _uneb("010433/017", 2018, "PLE", "PLE/2018/010433017", "Joan Akello", "female", "2005-12-22",
          "Kampala Parents' School", ("D1", "D2", "D1", "D2")),
    _uneb("U0035/512", 2019, "UCE", "UCE/2019/U0035512", "Sarah Nakato", "female", "2003-04-02",
          "Gayaza High School", ("D1", "D2", "C3", "D2", "D1", "C3", "C4", "D2", "C3")),
    _uneb("U0012/237", 2019, "UCE", "UCE/2019/U0012237", "Brian Ssemwogerere", "male", "2003-09-15",
          "King's College Budo", ("C3", "C4", "C5", "C4", "C3", "C6", "C4", "P7", "C5")),
    _uneb("U0164/088", 2020, "UCE", "UCE/2020/U0164088", "Isaac Okello", "male", "2004-01-29",
          "Ntare School", ("C4", "C5", "C6", "C5", "C5", "P7", "C6", "C5", "P8"), result=RESULT_CANCELLED),
    _uneb("U0035/548", 2021, "UACE", "UACE/2021/U0035548", "Patience Nansubuga", "female", "2003-07-08",
          "Gayaza High School", ("A", "B", "B", "D1", "C3"), combination="BCM"),
    _uneb("U0012/301", 2021, "UACE", "UACE/2021/U0012301", "Ronald Mugisha", "male", "2002-12-19",
          "King's College Budo", ("B", "C", "A", "C4", "D2"), combination="HEG"),
    _uneb("U0089/145", 2022, "UACE", "UACE/2022/U0089145", "Esther Atim", "female", "2004-03-25",
          "Mt. St. Mary's College Namagunga", ("C", "B", "C", "C3", "C5"), combination="PCM"),
    # KNEC, Kenya: KCPE (marks out of 100 per subject, total of 500), KCSE (A .. E, best seven of 84)
    _knec("01113104021", 2015, "KCPE", "KCPE-2015-01113104021", "Wanjiku Kamau", "female", "2001-08-17",
          "Olympic Primary School", (86, 81, 92, 88, 79)),
    _knec("20441101008", 2018, "KCPE", "KCPE-2018-20441101008", "Kevin Mutua", "male", "2004-05-06",
          "Kilimani Primary School", (74, 70, 81, 77, 72)),
    _knec("31530215062", 2019, "KCPE", "KCPE-2019-31530215062", "Faith Chebet", "female", "2005-11-30",
          "Kapsabet Township Primary School", (68, 75, 63, 70, 71)),
    _knec("20403001045", 2022, "KCSE", "KCSE-2022-20403001045", "Brian Otieno", "male", "2004-02-11",
          "Alliance High School", ("A-", "B+", "A", "A-", "B+", "A-", "B+", "A-")),
    _knec("11200004117", 2022, "KCSE", "KCSE-2022-11200004117", "Mercy Achieng", "female", "2004-06-23",
          "Kenya High School", ("A", "A-", "A", "A", "A-", "A-", "B+", "A")),
    _knec("27519102033", 2023, "KCSE", "KCSE-2023-27519102033", "Dennis Kiprotich", "male", "2005-03-14",
          "Moi High School Kabarak", ("B", "C+", "B-", "C+", "B-", "C", "B", "B-"), result=RESULT_WITHHELD),
)

_BY_KEY = {record_key(record): record for record in DEMO_RECORDS}


def find_demo_record(registry: str, identifiers: dict[str, str]) -> ExamRecord | None:
    return _BY_KEY.get(lookup_key(registry, identifiers))


def demo_requests(registry: str) -> list[dict[str, str]]:
    """Request bodies that match this registry's demo records, for evaluators to try at once."""
    return [record.request for record in DEMO_RECORDS if record.registry == registry]
