"""The recording: every call the server answered, one JSON line each, in ``kg validate``'s input format.

Lines are written under a lock and flushed per call, so a recording read while the server runs,
or after it was killed, holds every answered call whole. ``status`` is the HTTP status the call
got and ``error`` the OData error code of a failed call; ``kg validate`` ignores both and gives its
own verdict, which must agree where the server rejected the call as invalid (``invalid-call``).
The other rejections depend on the server's data or protocol (``unknown-reference``,
``unknown-predecessor``, ``precondition-failed``, ``not-found``, ...), which a recording does not hold.
"""

from __future__ import annotations

import itertools
import json
import threading
from pathlib import Path

from processkg.aliases import JSONValue

#: ``json.dumps(entry, ensure_ascii=False, allow_nan=False)`` makes this encoder on every call; made once
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


class Recorder:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.file = self.path.open("a", encoding="utf-8")
        self.lock = threading.Lock()
        self.ids = itertools.count(1)

    def record(self, method: str, url: str, body: JSONValue, status: int, error: str | None = None) -> None:
        with self.lock:
            entry: dict[str, object] = {"id": f"r{next(self.ids)}", "method": method, "url": url}
            if body is not None:
                entry["payload"] = body
            entry["status"] = status
            if error is not None:
                entry["error"] = error
            self.file.write(_ENCODER.encode(entry) + "\n")
            self.file.flush()

    def close(self) -> None:
        with self.lock:
            self.file.close()
