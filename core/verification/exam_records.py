"""Examination records in one canonical form (`ExamRecord`), and each country's grading rules."""
from __future__ import annotations

from dataclasses import dataclass, field

RESULT_AUTHENTIC = "authentic"
RESULT_WITHHELD = "withheld"
RESULT_CANCELLED = "cancelled"
OUTCOME_NOT_FOUND = "not_found"

# Subjects by registry and level. A-Level/UACE principal subjects come from the combination.
NESA_P_LEVEL_SUBJECTS = ("Mathematics", "English", "Kinyarwanda", "Science and Elementary Technology",
                         "Social and Religious Studies")
NESA_O_LEVEL_SUBJECTS = ("Mathematics", "English", "Kinyarwanda", "French", "Physics", "Chemistry", "Biology",
                         "History", "Geography", "Entrepreneurship")
NESA_COMBINATIONS = {
    "PCM": ("Physics", "Chemistry", "Mathematics"),
    "PCB": ("Physics", "Chemistry", "Biology"),
    "MCB": ("Mathematics", "Chemistry", "Biology"),
    "MEG": ("Mathematics", "Economics", "Geography"),
    "HEG": ("History", "Economics", "Geography"),
    "HGL": ("History", "Geography", "Literature in English"),
    "MPC": ("Mathematics", "Physics", "Computer Science"),
}
NESA_A_LEVEL_SUBSIDIARIES = ("General Studies and Communication Skills", "Entrepreneurship")
UNEB_PLE_SUBJECTS = ("English", "Mathematics", "Integrated Science", "Social Studies with Religious Education")
UNEB_UCE_SUBJECTS = ("English Language", "Mathematics", "Physics", "Chemistry", "Biology", "Geography",
                     "History", "Christian Religious Education", "Commerce")
UNEB_COMBINATIONS = {
    "PCM": ("Physics", "Chemistry", "Mathematics"),
    "BCM": ("Biology", "Chemistry", "Mathematics"),
    "HEG": ("History", "Economics", "Geography"),
    "MEE": ("Mathematics", "Economics", "Entrepreneurship Education"),
    "LED": ("Literature in English", "Economics", "Divinity"),
}
UNEB_UACE_SUBSIDIARIES = ("General Paper", "Subsidiary ICT")
KNEC_KCPE_SUBJECTS = ("English", "Kiswahili", "Mathematics", "Science", "Social Studies and Religious Education")
KNEC_KCSE_SUBJECTS = ("English", "Kiswahili", "Mathematics", "Biology", "Chemistry", "Physics", "Geography",
                      "Business Studies")

LETTER_POINTS = {"A": 6, "B": 5, "C": 4, "D": 3, "E": 2, "O": 1, "S": 1, "F": 0}
UNEB_NUMERIC_GRADES = ("D1", "D2", "C3", "C4", "C5", "C6", "P7", "P8", "F9")
KCSE_POINTS = {"A": 12, "A-": 11, "B+": 10, "B": 9, "B-": 8, "C+": 7, "C": 6, "C-": 5, "D+": 4, "D": 3,
               "D-": 2, "E": 1}
# KNEC mean grade bands on the total of the best seven subjects (out of 84).
KCSE_MEAN_GRADE_BANDS = ((81, "A"), (74, "A-"), (67, "B+"), (60, "B"), (53, "B-"), (46, "C+"), (39, "C"),
                         (32, "C-"), (25, "D+"), (18, "D"), (11, "D-"), (0, "E"))
KCPE_GRADE_BANDS = ((80, "A"), (75, "A-"), (70, "B+"), (65, "B"), (60, "B-"), (55, "C+"), (50, "C"),
                    (45, "C-"), (40, "D+"), (35, "D"), (30, "D-"), (0, "E"))


@dataclass(frozen=True)
class ExamRecord:
    """One candidate's result as a registry holds it."""

    registry: str
    level: str
    identifiers: tuple[tuple[str, str], ...]
    reference: str
    full_name: str
    gender: str
    date_of_birth: str
    year: int
    school: str
    centre_code: str
    subjects: tuple[tuple[str, str], ...]
    result: str = RESULT_AUTHENTIC
    combination: str | None = None
    summary: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def request(self) -> dict[str, str]:
        """The request body that finds this record."""
        return {"issuer": self.registry, **dict(self.identifiers)}

    def response_record(self) -> dict:
        """The `record` object of a verification response."""
        released = self.result == RESULT_AUTHENTIC
        record = {
            "id": self.reference,
            "candidate": {"full_name": self.full_name, "gender": self.gender, "date_of_birth": self.date_of_birth},
            "level": self.level,
            "year": self.year,
            "school": self.school,
        }
        if self.registry == "NESA" and self.combination and released:
            record["combination"] = self.combination
        record["subjects"] = [{"subject": name, "grade": grade} for name, grade in self.subjects] if released else []
        if released:
            record.update(self.summary)
        return record


