"""`image_url` parts of /v1/chat/completions: data URLs of base64 PNG or JPEG; remote URLs are refused."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from .bodies import bad_request, check_fields, get

MAX_IMAGE_BYTES = 20 * 1024 * 1024  # one picture's encoded bytes


def image_part(part: dict[str, Any], where: str):
    """One `{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}` part as a SeenImage; a 400
    naming the field for anything else (a remote URL, another media type, bytes that are not PNG or JPEG)."""
    from ..audio.seen import ImageInputError, read_image_bytes

    check_fields(part, {"type", "image_url"}, where + ".")
    inner = get(part, "image_url", dict, where=where + ".", required=True)
    check_fields(inner, {"url", "detail"}, where + ".image_url.")
    url = get(inner, "url", str, where=where + ".image_url.", required=True)
    param = where + ".image_url.url"
    if url.startswith(("http://", "https://")):
        raise bad_request(f"{param}: remote image URLs are not fetched by this server; send the picture as a data URL "
                          "(data:image/png;base64,...)", param, "unsupported_value")
    head, comma, data = url.partition(",")
    if not url.startswith("data:") or not comma or not head.endswith(";base64"):
        raise bad_request(f"{param}: expected a data URL of a base64 PNG or JPEG (data:image/png;base64,...)", param)
    media = head[len("data:"):-len(";base64")].lower()
    if media not in ("image/png", "image/jpeg", "image/jpg"):
        raise bad_request(f"{param}: a {media or 'untyped'} data URL; PNG and JPEG are read", param,
                          "unsupported_value")
    if len(data) > MAX_IMAGE_BYTES * 4 // 3 + 4:
        raise bad_request(f"{param}: over {MAX_IMAGE_BYTES // (1024 * 1024)} MiB", param)
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise bad_request(f"{param} is not base64", param) from None
    try:
        return read_image_bytes(raw, "the image")
    except ImageInputError as exc:
        raise bad_request(f"{param}: {exc}", param) from None
