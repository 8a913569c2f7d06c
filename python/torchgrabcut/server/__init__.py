"""The interactive web page (`torchgrabcut serve`): one static page and a small JSON API.

It is an application of the library (``torchgrabcut.api``, ``torchgrabcut.model``), which never
imports it; it needs Flask (the ``serve`` extra), imported only when an app is made.

Modules:

- ``app``: ``create_app`` (the Flask app from a ``ServerConfig``) and ``make_server``.
- ``routes``: the blueprint: the views, the access check before every request, the one error handler.
- ``access``: who may ask: the Host check and the page's token.
- ``parsing``: reading what a request sends within the limits (JSON body, image index, strokes).
- ``strokes``, ``images``: painting strokes into a mask; decoding uploads, PNGs and run-length masks.
- ``sessions``: per-browser state, its store and the memory budget; ``budget``: pixels decoded at
  once; ``segmenter``: GrabCut as the server calls it.
- ``config``: ``ServerConfig`` and its checks; ``errors``: ``ApiError``, the message and HTTP status
  of every refusal; ``cli``: the ``serve`` subcommand.

API (all JSON unless said otherwise; the session is a cookie the server sets when
an image is opened, ``torchgrabcut_session_PORT``; coordinates are image pixels, x to the right, y down):

- ``GET  /api/images``: the images given on the command line, ``{"images": [{"index", "name"}]}``.
- ``POST /api/open`` ``{"index": i}``: opens one of them in this session.
- ``POST /api/image``: uploads an image (multipart field ``image``) and opens it, decoded as
  ``torchgrabcut segment`` reads the same file (``torchgrabcut.imageio``: EXIF orientation
  applied, 16-bit samples scaled, alpha dropped; PNG, JPEG, BMP, TIFF, GIF, WebP or PNM).
  Not an image: 400; over the upload size or pixel limit: 413; the session table, the memory
  budget or the decode budget full: 503; all with ``{"error": message}``, all before decoding.
- ``GET  /api/image.png``: the session's image, as the server sees it (PNG).
- ``GET  /api/state``: the session's state (as below), without computing anything.
- ``POST /api/box`` ``{"x0", "y0", "x1", "y1"}``: half-open box; GrabCut from it (GC_INIT_WITH_RECT).
- ``POST /api/strokes`` ``{"strokes": [{"label": "fg" | "bg", "radius": r, "points": [[x, y], ...]}]}``:
  paints hard foreground (GC_FGD) or background (GC_BGD) discs along each polyline into the
  current mask and refines it from the kept model (GC_EVAL).
- ``POST /api/undo``: back to the state before the last box or strokes.
- ``GET  /api/mask.png``: the current mask as a grey PNG of OpenCV labels 0..3 (0 BGD, 1 FGD,
  2 PR_BGD, 3 PR_FGD; foreground = 1 or 3), the format ``torchgrabcut segment`` writes and
  reads; ``?binary=1`` gives 0 (background) / 255 (foreground) instead.

Open, box, strokes and undo answer with the session's state: the image size, the mask
run-length encoded (``mask.values`` and ``mask.counts``, row-major runs of labels), the
foreground fraction, the box the mask started from, ``grabcut_ms`` (the GrabCut call
alone, GPU work finished) and ``server_ms`` (the whole request: painting, GrabCut,
encoding), the device and whether an undo is possible. Errors are ``{"error": message}``
with a 4xx status (503 when the server is busy or its session table is full); the
server keeps serving.

Who may ask: every request's Host header must name this server, and every POST must carry
the page's token (``X-Torchgrabcut-Token``); else 403. The rules and why are in ``access``.

Limits: JSON bodies up to 1 MiB, at most 100 strokes and 20000 points per request; uploads
up to ``--max-upload-mb``; images up to ``--max-megapixels`` (checked from the image header,
before decoding; never over the library's ``imageio.MAX_IMAGE_PIXELS``, 179 megapixels).
Decodes run side by side within a budget of pixels (``budget``: two images of the largest
size by default); at most ``--max-concurrent`` GrabCut calls run at once; a request that finds
no room waits up to ``--queue-timeout`` seconds, then gets 503. All sessions together hold at
most ``--max-memory-mb`` (images, masks, models, undo steps; ``sessions``); a request that
would go over it, once old undo steps are dropped, gets 503. Requests of one session run one
after another, never interleaved. A session is forgotten after ``--session-timeout`` minutes
without a request; when ``--max-sessions`` sessions are in use, a new browser gets 503 (a
live session is never evicted to make room). A session's undo history holds at most
``ServerConfig.max_history`` steps (32) and ``max_history_bytes`` of masks and models (256 MiB:
32 steps up to 8 megapixels, 6 at 40); the oldest are dropped first, the last one always stays
(``sessions``).
"""
