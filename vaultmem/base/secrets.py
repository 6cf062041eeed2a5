"""The secret filter: real credential formats, not a keyword list.

`find_secret(text)` returns the first credential-looking span as a `Finding` (kind, start,
end) or None; `check(text)` raises SecretBlocked with the kind; `check_added(old, new)` is the
gate of every file write (see its docstring). The text is first normalised (a copy for
matching; spans are mapped back to `text`): zero-width and other invisible format characters
(U+200B-U+200F, U+2060-U+206F, U+FEFF, soft hyphen, variation selectors, tag characters) are
removed, unusual spaces become a space and full-width ASCII becomes ASCII. Then, in this order:

1. provider formats (`_RULES`): the token formats of gitleaks' default rule set and a few more
   (AWS, GitHub, GitLab, Slack, Stripe, OpenAI, Anthropic, Hugging Face, npm, Twilio,
   Mailgun, Mailchimp, Shopify, DigitalOcean, Discord, Azure AD, Databricks, Postman,
   Supabase, Pulumi, Sentry, Alibaba, age, 1Password, SendGrid, Vault, Grafana, ...), each
   with its own kind; PEM private-key headers in any case (`-----begin private key-----`),
   an AWS secret key after its name, a Kubernetes Secret's data, a NuGet password;
2. connection strings with an inline password of 2+ characters (`scheme://user:pw@host`);
3. passwords on a command line (`curl -u user:pass`, `mysql -pPASS`, `--password=PASS`,
   `sshpass -p PASS`, `docker login -p`, `openssl ... pass:PASS`, ...), HTTP Basic and
   Bearer credentials, secrets in a URL query;
4. credential files and wallets: a `.netrc` login with its password, a `.pgpass` line
   (`host:port:db:user:password`), htpasswd, shadow, bcrypt and argon2 hashes, 64 hex digits
   that the words before them call a key or a wallet export (not a transaction or block
   hash), a Twilio account SID with a 32-hex auth token near it;
5. assignments: a name ending in password/secret/token/api key... (optionally qualified:
   "the passphrase for the backup disk") followed by `=`/`:` (or, for passwords, `is`) and a
   literal value. `=` in code accepts any literal value; `:` and `is` in prose only a
   password-like one (a digit, symbol or inner capital, and 6+ characters), so "the password
   is stored in Vault" passes; and a provider's name (gitleaks' keyword rules: datadog,
   cloudflare, twilio, ...) assigned a random-looking value of 16+ characters;
6. BIP39 seed phrases: 12-24 words of the BIP39 English list in a row, whose checksum holds
   or that the text calls a seed, mnemonic or wallet;
7. a provider key split by single spaces or line breaks: pieces that are not plain words
   are joined with their neighbours and the provider rules run on the joined form, which
   must match across the break;
8. base64 (or base64url) and hex (`xxd -p`) that decode to text holding any of 1-6 (a data:
   URI excepted);
9. high-entropy tokens: 32+ characters of base64/base64url with upper, lower and digits
   and Shannon entropy >= 4.3 bits per character (hex digests and UUIDs stay below it),
   unless the token is words run together (a path, a branch, a CamelCase class: long
   segments, mostly pronounceable), a digest named as one (`sha512-…`, go.sum `h1:…`,
   `SHA256:…`, "checksum: …"), an IPFS CID or base64 of a file (PNG, JPEG, PDF, fonts, ...,
   known by its first bytes).

Placeholders (`<password>`, `${DB_PASS}`, `****`, `xxxx`, `os.environ[...]`) are not
secrets; neither are long identifiers, paths, URLs without a password, hashes, UUIDs, data:
URIs, public keys and certificates. Talk about secrets ("I use 1Password as my password
manager", "rotate the API key every 90 days") has no value in a credential format, so it
passes. The matched text is never put in a message, a log line or an exception: only the kind.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import math
import re
from collections import Counter
from collections.abc import Callable
from typing import Any, cast

from vaultmem.base.errors import SecretBlocked  # noqa: F401  (raised by check(); defined in base so adapters catch it)


class _Lazy:
    """A pattern compiled when first used: the costly ones (the small ones that loops call
    per token are compiled at once). Most texts a save checks
    never reach most rules (each is behind a keyword test, the provider formats behind a run
    of 20+ token characters), and compiling them all slowed every cold save."""

    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern: str, flags: int) -> None:
        self._args = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:  # search, finditer, match, fullmatch ...
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(*self._args)
        return getattr(compiled, name)


def _lazy(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return cast("re.Pattern[str]", _Lazy(pattern, flags))


KINDS = {
    # provider formats
    "aws_access_key": "an AWS access key id",
    "aws_secret_key": "an AWS secret access key",
    "aws_bedrock_key": "an Amazon Bedrock API key",
    "google_api_key": "a Google API key",
    "google_client_secret": "a Google OAuth client secret",
    "google_oauth_token": "a Google OAuth access token",
    "github_token": "a GitHub token",
    "gitlab_token": "a GitLab token",
    "slack_token": "a Slack token",
    "slack_webhook": "a Slack webhook URL",
    "teams_webhook": "a Microsoft Teams webhook URL",
    "stripe_key": "a Stripe secret key",
    "stripe_webhook_secret": "a Stripe webhook signing secret",
    "anthropic_key": "an Anthropic API key",
    "openai_key": "an OpenAI API key",
    "ai_api_key": "an AI provider's API key (Groq, xAI, Replicate, OpenRouter, Perplexity, LangSmith)",
    "jwt": "a JSON Web Token",
    "private_key": "a PEM private key",
    "age_secret_key": "an age secret key",
    "onepassword_token": "a 1Password secret key or service-account token",
    "adobe_client_secret": "an Adobe client secret",
    "airtable_token": "an Airtable personal access token",
    "alibaba_access_key": "an Alibaba Cloud access key id",
    "artifactory_token": "a JFrog Artifactory API key or reference token",
    "atlassian_token": "an Atlassian API token",
    "authress_key": "an Authress service client access key",
    "azure_client_secret": "an Azure AD client secret",
    "azure_storage_key": "an Azure storage or service bus key",
    "clickhouse_key": "a ClickHouse Cloud API secret",
    "clojars_token": "a Clojars deploy token",
    "cloudflare_key": "a Cloudflare origin CA key",
    "databricks_token": "a Databricks token",
    "defined_networking_token": "a Defined Networking API token",
    "digitalocean_token": "a DigitalOcean token",
    "discord_token": "a Discord bot token",
    "doppler_token": "a Doppler token",
    "duffel_token": "a Duffel API token",
    "dynatrace_token": "a Dynatrace API token",
    "easypost_key": "an EasyPost API key",
    "facebook_token": "a Facebook access token",
    "flutterwave_key": "a Flutterwave key",
    "flyio_token": "a Fly.io token",
    "frameio_token": "a Frame.io API token",
    "grafana_token": "a Grafana token",
    "harness_key": "a Harness API key",
    "heroku_key": "a Heroku API key",
    "huggingface_token": "a Hugging Face token",
    "infracost_token": "an Infracost API token",
    "intra42_secret": "a 42 Intra client secret",
    "linear_key": "a Linear API key",
    "mailchimp_key": "a Mailchimp API key",
    "mailgun_key": "a Mailgun API or signing key",
    "mapbox_token": "a Mapbox secret token",
    "maxmind_key": "a MaxMind license key",
    "netlify_token": "a Netlify access token",
    "newrelic_key": "a New Relic key",
    "notion_token": "a Notion integration token",
    "npm_token": "an npm access token",
    "octopus_key": "an Octopus Deploy API key",
    "openshift_token": "an OpenShift user token",
    "planetscale_token": "a PlanetScale token or password",
    "postman_key": "a Postman API key",
    "prefect_token": "a Prefect API key",
    "pulumi_token": "a Pulumi access token",
    "pypi_token": "a PyPI upload token",
    "readme_key": "a ReadMe API key",
    "rubygems_key": "a RubyGems API key",
    "scalingo_token": "a Scalingo API token",
    "sendgrid_key": "a SendGrid API key",
    "brevo_key": "a Brevo (Sendinblue) API key",
    "sentry_token": "a Sentry auth token",
    "settlemint_token": "a SettleMint access token",
    "shippo_token": "a Shippo API token",
    "shopify_token": "a Shopify access token or shared secret",
    "sourcegraph_token": "a Sourcegraph access token",
    "square_token": "a Square access token or secret",
    "supabase_token": "a Supabase access token or secret key",
    "telegram_bot_token": "a Telegram bot token",
    "terraform_token": "a Terraform Cloud API token",
    "twilio_api_key": "a Twilio API key",
    "twitter_token": "a Twitter (X) bearer token",
    "typeform_token": "a Typeform API token",
    "vault_token": "a HashiCorp Vault token",
    "yandex_key": "a Yandex Cloud key or token",
    # shapes that are not one provider's format
    "kubernetes_secret": "a Kubernetes Secret with data",
    "netrc_password": "a .netrc login with its password",
    "pgpass_password": "a .pgpass line with its password",
    "password_hash": "a password hash (htpasswd, /etc/shadow, bcrypt, argon2)",
    "crypto_private_key": "a cryptocurrency wallet's private key",
    "seed_phrase": "a BIP39 wallet seed phrase",
    "twilio_auth_token": "a Twilio account SID with its auth token",
    "connection_string": "a connection string with a password",
    "command_password": "a password on a command line",
    "basic_auth": "HTTP Basic credentials",
    "bearer_token": "a bearer token",
    "password_assignment": "a password assignment",
    "secret_assignment": "a secret or token assignment",
    "provider_credential": "a credential assigned to a provider's setting",
    "encoded_secret": "a base64-encoded credential",
    "high_entropy_token": "a high-entropy token",
}


@dataclasses.dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int

    @property
    def description(self) -> str:
        return KINDS[self.kind]


# ---------------------------------------------------------------------------------------------
# Provider formats. Each rule is (kind, body, end, check): the body is a regular expression
# (non-capturing groups only), `end` the lookahead after it, `check` an extra test of the
# matched text. Every body starts where no letter, digit or underscore precedes it.

def _looks_random(token: str) -> bool:
    """Not a placeholder or a phrase in a token's clothes: no run of 8 equal characters
    (`ghp_xxxxxxxx...`) and not lowercase words joined by - _ . (`glpat-token-format-docs`)."""
    return not (_REPEAT.search(token) or _WORDY.fullmatch(token))


def _random_with_digit(token: str) -> bool:
    return _looks_random(token) and _DIGIT.search(token) is not None


def _discord(token: str) -> bool:
    # three base64url parts; the middle one is not a plain word (Namespace.Client.ClassName)
    return _random_with_digit(token) and not _PLAIN_WORD.fullmatch(token.split(".")[1])


def _vault(token: str) -> bool:
    if token.startswith("s."):  # legacy service token: s. + 24 mixed characters
        return bool(_DIGIT.search(token) and re.search(r"[a-z]", token) and re.search(r"[A-Z]", token[2:]))
    return _looks_random(token)


def _always(token: str) -> bool:
    return True


_REPEAT = re.compile(r"(.)\1{7}")
_WORDY = re.compile(r"[a-z]+(?:[-_.][a-z]+)*")
_DIGIT = re.compile(r"\d")
_PLAIN_WORD = re.compile(r"[A-Za-z][a-z]*")

_E = r"(?![A-Za-z0-9_])"  # nothing word-like after the token
_EH = r"(?![A-Za-z0-9_-])"  # ... nor a hyphen, for formats whose alphabet has one
_EB = r"(?![A-Za-z0-9+/=])"  # base64 alphabets

_RULES: list[tuple[str, str, str, Callable[[str], bool]]] = [
    ("age_secret_key", r"(?i:AGE-SECRET-KEY-1[0-9A-Z]{58})", _E, _looks_random),
    ("aws_access_key", r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16}", _E, _looks_random),
    ("aws_bedrock_key", r"ABSK[A-Za-z0-9+/]{109,269}={0,2}|bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=]*",
     _EB, _looks_random),
    ("google_api_key", r"AIza[0-9A-Za-z_\-]{35}", _EH, _looks_random),
    ("google_client_secret", r"GOCSPX-[A-Za-z0-9_\-]{28}", _EH, _looks_random),
    ("google_oauth_token", r"ya29\.[A-Za-z0-9_\-]{20,}", _EH, _random_with_digit),
    ("github_token", r"gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255}", _E, _looks_random),
    ("gitlab_token", r"gl(?:pat|dt|ptt|rt|cbt|ft|imt|agent|oas|soat|ffct)-[A-Za-z0-9_\-]{20,}(?:\.[0-9a-z]{9})?"
                     r"|GR1348941[A-Za-z0-9_\-]{20,}|_gitlab_session=[0-9a-z]{32}", _EH, _looks_random),
    ("slack_webhook", r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,}", _EH, _looks_random),
    ("slack_token", r"xox[abposrce]-[A-Za-z0-9\-]{10,}|xoxe\.xox[bp]-\d-[A-Za-z0-9]{100,}"
                    r"|(?i:xapp-\d-[A-Z0-9]+-\d+-[A-Z0-9]+)", _EH, _random_with_digit),
    ("teams_webhook", r"[a-z0-9\-]+\.webhook\.office\.com/webhookb2/[A-Za-z0-9@/_\-]{60,}", _EH, _looks_random),
    ("stripe_key", r"(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{16,247}", _E, _looks_random),
    ("stripe_webhook_secret", r"whsec_[A-Za-z0-9+/=]{24,}", _EB, _looks_random),
    ("anthropic_key", r"sk-ant-(?:api|admin|sid|oat|ort)\d{2}-[A-Za-z0-9_\-]{20,}", _EH, _looks_random),
    ("ai_api_key", r"sk-or-v1-[a-f0-9]{64}|gsk_[A-Za-z0-9]{52}|xai-[A-Za-z0-9]{80}|r8_[A-Za-z0-9]{37}"
                   r"|pplx-[A-Za-z0-9]{48}|lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}", _EH, _random_with_digit),
    ("openai_key", r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{20,}|sk-[A-Za-z0-9]{32,}", _EH, _random_with_digit),
    ("onepassword_token", r"ops_eyJ[A-Za-z0-9+/]{250,}={0,3}"
                          r"|A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
     _EB, _looks_random),
    ("grafana_token", r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,400}={0,3}|eyJrIjoi[A-Za-z0-9]{70,400}={0,3}",
     _EB, _looks_random),
    ("jwt", r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*", _EH, _looks_random),
    ("adobe_client_secret", r"p8e-[A-Za-z0-9]{32}", _E, _random_with_digit),
    ("airtable_token", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}", _E, _looks_random),
    ("alibaba_access_key", r"LTAI[A-Za-z0-9]{12,20}", _E, _random_with_digit),
    ("artifactory_token", r"AKCp[A-Za-z0-9]{69}|cmVmd[A-Za-z0-9]{59}", _E, _looks_random),
    ("atlassian_token", r"ATATT3[A-Za-z0-9_\-=]{186}", _EH, _looks_random),
    ("authress_key", r"(?:sc|ext|scauth|authress)_[A-Za-z0-9]{5,30}\.[A-Za-z0-9]{4,6}\.acc[_-][A-Za-z0-9-]{10,32}"
                     r"\.[A-Za-z0-9+/_=-]{30,120}", _EH, _looks_random),
    ("azure_client_secret", r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}", r"(?![A-Za-z0-9_~.\-])", _random_with_digit),
    ("azure_storage_key", r"(?:AccountKey|SharedAccessKey)=[A-Za-z0-9+/]{40,88}={0,2}", _EB, _looks_random),
    ("clickhouse_key", r"4b1d[A-Za-z0-9]{38}", _E, _looks_random),
    ("clojars_token", r"(?i:CLOJARS_[a-z0-9]{60})", _E, _looks_random),
    ("cloudflare_key", r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}", _E, _looks_random),
    ("databricks_token", r"dapi[a-f0-9]{32}(?:-\d)?", _E, _looks_random),
    ("defined_networking_token", r"dnkey-[A-Za-z0-9=_\-]{26}-[A-Za-z0-9=_\-]{52}", _EH, _looks_random),
    ("digitalocean_token", r"do[por]_v1_[a-f0-9]{64}", _E, _looks_random),
    ("discord_token", r"[MNO][A-Za-z0-9_\-]{23,25}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}", _EH, _discord),
    ("doppler_token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}", _E, _looks_random),
    ("duffel_token", r"duffel_(?:test|live)_[A-Za-z0-9_\-=]{43}", _EH, _looks_random),
    ("dynatrace_token", r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}", _E, _looks_random),
    ("easypost_key", r"EZ[AT]K[A-Za-z0-9]{54}", _E, _looks_random),
    ("facebook_token", r"EAA[MC][A-Za-z0-9]{100,}|\d{15,16}(?:\||%7C)[0-9A-Za-z_\-]{27,40}", _EH, _looks_random),
    ("flutterwave_key", r"FLW(?:PUB|SEC)K(?:_TEST)?-[A-Ha-h0-9]{12,32}(?:-X)?", _EH, _looks_random),
    ("flyio_token", r"fo1_[A-Za-z0-9_\-]{43}|fm(?:1[ar]|2)_[A-Za-z0-9+/]{100,}={0,3}", _EB, _looks_random),
    ("frameio_token", r"fio-u-[A-Za-z0-9\-_=]{64}", _EH, _looks_random),
    ("harness_key", r"(?:pat|sat)\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}", _E, _looks_random),
    ("heroku_key", r"HRKU-AA[0-9A-Za-z_\-]{58}", _EH, _looks_random),
    ("huggingface_token", r"hf_[A-Za-z]{34}|api_org_[A-Za-z]{34}", _E, _looks_random),
    ("infracost_token", r"ico-[A-Za-z0-9]{32}", _E, _random_with_digit),
    ("intra42_secret", r"s-s4t2(?:ud|af)-[A-Fa-f0-9]{64}", _E, _looks_random),
    ("linear_key", r"lin_api_[A-Za-z0-9]{40}", _E, _looks_random),
    ("mailchimp_key", r"[0-9a-f]{32}-us\d{1,2}", _E, _random_with_digit),
    ("mailgun_key", r"(?:pub)?key-[0-9a-f]{32}|[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}", _E, _random_with_digit),
    ("mapbox_token", r"sk\.eyJ[A-Za-z0-9_\-]{50,}\.[A-Za-z0-9_\-]{20,}", _EH, _looks_random),
    ("maxmind_key", r"[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk", _E, _random_with_digit),
    ("netlify_token", r"nfp_[A-Za-z0-9]{36}", _E, _random_with_digit),
    ("newrelic_key", r"NRAK-[A-Z0-9]{27}|NRJS-[a-f0-9]{19}|NRII-[A-Za-z0-9\-]{32}", _EH, _random_with_digit),
    ("notion_token", r"ntn_[0-9]{11}[A-Za-z0-9]{35}|secret_[A-Za-z0-9]{43}", _E, _random_with_digit),
    ("npm_token", r"npm_[A-Za-z0-9]{36}", _E, _looks_random),
    ("octopus_key", r"API-[A-Z0-9]{26}", _E, _random_with_digit),
    ("openshift_token", r"sha256~[A-Za-z0-9_\-]{43}", _EH, _looks_random),
    ("planetscale_token", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_=.\-]{32,64}", _EH, _looks_random),
    ("postman_key", r"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}", _E, _looks_random),
    ("prefect_token", r"pnu_[A-Za-z0-9]{36}", _E, _looks_random),
    ("pulumi_token", r"pul-[a-f0-9]{40}", _E, _looks_random),
    ("pypi_token", r"pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_\-]{50,}", _EH, _looks_random),
    ("readme_key", r"rdme_[a-z0-9]{70}", _E, _random_with_digit),
    ("rubygems_key", r"rubygems_[a-f0-9]{48}", _E, _looks_random),
    ("scalingo_token", r"tk-us-[A-Za-z0-9_\-]{48}", _EH, _looks_random),
    ("sendgrid_key", r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}", _EH, _looks_random),
    ("brevo_key", r"x(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}", _E, _looks_random),
    ("sentry_token", r"sntry[us]_[A-Za-z0-9+/=_\-]{40,}", _EH, _looks_random),
    ("settlemint_token", r"sm_(?:pat|aat|sat)_[A-Za-z0-9]{16}", _E, _random_with_digit),
    ("shippo_token", r"shippo_(?:live|test)_[a-fA-F0-9]{40}", _E, _looks_random),
    ("shopify_token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", _E, _looks_random),
    ("sourcegraph_token", r"sgp_(?:[a-fA-F0-9]{16}|local)_[a-fA-F0-9]{40}|sgp_[a-fA-F0-9]{40}", _E, _looks_random),
    ("square_token", r"sq0(?:atp|csp)-[0-9A-Za-z_\-]{22,43}|EAAA[A-Za-z0-9_\-]{60}", _EH, _looks_random),
    ("supabase_token", r"sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_\-]{31,}", _EH, _looks_random),
    ("telegram_bot_token", r"\d{8,10}:AA[A-Za-z0-9_\-]{33}", _EH, _looks_random),
    ("terraform_token", r"(?:[A-Za-z0-9]{14}\.)?atlasv1\.[A-Za-z0-9_=\-]{60,70}", _EH, _looks_random),
    ("twilio_api_key", r"SK[0-9a-fA-F]{32}", _E, _looks_random),
    ("twitter_token", r"A{22}[A-Za-z0-9%]{60,120}", _E, _always),
    ("typeform_token", r"tfp_[A-Za-z0-9_.=\-]{59}", _EH, _looks_random),
    ("vault_token", r"hv[sb]\.[A-Za-z0-9_\-]{24,}|s\.[A-Za-z0-9]{24}", _EH, _vault),
    ("yandex_key", r"AQVN[A-Za-z0-9_\-]{35,38}|t1\.[A-Za-z0-9_\-]+=*\.[A-Za-z0-9_\-]{86}=*", _EH, _looks_random),
]
_PROVIDERS = _lazy(
    r"(?<![A-Za-z0-9_])(?:" + "|".join(f"(?P<r{i}>{body}){end}" for i, (_, body, end, _) in enumerate(_RULES)) + ")")
# Where provider tokens can be: runs of 20+ token characters (no space, quote or bracket).
_RUN = re.compile(r"[A-Za-z0-9_\-+/=.~:@|%]{20,}")

_PEM = _lazy(r"(?i)-{4,5} ?BEGIN[ \t]+(?:[A-Z0-9]+[ \t]+)*PRIVATE[ \t]+KEY(?:[ \t]+BLOCK)? ?-{4,5}"
                  r"|PuTTY-User-Key-File-\d+:")
_AWS_SECRET = _lazy(
    r"(?i)aws[\w.-]{0,20}?(?:secret|private)[\w.-]{0,20}?[\"']?\s*(?:[:=]|=>)\s*[\"']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])")
_NUGET = re.compile(r"(?i)<add\s+key=[\"'](?:ClearText)?Password[\"']\s+value=[\"'](?P<value>[^\"']{4,})[\"']")
_K8S_KIND = re.compile(r"(?im)^\s*kind:\s*[\"']?secret[\"']?\s*$")
_K8S_DATA = re.compile(r"(?m)^(?P<indent>[ \t]*)(?:data|stringData):[ \t]*\n(?P<body>(?:(?P=indent)[ \t]+\S.*(?:\n|$))+)")
_K8S_ITEM = re.compile(r"(?m)^[ \t]+[\w.-]+:[ \t]*[\"']?(?P<value>[^\s\"']+)")

# Credential files a person pastes: ~/.netrc (`machine HOST login USER password PW`, one line
# or several), ~/.pgpass (`host:port:database:user:password`), htpasswd and shadow hashes.
_NETRC = _lazy(r"(?i)\b(?:machine\s+\S+|default)\s+(?:(?:account|port)\s+\S+\s+)*login\s+\S+\s+"
               r"(?:(?:account|port)\s+\S+\s+)*password\s+(?P<value>\S+)")
_PGPASS = _lazy(r"(?<![\w.:*@/\\-])(?:[A-Za-z0-9_.\-]+|\*):(?:\d{2,5}|\*):[\w.\-*]+:(?P<user>[\w.\-*@]+)"
                r":(?P<value>(?:\\:|[^\s:])+)(?![^\s])")
_HEX_COLONS = re.compile(r"[0-9A-Fa-f:.]+")
_PASSWORD_HASH = _lazy(
    r"(?<![\w$])(?:\$(?:apr1|1|md5)\$[./0-9A-Za-z]{1,8}\$[./0-9A-Za-z]{22}"
    r"|\$2[abxy]?\$\d{2}\$[./A-Za-z0-9]{53}"
    r"|\$[56]\$(?:rounds=\d+\$)?[./0-9A-Za-z]{1,16}\$[./0-9A-Za-z]{43,86}"
    r"|\$y\$[./A-Za-z0-9]+\$[./A-Za-z0-9]{1,86}\$[./A-Za-z0-9]{43}"
    r"|\$argon2(?:id|i|d)\$v=\d+\$m=\d+,t=\d+,p=\d+\$[A-Za-z0-9+/]{11,}\$[A-Za-z0-9+/]{16,})"
    r"|\{S?SHA(?:256|512)?\}[A-Za-z0-9+/]{27,}={0,2}")
# A wallet key is 64 hex digits (0x optional), as a transaction or block hash is: it counts as a
# key only when the words just before it call it one and none calls it a hash.
_HEX64 = re.compile(r"(?<![0-9A-Za-z])(?:0x)?[0-9a-fA-F]{64}(?![0-9A-Za-z])")
_KEY_WORDS = _lazy(r"(?i)private[ _-]?key|privkey|secret[ _-]?key|signing[ _-]?key|wallet|metamask|keystore"
                   r"|\bkey\b|\bexport(?:ed)?\b")
_HASH_WORDS = _lazy(r"(?i)\b(?:tx|txn|txid|transaction|hash|txhash|block|commit|sha-?\d*|sha3|keccak\w*|digest"
                    r"|checksum|address|id|fingerprint)\b|hash")
# Twilio: an account SID (AC + 32 hex, an id on its own) with a 32-hex auth token near it.
_TWILIO_SID = re.compile(r"(?<![A-Za-z0-9])AC[0-9a-f]{32}(?![A-Za-z0-9])")
_HEX32 = re.compile(r"(?<![A-Za-z0-9])[0-9a-f]{32}(?![A-Za-z0-9])")

# ---------------------------------------------------------------------------------------------
# Shapes that are not one provider's format.

_CONNECTION = _lazy(
    r"(?i)\b[a-z][a-z0-9+.\-]{1,20}://(?P<user>[^\s:/@'\"<>]*):(?P<pw>[^\s@/'\"]+)@[^\s/@]+")

# Credentials passed on a command line. Each alternative names its value `pN`.
_COMMAND_WORDS = ("curl", "wget", "mysql", "mariadb", "sshpass", "redis-cli", "docker", "podman", "mongo", "openssl",
                  "zip", "7z", "ldap", "sqlcmd", "bcp", "keytool", "jarsigner", "htpasswd", "smbclient", "rpcclient",
                  "ssh-keygen", "az login", "psexec")
_COMMAND = _lazy(
    r"\b(?i:curl)\b[^\n]{0,300}?\s(?:-u|--user|--proxy-user|-U)[ =]?(?:(?P<q1>['\"])[^:'\"\s]+:(?P<p1>[^'\"]{2,})(?P=q1)"
    r"|[^\s:'\"]+:(?P<p2>[^\s'\"]{2,}))"
    r"|\b(?i:curl|wget)\b[^\n]{0,300}?\s--(?:http-|ftp-|proxy-)?password[ =](?P<p3>\S+)"
    r"|\b(?i:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n]{0,300}?\s(?:-p(?P<p4>[^\s-]\S*)|--password=(?P<p5>\S+))"
    r"|\bsshpass\b[^\n]{0,300}?\s-p\s*(?P<p6>\S+)"
    r"|\bredis-cli\b[^\n]{0,300}?\s(?:-a|--pass)\s+(?P<p7>\S{2,})"
    r"|\b(?:docker|podman)\s+login\b[^\n]{0,300}?\s(?:-p|--password)[ =](?P<p8>\S+)"
    r"|\bmongo(?:sh|dump|restore|export|import)?\b[^\n]{0,300}?\s(?:-p|--password)[ =](?P<p9>\S+)"
    r"|\bopenssl\b[^\n]{0,300}?\s-pass(?:in|out)?\s+pass:(?P<p10>\S+)"
    r"|\b(?:zip|unzip)\b[^\n]{0,300}?\s-P\s+(?P<p11>\S+)"
    r"|\b7z[az]?\b[^\n]{0,300}?\s-p(?P<p12>[^\s-]\S*)"
    r"|\bldap\w+\b[^\n]{0,300}?\s-w\s+(?P<p13>\S+)"
    r"|\b(?:sqlcmd|bcp|osql)\b[^\n]{0,300}?\s-P\s*(?P<p14>\S+)"
    r"|\b(?:keytool|jarsigner)\b[^\n]{0,300}?\s-(?:store|key|srcstore|deststore|srckey|destkey)pass\s+(?P<p15>\S+)"
    r"|\bhtpasswd\s+-\w*b\w*\s+(?:-\w+\s+)*\S+\s+\S+\s+(?P<p16>\S+)"
    r"|\b(?:smbclient|rpcclient|smbmap)\b[^\n]{0,300}?\s-U\s*['\"]?[^\s%'\"]+%(?P<p17>[^\s'\"]+)"
    r"|\bssh-keygen\b[^\n]{0,300}?\s-[NP]\s+(?P<p18>\S+)"
    r"|\baz\s+login\b[^\n]{0,300}?\s(?:-p|--password)[ =](?P<p19>\S+)"
    r"|\bpsexec\b[^\n]{0,300}?\s-p\s+(?P<p20>\S+)")
_BASIC = _lazy(r"(?i)\bauthorization['\"]?\s*[:=]\s*['\"]?basic\s+(?P<value>[A-Za-z0-9+/]{8,}={0,2})")
_BEARER = re.compile(r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9_\-.~+/]{20,}=*)")
_QUERY_SECRET = re.compile(
    r"(?i)[?&](?:access_token|api_key|apikey|token|key|secret|client_secret|sig|signature|password)="
    r"(?P<value>[^\s&#]{12,})")

# An assignment: found by its last word (password, secret, token, api key...), then the name
# before it is read backwards. `=` or `:` (or "is" in prose), then the value.
_ASSIGN = _lazy(
    r"(?i)(?P<kw>pass(?:word|wd|phrase)?|pwd|(?:secret|api|access|private|signing)[_\-. ]?key|apikey"
    r"|(?:access|auth|refresh)[_\-. ]?token|client[_\-. ]?secret|secret|token|credentials?)[\"']?"
    r"(?:[ \t]+(?:for|of|to|on)[ \t]+(?:[\w.@'-]+[ \t]+){0,3}?[\w.@'-]+)?"
    r"(?P<op>\s*(?:=|:=|=>|:)\s*|\s+(?:is|was|=)\s+)"
    r"(?P<q>[\"'`]?)(?P<value>[^\s\"'`,;]+)")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
_PLACEHOLDER = _lazy(
    r"""(?ix)^(?:
        <[^>]*>? | \$\{?[\w.]+\}? | \{\{?[^}]*\}?\}? | %\(?\w*\)?s | %\w+% | \[[^\]]*\]? |
        [*x.•#?_-]+ | (?:your|my)[_\-]\w* | redacted | hidden | masked | placeholder |
        example\w* | dummy\w* | sample\w* | changeme | secret | password | passwd | token |
        none | null | nil | true | false | undefined | empty | required | optional | env |
        (?:os\.)?(?:environ|getenv)\b.* | process\.env\b.* | env\(.* | getpass\(.* | input\(.* |
        [\w.]+\(.*
    )$""")
_PASSWORD_MANAGERS = {"1password", "bitwarden", "keepass", "keepassxc", "lastpass", "dashlane",
                      "keychain", "vault", "pass", "nordpass", "protonpass", "enpass"}
# an attribute or variable reference in code (settings.SECRET_KEY), not a literal
_REFERENCE = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
# prose words that follow "password:" / "token:" without being a value
_PROSE_VALUE = re.compile(r"^[a-z]+[.!?]?$")

# gitleaks' keyword rules: a provider's name, then `=`/`:` and its key. The value must look
# random (16+ characters, letters and digits mixed); UUIDs and 40-hex commit ids are ids.
_PROVIDER_NAMES = (
    "adafruit", "adobe", "airtable", "algolia", "alibaba", "asana", "atlassian", "confluence", "jira", "beamer",
    "bitbucket", "bittrex", "meraki", "cloudflare", "codecov", "cohere", "coinbase", "confluent", "contentful",
    "datadog", "discord", "droneci", "dropbox", "etsy", "facebook", "fastly", "finicity", "finnhub", "flickr",
    "freemius", "freshbooks", "gitter", "gocardless", "heroku", "hubspot", "intercom", "jfrog", "artifactory",
    "bintray", "kraken", "kucoin", "launchdarkly", "linear", "linkedin", "linked_in", "mailchimp", "mailgun",
    "mapbox", "mattermost", "messagebird", "message_bird", "netlify", "newrelic", "new_relic", "new-relic", "nytimes",
    "okta", "plaid", "privateai", "private_ai", "rapidapi", "sendbird", "sentry", "snyk", "sonar", "squarespace",
    "sumo", "telegram", "travis", "twitch", "twitter", "yandex", "zendesk", "contribsys", "twilio", "sendgrid",
    "pagerduty", "circleci", "vercel", "openai", "anthropic", "mistral", "groq", "deepseek", "pinecone", "replicate",
    "elevenlabs", "postmark", "segment", "mixpanel", "amplitude", "buildkite", "honeycomb", "rollbar", "bugsnag",
)
_PROVIDER_ASSIGN = _lazy(
    r"(?i)(?<![A-Za-z])(?P<provider>" + "|".join(re.escape(p) for p in _PROVIDER_NAMES) + r")(?![a-z])"
    r"(?P<name>[\w.\-]{0,30}(?:[ \t][\w.\-]{1,20}){0,2})[\"']?[ \t]{0,3}(?:=|:=|=>|:)[ \t]{0,3}[\"'`]?"
    r"(?P<value>[A-Za-z0-9_\-+/=.]{16,200})(?![A-Za-z0-9_\-+/=.])")
_ID_WORDS = _lazy(r"(?i)(?:^|[_\-. ])(?:id|ids|sha|commit|release|version|hash|digest|checksum|rev|revision|build|region|"
                       r"site|url|uri|host|domain|project|org|team|channel|user|username|email|handle|account|env|"
                       r"environment|name|workspace|app)(?:$|[_\-. ])")
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_HEX40 = re.compile(r"[0-9a-fA-F]{40}")
_ALNUM_SWITCH = re.compile(r"[A-Za-z](?=\d)|\d(?=[A-Za-z])")

# Encoded and high-entropy tokens.
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/_\-]{20,}={0,2}(?![A-Za-z0-9+/=_\-])")
_DATA_URI = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]+")
_PUBLIC_KEY = re.compile(
    r"\b(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d+|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)"
    r"\s+AAAA[A-Za-z0-9+/]+={0,3}")
# public keys and certificates in PEM, meant to be shared
_PUBLIC_PEM = _lazy(r"-----BEGIN (?:(?:RSA|EC|DSA|SSH2|PGP) )?(?:PUBLIC KEY(?: BLOCK)?|CERTIFICATE(?: REQUEST)?)-----"
                    r".*?(?:-----END [A-Z0-9 ]+-----|\Z)", re.S)
_TOKEN = re.compile(r"[A-Za-z0-9+/_\-]{32,}={0,2}")
_URL = re.compile(r"(?i)\b(?:https?|ftp|wss?)://\S+")
_LOWER, _UPPER = re.compile(r"[a-z]"), re.compile(r"[A-Z]")
_HEXISH = re.compile(r"[0-9a-fA-F\-]+")

# Normalisation: characters that hide inside a token without being seen (zero-width, bidi and
# other format characters, variation selectors, tag characters), spaces that are not U+0020,
# full-width ASCII.
_HIDDEN = ("\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f"
           "\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e007f")
_ODD = _lazy(f"[{_HIDDEN}]|[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]|[\uff01-\uff5e]")
_HIDDEN_CHAR = _lazy(f"[{_HIDDEN}]")


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
    if not (_LOWER.search(core) and _UPPER.search(core) and _DIGIT.search(core)):
        return False
    if _HEXISH.fullmatch(core):  # hex digests, UUIDs
        return False
    return entropy(core) >= 4.3


# ---------------------------------------------------------------------------------------------

def find_secret(text: str) -> Finding | None:
    """The first credential-looking span in `text`, or None (see the module's docstring)."""
    clean, index = _normalise(text)
    found = _find(clean) or _split(clean) or _encoded(clean) or _entropy(clean)
    if found is None or index is None:
        return found
    return Finding(found.kind, index[found.start], index[found.end - 1] + 1)


def _normalise(text: str) -> tuple[str, list[int] | None]:
    """`text` with invisible characters removed, odd spaces as spaces and full-width ASCII as
    ASCII, and for each of its characters the index of the character in `text` it came from
    (None when nothing changed)."""
    if text.isascii() or not _ODD.search(text):
        return text, None
    out: list[str] = []
    index: list[int] = []
    last = 0
    for m in _ODD.finditer(text):
        i = m.start()
        out.append(text[last:i])
        index.extend(range(last, i))
        c = text[i]
        if not _HIDDEN_CHAR.match(c):
            out.append(chr(ord(c) - 0xFEE0) if "\uff01" <= c <= "\uff5e" else " ")
            index.append(i)
        last = i + 1
    out.append(text[last:])
    index.extend(range(last, len(text)))
    return "".join(out), index


def _provider(text: str, pos: int = 0, endpos: int | None = None) -> Finding | None:
    """The first provider-format token in text[pos:endpos]."""
    end = len(text) if endpos is None else endpos
    m = _PROVIDERS.search(text, pos, end)
    while m is not None:
        kind, _, _, ok = _RULES[int(m.lastgroup[1:])]  # type: ignore[index]
        if ok(m.group()):
            return Finding(kind, m.start(), m.end())
        m = _PROVIDERS.search(text, m.start() + 1, end)
    return None


def _find(text: str, *, decoded: bool = False) -> Finding | None:
    """Rules 1-6 of the module's docstring."""
    long_runs = []  # where a 64-hex wallet key can be
    for run in _RUN.finditer(text):
        found = _provider(text, run.start(), run.end())
        if found is not None:
            return found
        if run.end() - run.start() >= 64:
            long_runs.append(run.span())
    lower = text.lower()
    if "----" in text or "putty" in lower:
        m = _PEM.search(text)
        if m:
            return Finding("private_key", m.start(), m.end())
    if "aws" in lower:
        m = _AWS_SECRET.search(text)
        if m:
            return Finding("aws_secret_key", m.start(), m.end())
    if "kind:" in lower and "secret" in lower:
        found = _kubernetes_secret(text)
        if found is not None:
            return found
    if "://" in text:
        for m in _CONNECTION.finditer(text):
            pw = m.group("pw")
            if not _is_placeholder(pw) and len(pw) >= 2:
                return Finding("connection_string", m.start(), m.end())
    if any(word in lower for word in _COMMAND_WORDS):
        for m in _COMMAND.finditer(text):
            value = next(v for k, v in m.groupdict().items() if k.startswith("p") and v is not None)
            value = value.strip("'\"")
            if len(value) >= 2 and not _is_placeholder(value) and not value.startswith(("$", "%", "-", "@", "file:", "env:")):
                return Finding("command_password", m.start(), m.end())
    if "basic" in lower:
        for m in _BASIC.finditer(text):
            if not _is_placeholder(m.group("value")):
                return Finding("basic_auth", m.start(), m.end())
    if "=" in text and ("?" in text or "&" in text):
        for m in _QUERY_SECRET.finditer(text):
            if not _is_placeholder(m.group("value")):
                return Finding("secret_assignment", m.start(), m.end())
    if "bearer" in lower:
        for m in _BEARER.finditer(text):
            value = m.group("value")
            if not _is_placeholder(value) and _DIGIT.search(value) and re.search(r"[A-Za-z]", value):
                return Finding("bearer_token", m.start(), m.end())
    found = _credential_files(text, lower, long_runs)
    if found is not None:
        return found
    if "<add" in lower:
        m = _NUGET.search(text)
        if m and not _is_placeholder(m.group("value")) and not m.group("value").startswith(("%", "$")):
            return Finding("password_assignment", m.start(), m.end())
    if any(word in lower for word in ("pass", "pwd", "secret", "key", "token", "credential")):
        for m in _ASSIGN.finditer(text):
            found = _assignment(text, m)
            if found is not None:
                return found
    if "=" in text or ":" in text:
        for m in _PROVIDER_ASSIGN.finditer(text):
            if _provider_value(m.group("name"), m.group("value")):
                return Finding("provider_credential", m.start(), m.end())
    return _seed_phrase(text)


def _credential_files(text: str, lower: str, long_runs: list[tuple[int, int]]) -> Finding | None:
    """.netrc and .pgpass lines, password hashes, wallet keys, a Twilio SID with its token."""
    if "login" in lower and "password" in lower:
        for m in _NETRC.finditer(text):
            if not _is_placeholder(m.group("value")):
                return Finding("netrc_password", m.start(), m.end())
    if text.count(":") >= 4:
        for m in _PGPASS.finditer(text):
            value = m.group("value")
            if (_password_like(value) and not _is_placeholder(value) and not _HEX_COLONS.fullmatch(m.group())
                    and (m.group("user") == "*" or re.search(r"[A-Za-z]", m.group("user")))):
                return Finding("pgpass_password", m.start(), m.end())
    if "$" in text or "{s" in lower:
        hashed = _PASSWORD_HASH.search(text)
        if hashed:
            return Finding("password_hash", hashed.start(), hashed.end())
    for span in long_runs:
        for m in _HEX64.finditer(text, *span):
            before = text[max(0, m.start() - 80):m.start()]
            if _KEY_WORDS.search(before) and not _HASH_WORDS.search(before):
                return Finding("crypto_private_key", m.start(), m.end())
    if "AC" in text:
        for sid in _TWILIO_SID.finditer(text):
            token = _HEX32.search(text, max(0, sid.start() - 300), sid.end() + 300)
            if token:
                return Finding("twilio_auth_token", min(sid.start(), token.start()), max(sid.end(), token.end()))
    return None


def _kubernetes_secret(text: str) -> Finding | None:
    if not _K8S_KIND.search(text):
        return None
    for block in _K8S_DATA.finditer(text):
        for item in _K8S_ITEM.finditer(block.group("body")):
            value = item.group("value")
            if len(value) >= 4 and not _is_placeholder(value):
                return Finding("kubernetes_secret", block.start(), block.end())
    return None


def _assignment(text: str, m: re.Match[str]) -> Finding | None:
    # the name: the keyword and the name characters before it (DB_PASSWORD, stripe.api_key)
    start = m.start()
    while start > 0 and text[start - 1] in _NAME_CHARS and m.start() - start < 40:
        start -= 1
    if start > 0 and (text[start - 1] in _NAME_CHARS or text[start - 1].isalnum()):
        return None  # a longer word, not a name
    name = text[start:m.end("kw")].lower()
    value = m.group("value")
    op = m.group("op").strip().lower()
    quoted = bool(m.group("q"))
    if _is_placeholder(value) or len(value) < 4:
        return None
    if not quoted and (_REFERENCE.match(value) or value.lower().rstrip(".,;!?") in _PASSWORD_MANAGERS):
        return None  # "the password is in 1Password": where it is kept, not what it is
    is_password = "pass" in name or "pwd" in name
    kind = "password_assignment" if is_password else "secret_assignment"
    found = Finding(kind, start, m.end())
    if op in ("is", "was"):
        # prose: "my password is hunter2" blocks, "the password is stored in Vault" does not
        if not is_password or not _password_like(value):
            return None
        return found
    if op == ":" and not quoted:
        # "secret: the meeting moved" is prose; a YAML/colon value must look like a credential
        if _PROSE_VALUE.match(value) or not _password_like(value):
            return None
        if not is_password and len(value) < 12:
            return None
        return found
    # `=` (code, env files) or a quoted value: any literal counts, but keep prose words out
    if not quoted and _PROSE_VALUE.match(value) and len(value) < 6:
        return None
    if not is_password and not quoted and len(value) < 8:
        return None
    if re.fullmatch(r"\d{1,3}", value):
        return None
    return found


def _provider_value(name: str, value: str) -> bool:
    """A provider setting's value that is a key: random-looking, not an id, a URL or a path."""
    value = value.rstrip(".")
    if len(value) < 16 or _ID_WORDS.search(name) or _is_placeholder(value) or value.startswith("/"):
        return False
    if _UUID.fullmatch(value) or _HEX40.fullmatch(value) or "://" in value:
        return False
    if not (_DIGIT.search(value) and re.search(r"[A-Za-z]", value)):
        return False
    return len(_ALNUM_SWITCH.findall(value)) >= 4 and _looks_random(value)


# ---------------------------------------------------------------------------------------------
# BIP39 seed phrases: 12, 15, 18, 21 or 24 words of the BIP39 English list (bip39_english.txt,
# shipped with the package), in order, separated by spaces, commas or line breaks, optionally
# numbered ("1. abandon 2. ability"). Ordinary prose rarely runs 12 list words in a row ("the",
# "a", "is", "of" are not on it); such a run is a seed phrase when its checksum holds (the low
# bits of the last word, which random words rarely match) or the text calls it a seed.

_WORD_RUN = _lazy(r"(?<![\w'-])[A-Za-z]{3,8}(?![\w'-])(?:[\s,;]+(?:\d{1,2}[.):]?\s+)?[A-Za-z]{3,8}(?![\w'-])){11,}")
_WORD = re.compile(r"[A-Za-z]+")
_SEED_WORDS = _lazy(r"(?i)\b(?:seed|mnemonic|recovery|wallet|backup phrase|secret phrase)\b")
_BIP39: dict[str, int] = {}


def _bip39() -> dict[str, int]:
    if not _BIP39:
        from pathlib import Path

        words = Path(__file__).with_name("bip39_english.txt").read_text(encoding="utf-8").split()
        _BIP39.update((word, i) for i, word in enumerate(words))
    return _BIP39


def _checksum_holds(indices: list[int]) -> bool:
    import hashlib

    bits = "".join(f"{i:011b}" for i in indices)
    n_checksum = len(bits) // 33
    entropy_bits = bits[:-n_checksum]
    data = int(entropy_bits, 2).to_bytes(len(entropy_bits) // 8, "big")
    digest = f"{hashlib.sha256(data).digest()[0]:08b}"
    return digest[:n_checksum] == bits[-n_checksum:]


def _word_run(text: str) -> bool:
    """Whether 12 words of 3-8 letters follow one another (numbers between them aside): the
    shape of a seed phrase, checked with str methods before any pattern runs."""
    run = 0
    for token in text.replace(",", " ").replace(";", " ").split():
        word = token.strip(".!?\"'()[]")
        if 3 <= len(word) <= 8 and word.isalpha() and word.isascii():
            run += 1
            if run == 12:
                return True
        elif not (len(token) <= 3 and token.rstrip(".):").isdigit()):
            run = 0
    return False


def _seed_phrase(text: str) -> Finding | None:
    if not _word_run(text):
        return None
    runs = list(_WORD_RUN.finditer(text))
    if not runs:
        return None
    words = _bip39()
    named = _SEED_WORDS.search(text) is not None
    for run in runs:
        listed: list[re.Match[str]] = []
        for w in [*_WORD.finditer(text, run.start(), run.end()), None]:
            if w is not None and w.group().lower() in words:
                listed.append(w)
                continue
            found = _seed_in(listed, words, named)
            if found is not None:
                return found
            listed = []
    return None


def _seed_in(listed: list[re.Match[str]], words: dict[str, int], named: bool) -> Finding | None:
    if len(listed) < 12:
        return None
    for size in (24, 21, 18, 15, 12) if len(listed) <= 28 else ():
        for i in range(len(listed) - size + 1):
            window = listed[i:i + size]
            if _checksum_holds([words[w.group().lower()] for w in window]):
                return Finding("seed_phrase", window[0].start(), window[-1].end())
    if named and len(listed) in (12, 15, 18, 21, 24):
        return Finding("seed_phrase", listed[0].start(), listed[-1].end())
    return None


# ---------------------------------------------------------------------------------------------
# Rule 7: a provider key split by single spaces or line breaks.

_NOT_PLAIN = re.compile(r"(?<!\S)[^\s]*?(?:[0-9_+/=~@|%]|[a-z][A-Z]|[A-Z]{2})\S*")
_LEAD = "'\"`([{<"
_TRAIL = "'\"`)]}>,;:.!?"


def _gap_before(text: str, start: int) -> int | None:
    """If a single gap (one space or tab, or one line break with indentation) ends at `start`,
    the end of the piece before it."""
    i = start
    if i > 0 and text[i - 1] in " \t":
        i -= 1
        if i > 0 and text[i - 1] not in " \t\r\n":
            return i
        while i > 0 and text[i - 1] in " \t":
            i -= 1
    if i > 0 and text[i - 1] == "\n":
        i -= 1
        if i > 0 and text[i - 1] == "\r":
            i -= 1
        if i > 0 and text[i - 1] not in " \t\r\n":
            return i
    return None


def _gap_after(text: str, end: int) -> int | None:
    """If a single gap starts at `end`, the start of the piece after it."""
    n = len(text)
    i = end
    if i < n and text[i] in " \t":
        i += 1
        if i < n and text[i] not in " \t\r\n":
            return i
        if i < n and text[i] not in "\r\n":
            return None
    if i < n and text[i] == "\r":
        i += 1
    if i < n and text[i] == "\n":
        i += 1
        while i < n and text[i] in " \t":
            i += 1
        if i < n and text[i] not in " \t\r\n":
            return i
    return None


def _piece_at(text: str, start: int) -> tuple[int, int]:
    end = start
    while end < len(text) and not text[end].isspace():
        end += 1
    return start, end


def _piece_ending(text: str, end: int) -> tuple[int, int]:
    start = end
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    return start, end


def _plain(piece: str) -> bool:
    return _PLAIN_WORD.fullmatch(piece.strip(_LEAD + _TRAIL)) is not None


def _split(text: str) -> Finding | None:
    """Rule 7: pieces that are not plain words, with at most one plain word on either side,
    joined across single gaps; a provider rule must match across a gap."""
    seen = -1
    for m in _NOT_PLAIN.finditer(text):
        if m.start() < seen:
            continue
        # the chain of pieces around this one: not-plain pieces, then one plain piece at each end
        pieces = [(m.start(), m.end())]
        while len(pieces) < 6:
            before = _gap_before(text, pieces[0][0])
            if before is None:
                break
            piece = _piece_ending(text, before)
            pieces.insert(0, piece)
            if _plain(text[piece[0]:piece[1]]):
                break
        while len(pieces) < 12:
            after = _gap_after(text, pieces[-1][1])
            if after is None:
                break
            piece = _piece_at(text, after)
            pieces.append(piece)
            if _plain(text[piece[0]:piece[1]]):
                break
        seen = pieces[-1][1]
        if len(pieces) < 2 or sum(b - a for a, b in pieces) < 20:
            continue
        found = _split_chain(text, pieces)
        if found is not None:
            return found
    return None


def _split_chain(text: str, pieces: list[tuple[int, int]]) -> Finding | None:
    for i in range(len(pieces) - 1):
        joined = text[pieces[i][0]:pieces[i][1]]
        offsets = [0]
        for k in range(i + 1, min(i + 6, len(pieces))):
            offsets.append(len(joined))
            joined += text[pieces[k][0]:pieces[k][1]]
            if len(joined) < 20:
                continue
            found = _provider(joined)
            while found is not None and not (found.start < offsets[1] and found.end > offsets[-1]):
                # only a key that starts in the first piece and ends in the last one is new here
                nxt = found.start + 1
                found = _provider(joined, nxt) if nxt < len(joined) else None
            if found is not None:
                return Finding(found.kind, _joined_to_text(found.start, offsets, pieces[i:]),
                               _joined_to_text(found.end - 1, offsets, pieces[i:]) + 1)
    return None


def _joined_to_text(pos: int, offsets: list[int], pieces: list[tuple[int, int]]) -> int:
    k = max(j for j, off in enumerate(offsets) if off <= pos)
    return pieces[k][0] + pos - offsets[k]


# ---------------------------------------------------------------------------------------------
# Rules 8 and 9.

def _public_spans(text: str) -> list[tuple[int, int]]:
    return [(u.start(), u.end()) for pattern in (_URL, _DATA_URI, _PUBLIC_KEY, _PUBLIC_PEM)
            for u in pattern.finditer(text)]


def _encoded(text: str, depth: int = 0) -> Finding | None:
    """Rule 8: base64, base64url or hex that decodes to text holding a credential."""
    spans: list[tuple[int, int]] | None = None
    hex_end = 0  # the end of the last hex block decoded (its lines are not decoded again)
    for run in _RUN.finditer(text):
        if run.start() >= hex_end and run.end() - run.start() >= 40 and _HEX_TEXT.fullmatch(text, run.start(), run.end()):
            found, hex_end = _hex_encoded(text, run.start())
            if found is not None:
                return found
        for m in _BASE64.finditer(text, run.start(), run.end()):
            token = m.group(0)
            if spans is None:
                spans = [(d.start(), d.end()) for d in _DATA_URI.finditer(text)] if "base64," in text else []
            if any(a <= m.start() < b for a, b in spans):
                continue
            inner = _decode(token)
            if inner is None:
                continue
            if _find(inner) is not None or (depth < 1 and _encoded(inner, depth + 1) is not None):
                return Finding("encoded_secret", m.start(), m.end())
    return None


_HEX_TEXT = re.compile(r"(?:[0-9a-fA-F]{2})+")
# hex as `xxd -p` prints it: lines of hex digits
_HEX_LINES = re.compile(r"(?:[0-9a-fA-F]{2})+(?:\r?\n(?:[0-9a-fA-F]{2})+)*")


def _hex_encoded(text: str, start: int) -> tuple[Finding | None, int]:
    """Hex (xxd -p, a hex dump of a key file) that decodes to text holding a credential, and
    where the hex block ends."""
    m = _HEX_LINES.match(text, start)
    if m is None:
        return None, start
    try:
        inner = bytes.fromhex(re.sub(r"\s", "", m.group())).decode("utf-8")
    except ValueError:
        return None, m.end()
    if (inner.isprintable() or all(c.isprintable() or c in "\n\r\t" for c in inner)) and _find(inner) is not None:
        return Finding("encoded_secret", m.start(), m.end()), m.end()
    return None, m.end()


def _decode(token: str) -> str | None:
    core = token.rstrip("=")
    if len(core) % 4 == 1:
        return None
    try:
        raw = base64.b64decode(core + "=" * (-len(core) % 4), altchars=b"-_" if ("-" in core or "_" in core) else None,
                               validate=True)
        inner = raw.decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None
    return inner if inner.isprintable() or all(c.isprintable() or c in "\n\r\t" for c in inner) else None


def _entropy(text: str) -> Finding | None:
    """Rule 9: a high-entropy token that is not part of a URL, a data: URI or a public key, nor
    words run together, a named digest, a content id or a file's base64."""
    public: list[tuple[int, int]] | None = None
    for run in _RUN.finditer(text):
        if run.end() - run.start() < 32:
            continue
        for m in _TOKEN.finditer(text, run.start(), run.end()):
            if not _high_entropy(m.group(0)):
                continue
            if public is None:
                public = _public_spans(text)
            if any(a <= m.start() < b for a, b in public):  # URLs, data: URIs and public keys are not secrets
                continue
            if _identifier(m.group(0)) or _labelled_hash(text, m.start(), m.group(0)) or _file_data(m.group(0)):
                continue
            return Finding("high_entropy_token", m.start(), m.end())
    return None


_SEGMENT = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_VOWEL = re.compile(r"[aeiouyAEIOUY]")


def _identifier(token: str) -> bool:
    """Words run together (AbstractSingletonProxyFactoryBean2Impl, feature/ABC-1234-fixTheLogin,
    ~/Documents/Vault2024/PersonalKnowledgeBaseV3): long segments, most of them word-like (3+
    letters with a vowel, or a number). Random base64 breaks into short segments at every
    change of case, and its lowercase runs are rarely pronounceable."""
    segments = _SEGMENT.findall(token)
    total = sum(len(seg) for seg in segments)
    if not segments or total / len(segments) < 3.5:
        return False
    wordy = sum(len(seg) for seg in segments
                if seg.isdigit() or (len(seg) >= 3 and not seg.isupper() and _VOWEL.search(seg)))
    return wordy >= 0.8 * total


# a digest named as one: SRI and npm `sha512-…`, go.sum `h1:…`, `SHA256:…` fingerprints,
# "checksum: …", "the sha256 of the tarball is …"
_HASH_PREFIX = _lazy(r"(?i)(?:sha-?(?:1|224|256|384|512)|sha3-\d+|md5|blake2[bs]?|blake3|b3|h1)[-:_]")
_HASH_LABEL = _lazy(
    r"(?i)\b(?:sha-?(?:1|224|256|384|512)|sha3-\d+|md5|blake2[bs]?|blake3|b3|h1|integrity|checksum|digest|hash"
    r"|fingerprint|etag|cid|ipfs|ipns)(?:[ \t]+(?:sum|value|of|for)\b[^\n]{0,40}?)?[ \t]*(?:is|was|[:=]|-)?[ \t]*[\"'`(]?$")
# IPFS CIDv0: a base58 multihash
_CID = re.compile(r"Qm[1-9A-HJ-NP-Za-km-z]{44}")
# the first bytes of files people paste as bare base64: PNG, JPEG, GIF, WebP/WAV (RIFF), PDF,
# zip (docx, xlsx), gzip, SVG/XML, WOFF fonts, ICO, MP4/HEIC/AVIF (ftyp)
_MAGIC = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"RIFF", b"%PDF", b"PK\x03\x04", b"\x1f\x8b", b"<svg", b"<?xml",
          b"wOFF", b"wOF2", b"\x00\x00\x01\x00")


def _labelled_hash(text: str, start: int, token: str) -> bool:
    if _HASH_PREFIX.match(token) or _CID.fullmatch(token):
        return True
    return _HASH_LABEL.search(text, max(0, start - 60), start) is not None


def _file_data(token: str) -> bool:
    try:
        head = base64.b64decode(token[:24], validate=True)
    except (binascii.Error, ValueError):
        return False
    return head.startswith(_MAGIC) or head[4:8] == b"ftyp"


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
    new file) did not hold. Each changed stretch of lines is checked with two lines either
    side, so a key whose first half the file already held and whose second half this write
    adds (two writes, each harmless alone) is seen whole; a credential whose text the old file
    already held (a token the person typed into their own note) does not stop the write."""
    if old is None:
        check(new)
        return
    import difflib

    old_lines, new_lines = old.splitlines(), new.splitlines()
    windows: list[list[int]] = []
    for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, old_lines, new_lines).get_opcodes():
        if tag == "equal":
            continue
        start, end = max(0, j1 - 2), min(len(new_lines), j2 + 2)
        if windows and start <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], end)
        else:
            windows.append([start, end])
    held = "\n".join(old_lines)
    for start, end in windows:
        text = "\n".join(new_lines[start:end])
        for found in _findings(text):
            if text[found.start:found.end] not in held:
                raise SecretBlocked(found.kind)


def _findings(text: str) -> list[Finding]:
    """Every credential in `text`, in order."""
    out: list[Finding] = []
    offset = 0
    for _ in range(1000):
        found = find_secret(text[offset:])
        if found is None:
            break
        out.append(Finding(found.kind, offset + found.start, offset + found.end))
        offset += max(found.end, 1)
    return out
