"""Registry simulator: a Werkzeug HTTP server speaking NESA's, UNEB's and KNEC's wire formats from
`SIMULATED_RECORDS`, switchable to misbehave (docs/verification.md, "Registry simulator").
"""
from __future__ import annotations

import hmac
import json
import threading
import time
from dataclasses import asdict, dataclass
from datetime import date
from xml.etree.ElementTree import Element, ParseError, SubElement, tostring

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring
from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, Rule
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

from core.accounts.api_authentication import authorization_token
from core.verification.adapters.nesa import LEVELS_FROM_WIRE
from core.verification.exam_records import ExamRecord
from devtools import MODES
from devtools.simulated_records import SIMULATED_RECORDS, find_simulated_record

REGISTRY_CODES = ("NESA", "UNEB", "KNEC")
WIRE_STATUS = {"authentic": "RELEASED", "withheld": "WITHHELD", "cancelled": "CANCELLED"}
UNEB_WIRE_STATUS = {"authentic": "FOUND", "withheld": "WITHHELD", "cancelled": "CANCELLED"}
REDIRECTED_MARK = "redirected"


@dataclass
class Behaviour:
    mode: str = "normal"
    delay: float = 0.0
    status: int = 500


class SimulatorState:
    """Per-registry behaviour, shared by the server's threads."""

    def __init__(self, tokens: dict[str, str]):
        self.tokens = tokens
        self._lock = threading.Lock()
        self._behaviour = {code: Behaviour() for code in REGISTRY_CODES}

    def set(self, mode: str, delay: float = 0.0, status: int = 500, registry: str | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        with self._lock:
            for code in [registry] if registry else REGISTRY_CODES:
                self._behaviour[code] = Behaviour(mode=mode, delay=delay, status=status)

    def get(self, registry: str) -> Behaviour:
        with self._lock:
            return Behaviour(**asdict(self._behaviour[registry]))

    def snapshot(self) -> dict:
        with self._lock:
            return {code: asdict(behaviour) for code, behaviour in self._behaviour.items()}


class RegistrySimulator:
    """The WSGI application."""

    def __init__(self, tokens: dict[str, str]):
        self.state = SimulatorState(tokens)
        self.url_map = Map([
            Rule("/nesa/api/v1/results/verify", endpoint="nesa", methods=["POST"]),
            Rule("/uneb/ResultVerification/verify", endpoint="uneb", methods=["POST"]),
            Rule("/knec/v2/candidates/<index_number>/results", endpoint="knec", methods=["GET"]),
            Rule("/_simulator/health", endpoint="health", methods=["GET"]),
            Rule("/_simulator/records", endpoint="records", methods=["GET"]),
            Rule("/_simulator/behaviour", endpoint="behaviour", methods=["GET", "PUT"]),
        ])

    def __call__(self, environ, start_response):
        request = Request(environ)
        try:
            endpoint, arguments = self.url_map.bind_to_environ(environ).match()
            response = getattr(self, f"on_{endpoint}")(request, **arguments)
        except HTTPException as error:
            response = error.get_response()
        return response(environ, start_response)

    # --- control -------------------------------------------------------------------------------------------

    def on_health(self, request: Request) -> Response:
        return _json({"status": "ok"})

    def on_records(self, request: Request) -> Response:
        wanted = request.args.get("registry")
        return _json({"records": [
            {"request": record.request, "result": record.result, "reference": record.reference}
            for record in SIMULATED_RECORDS if wanted in (None, record.registry)
        ]})

    def on_behaviour(self, request: Request) -> Response:
        if request.method == "PUT":
            settings = request.get_json(silent=True) or {}
            registry = settings.get("registry")
            if registry is not None and registry not in REGISTRY_CODES:
                return _json({"error": f"registry must be one of {', '.join(REGISTRY_CODES)}"}, 400)
            try:
                self.state.set(str(settings.get("mode", "normal")), float(settings.get("delay", 0)),
                               int(settings.get("status", 500)), registry)
            except (TypeError, ValueError) as error:
                return _json({"error": str(error)}, 400)
        return _json(self.state.snapshot())

    # --- registries ----------------------------------------------------------------------------------------

    def _misbehave(self, registry: str, request: Request, garbage: Response) -> Response | None:
        behaviour = self.state.get(registry)
        if behaviour.mode == "slow":
            time.sleep(behaviour.delay)
        elif behaviour.mode == "error":
            return Response(f"<html><body><h1>{behaviour.status} upstream error</h1></body></html>",
                            status=behaviour.status, content_type="text/html")
        elif behaviour.mode == "garbage":
            return garbage
        elif behaviour.mode == "redirect" and request.args.get(REDIRECTED_MARK) is None:
            separator = "&" if request.query_string else "?"
            target = request.full_path.rstrip("?") + f"{separator}{REDIRECTED_MARK}=1"
            return Response("", status=302, headers={"Location": target})
        return None

    def _authorised(self, registry: str, presented: str | None) -> bool:
        expected = self.state.tokens.get(registry, "")
        return bool(presented) and hmac.compare_digest(presented.encode(), expected.encode())

    def on_nesa(self, request: Request) -> Response:
        garbage = Response('{"status": "FOUND", "result": {"reference": "NESA-', content_type="application/json")
        if (misbehaved := self._misbehave("NESA", request, garbage)) is not None:
            return misbehaved
        if not self._authorised("NESA", authorization_token(request.headers.get("Authorization"), "Bearer")):
            return _json({"status": "UNAUTHORIZED", "message": "invalid bearer token"}, 401)
        body = request.get_json(silent=True)
        if not isinstance(body, dict) or body.get("examLevel") not in LEVELS_FROM_WIRE:
            return _json({"status": "BAD_REQUEST", "message": "nationalId, indexNumber, examLevel required"}, 400)
        record = find_simulated_record("NESA", {
            "national_id": str(body.get("nationalId")), "exam_number": str(body.get("indexNumber")),
            "level": LEVELS_FROM_WIRE[body["examLevel"]]})
        if record is None:
            return _json({"status": "NOT_FOUND", "message": "No result matches these identifiers"}, 404)
        return _json({"status": "FOUND", "result": nesa_result(record)})

    def on_uneb(self, request: Request) -> Response:
        garbage = Response("<ResultVerificationResponse><Status>FOUND</Status><Candidate><Name>",
                           content_type="application/xml")
        if (misbehaved := self._misbehave("UNEB", request, garbage)) is not None:
            return misbehaved
        if not self._authorised("UNEB", request.headers.get("X-UNEB-Api-Key")):
            return Response("<Error>invalid API key</Error>", status=401, content_type="application/xml")
        try:
            root = fromstring(request.get_data(), forbid_dtd=True)
            identifiers = {"index_number": root.findtext("IndexNumber", ""), "year": root.findtext("ExamYear", ""),
                           "level": root.findtext("Examination", "")}
        except (ParseError, DefusedXmlException):
            return Response("<Error>malformed request</Error>", status=400, content_type="application/xml")
        record = find_simulated_record("UNEB", identifiers)
        return Response(uneb_response_xml(record), content_type="application/xml; charset=utf-8")

    def on_knec(self, request: Request, index_number: str) -> Response:
        garbage = _json({"success": True, "data": {"candidate": "unavailable", "subjects": None}})
        if (misbehaved := self._misbehave("KNEC", request, garbage)) is not None:
            return misbehaved
        if not self._authorised("KNEC", authorization_token(request.headers.get("Authorization"), "Token")):
            return _json({"success": False, "error": {"code": "UNAUTHORIZED", "message": "bad token"}}, 401)
        record = find_simulated_record("KNEC", {
            "index_number": index_number, "year": request.args.get("year", ""),
            "examination": request.args.get("exam", "")})
        if record is None:
            return _json({"success": False, "error": {"code": "CANDIDATE_NOT_FOUND",
                                                      "message": "No candidate with this index number"}}, 404)
        return _json({"success": True, "data": knec_data(record)})


def nesa_result(record: ExamRecord) -> dict:
    examination = {
        "level": {"P-Level": "PLEVEL", "O-Level": "OLEVEL", "A-Level": "ALEVEL"}[record.level],
        "year": record.year,
        "centre": {"code": record.centre_code, "name": record.school},
        "subjects": [{"name": name, "grade": grade} for name, grade in record.subjects],
    }
    if record.combination:
        examination["combination"] = record.combination
    if "aggregate" in record.summary:
        score, out_of = record.summary["aggregate"].split("/")
        examination["aggregate"] = {"score": int(score), "outOf": int(out_of)}
    if "division" in record.summary:
        examination["division"] = record.summary["division"]
    return {
        "reference": record.reference,
        "resultStatus": WIRE_STATUS[record.result],
        "candidate": {"names": record.full_name, "sex": record.gender[0].upper(),
                      "dateOfBirth": record.date_of_birth},
        "examination": examination,
    }


def uneb_response_xml(record: ExamRecord | None) -> bytes:
    root = Element("ResultVerificationResponse")
    if record is None:
        SubElement(root, "Status").text = "NOT_FOUND"
        return tostring(root, encoding="utf-8", xml_declaration=True)
    SubElement(root, "Status").text = UNEB_WIRE_STATUS[record.result]
    candidate = SubElement(root, "Candidate")
    SubElement(candidate, "SerialNumber").text = record.reference
    SubElement(candidate, "Name").text = record.full_name
    SubElement(candidate, "Sex").text = record.gender[0].upper()
    SubElement(candidate, "DateOfBirth").text = date.fromisoformat(record.date_of_birth).strftime("%d/%m/%Y")
    SubElement(root, "Centre", number=record.centre_code).text = record.school
    attributes = {"year": str(record.year)}
    if record.combination:
        attributes["combination"] = record.combination
    SubElement(root, "Examination", **attributes).text = record.level
    results = SubElement(root, "Results")
    for name, grade in record.subjects:
        SubElement(results, "Subject", name=name, grade=grade)
    if "division" in record.summary:
        SubElement(root, "Division").text = record.summary["division"]
    if "points" in record.summary:
        SubElement(root, "Points").text = str(record.summary["points"])
    return tostring(root, encoding="utf-8", xml_declaration=True)


def knec_data(record: ExamRecord) -> dict:
    data = {
        "candidate": {"index_number": dict(record.identifiers)["index_number"], "name": record.full_name,
                      "gender": record.gender.upper(), "dob": record.date_of_birth},
        "school": {"code": record.centre_code, "name": record.school},
        "exam": record.level,
        "year": record.year,
        "certificate_number": record.reference,
        "result_status": WIRE_STATUS[record.result],
        "subjects": [{"code": f"{101 + position}", "name": name, "grade": grade}
                     for position, (name, grade) in enumerate(record.subjects)],
    }
    for name in ("mean_grade", "total_points", "total_marks"):
        data[name] = record.summary.get(name)
    return data


def _json(payload: dict, status: int = 200) -> Response:
    return Response(json.dumps(payload), status=status, content_type="application/json")


class _QuietRequestHandler(WSGIRequestHandler):
    def log_request(self, *args, **kwargs) -> None:
        pass


def create_server(host: str, port: int, tokens: dict[str, str], *,
                  log_requests: bool = False) -> tuple[BaseWSGIServer, RegistrySimulator]:
    """A threaded HTTP/1.1 (keep-alive) server; `port=0` picks a free port (see `server.server_port`)."""
    simulator = RegistrySimulator(tokens)
    handler = None if log_requests else _QuietRequestHandler
    server = make_server(host, port, simulator, threaded=True, request_handler=handler)
    server.daemon_threads = True
    return server, simulator

