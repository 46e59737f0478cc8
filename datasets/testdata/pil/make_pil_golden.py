"""Golden outputs of Pillow for datasets/image_test.go (TestMatchesPIL).

Run from the repository root with Debian's Python and Pillow
(/usr/bin/python3, python3-pil 9.4):

    /usr/bin/python3 datasets/testdata/pil/make_pil_golden.py

It writes a small deterministic RGB image (input.png), its resizes by
PIL's Image.resize with BILINEAR and BICUBIC to a smaller and a larger
size, and its convert("L") (ITU-R 601-2 luma), all as PNG.
"""
import os

from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
W, H = 23, 17

img = Image.new("RGB", (W, H))
px = img.load()
for y in range(H):
    for x in range(W):
        # Smooth gradients plus a hashed texture, so that both filters see
        # edges and flat parts.
        r = (x * 11 + y * 3) % 256
        g = (y * 15 + (x * y) % 7 * 20) % 256
        b = ((x * 2654435761 + y * 40503) >> 7) % 256
        px[x, y] = (r, g, b)
img.save(os.path.join(HERE, "input.png"))
img.convert("L").save(os.path.join(HERE, "luma.png"))
for name, f in (("bilinear", Image.BILINEAR), ("bicubic", Image.BICUBIC)):
    for w, h in ((9, 7), (40, 31)):
        img.resize((w, h), f).save(os.path.join(HERE, f"{name}_{w}x{h}.png"))
