"""The API's JSON parser, with limits so that no body can make the server fail.

Kept apart from eventsaas.api: DRF imports its parser classes while its views
module loads, which eventsaas.api itself imports.
"""

import re

from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from rest_framework import exceptions, parsers, renderers
from rest_framework.utils import json

# Characters no text in this API can hold: a lone UTF-16 surrogate (cannot be encoded, stored or
# rendered) and NUL (PostgreSQL refuses it in text).
UNUSABLE_CHARACTERS = re.compile("[\x00\ud800-\udfff]")


def has_unusable_characters(text: str) -> bool:
    return UNUSABLE_CHARACTERS.search(text) is not None


class BodyTooLarge(exceptions.APIException):
    status_code = 400
    default_code = "too_large"
    default_detail = gettext_lazy("The request body is too large.")


class JSONParser(parsers.BaseParser):
    """Strict JSON (like DRF's: no NaN or Infinity) within limits, so that no body can make the server fail.

    Not a subclass of DRF's JSONParser on purpose: DRF hands that one the whole
    body read into memory, so the size limit could only be checked afterwards.

    - at most API_MAX_BODY_BYTES bytes (Content-Length or not): `400 too_large`;
    - at most API_MAX_JSON_DEPTH levels of arrays and objects (about 1,000 exhaust
      Python's recursion limit while parsing): `400 parse_error`;
    - no lone surrogate or NUL in any key or string: `400 parse_error` (they
      could not be stored or rendered back).
    """

    media_type = "application/json"
    renderer_class = renderers.JSONRenderer

    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = parser_context or {}
        limit = settings.API_MAX_BODY_BYTES
        request = parser_context.get("request")
        declared = request.headers.get("content-length") if request is not None else None
        if declared and declared.isdigit() and int(declared) > limit:
            raise BodyTooLarge(_("The request body is larger than %(limit)d bytes.") % {"limit": limit})
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise BodyTooLarge(_("The request body is larger than %(limit)d bytes.") % {"limit": limit})
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        try:
            data = json.loads(raw.decode(encoding))
        except RecursionError as exc:
            raise exceptions.ParseError(self._too_deep()) from exc
        except (ValueError, LookupError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            raise exceptions.ParseError(_("JSON parse error - %(error)s") % {"error": exc}) from exc
        self._check(data)
        return data

    def _too_deep(self) -> str:
        return _("The JSON is nested too deeply (at most %(depth)d levels).") % {"depth": settings.API_MAX_JSON_DEPTH}

    def _check(self, data) -> None:
        """Walk the parsed document without recursion: its depth, and every key and string in it."""
        pending = [(data, 1)]
        while pending:
            value, depth = pending.pop()
            if isinstance(value, (dict, list)):
                if depth > settings.API_MAX_JSON_DEPTH:
                    raise exceptions.ParseError(self._too_deep())
                items = value.items() if isinstance(value, dict) else enumerate(value)
                for key, item in items:
                    if isinstance(key, str) and has_unusable_characters(key):
                        raise exceptions.ParseError(self._unusable())
                    pending.append((item, depth + 1))
            elif isinstance(value, str) and has_unusable_characters(value):
                raise exceptions.ParseError(self._unusable())

    def _unusable(self) -> str:
        return _("The JSON contains a character that text cannot hold (a lone surrogate or NUL).")
