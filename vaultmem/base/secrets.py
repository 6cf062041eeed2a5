"""The secret filter: real credential formats, not a keyword list.

`find_secret(text)` returns the first credential-looking span as a `Finding` (kind, start,
end) or None. Rules, checked in this order:

1. provider formats: AWS access key ids (AKIA/ASIA...), Google `AIza...` keys, GitHub
   (`ghp_`, `github_pat_`), GitLab (`glpat-`), Slack (`xox?-`, webhooks), Stripe secret
   keys (`sk_live_`, `rk_test_`), Anthropic (`sk-ant-`), OpenAI (`sk-`, `sk-proj-`),
   PEM private-key blocks, JWTs (three base64url parts, header and payload `eyJ`);
2. connection strings with an inline password (`scheme://user:pass@host`);
3. assignments: a name ending in password/secret/token/api key... followed by `=`/`:`
   (or, for passwords, `is`) and a literal value. `=` in code accepts any literal value;
   `:` and `is` in prose only a password-like one (a digit, symbol or inner capital, and
   6+ characters), so "the password is stored in Vault" passes;
4. high-entropy tokens: 32+ characters of base64/base64url with upper, lower and digits
   and Shannon entropy >= 4.3 bits per character (hex digests and UUIDs stay below it).

Placeholders (`<password>`, `${DB_PASS}`, `****`, `xxxx`, `os.environ[...]`) are not
secrets. Talk about secrets ("I use 1Password as my password manager", "rotate the API key
every 90 days", "use JWT tokens for auth") has no value in a credential format, so it
passes. The matched text is never put in a message, a log line or an exception.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter

from vaultmem.base.errors import SecretBlocked  # noqa: F401  (raised by check(); defined in base so adapters catch it)

KINDS = {
    "aws_access_key": "an AWS access key id",
    "aws_secret_key": "an AWS secret access key",
    "google_api_key": "a Google API key",
    "github_token": "a GitHub token",
    "gitlab_token": "a GitLab token",
    "slack_token": "a Slack token",
    "slack_webhook": "a Slack webhook URL",
    "stripe_key": "a Stripe secret key",
    "anthropic_key": "an Anthropic API key",
    "openai_key": "an OpenAI API key",
    "private_key": "a PEM private key",
    "jwt": "a JSON Web Token",
    "connection_string": "a connection string with a password",
    "password_assignment": "a password assignment",
    "secret_assignment": "a secret or token assignment",
    "bearer_token": "a bearer token",
    "high_entropy_token": "a high-entropy token",
    "provider_token": "an API token in a provider's format",
    "command_password": "a password on a command line",
    "basic_auth": "HTTP Basic credentials",
    "encoded_secret": "a base64-encoded credential",
}


@dataclasses.dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int

    @property
    def description(self) -> str:
        return KINDS[self.kind]


_PROVIDER_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("private_key", re.compile(r"(?i)-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|AGE-SECRET-KEY-1[0-9A-Z]{58}")),
    ("aws_access_key",
     re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])")),
    ("aws_secret_key", re.compile(
        r"(?i)aws[\w.-]{0,20}?(?:secret|private)[\w.-]{0,20}?\s*[:=]\s*[\"']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])")),
    ("google_api_key", re.compile(r"(?<![\w-])AIza[0-9A-Za-z_\-]{35}(?![\w-])")),
    ("github_token", re.compile(r"(?<![\w])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})(?!\w)")),
    ("gitlab_token", re.compile(r"(?<![\w-])gl(?:pat|dt|ptt|rt|cbt)-[A-Za-z0-9_\-]{20,}(?![\w-])")),
    ("slack_webhook", re.compile(r"https://hooks\.slack\.com/services/T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{16,}")),
    ("slack_token", re.compile(r"(?<![\w-])xox[abposrce]-(?:[0-9]+-)+[A-Za-z0-9\-]{8,}(?![\w-])")),
    ("stripe_key", re.compile(r"(?<![\w])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}(?!\w)")),
    ("anthropic_key", re.compile(r"(?<![\w-])sk-ant-(?:api|admin|sid)\d{2}-[A-Za-z0-9_\-]{20,}(?![\w-])")),
    ("openai_key", re.compile(r"(?<![\w-])sk-(?!ant-)(?:(?:proj|svcacct|admin|None)-)?[A-Za-z0-9_\-]{20,}(?![\w-])")),
    ("jwt", re.compile(r"(?<![\w-])eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}(?![\w-])")),
    # Token formats of gitleaks' default rule set (public facts about each provider's tokens).
    ("provider_token", re.compile(
        r"(?<![\w-])(?:"
        r"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]{20,}"  # Slack app-level token
        r"|whsec_[A-Za-z0-9+/]{24,}"  # Stripe webhook signing secret
        r"|npm_[A-Za-z0-9]{36}"  # npm
        r"|hf_[A-Za-z]{34}"  # Hugging Face
        r"|SK[0-9a-fA-F]{32}"  # Twilio API key
        r"|key-[0-9a-f]{32}|[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}"  # Mailgun private key / webhook signing key
        r"|[0-9a-f]{32}-us\d{1,2}"  # Mailchimp
        r"|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"  # Shopify
        r"|do[por]_v1_[a-f0-9]{64}"  # DigitalOcean
        r"|[MNO][A-Za-z\d_-]{23,25}\.[A-Za-z\d_-]{6}\.[A-Za-z\d_-]{27,38}"  # Discord bot token
        r"|[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}"  # Azure AD client secret
        r"|dapi[a-f0-9]{32}(?:-\d)?"  # Databricks
        r"|PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}"  # Postman
        r"|sbp_[a-f0-9]{40}"  # Supabase
        r"|pul-[a-f0-9]{40}"  # Pulumi
        r"|sntry[us]_[A-Za-z0-9+/=_-]{40,}"  # Sentry user / org tokens
        r"|LTAI[A-Za-z0-9]{20}"  # Alibaba Cloud
        r"|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"  # SendGrid
        r"|pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"  # PyPI upload token
        r"|hvs\.[A-Za-z0-9_-]{90,}|hv[sb]\.[A-Za-z0-9_-]{24,}"  # HashiCorp Vault
        r"|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2}"  # Grafana
        r"|dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"  # Doppler
        r"|lin_api_[A-Za-z0-9]{40}"  # Linear
        r"|NRAK-[A-Z0-9]{27}"  # New Relic user key
        r"|pscale_(?:tkn|pw|oauth)_[A-Za-z0-9=._-]{32,64}"  # PlanetScale
        r"|sq0(?:atp|csp)-[0-9A-Za-z_-]{22,43}|EAAA[A-Za-z0-9_-]{60}"  # Square
        r"|rubygems_[a-f0-9]{48}"  # RubyGems
        r"|xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"  # Brevo (Sendinblue)
        r"|shippo_(?:live|test)_[a-f0-9]{40}"  # Shippo
        r"|pnu_[A-Za-z0-9]{36}"  # Prefect
        r"|rdme_[a-z0-9]{70}"  # ReadMe
        r"|tfp_[A-Za-z0-9_.=-]{59}"  # Typeform
        r"|fo1_[A-Za-z0-9_-]{43}"  # Fly.io
        r"|dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}"  # Dynatrace
        r"|EZ[AT]K[A-Za-z0-9]{54}"  # EasyPost
        r"|atlasv1\.[A-Za-z0-9_=-]{60,70}"  # Terraform Cloud
        r"|\d{8,10}:AA[A-Za-z0-9_-]{33}"  # Telegram bot token
        r"|ATATT3[A-Za-z0-9_=-]{186}"  # Atlassian API token
        r"|glptt-[0-9a-f]{40}"  # GitLab pipeline trigger
        r")(?![\w-])")),
]

# Credentials passed on a command line: `curl -u user:pass`, `mysql -pPASS`, `sshpass -p PASS`.
_COMMAND = re.compile(
    r"(?i)\bcurl\b[^\n]*?\s(?:-u|--user)[ =]?['\"]?[^\s:'\"]+:(?P<a>[^\s'\"@]{2,})"
    r"|\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?\s(?:-p(?P<b>[^\s-][^\s]*)|--password=(?P<c>\S+))"
    r"|\bsshpass\s+-p\s*(?P<d>\S+)"
    r"|\bredis-cli\b[^\n]*?\s-a\s+(?P<f>\S{2,})")
_BASIC = re.compile(r"(?i)\bauthorization['\"]?\s*[:=]\s*['\"]?basic\s+(?P<value>[A-Za-z0-9+/]{8,}={0,2})")
# Characters that can hide inside a token without being seen (zero-width, soft hyphen, BOM).
_INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u2060-\u2064\ufeff]")
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{20,}={0,2}(?![A-Za-z0-9+/=])")
_DATA_URI = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]+")
_PUBLIC_KEY = re.compile(
    r"\b(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d+|sk-ssh-ed25519@openssh\.com)\s+AAAA[A-Za-z0-9+/]+={0,3}")
# the rest of a split key: mixed case or digits, or lowercase hex; not a plain word of prose
_FRAGMENT = re.compile(r"^(?:(?=[^\s]*[0-9A-Z])[A-Za-z0-9_\-+/=.~]+|[0-9a-f]+)$")
# The first characters of the provider formats above: a token starting so and cut by a space or
# a line break is joined with the next pieces and checked again.
_PREFIX = re.compile(
    r"^(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|A3T|AIza|gh[pousr]_|github_pat_|gl(?:pat|dt|ptt|rt|cbt|sa|c)[-_]|"
    r"xox|xapp-|sk-|sk_|rk_|whsec_|npm_|hf_|eyJ|SK[0-9a-fA-F]|key-|shp|do[por]_|dapi|PMAK-|sbp_|pul-|sntry|LTAI|"
    r"SG\.|pypi-|hv[sb]\.|dp\.|lin_api_|NRAK-|pscale_|sq0|EAAA|rubygems_|xkeysib-|shippo_|pnu_|rdme_|tfp_|fo1_|"
    r"dt0c01|EZ[AT]K|atlasv1|ATATT|AGE-)")

_CONNECTION = re.compile(
    r"(?i)\b[a-z][a-z0-9+.\-]{1,20}://(?P<user>[^\s:/@'\"<>]*):(?P<pw>[^\s@/'\"]+)@[^\s/@]+")

_SECRET_NAMES = (
    r"password|passwd|passphrase|pwd|pass|secret|secret[_\-. ]?key|client[_\-. ]?secret|"
    r"api[_\-. ]?key|apikey|access[_\-. ]?key|access[_\-. ]?token|auth[_\-. ]?token|"
    r"refresh[_\-. ]?token|token|private[_\-. ]?key|signing[_\-. ]?key|credentials?"
)
# name (optionally with a prefix such as DB_ or stripe.), then = or : (or "is" for prose)
_ASSIGN = re.compile(
    r"(?i)(?<![\w.\-])(?P<name>[a-z0-9_\-.]{0,40}?(?:" + _SECRET_NAMES + r"))[\"']?"
    r"(?P<op>\s*(?:=|:=|=>|:)\s*|\s+(?:is|was|=)\s+)"
    r"(?P<q>[\"'`]?)(?P<value>[^\s\"'`,;]+)"
)
_BEARER = re.compile(r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9_\-.~+/]{20,}=*)")
_QUERY_SECRET = re.compile(
    r"(?i)[?&](?:access_token|api_key|apikey|token|key|secret|client_secret|sig|signature|password)="
    r"(?P<value>[^\s&#]{12,})")

_PLACEHOLDER = re.compile(
    r"""(?ix)^(?:
        <[^>]*>? | \$\{?[\w.]+\}? | \{\{?[^}]*\}?\}? | %\(?\w*\)?s | \[[^\]]*\]? |
        [*x.•#?_-]+ | (?:your|my)[_\-]\w* | redacted | hidden | masked | placeholder |
        example\w* | dummy\w* | sample\w* | changeme | secret | password | passwd | token |
        none | null | nil | true | false | undefined | empty | required | optional | env |
        (?:os\.)?(?:environ|getenv)\b.* | process\.env\b.* | env\(.* | getpass\(.* | input\(.* |
        [\w.]+\(.*
    )$""")
# an attribute or variable reference in code (settings.SECRET_KEY), not a literal
_PASSWORD_MANAGERS = {"1password", "bitwarden", "keepass", "keepassxc", "lastpass", "dashlane",
                      "keychain", "vault", "pass", "nordpass", "protonpass", "enpass"}
_REFERENCE = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
# prose words that follow "password:" / "token:" without being a value
_PROSE_VALUE = re.compile(r"^[a-z]+[.!?]?$")

_TOKEN = re.compile(r"[A-Za-z0-9+/_\-]{32,}={0,2}")
_URL = re.compile(r"(?i)\b(?:https?|ftp|wss?)://\S+")


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


def _password_like(value: str) -> bool:
    if len(value) < 6:
        return False
    return (any(c.isdigit() for c in value) or any(not c.isalnum() for c in value)
            or any(c.isupper() for c in value[1:]))


def _is_placeholder(value: str) -> bool:
    return bool(_PLACEHOLDER.match(value.strip("\"'`")))


def _high_entropy(token: str) -> bool:
    core = token.rstrip("=")
    if len(core) < 32:
        return False
    if not (re.search(r"[a-z]", core) and re.search(r"[A-Z]", core) and re.search(r"[0-9]", core)):
        return False
    if re.fullmatch(r"[0-9a-fA-F\-]+", core):  # hex digests, UUIDs
        return False
    return entropy(core) >= 4.3


def find_secret(text: str) -> Finding | None:
    """The first credential-looking span in `text`, or None. Invisible characters are taken
    out first (a key with a zero-width space in it is still the key); provider formats are
    also looked for with whitespace removed (a key split over lines) and inside base64."""
    if _INVISIBLE.search(text):
        found = _find(_INVISIBLE.sub("", text))
        return Finding(found.kind, 0, len(text)) if found else None  # spans moved: report the whole text
    found = _find(text)
    if found is not None:
        return found
    return _split_or_encoded(text)


def _split_or_encoded(text: str) -> Finding | None:
    """A provider key split by spaces or newlines, or base64-encoded (not a data: URI)."""
    pieces = list(re.finditer(r"[^ \t\r\n]+", text))
    for i, piece in enumerate(pieces):
        start = piece.group(0).lstrip("'\"`(<[{:=")
        if not (_PREFIX.match(start) or (len(start) < 12 and i + 1 < len(pieces)
                                         and _PREFIX.match(start + pieces[i + 1].group(0)))):
            continue  # no provider's key starts here (a cut inside the prefix counts too)
        for j in range(i + 2, min(i + 6, len(pieces) + 1)):
            nxt = pieces[j - 1].group(0).rstrip("'\"`)>]},;.")
            if not _FRAGMENT.match(nxt):
                break  # a word of prose, not the rest of a key
            joined = start + "".join(p.group(0) for p in pieces[i + 1:j - 1]) + nxt
            for kind, pattern in _PROVIDER_RULES:
                if pattern.search(joined):
                    return Finding(kind, piece.start(), pieces[j - 1].end())
    if len(text) >= 20:
        import base64
        import binascii

        plain = _DATA_URI.sub(" ", text)
        for m in _BASE64.finditer(plain):
            token = m.group(0)
            try:
                decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
            except (binascii.Error, ValueError):
                continue
            try:
                inner = decoded.decode("utf-8")
            except UnicodeDecodeError:
                continue
            if inner.isprintable() and _find(inner, providers_only=True) is not None:
                return Finding("encoded_secret", m.start(), m.end())
    return None


def _find(text: str, providers_only: bool = False) -> Finding | None:
    for kind, pattern in _PROVIDER_RULES:
        m = pattern.search(text)
        if m:
            return Finding(kind, m.start(), m.end())
    for m in _CONNECTION.finditer(text):
        pw = m.group("pw")
        if not _is_placeholder(pw) and len(pw) >= 2:
            return Finding("connection_string", m.start(), m.end())
    if providers_only:
        return None
    for m in _COMMAND.finditer(text):
        value = next(v for v in m.groups() if v is not None)
        if not _is_placeholder(value.strip("'\"")) and not value.startswith(("$", "%")):
            return Finding("command_password", m.start(), m.end())
    for m in _BASIC.finditer(text):
        if not _is_placeholder(m.group("value")):
            return Finding("basic_auth", m.start(), m.end())
    for m in _QUERY_SECRET.finditer(text):
        if not _is_placeholder(m.group("value")):
            return Finding("secret_assignment", m.start(), m.end())
    for m in _BEARER.finditer(text):
        value = m.group("value")
        if not _is_placeholder(value) and re.search(r"\d", value) and re.search(r"[A-Za-z]", value):
            return Finding("bearer_token", m.start(), m.end())
    for m in _ASSIGN.finditer(text):
        finding = _assignment(m)
        if finding:
            return finding
    public = [(u.start(), u.end()) for pattern in (_URL, _DATA_URI, _PUBLIC_KEY) for u in pattern.finditer(text)]
    for m in _TOKEN.finditer(text):
        if any(a <= m.start() < b for a, b in public):  # URLs, data: URIs and public keys are not secrets
            continue
        if _high_entropy(m.group(0)):
            return Finding("high_entropy_token", m.start(), m.end())
    return None


def _assignment(m: re.Match[str]) -> Finding | None:
    name = m.group("name").lower()
    value = m.group("value")
    op = m.group("op").strip().lower()
    quoted = bool(m.group("q"))
    if _is_placeholder(value) or len(value) < 4:
        return None
    if not quoted and (_REFERENCE.match(value) or value.lower().rstrip(".,;!?") in _PASSWORD_MANAGERS):
        return None  # "the password is in 1Password": where it is kept, not what it is
    is_password = bool(re.search(r"pass|pwd", name))
    kind = "password_assignment" if is_password else "secret_assignment"
    if op in ("is", "was"):
        # prose: "my password is hunter2" blocks, "the password is stored in Vault" does not
        if not is_password or not _password_like(value):
            return None
        return Finding(kind, m.start(), m.end())
    if op == ":" and not quoted:
        # "secret: the meeting moved" is prose; a YAML/colon value must look like a credential
        if _PROSE_VALUE.match(value) or not _password_like(value):
            return None
        if not is_password and len(value) < 12:
            return None
        return Finding(kind, m.start(), m.end())
    # `=` (code, env files) or a quoted value: any literal counts, but keep prose words out
    if not quoted and _PROSE_VALUE.match(value) and len(value) < 6:
        return None
    if not is_password and not quoted and len(value) < 8:
        return None
    if re.fullmatch(r"\d{1,3}", value):
        return None
    return Finding(kind, m.start(), m.end())


def check(text: str) -> None:
    """Raise SecretBlocked when `text` holds a credential."""
    found = find_secret(text)
    if found is not None:
        raise SecretBlocked(found.kind)


def redact(text: str) -> str:
    """`text` with every credential replaced by `[redacted: <kind>]`: for text vaultmem keeps
    on the person's behalf (a session transcript, a recall query), where refusing would lose
    the rest of it."""
    out, rest = [], text
    for _ in range(1000):
        found = find_secret(rest)
        if found is None:
            break
        out.append(rest[:found.start] + f"[redacted: {found.kind}]")
        rest = rest[found.end:]
    return "".join(out) + rest


def check_added(old: str | None, new: str) -> None:
    """The gate every file write passes (Vault.write_text, create_exclusive): raise
    SecretBlocked when `new` brings a credential that `old` (the file as it was, None for a
    new file) did not hold. A token the person typed into a note themselves does not stop
    vaultmem from touching that note; vaultmem never writes one of its own."""
    if old is None:
        check(new)
        return
    before = set(old.splitlines())
    added = [line for line in new.splitlines() if line not in before]
    if added:
        check("\n".join(added))
