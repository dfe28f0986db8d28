#!/usr/bin/python3
"""make_image_fixtures.py - the pictures the VGG16 examples run on in CTest.

Run at development time (Debian's python3-pil):  /usr/bin/python3 tools/make_image_fixtures.py
Writes tests/data/images/stripes.png (a zebra-like black-and-white stripe pattern on a
green-brown ground, 120 x 160) and waves.png (a colourful wave pattern, 96 x 96, the
"style" picture), and small.jpg (40 x 30 stripes, a JPEG for the tests). The book's zebra.jpg and style.jpg are downloads; these stand in for
them where there is no network. Deterministic; committed with this script.
"""
import math
import os

from PIL import Image

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "images")


def stripes(w=160, h=120):
    im = Image.new("RGB", (w, h))
    px = im.load()
    for y in range(h):
        for x in range(w):
            ground = (96 + (x * 7 + y * 3) % 40, 120 + (y * 5) % 30, 60)
            inside = (x - 80) ** 2 / 60.0 ** 2 + (y - 62) ** 2 / 40.0 ** 2 < 1.0
            if inside:
                band = math.sin((x + 0.6 * y + 8 * math.sin(y / 9.0)) / 4.0) > 0
                px[x, y] = (235, 235, 230) if band else (20, 20, 25)
            else:
                px[x, y] = ground
    return im


def waves(w=96, h=96):
    im = Image.new("RGB", (w, h))
    px = im.load()
    for y in range(h):
        for x in range(w):
            r = 128 + 127 * math.sin(x / 7.0 + math.sin(y / 11.0) * 2)
            g = 128 + 127 * math.sin(y / 5.0 + x / 13.0)
            b = 128 + 127 * math.cos((x + y) / 9.0)
            px[x, y] = (int(r), int(g), int(b))
    return im


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    stripes().save(os.path.join(OUT, "stripes.png"), optimize=False)
    waves().save(os.path.join(OUT, "waves.png"), optimize=False)
    stripes(40, 30).save(os.path.join(OUT, "small.jpg"), quality=90)
