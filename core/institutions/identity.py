"""The institution's identity for its applicants (name, logo, colour, contact, website, footer) on emails and
public pages; `update_identity` stores all fields or none (`IdentityRefused`).
"""
from __future__ import annotations

import hashlib
import io
import re
import warnings
from dataclasses import dataclass
from urllib.parse import urlsplit

from flask_babel import gettext as _
from flask_babel import lazy_gettext
from PIL import Image, UnidentifiedImageError

from core.accounts.preferences import time_zone_of
from core.db import db
from core.errors import InvalidInput, NotFound, problem
from core.messages.addresses import header_safe, valid_email
from core.models import Institution
from core.scoping import InstitutionScope

# The colour of the platform's own pages; white text on it passes WCAG AA.
DEFAULT_COLOUR = "#0b5d57"
# WCAG 2.x AA for normal text: the contrast of white text (the pages' header, buttons) on the brand colour.
MINIMUM_CONTRAST = 4.5
# Also the Settings page's live warning (static/brand-settings.js fills in the colour and the ratio).
CONTRAST_MESSAGE = lazy_gettext("White text on %(colour)s has a contrast of %(ratio).2f:1; choose a darker colour "
                                "(at least 4.5:1, WCAG AA).")
LOGO_MAX_BYTES = 256 * 1024
# Larger logos are scaled down to fit this box (pixels) before they are stored: pages show them small.
LOGO_MAX_SIDE = 512
# The largest side (pixels) of an upload that is decoded at all: 256 KB of PNG can hold 9000 × 9000 pixels
# of one colour, 700 MB and seconds of work to decode; 4096 × 4096 takes about 70 MB.
LOGO_MAX_UPLOAD_SIDE = 4096
# Pillow's names of the accepted formats, and the content type each is stored and served with. A multi-picture
# JPEG (MPO: many phones' photos) is a JPEG whose first picture is the logo.
LOGO_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg"}
# A progressive JPEG is decoded once per scan over the whole picture: 3,700 scans fit in 256 KB and cost a minute
# of CPU at 4000 × 4000 pixels. Encoders write about 10; this many costs under a second at the largest size.
LOGO_MAX_JPEG_SCANS = 32
LOGO_EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg"}
LOGO_PATH = "/brand/{institution_id}/{file_name}"
TEXT_LIMITS = {"display_name": 200, "contact_email": 254, "website": 300, "footer": 300}
IDENTITY_FIELDS = ("display_name", "brand_colour", "contact_email", "website", "footer")
_HEX_COLOUR = re.compile(r"^#?([0-9a-fA-F]{6}|[0-9a-fA-F]{3})$")


@dataclass(frozen=True)
class ApplicantIdentity:
    """What an applicant sees of an institution, defaults filled in."""
    institution_id: str
    name: str
    colour: str
    contact_email: str | None
    website: str | None
    footer: str | None
    logo_digest: str | None
    logo_type: str | None
    time_zone: str
    language: str

    @property
    def logo_file_name(self) -> str | None:
        """`logo-<digest>.<png|jpg>`: the last segment of the logo's URL, new for each new logo."""
        if not self.logo_digest:
            return None
        return f"logo-{self.logo_digest}.{LOGO_EXTENSIONS[self.logo_type]}"

    @property
    def logo_path(self) -> str | None:
        """The logo's URL path (served by the `brand` blueprint), or None without a logo; emails prefix it with
        PUBLIC_BASE_URL."""
        if not self.logo_digest:
            return None
        return LOGO_PATH.format(institution_id=self.institution_id, file_name=self.logo_file_name)


class IdentityRefused(InvalidInput):
    """One or more identity fields are wrong; `errors` names each (nothing was stored)."""


def applicant_identity(institution: Institution) -> ApplicantIdentity:
    return ApplicantIdentity(
        institution_id=institution.id, name=institution.display_name or institution.name,
        colour=institution.brand_colour or DEFAULT_COLOUR, contact_email=institution.contact_email,
        website=institution.website, footer=institution.footer, logo_digest=institution.logo_digest,
        logo_type=institution.logo_type, time_zone=time_zone_of(InstitutionScope(institution.id)),
        language=institution.default_language)


