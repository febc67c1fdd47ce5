"""One file over HTTP(S) into a partial file, resumed only when the server proves it is the same file.

The transfer itself is `requests` (which spaCy already installs), with urllib3's retries for
connections that fail before an answer. What HTTP leaves to the client is done here: a resumed
request carries `If-Range` with the validator (ETag, else Last-Modified) recorded when the partial
file was started; a 206 is appended only when it carries that validator and its Content-Range starts
at the asked offset and ends at the recorded total; anything else (a 200, another validator or
total, another URL) starts the file over. Since a server may ignore If-Range, or give a changed file
the same validator, a few ranges before the resume point (the last 4 KiB and three at random) are
first fetched again and compared with the partial file: where one differs, the file starts over.
A body shorter than its length is an interruption (the partial file is kept for the next run), and
an HTML page where a model file was asked for is refused.
"""

import os
import re
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from ..errors import InputError
from ..output_folders import open_no_follow

_CHUNK = 1 << 20
_PROBES, _PROBE_BYTES = 3, 4096  # ranges before a resume point compared again with the partial file
_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+)$")
TIMEOUT_S = 60


class TransferError(InputError):
    """A transfer that did not complete; `resumable` when the partial file may be taken up again."""

    def __init__(self, message: str, resumable: bool) -> None:
        super().__init__(message)
        self.resumable = resumable


@dataclass
class PartialFile:
    """Where a partial file came from: enough to prove that a later answer continues it.

    url (str): the URL asked for.
    validator (Optional[str]): the strong ETag, else Last-Modified, of the first answer.
    total (Optional[int]): the whole file's length, as the first answer gave it.
    """

    url: str
    validator: Optional[str] = None
    total: Optional[int] = None

    def to_dict(self) -> Dict[str, Any]:
        """What the download record keeps on disk: the URL without a user name or password in it."""
        return {**asdict(self), "url": without_userinfo(self.url)}

    @classmethod
    def from_dict(cls, data: object) -> Optional["PartialFile"]:
        """RETURNS (Optional[PartialFile]): the record, None where `data` is not one (then start over)."""
        if not isinstance(data, dict) or not isinstance(data.get("url"), str):
            return None
        validator, total = data.get("validator"), data.get("total")
        if not (validator is None or isinstance(validator, str)) or not (total is None or (isinstance(total, int) and total >= 0)):
            return None
        return cls(data["url"], validator, total)


def without_userinfo(url: str) -> str:
    """RETURNS (str): `url` without its user name and password (http://user:pw@host/x -> http://host/x)."""
    return re.sub(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@]*@", r"\1", url)


def shown_url(url: str) -> str:
    """RETURNS (str): `url` as messages show it, a password in it masked (http://user:***@host/...)."""
    return re.sub(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)([^/@:]*):[^/@]*@", r"\1\2:***@", url)


def _session() -> Any:
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry

    session = requests.Session()
    retries = Retry(total=3, connect=3, read=0, status=0, backoff_factor=0.2, allowed_methods=frozenset(["GET"]))
    session.mount("http://", HTTPAdapter(max_retries=retries))
    session.mount("https://", HTTPAdapter(max_retries=retries))
    return session


def fetch(
    url: str,
    partial: Path,
    known: Optional[PartialFile],
    remember: Callable[[PartialFile], None],
    progress: bool,
    desc: str,
) -> PartialFile:
    """Download `url` into `partial`, resuming it where `known` proves the server still has the same
    file; `remember` is called with the new record before a byte of a new file is written.

    RETURNS (PartialFile): the record of the complete file.
    """
    import requests

    if url.startswith("file://"):
        return _copy_local(url, partial, remember, progress, desc)
    headers = {"Accept-Encoding": "identity"}
    start = 0
    if known is not None and known.url == without_userinfo(url) and known.validator is not None and known.total is not None:
        start = os.lstat(partial).st_size if os.path.lexists(partial) else 0
        if start >= known.total:
            start = 0  # complete but not checked, or longer than the file: fetch it again
        if start:
            headers.update({"Range": f"bytes={start}-", "If-Range": known.validator})
    try:
        with _session() as session:
            if start and known is not None and not _earlier_part_matches(session, url, partial, start, known):
                start = 0
                headers = {"Accept-Encoding": "identity"}
            response = session.get(url, headers=headers, stream=True, timeout=TIMEOUT_S)
            with response:
                return _receive(response, url, partial, known if start else None, start, remember, progress, desc)
    except requests.RequestException as err:
        raise TransferError(f"{shown_url(url)}: {_reason(err)}", resumable=True) from None