def lookup_key(registry: str, identifiers: dict[str, str]) -> tuple:
    return (registry, tuple(sorted(identifiers.items())))


def record_key(record: ExamRecord) -> tuple:
    return lookup_key(record.registry, dict(record.identifiers))


def nesa_summary(level: str, subjects: tuple[tuple[str, str], ...]) -> dict:
    grades = [grade for _, grade in subjects]
    if level == "A-Level":
        principal = sum(LETTER_POINTS[grade] for grade in grades[:3])
        subsidiary = sum(1 for grade in grades[3:] if grade != "F")
        return {"aggregate": f"{principal + subsidiary}/20"}
    if level == "O-Level":
        aggregate = sum(sorted(int(grade) for grade in grades)[:8])
        return {"division": _band(aggregate, ((32, "I"), (45, "II"), (58, "III"), (68, "IV")), "U")}
    return {}


def uneb_summary(level: str, subjects: tuple[tuple[str, str], ...]) -> dict:
    grades = [grade for _, grade in subjects]
    if level == "UACE":
        principal = sum(LETTER_POINTS[grade] for grade in grades[:3])
        subsidiary = sum(1 for grade in grades[3:] if int(grade[-1]) <= 6)
        return {"points": principal + subsidiary}
    values = sorted(int(grade[-1]) for grade in grades)
    if level == "PLE":
        return {"division": _band(sum(values[:4]), ((12, "1"), (23, "2"), (29, "3"), (33, "4")), "U")}
    return {"division": _band(sum(values[:8]), ((32, "1"), (45, "2"), (58, "3"), (68, "4")), "U")}


def knec_summary(level: str, subjects: tuple[tuple[str, str], ...], marks: tuple[int, ...] = ()) -> dict:
    if level == "KCPE":
        return {"total_marks": sum(marks)}
    best_seven = sorted((KCSE_POINTS[grade] for _, grade in subjects), reverse=True)[:7]
    total = sum(best_seven)
    return {"mean_grade": next(grade for floor, grade in KCSE_MEAN_GRADE_BANDS if total >= floor),
            "total_points": total}


def kcpe_grade(marks: int) -> str:
    return next(grade for floor, grade in KCPE_GRADE_BANDS if marks >= floor)


def _band(value: int, upper_bounds: tuple[tuple[int, str], ...], otherwise: str) -> str:
    return next((label for bound, label in upper_bounds if value <= bound), otherwise)


def build_record(*, registry: str, level: str, identifiers: dict[str, str], reference: str, full_name: str,
                 gender: str, date_of_birth: str, year: int, school: str, centre_code: str,
                 grades: tuple, combination: str | None = None, result: str = RESULT_AUTHENTIC) -> ExamRecord:
    """Build a record from per-subject grades (KCPE: marks), computing the level's summary figures."""
    subject_names = subjects_for(registry, level, combination)
    if len(grades) != len(subject_names):
        raise ValueError(f"{registry} {level} needs {len(subject_names)} grades, got {len(grades)}")
    if registry == "KNEC" and level == "KCPE":
        subjects = tuple((name, kcpe_grade(mark)) for name, mark in zip(subject_names, grades))
        summary = knec_summary(level, subjects, tuple(grades))
    else:
        subjects = tuple(zip(subject_names, grades))
        summary = {"NESA": nesa_summary, "UNEB": uneb_summary, "KNEC": knec_summary}[registry](level, subjects)
    return ExamRecord(
        registry=registry, level=level, identifiers=tuple(identifiers.items()), reference=reference,
        full_name=full_name, gender=gender, date_of_birth=date_of_birth, year=year, school=school,
        centre_code=centre_code, subjects=subjects, result=result, combination=combination, summary=summary,
    )


def subjects_for(registry: str, level: str, combination: str | None) -> tuple[str, ...]:
    if (registry, level) == ("NESA", "A-Level"):
        return NESA_COMBINATIONS[combination] + NESA_A_LEVEL_SUBSIDIARIES
    if (registry, level) == ("UNEB", "UACE"):
        return UNEB_COMBINATIONS[combination] + UNEB_UACE_SUBSIDIARIES
    return {
        ("NESA", "P-Level"): NESA_P_LEVEL_SUBJECTS,
        ("NESA", "O-Level"): NESA_O_LEVEL_SUBJECTS,
        ("UNEB", "PLE"): UNEB_PLE_SUBJECTS,
        ("UNEB", "UCE"): UNEB_UCE_SUBJECTS,
        ("KNEC", "KCPE"): KNEC_KCPE_SUBJECTS,
        ("KNEC", "KCSE"): KNEC_KCSE_SUBJECTS,
    }[(registry, level)]
