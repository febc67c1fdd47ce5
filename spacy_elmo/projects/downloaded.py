"""The bytes at a URL, for the fetch scripts: offline (or refused, timed out, a bad URL) the script ends in one line
saying what was missing and which var to give, never a traceback."""

import sys
import urllib.request


def downloaded(url: str, missing: str, fix: str) -> bytes:
    """RETURNS (bytes): what URL holds. MISSING says what was not found locally, FIX what to give instead."""
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.read()
    except (OSError, ValueError) as err:  # offline (URLError is an OSError), refused, timed out, a bad URL
        reason = getattr(err, "reason", None) or err
        sys.exit(f"{missing} and downloading {url} failed ({reason}): {fix}")
