"""The check every page handler that runs programs or writes files calls first: the same guard as the API's
endpoints (app.api.gradio_api), so a page and an endpoint refuse a caller with one rule and one sentence."""

from __future__ import annotations

from app.api.gradio_api import access_refused as caller_may_act
from app.api.gradio_api import require_access

__all__ = ["caller_may_act", "require_access"]
