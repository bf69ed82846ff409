"""QR codes of tickets, drawn by the qrcode library: SVG for pages, PNG for emails (mail clients drop SVG)."""

import io

import qrcode
import qrcode.image.pure
import qrcode.image.svg


def _qr(data: str) -> qrcode.QRCode:
    # Medium error correction survives a cracked phone screen or a crumpled print.
    code = qrcode.QRCode(error_correction=qrcode.constants.ERROR_CORRECT_M, box_size=8, border=2)
    code.add_data(data)
    code.make(fit=True)
    return code


def qr_svg(data: str) -> str:
    """An inline <svg> element (no XML declaration), scalable to any size by CSS."""
    image = _qr(data).make_image(image_factory=qrcode.image.svg.SvgPathImage)
    return image.to_string(encoding="unicode")


def qr_png(data: str) -> bytes:
    buffer = io.BytesIO()
    _qr(data).make_image(image_factory=qrcode.image.pure.PyPNGImage).save(buffer)
    return buffer.getvalue()
