"""Registry definitions (`REGISTRIES`): the single source of truth for what each examination registry accepts."""
from __future__ import annotations

from dataclasses import dataclass

YEAR_PATTERN = r"^[0-9]{4}$"


@dataclass(frozen=True)
class FieldSpec:
    name: str
    description: str
    example: str
    pattern: str | None = None
    pattern_message: str | None = None
    enum: tuple[str, ...] = ()
    required: bool = True
    is_year: bool = False

    def public(self) -> dict:
        """The field as published by the issuers endpoint."""
        described = {"name": self.name, "required": self.required, "type": "string"}
        if self.pattern:
            described["pattern"] = self.pattern
        if self.enum:
            described["enum"] = list(self.enum)
        described["description"] = self.description
        described["example"] = self.example
        return described


@dataclass(frozen=True)
class Registry:
    code: str
    name: str
    country: str
    fields: tuple[FieldSpec, ...]
    level_field: str
    levels: tuple[str, ...]

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(spec.name for spec in self.fields)

    def issuer(self) -> dict:
        """The `issuer` object of verification responses."""
        return {"code": self.code, "name": self.name, "country": self.country}


def _year_field(description: str, example: str) -> FieldSpec:
    return FieldSpec(
        name="year", description=description, example=example, pattern=YEAR_PATTERN,
        pattern_message="must be a 4-digit year such as 2021", is_year=True,
    )


NESA = Registry(
    code="NESA",
    name="National Examination and School Inspection Authority",
    country="Rwanda",
    level_field="level",
    levels=("P-Level", "O-Level", "A-Level"),
    fields=(
        FieldSpec(
            name="national_id",
            description="16-digit national identity number (Indangamuntu) of the candidate",
            example="1200380012345017", pattern=r"^[0-9]{16}$",
            pattern_message="must be exactly 16 digits",
        ),
        FieldSpec(
            name="exam_number",
            description="Index number printed on the examination slip",
            example="0105020034", pattern=r"^[0-9A-Z][0-9A-Z/-]{3,23}$",
            pattern_message="must be 4 to 24 characters: digits, capital letters, '/' or '-'",
        ),
        FieldSpec(
            name="level", description="Examination level (KNEC calls it `examination`)", example="A-Level",
            enum=("P-Level", "O-Level", "A-Level"),
        ),
    ),
)

UNEB = Registry(
    code="UNEB",
    name="Uganda National Examinations Board",
    country="Uganda",
    level_field="level",
    levels=("PLE", "UCE", "UACE"),
    fields=(
        FieldSpec(
            name="index_number",
            description="Candidate index number: centre number, '/', candidate number (U0001/501 or 005012/045)",
            example="U0035/512", pattern=r"^(U[0-9]{4}|[0-9]{6})/[0-9]{3}$",
            pattern_message="must look like U0035/512 (UCE, UACE) or 005012/045 (PLE)",
        ),
        _year_field("Year the examination was sat", "2019"),
        FieldSpec(
            name="level",
            description="Examination: PLE (primary), UCE (O-Level), UACE (A-Level) (KNEC calls this field "
                        "`examination`)", example="UCE",
            enum=("PLE", "UCE", "UACE"),
        ),
    ),
)

KNEC = Registry(
    code="KNEC",
    name="Kenya National Examinations Council",
    country="Kenya",
    level_field="examination",
    levels=("KCPE", "KCSE"),
    fields=(
        FieldSpec(
            name="index_number",
            description="11-digit index number: 8-digit school code followed by the 3-digit candidate number",
            example="20403001045", pattern=r"^[0-9]{11}$",
            pattern_message="must be exactly 11 digits",
        ),
        _year_field("Year the examination was sat", "2022"),
        FieldSpec(
            name="examination", example="KCSE",
            description="KCPE (primary) or KCSE (secondary). KNEC calls the level `examination`; NESA and UNEB "
                        "call it `level`",
            enum=("KCPE", "KCSE"),
        ),
    ),
)

REGISTRIES: dict[str, Registry] = {registry.code: registry for registry in (NESA, UNEB, KNEC)}

# Fields a client might use to send a candidate's name; names are returned by registries, never sent.
CANDIDATE_NAME_FIELDS = frozenset({
    "name", "full_name", "fullname", "first_name", "last_name", "middle_name", "other_names", "surname",
    "given_name", "family_name", "candidate", "candidate_name",
})
