"""The registry simulator's own records, generated deterministically, distinct from the trial demo records."""
from __future__ import annotations

import random

from core.verification.exam_records import (
    KCSE_POINTS, NESA_COMBINATIONS, RESULT_AUTHENTIC, RESULT_CANCELLED, RESULT_WITHHELD, UNEB_COMBINATIONS,
    UNEB_NUMERIC_GRADES, ExamRecord, build_record, lookup_key, record_key, subjects_for,
)

RECORDS_PER_LEVEL = 40

PEOPLE = {
    "NESA": {
        "female": ("Aline", "Claudine", "Divine", "Esperance", "Françoise", "Gisele", "Josiane", "Keza", "Sandrine",
                   "Vestine"),
        "male": ("Alexis", "Emmanuel", "Eric", "Fabrice", "Innocent", "Jean Bosco", "Olivier", "Patrick", "Samuel",
                 "Theogene"),
        "surnames": ("Uwase", "Mukamana", "Niyonzima", "Habimana", "Ingabire", "Nshimiyimana", "Umutoni", "Mugisha",
                     "Uwimana", "Hakizimana", "Mutesi", "Nkurunziza", "Iradukunda", "Tuyishime"),
    },
    "UNEB": {
        "female": ("Agnes", "Brenda", "Esther", "Irene", "Joan", "Lydia", "Mercy", "Patience", "Rebecca", "Sarah"),
        "male": ("Allan", "Brian", "Daniel", "Denis", "Isaac", "Joseph", "Moses", "Ronald", "Samuel", "Timothy"),
        "surnames": ("Nakato", "Ssemwogerere", "Nansubuga", "Okello", "Atim", "Mugisha", "Akello", "Kato",
                     "Namutebi", "Tumusiime", "Byaruhanga", "Nabirye", "Ochieng", "Kyomuhendo"),
    },
    "KNEC": {
        "female": ("Achieng", "Chebet", "Faith", "Joy", "Mercy", "Naliaka", "Nyambura", "Wanjiku", "Wairimu",
                   "Zawadi"),
        "male": ("Brian", "Collins", "Dennis", "Kevin", "Kiprono", "Mwangi", "Ochieng", "Otieno", "Baraka",
                 "Kamau"),
        "surnames": ("Kamau", "Otieno", "Chebet", "Mutua", "Achieng", "Kiprotich", "Wanjiru", "Njoroge", "Omondi",
                     "Kiptoo", "Mwende", "Wafula", "Cheruiyot", "Karanja"),
    },
}

SCHOOLS = {
    ("NESA", "P-Level"): (("010305", "Ecole Primaire Remera Catholique"), ("020811", "Groupe Scolaire Gikondo"),
                          ("060214", "Ecole Primaire Rubavu")),
    ("NESA", "O-Level"): (("010409", "Groupe Scolaire Saint Joseph Kabgayi"), ("030117", "Lycée Notre-Dame de Cîteaux"),
                          ("040221", "Groupe Scolaire Saint Aloys Rwamagana")),
    ("NESA", "A-Level"): (("010118", "Green Hills Academy"), ("020615", "Collège Saint André"),
                          ("050307", "Petit Séminaire Saint Léon Kabgayi")),
    ("UNEB", "PLE"): (("004215", "Kitante Primary School"), ("011802", "Namilyango Junior School"),
                      ("007320", "Bishop Stuart Demonstration School")),
    ("UNEB", "UCE"): (("U0077", "St. Mary's College Kisubi"), ("U0051", "Mengo Senior School"),
                      ("U0142", "Mbarara High School")),
    ("UNEB", "UACE"): (("U0077", "St. Mary's College Kisubi"), ("U0018", "Namilyango College"),
                       ("U0096", "Trinity College Nabbingo")),
    ("KNEC", "KCPE"): (("20419107", "Riara Springs Primary School"), ("35612204", "Nakuru Hill Primary School"),
                       ("40133106", "Kisumu Union Primary School")),
    ("KNEC", "KCSE"): (("20402002", "Starehe Boys Centre"), ("36705001", "Maseno School"),
                       ("27401003", "Moi Girls High School Eldoret")),
}