def identity_of(scope: InstitutionScope) -> ApplicantIdentity:
    institution = scope.institution()
    if institution is None:
        raise NotFound("Institution not found")
    return applicant_identity(institution)


def _channel(hex_pair: str) -> float:
    value = int(hex_pair, 16) / 255
    return value / 12.92 if value <= 0.04045 else ((value + 0.055) / 1.055) ** 2.4


def relative_luminance(colour: str) -> float:
    """WCAG 2.x relative luminance of `#rrggbb`."""
    red, green, blue = (_channel(colour[index:index + 2]) for index in (1, 3, 5))
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def contrast_ratio(first: str, second: str) -> float:
    """WCAG 2.x contrast ratio of two `#rrggbb` colours (1 to 21)."""
    lighter, darker = sorted((relative_luminance(first), relative_luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def _normal_colour(text: str) -> str | None:
    match = _HEX_COLOUR.match(text)
    if match is None:
        return None
    digits = match.group(1)
    if len(digits) == 3:
        digits = "".join(digit * 2 for digit in digits)
    return "#" + digits.lower()


def _website_address(text: str) -> bool:
    """An http(s) address with a host name, no user or password, no space or control character (a NUL
    would not even reach the database)."""
    if not all(char.isprintable() and not char.isspace() for char in text):
        return False
    try:
        parts = urlsplit(text)
        hostname = parts.hostname
    except ValueError:  # an unbalanced [ or ] (IPv6 brackets)
        return False
    return parts.scheme in ("https", "http") and bool(hostname) and "." in hostname \
        and not parts.username and not parts.password


def _clean(name: str, raw: str | None) -> tuple[str | None, str | None]:
    """(the value to store, or None for "the default"; an error message or None)."""
    text = " ".join((raw or "").split())
    if not text:
        return None, None
    if name in TEXT_LIMITS and len(text) > TEXT_LIMITS[name]:
        return None, _("At most %(limit)d characters.", limit=TEXT_LIMITS[name])
    if name == "brand_colour":
        colour = _normal_colour(text)
        if colour is None:
            return None, _("Give a colour as # and six hexadecimal digits, for example #0b5d57.")
        ratio = contrast_ratio(colour, "#ffffff")
        if ratio < MINIMUM_CONTRAST:
            return None, CONTRAST_MESSAGE % {"colour": colour, "ratio": ratio}
        return colour, None
    if name == "contact_email":
        return (text, None) if valid_email(text) else (None, _("Give one email address, such as admissions@example.ac.rw."))
    if name == "website":
        return (text, None) if _website_address(text) else (
            None, _("Give the full address of the website, starting with https://."))
    return header_safe(text, TEXT_LIMITS[name]), None


def update_identity(scope: InstitutionScope, values: dict[str, str | None]) -> list[str]:
    """Check and store the identity fields given in `values` (an empty value restores the default); returns
    the names of the fields that changed. Raises IdentityRefused, storing nothing, when any value is wrong."""
    institution = scope.institution()
    if institution is None:
        raise NotFound("Institution not found")
    cleaned, errors = {}, []
    for name in IDENTITY_FIELDS:
        if name not in values:
            continue
        cleaned[name], error = _clean(name, values[name])
        if error:
            errors.append(problem("body", name, error))
    if errors:
        raise IdentityRefused(errors[0]["message"], errors=errors)
    changed = [name for name, value in cleaned.items() if getattr(institution, name) != value]
    for name in changed:
        setattr(institution, name, cleaned[name])
    db.session.commit()
    return changed


def reencoded_logo(data: bytes) -> tuple[bytes, str]:
    """The logo's pixels as a new PNG or JPEG file (the uploaded format), and its content type.

    Raises InvalidInput (field `logo`) unless a complete PNG or JPEG of at most 256 KB and 4096 px a side.
    """
    if not data:
        raise InvalidInput(_("Choose a PNG or JPEG file."), field="logo")
    if len(data) > LOGO_MAX_BYTES:
        raise InvalidInput(_("The logo is %(size)d KB; the limit is 256 KB.", size=-(-len(data) // 1024)),
                           field="logo")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=list(LOGO_TYPES)) as image:  # an MPO opens as a JPEG
                image_format = image.format
                if max(image.size) > LOGO_MAX_UPLOAD_SIDE:  # known from the header, before any decoding
                    raise InvalidInput(_("The logo is %(width)d × %(height)d pixels; make each side at most "
                                         "%(limit)d pixels.", width=image.width, height=image.height,
                                         limit=LOGO_MAX_UPLOAD_SIDE), field="logo")
                if image_format in ("JPEG", "MPO"):
                    scans = jpeg_scans(data)
                    if scans > LOGO_MAX_JPEG_SCANS:
                        raise InvalidInput(_("The logo is a JPEG of %(scans)d scans, more than %(limit)d; save it "
                                             "again as a standard JPEG or as PNG.", scans=scans,
                                             limit=LOGO_MAX_JPEG_SCANS), field="logo")
                    image_format = "JPEG"
                image.load()  # the first picture of an MPO
                pixels = image.copy()
    except (UnidentifiedImageError, Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise InvalidInput(_("The logo must be a PNG or JPEG image."), field="logo") from None
    except (OSError, SyntaxError, ValueError):
        raise InvalidInput(_("The logo file is damaged or incomplete; export it again as PNG or JPEG."),
                           field="logo") from None
    pixels.thumbnail((LOGO_MAX_SIDE, LOGO_MAX_SIDE))
    # Pillow's encoders write some of the source's `info` back (a JPEG comment, an ICC profile): keep only the
    # transparency, which is part of the pixels.
    pixels.info = {key: value for key, value in pixels.info.items() if key == "transparency"}
    output = io.BytesIO()
    if image_format == "JPEG":
        pixels.convert("RGB").save(output, format="JPEG", quality=90)
    else:
        if pixels.mode not in ("RGB", "RGBA", "L", "LA", "P"):
            pixels = pixels.convert("RGBA")
        pixels.save(output, format="PNG", optimize=True)
    return output.getvalue(), LOGO_TYPES[image_format]


def jpeg_scans(data: bytes) -> int:
    """How many scans (SOS segments) the first picture of a JPEG file has, read from its markers without decoding
    (an embedded thumbnail or a later MPO picture is not counted)."""
    scans, position, end = 0, 2, len(data)
    while position + 4 <= end:
        if data[position] != 0xFF:
            return scans  # damaged: the decoder says so
        marker = data[position + 1]
        if marker == 0xFF:  # fill byte
            position += 1
            continue
        if marker == 0xD9:  # end of image
            return scans
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:  # restart markers and TEM stand alone
            position += 2
            continue
        position += 2 + int.from_bytes(data[position + 2:position + 4], "big")
        if marker == 0xDA:  # start of scan: skip its entropy-coded data to the next marker
            scans += 1
            while True:
                position = data.find(b"\xff", position)
                if position < 0 or position + 1 >= end:
                    return scans
                if data[position + 1] != 0x00 and not 0xD0 <= data[position + 1] <= 0xD7:
                    break  # a marker (stuffed zeros and restart markers are part of the scan)
                position += 2
    return scans


def set_logo(scope: InstitutionScope, data: bytes) -> str:
    """Store the re-encoded logo; returns its digest (nothing is stored when the file is refused)."""
    institution = scope.institution()
    if institution is None:
        raise NotFound("Institution not found")
    logo, content_type = reencoded_logo(data)
    institution.logo, institution.logo_type = logo, content_type
    institution.logo_digest = hashlib.sha256(logo).hexdigest()[:16]
    db.session.commit()
    return institution.logo_digest


def remove_logo(scope: InstitutionScope) -> bool:
    """Remove the logo; returns whether there was one."""
    institution = scope.institution()
    if institution is None:
        raise NotFound("Institution not found")
    had_logo = institution.logo_digest is not None
    institution.logo = institution.logo_type = institution.logo_digest = None
    db.session.commit()
    return had_logo


def logo_file(scope: InstitutionScope, digest: str) -> tuple[bytes, str]:
    """The stored logo and its content type, if `digest` names the current one; NotFound otherwise (a logo is
    public: applicants see it on the institution's pages and emails)."""
    institution = scope.institution()
    if institution is None or not institution.logo_digest or institution.logo_digest != digest:
        raise NotFound("No such logo")
    return institution.logo, institution.logo_type
