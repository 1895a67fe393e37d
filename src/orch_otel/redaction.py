"""The default secret redactor, linear in the length of its input.

Every pattern either starts with a literal (``sk-``, ``AKIA``, a keyword) or
with a guard that lets a match begin only where a token begins, and every
repetition is bounded. So the regex engine tries each start position for at
most a bounded number of steps: no input, however long or repetitive, makes
it backtrack quadratically (Python's ``re`` has no linear-time guarantee of
its own, unlike RE2). What it removes is listed in ``REMOVES`` and in the
docs/privacy.md; ``tests/test_redaction.py`` plants each kind.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["REDACTED", "REMOVES", "redact_secrets"]

REDACTED = "[REDACTED]"

# What redact_secrets removes, in the words the docs use.
REMOVES = (
    "OpenAI / Anthropic style keys (sk-...)",
    "AWS access key ids (AKIA..., ASIA...) and AWS secret access keys (labelled, or any bare 40-character key of mixed "
    "letters, digits and / or +)",
    "GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_)",
    "Google API keys (AIza...)",
    "Slack tokens (xoxa-, xoxb-, xoxp-, xoxr-, xoxs-)",
    "JSON Web Tokens (eyJ....eyJ....sig), with or without Bearer",
    "bearer tokens (Authorization: Bearer ...)",
    "passwords in URLs (scheme://user:password@host)",
    "values of password, passwd, pwd, secret, token, access_token, api_key, apikey, client_secret, "
    "aws_secret_access_key, private_key keys (key=value, key: value, \"key\": \"value\")",
    "email addresses",
    "payment card numbers (13 to 19 digits starting with 2 to 6, spaces or dashes allowed, Luhn-checked)",
)

# A token character for keys and tokens; a match may begin only after a non-token character.
_T = r"A-Za-z0-9_\-"
_START = rf"(?<![{_T}])"
_END = rf"(?![{_T}])"


def _luhn_ok(digits: str) -> bool:
    total, double = 0, False
    for ch in reversed(digits):
        d = ord(ch) - 48
        if double:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
        double = not double
    return total % 10 == 0


def _card(match: re.Match[str]) -> str:
    digits = re.sub(r"[ \-]", "", match.group(0))
    return REDACTED if 13 <= len(digits) <= 19 and _luhn_ok(digits) else match.group(0)


def _mixed_key(match: re.Match[str]) -> str:
    """A bare 40-character AWS-style secret: letters of both cases, a digit, and / or +.
    (Hex digests and plain words of 40 characters are left alone.)"""
    key = match.group(0)
    looks_secret = (any(c.isupper() for c in key) and any(c.islower() for c in key)
                    and any(c.isdigit() for c in key) and ("/" in key or "+" in key))
    return REDACTED if looks_secret else key


_Replacement = str | Callable[[re.Match[str]], str]

# (pattern, replacement, hints): a pattern runs only when one of its hints
# (lower case) occurs in the lower-cased text; no hints: it always runs.
_PATTERNS: tuple[tuple[re.Pattern[str], _Replacement, tuple[str, ...]], ...] = (
    (re.compile(rf"{_START}sk-[A-Za-z0-9_\-]{{16,256}}"), REDACTED, ("sk-",)),
    (re.compile(rf"{_START}(?:AKIA|ASIA)[0-9A-Z]{{16}}{_END}"), REDACTED, ("akia", "asia")),
    (re.compile(rf"{_START}(?:gh[pousr]_[A-Za-z0-9]{{30,255}}|github_pat_[A-Za-z0-9_]{{22,255}}){_END}"), REDACTED,
     ("gh", "github_pat_")),
    (re.compile(rf"{_START}AIza[0-9A-Za-z_\-]{{35}}{_END}"), REDACTED, ("aiza",)),
    (re.compile(r"(?<![A-Za-z0-9])xox[abprs]-[A-Za-z0-9\-]{10,256}"), REDACTED, ("xox",)),
    (re.compile(rf"{_START}eyJ[{_T}]{{4,4096}}\.eyJ[{_T}]{{4,8192}}\.[{_T}]{{0,4096}}"), REDACTED, ("eyj",)),
    (re.compile(r"(?i)(?<![A-Za-z0-9])(bearer[ \t]{1,8})[A-Za-z0-9._~+/=\-]{8,4096}"), r"\1" + REDACTED, ("bearer",)),
    # scheme://user:password@host
    (re.compile(r"(?<![A-Za-z0-9+.\-])([A-Za-z][A-Za-z0-9+.\-]{0,31}://[^:/\s\"'@]{1,256}:)[^@\s\"'/]{1,256}(@)"),
     r"\1" + REDACTED + r"\2", ("://",)),
    # password=..., "api_key": "...", token: ... (quotes may be escaped, once or more, in nested JSON); a value an
    # earlier pattern already replaced is matched as that marker alone, so what follows it is kept
    (re.compile(
        r"(?i)(?<![A-Za-z0-9])((?:aws_?secret_?access_?key|client_?secret|private_?key|api[_\-]?key|secret|password|passwd"
        r"|pwd|access[_\-]?token|token)(?:\\{0,7}[\"'])?)((?:\\{0,7}[\"'])?[ \t]{0,4}[:=][ \t]{0,4}(?:\\{0,7}[\"'])?)"
        r"(?:\[REDACTED\]|[^\"'\s,&\\]{4,1024})"),
     r"\1\2" + REDACTED, ("key", "secret", "pass", "pwd", "token")),
    (re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"), _mixed_key, ()),
    (re.compile(r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63}){0,8}"
                r"\.[A-Za-z]{2,24}(?![A-Za-z0-9\-])"), REDACTED, ("@",)),
    (re.compile(r"(?<![0-9\-])[2-6](?:[ \-]?[0-9]){12,18}(?![0-9])"), _card, ()),
)


def redact_secrets(text: str) -> str:
    """The default redactor: removes the kinds of secret listed in ``REMOVES``.
    Linear in ``len(text)``."""
    lowered = text.lower()
    for pattern, replacement, hints in _PATTERNS:
        if not hints or any(hint in lowered for hint in hints):
            text = pattern.sub(replacement, text)
    return text