def _receive(
    response: Any,
    url: str,
    partial: Path,
    known: Optional[PartialFile],
    start: int,
    remember: Callable[[PartialFile], None],
    progress: bool,
    desc: str,
) -> PartialFile:
    from ..progress_bar import progress_bar

    status = response.status_code
    if status == 416 and start:  # the asked range is past the end: the file changed
        return _start_over(url, partial, remember, progress, desc)
    if status not in (200, 206):
        raise TransferError(f"{shown_url(url)}: HTTP {status} {response.reason}", resumable=False)
    if "text/html" in response.headers.get("Content-Type", "").lower():
        raise TransferError(
            f"{shown_url(url)}: the server answered with a web page (HTML), not the file; check the URL or the mirror",
            resumable=False,
        )
    length = _int(response.headers.get("Content-Length"))
    if status == 206:
        if not start or known is None:
            raise TransferError(f"{shown_url(url)}: the server sent part of the file unasked", resumable=False)
        match = _CONTENT_RANGE.match(response.headers.get("Content-Range", "").strip())
        first, last, total = (int(g) for g in match.groups()) if match else (-1, -1, -1)
        if (
            first != start
            or total != known.total
            or last != total - 1
            or (length is not None and length != total - start)
            or _validator(response.headers) != known.validator  # a server that ignored If-Range
        ):
            response.close()
            return _start_over(url, partial, remember, progress, desc)  # not the continuation asked for
        record = known
        expected: Optional[int] = total - start
        mode = os.O_WRONLY | os.O_APPEND
    else:  # the whole file: new, changed, or a server that ignored the range
        record = PartialFile(url, _validator(response.headers), length)
        remember(record)
        start, expected = 0, length
        mode = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    written = 0
    with (
        os.fdopen(open_no_follow(partial, mode), "wb") as out,
        progress_bar(total=record.total, initial=start, unit="B", unit_scale=True, desc=desc, disable=not progress) as bar,
    ):
        try:
            while True:
                # read1: whatever has arrived, so that a cut connection keeps every byte received
                chunk = response.raw.read1(_CHUNK) if hasattr(response.raw, "read1") else response.raw.read(_CHUNK)
                if not chunk:
                    break
                out.write(chunk)
                written += len(chunk)
                bar.update(len(chunk))
                if expected is not None and written > expected:
                    break
        except Exception as err:  # requests and urllib3 raise several kinds for a cut connection
            raise _cut(url, start + written, record.total, _reason(err)) from None
    if expected is not None and written > expected:
        raise TransferError(f"{shown_url(url)}: the server sent more bytes than it announced ({expected})", resumable=False)
    if expected is not None and written < expected:
        raise _cut(url, start + written, record.total, "the connection closed early")
    return record


def _copy_local(url: str, partial: Path, remember: Callable[[PartialFile], None], progress: bool, desc: str) -> PartialFile:
    """A file:// URL (a mirror on this computer): copied whole into the partial file, then checked as a download is."""
    from urllib.parse import urlparse
    from urllib.request import url2pathname

    from ..progress_bar import progress_bar

    source = Path(url2pathname(urlparse(url).path))
    if not source.is_file():
        raise TransferError(f"{shown_url(url)}: no such file in the mirror folder", resumable=False)
    record = PartialFile(url, None, source.stat().st_size)
    remember(record)
    with (
        source.open("rb") as src,
        os.fdopen(open_no_follow(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "wb") as out,
        progress_bar(total=record.total, unit="B", unit_scale=True, desc=desc, disable=not progress) as bar,
    ):
        while True:
            block = src.read(_CHUNK)
            if not block:
                break
            out.write(block)
            bar.update(len(block))
    return record


def _earlier_part_matches(session: Any, url: str, partial: Path, start: int, known: PartialFile) -> bool:
    """Whether the server's file, as served now, holds the partial file's bytes at a few places
    before `start`: the last _PROBE_BYTES and _PROBES ranges at random offsets."""
    offsets = {max(0, start - _PROBE_BYTES)} | {secrets.randbelow(max(start - _PROBE_BYTES, 1)) for _ in range(_PROBES)}
    with os.fdopen(open_no_follow(partial, os.O_RDONLY), "rb") as ours:
        for offset in sorted(offsets):
            last = min(offset + _PROBE_BYTES, start) - 1
            headers = {"Accept-Encoding": "identity", "Range": f"bytes={offset}-{last}", "If-Range": str(known.validator)}
            with session.get(url, headers=headers, timeout=TIMEOUT_S) as response:
                if (
                    response.status_code != 206
                    or response.headers.get("Content-Range", "").strip() != f"bytes {offset}-{last}/{known.total}"
                    or _validator(response.headers) != known.validator
                ):
                    return False
                ours.seek(offset)
                if response.content != ours.read(last + 1 - offset):
                    return False
    return True


def _start_over(url: str, partial: Path, remember: Callable[[PartialFile], None], progress: bool, desc: str) -> PartialFile:
    """The server does not continue the partial file: fetch the whole file once more."""
    return fetch(url, partial, None, remember, progress, desc)


def _cut(url: str, at: int, total: Optional[int], reason: str) -> TransferError:
    of = f" of {total}" if total is not None else ""
    return TransferError(f"{shown_url(url)} stopped at {at}{of} bytes ({reason})", resumable=True)


def _validator(headers: Any) -> Optional[str]:
    """A validator If-Range accepts: a strong ETag, else Last-Modified (RFC 9110, 13.1.5)."""
    etag = headers.get("ETag")
    if etag and not etag.startswith("W/"):
        return str(etag)
    return headers.get("Last-Modified") or None


def _int(value: Optional[str]) -> Optional[int]:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _reason(err: BaseException) -> str:
    """The innermost cause in a few words ("Connection refused", not urllib3's chain of wrappers)."""
    text = str(err).strip()
    if "IncompleteRead" in text or "Connection broken" in text:
        return "the connection closed early"
    errno_text = re.findall(r"\[Errno -?\d+\] ([^'\")\]]+)", text)
    if errno_text:
        return errno_text[-1].strip()
    return (text.splitlines()[0][:200] if text else "") or type(err).__name__
