"""The staff portal (server-rendered, htmx) and the public trial-verification page."""
from __future__ import annotations

from flask import Blueprint, redirect, url_for

from core.extensions import db, login_manager
from core.models import User

bp = Blueprint("portal", __name__)


@login_manager.user_loader
def load_user(user_id: str):
    return db.session.get(User, user_id)


@bp.get("/")
def index():
    return redirect(url_for("health.healthz"))