AGE_AT_EXAM = {"P-Level": 12, "PLE": 12, "KCPE": 13, "O-Level": 15, "UCE": 16, "A-Level": 18, "UACE": 18,
               "KCSE": 17}
REGISTRY_LEVELS = {"NESA": ("P-Level", "O-Level", "A-Level"), "UNEB": ("PLE", "UCE", "UACE"),
                   "KNEC": ("KCPE", "KCSE")}


def _grades(rng: random.Random, registry: str, level: str, combination: str | None) -> tuple:
    count = len(subjects_for(registry, level, combination))
    if registry == "KNEC" and level == "KCPE":
        return tuple(rng.randint(38, 97) for _ in range(count))
    if registry == "KNEC":
        return tuple(rng.choice(list(KCSE_POINTS)[:9]) for _ in range(count))
    if level in ("A-Level", "UACE"):
        principals = tuple(rng.choice("ABBCCDE") for _ in range(3))
        subsidiaries = ("S", "S") if registry == "NESA" else tuple(rng.choice(UNEB_NUMERIC_GRADES[:6]) for _ in "ab")
        return principals + subsidiaries
    if registry == "NESA" and level == "P-Level":
        return tuple(rng.choice("AABBCD") for _ in range(count))
    if registry == "NESA":
        return tuple(str(rng.randint(1, 7)) for _ in range(count))
    return tuple(rng.choice(UNEB_NUMERIC_GRADES[:7]) for _ in range(count))


def _generate(registry: str, level: str) -> list[ExamRecord]:
    rng = random.Random(f"karibu-simulator-{registry}-{level}")
    people = PEOPLE[registry]
    records = []
    for number in range(1, RECORDS_PER_LEVEL + 1):
        gender = rng.choice(("female", "male"))
        full_name = f"{rng.choice(people[gender])} {rng.choice(people['surnames'])}"
        year = rng.randint(2012, 2025)
        birth_year = year - AGE_AT_EXAM[level]
        date_of_birth = f"{birth_year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        centre, school = rng.choice(SCHOOLS[(registry, level)])
        candidate = 100 + number
        combination = None
        if level == "A-Level":
            combination = rng.choice(sorted(NESA_COMBINATIONS))
        elif level == "UACE":
            combination = rng.choice(sorted(UNEB_COMBINATIONS))
        result = RESULT_AUTHENTIC
        if number == RECORDS_PER_LEVEL:
            result = RESULT_CANCELLED
        elif number == RECORDS_PER_LEVEL - 1:
            result = RESULT_WITHHELD
        common = dict(registry=registry, level=level, full_name=full_name, gender=gender,
                      date_of_birth=date_of_birth, year=year, school=school, centre_code=centre,
                      grades=_grades(rng, registry, level, combination), combination=combination, result=result)
        if registry == "NESA":
            gender_digit = "7" if gender == "female" else "8"
            national_id = f"1{birth_year}{gender_digit}{rng.randint(0, 9_999_999):07d}0{rng.randint(10, 99)}"
            exam_number = f"{centre}{candidate:04d}"
            records.append(build_record(
                identifiers={"national_id": national_id, "exam_number": exam_number, "level": level},
                reference=f"NESA-{level[0]}L-{year}-{exam_number}", **common))
        elif registry == "UNEB":
            index_number = f"{centre}/{candidate:03d}"
            records.append(build_record(
                identifiers={"index_number": index_number, "year": str(year), "level": level},
                reference=f"{level}/{year}/{centre}{candidate:03d}", **common))
        else:
            index_number = f"{centre}{candidate:03d}"
            records.append(build_record(
                identifiers={"index_number": index_number, "year": str(year), "examination": level},
                reference=f"{level}-{year}-{index_number}", **common))
    return records


SIMULATED_RECORDS: tuple[ExamRecord, ...] = tuple(
    record for registry, levels in REGISTRY_LEVELS.items() for level in levels
    for record in _generate(registry, level)
)
_BY_KEY = {record_key(record): record for record in SIMULATED_RECORDS}


def find_simulated_record(registry: str, identifiers: dict[str, str]) -> ExamRecord | None:
    return _BY_KEY.get(lookup_key(registry, identifiers))
