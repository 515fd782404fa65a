"""``$batch``: multipart/mixed batches with change sets (V2 and V4) and V4 JSON batches.

A change set is all-or-nothing: the data is copied before its first request and restored when
any request of it fails, and the whole change set then answers with the failing response, as
OData 4.01 Part 1 §11.7 and OData V2's batch processing prescribe. Requests outside a change set
run one by one.
"""

from __future__ import annotations

import email.message
import email.parser
import email.policy
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from processkg.aliases import JSONObject, JSONValue
from processkg.serve.data import Saved

MAX_PARTS = 1_000


@dataclass
class Part:
    """One request of a batch."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes
    content_id: str | None = None


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    content_id: str | None = None


Handler = Callable[[Part], Answer]


def parse_multipart(content_type: str, raw: bytes) -> list[Part | list[Part]]:
    """The requests of a multipart batch; a change set is a list of requests."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw
    )
    if not message.is_multipart():
        raise ValueError("a $batch body must be multipart/mixed with a boundary")
    items: list[Part | list[Part]] = []
    for sub in message.iter_parts():
        if sub.is_multipart():
            items.append([_http_part(p) for p in sub.iter_parts()])
        else:
            items.append(_http_part(sub))
    if sum(len(i) if isinstance(i, list) else 1 for i in items) > MAX_PARTS:
        raise ValueError(f"a $batch holds at most {MAX_PARTS} requests")
    return items


def _http_part(part: email.message.Message) -> Part:
    raw = part.get_payload(decode=True)
    payload = raw if isinstance(raw, bytes) else b""
    head, _, body = payload.replace(b"\r\n", b"\n").partition(b"\n\n")
    lines = head.decode("utf-8", "replace").split("\n")
    method, _, rest = lines[0].strip().partition(" ")
    url = rest.rsplit(" HTTP/", 1)[0].strip()
    headers = dict(_header(line) for line in lines[1:] if ":" in line)
    return Part(method.upper(), url, headers, body.strip(), part.get("Content-ID"))


def _header(line: str) -> tuple[str, str]:
    name, _, value = line.partition(":")
    return name.strip().lower(), value.strip()


def run(
    items: list[Part | list[Part]],
    handle: Handler,
    snapshot: Callable[[], Saved],
    restore: Callable[[Saved], None],
) -> list[Answer | list[Answer]]:
    """Answer every request; a change set that fails anywhere is rolled back and answers with that failure."""
    answers: list[Answer | list[Answer]] = []
    for item in items:
        if isinstance(item, Part):
            answers.append(handle(item))
            continue
        saved = snapshot()
        done = [handle(p) for p in item]
        failed = next((a for a in done if a.status >= 400), None)
        if failed is not None:
            restore(saved)
            answers.append(failed)
        else:
            answers.append(done)
    return answers


def render_multipart(answers: list[Answer | list[Answer]]) -> tuple[str, bytes]:
    """(content type, body) of a multipart/mixed batch response."""
    boundary = f"batchresponse_{uuid.uuid4()}"
    chunks = []
    for answer in answers:
        chunks.append(f"--{boundary}\r\n".encode())
        if isinstance(answer, list):
            inner = f"changesetresponse_{uuid.uuid4()}"
            chunks.append(f"Content-Type: multipart/mixed; boundary={inner}\r\n\r\n".encode())
            for a in answer:
                chunks.append(f"--{inner}\r\n".encode() + _http_answer(a))
            chunks.append(f"--{inner}--\r\n".encode())
        else:
            chunks.append(_http_answer(answer))
    chunks.append(f"--{boundary}--\r\n".encode())
    return f"multipart/mixed; boundary={boundary}", b"".join(chunks)


def _http_answer(a: Answer) -> bytes:
    head = "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n"
    if a.content_id:
        head += f"Content-ID: {a.content_id}\r\n"
    lines = [f"HTTP/1.1 {a.status} {_REASONS.get(a.status, '')}"] + [f"{k}: {v}" for k, v in a.headers.items()]
    return (head + "\r\n" + "\r\n".join(lines) + "\r\n\r\n").encode() + a.body + b"\r\n"


def parse_json(raw: bytes) -> list[Part | list[Part]]:
    """A V4 JSON batch: ``{"requests": [{id, method, url, headers, body, atomicityGroup}]}``."""
    doc = json.loads(raw)  # ValueError (JSONDecodeError, too many digits) and RecursionError: a 400
    requests = doc.get("requests") if isinstance(doc, dict) else None
    if not isinstance(requests, list) or len(requests) > MAX_PARTS:
        raise ValueError(f"a JSON batch needs a list 'requests' of at most {MAX_PARTS} requests")
    items: list[Part | list[Part]] = []
    groups: dict[str, list[Part]] = {}
    for r in requests:
        if not isinstance(r, dict):
            raise ValueError("each request of a JSON batch is an object")
        body = r.get("body")
        part = Part(
            _text_field(r, "method", "GET").upper(),
            _text_field(r, "url", ""),
            _headers(r.get("headers")),
            json.dumps(body).encode() if body is not None else b"",
            str(r.get("id")) if r.get("id") is not None else None,
        )
        group = r.get("atomicityGroup")
        if group is None:
            items.append(part)
        elif group in groups:
            groups[group].append(part)
        else:
            groups[group] = [part]
            items.append(groups[group])
    return items


def _text_field(request: JSONObject, name: str, default: str) -> str:
    value = request.get(name, default)
    if not isinstance(value, str):
        raise ValueError(f"the {name} of a request in a JSON batch is a string, not {json.dumps(value)[:40]}")
    return value


def _headers(value: JSONValue) -> dict[str, str]:
    """A JSON batch request's ``headers``: an object of strings (absent or null: none)."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError(
            f"the headers of a request in a JSON batch are an object of strings, not {json.dumps(value)[:40]}"
        )
    return {k.lower(): v for k, v in value.items()}


def render_json(answers: list[Answer | list[Answer]]) -> bytes:
    out = []
    for answer in answers:
        for a in answer if isinstance(answer, list) else [answer]:
            body = (
                json.loads(a.body)
                if a.body and a.headers.get("content-type", "").startswith("application/json")
                else (a.body.decode() if a.body else None)
            )
            out.append({"id": a.content_id, "status": a.status, "headers": a.headers, "body": body})
    return json.dumps({"responses": out}).encode()


_REASONS = {
    200: "OK",
    201: "Created",
    204: "No Content",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    412: "Precondition Failed",
    413: "Payload Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
}
