#!/usr/bin/env python3
"""Draws the page's PNG icons (for the web app manifest) from the look of favicon.svg:
a blue rounded square with two white rings, the second one lighter. Standard library
only; run once from this folder and commit the PNGs:

    python3 make-icons.py

icon-192.png and icon-512.png ("any": transparent rounded corners) and
icon-maskable-512.png ("maskable": full bleed, the rings inside the safe zone, the
central circle of 80% of the width)."""

import struct
import zlib

BLUE = (0x2F, 0x6F, 0xDF)
WHITE = (0xFF, 0xFF, 0xFF)
SS = 4  # samples per pixel along each axis


def inside_rounded(x, y, r):
    """Is (x, y) in the 32x32 square with corners of radius r?"""
    if not (0 <= x <= 32 and 0 <= y <= 32):
        return False
    cx = min(max(x, r), 32 - r)
    cy = min(max(y, r), 32 - r)
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r


def on_ring(x, y, cx, cy):
    """Is (x, y) on the ring of centre (cx, cy), radius 6 and stroke 3?"""
    d2 = (x - cx) ** 2 + (y - cy) ** 2
    return 4.5 * 4.5 <= d2 <= 7.5 * 7.5


def sample(x, y, maskable):
    """The colour (r, g, b, a), 0..1, at (x, y) in the 32x32 drawing."""
    if maskable:
        # Full bleed; the rings shrink around the centre into the safe zone.
        if not (0 <= x <= 32 and 0 <= y <= 32):
            return (0, 0, 0, 0)
        x, y = 16 + (x - 16) / 0.8, 16 + (y - 16) / 0.8
    elif not inside_rounded(x, y, 7):
        return (0, 0, 0, 0)
    colour = [c / 255 for c in BLUE]
    if on_ring(x, y, 11.5, 16):
        colour = [c / 255 for c in WHITE]
    if on_ring(x, y, 20.5, 16):
        colour = [0.75 * w / 255 + 0.25 * c for w, c in zip(WHITE, colour)]
    return (*colour, 1)


def draw(size, maskable):
    rows = []
    step = 32 / size
    for py in range(size):
        row = bytearray([0])  # filter: none
        for px in range(size):
            acc = [0.0, 0.0, 0.0, 0.0]
            for sy in range(SS):
                for sx in range(SS):
                    x = (px + (sx + 0.5) / SS) * step
                    y = (py + (sy + 0.5) / SS) * step
                    r, g, b, a = sample(x, y, maskable)
                    acc[0] += r * a
                    acc[1] += g * a
                    acc[2] += b * a
                    acc[3] += a
            n = SS * SS
            alpha = acc[3] / n
            if alpha > 0:
                rgb = [round(255 * c / acc[3]) for c in acc[:3]]
            else:
                rgb = [0, 0, 0]
            row += bytes([*rgb, round(255 * alpha)])
        rows.append(bytes(row))
    return png(size, size, b"".join(rows))


def png(w, h, raw):
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


if __name__ == "__main__":
    for name, size, maskable in [
        ("icon-192.png", 192, False),
        ("icon-512.png", 512, False),
        ("icon-maskable-512.png", 512, True),
    ]:
        with open(name, "wb") as f:
            f.write(draw(size, maskable))
        print(name)
