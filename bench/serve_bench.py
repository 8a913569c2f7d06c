"""Server time of `torchgrabcut serve` per box and per refinement, on a 1-megapixel image.

Drives the Flask app in process (its test client: no sockets) on the bundled astronaut
scaled to 1 MP: opens it, then repeats [box, background stroke, undo]. Prints the medians of
the times the server reports: ``grabcut_ms`` (the GrabCut call, GPU work finished) and
``server_ms`` (the whole request: stroke painting, GrabCut, mask encoding).

    python bench/serve_bench.py                 # the GPU when usable, else the CPU
    python bench/serve_bench.py --device cpu --repeats 3
"""

from __future__ import annotations

import argparse
import io
import statistics

import numpy as np
from PIL import Image

from torchgrabcut.data import BUNDLED_BOX_FRACTION, BUNDLED_IMAGE
from torchgrabcut.imageio import read_image
from torchgrabcut.server.app import create_app
from torchgrabcut.server.config import ServerConfig
from torchgrabcut.tools.speed import scaled_image


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when usable)")
    parser.add_argument("--megapixels", type=float, default=1.0, help="image size (default 1)")
    parser.add_argument("--repeats", type=int, default=10, help="timed rounds after one warm-up (default 10)")
    parser.add_argument("--refine-iter", type=int, default=1, help="iterations per refinement (default 1)")
    args = parser.parse_args()

    img = scaled_image(read_image(BUNDLED_IMAGE), args.megapixels)
    h, w = img.shape[:2]
    fx0, fy0, fx1, fy1 = BUNDLED_BOX_FRACTION
    box = {"x0": int(fx0 * w), "y0": int(fy0 * h), "x1": int(fx1 * w), "y1": int(fy1 * h)}
    # A background stroke across the flag, left of the astronaut's shoulder (inside the box).
    stroke = {
        "label": "bg",
        "radius": max(2, round(0.01 * w)),
        "points": [[int(0.06 * w), int(0.35 * h)], [int(0.12 * w), int(0.45 * h)]],
    }

    app = create_app(ServerConfig(device=args.device, refine_iter=args.refine_iter))
    client = app.test_client()
    client.environ_base["HTTP_X_TORCHGRABCUT_TOKEN"] = app.config["TORCHGRABCUT_TOKEN"]  # as the page sends it
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(img[:, :, ::-1])).save(buf, format="PNG")
    r = client.post("/api/image", data={"image": (io.BytesIO(buf.getvalue()), "astronaut.png")})
    if r.status_code != 200:
        raise SystemExit(f"serve_bench: upload failed: {r.get_json()}")

    times: dict[str, list[float]] = {"box": [], "box_server": [], "refine": [], "refine_server": []}
    changed: list[int] = []
    for i in range(args.repeats + 1):
        rb = client.post("/api/box", json=box)
        rs = client.post("/api/strokes", json={"strokes": [stroke]})
        for resp in (rb, rs):
            if resp.status_code != 200:
                raise SystemExit(f"serve_bench: request failed: {resp.get_json()}")
        client.post("/api/undo")
        client.post("/api/undo")
        if i == 0:
            continue  # warm-up
        jb, js = rb.get_json(), rs.get_json()
        times["box"].append(jb["grabcut_ms"])
        times["box_server"].append(jb["server_ms"])
        times["refine"].append(js["grabcut_ms"])
        times["refine_server"].append(js["server_ms"])
        before = np.repeat(jb["mask"]["values"], jb["mask"]["counts"]) & 1
        after = np.repeat(js["mask"]["values"], js["mask"]["counts"]) & 1
        changed.append(int((before != after).sum()))

    med = {k: statistics.median(v) for k, v in times.items()}
    device = rb.get_json()["device"]
    print(
        f"serve_bench: {h * w / 1e6:.1f} MP box {med['box']:.1f} ms, refine {med['refine']:.1f} ms ({device})"
        f" | whole request: box {med['box_server']:.1f} ms, refine {med['refine_server']:.1f} ms"
        f" | {h}x{w}, {args.repeats} rounds, refine {args.refine_iter} iteration(s),"
        f" stroke changed {statistics.median(changed):.0f} px"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
