"""Settings: defaults < `<vault>/.vaultmem/config.yaml` < `VAULTMEM_*` environment < CLI flags.

The CortexGraph seed's `CORTEXGRAPH_*` variable names are accepted as aliases so a
CortexGraph user can switch without renaming their environment.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vaultmem.base.errors import ConfigError
from vaultmem.base.walk import DEFAULT_VAULT, SKIP_DIRS, TMP_MARK, resolve_vault  # noqa: F401

# DEFAULT_VAULT, SKIP_DIRS, TMP_MARK, resolve_vault: where the vault is and what a walk of it
# skips live in base/walk.py, beside the walk; they are named here too, where users of the
# settings look for them.

def _template_dir() -> Path:
    """Where the package's templates are: vaultmem/templates/ in a wheel, the project's
    templates/ in an editable install. Found through the import system (find_spec), as
    importlib.resources would, without its import (tempfile, zipfile: slow for every start)."""
    import importlib.util

    spec = importlib.util.find_spec("vaultmem.templates")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("vaultmem's templates are missing from its installation; reinstall vaultmem")
    return Path(next(iter(spec.submodule_search_locations)))


TEMPLATE_DIR = _template_dir()  # the packaged templates/ (memory.md, the YAML rule files, service units)
CONFIG_FILE = ".vaultmem/config.yaml"

DECAY_MODELS = ("power_law", "exponential", "two_component", "actr")
URGENCIES = ("critical", "important", "reference", "background")


@dataclasses.dataclass
class Settings:
    """Every tunable of vaultmem, with the seed's defaults."""

    # layout, relative to the vault
    stm_dir: str = "memory/stm"
    ltm_dir: str = "memory/ltm"
    archive_dir: str = "memory/archive"
    blocks_dir: str = "memory/blocks"
    sessions_dir: str = "memory/sessions"
    reviews_dir: str = "memory/reviews"
    # decay
    decay_model: str = "power_law"
    pl_alpha: float = 1.1
    pl_halflife_days: float = 3.0
    decay_lambda: float = 2.673e-6
    decay_beta: float = 0.6
    tc_lambda_fast: float = 1.603e-5  # 12-hour half-life
    tc_lambda_slow: float = 1.147e-6  # 7-day half-life
    tc_fast_weight: float = 0.7
    # lifecycle thresholds
    forget_threshold: float = 0.05
    promote_threshold: float = 0.65
    promote_use_count: int = 5
    promote_time_window_days: float = 14.0
    # ACT-R activation (Mnemosyne): A = ln(sum t_j ** -d) + baseline, t_j in time units
    actr_time_unit_s: float = 3600.0  # ages are counted in hours, at least one unit
    actr_rate_critical: float = 0.3
    actr_rate_important: float = 0.5
    actr_rate_reference: float = 0.6
    actr_rate_background: float = 0.8
    actr_baseline_critical: float = 2.0
    actr_baseline_important: float = 1.0
    actr_baseline_reference: float = 0.0
    actr_baseline_background: float = -1.0
    actr_default_urgency: str = "reference"
    actr_active_threshold: float = -2.0
    actr_archive_threshold: float = -4.0
    access_history_size: int = 10  # recent access times kept in a note's `access_times`
    # reinforcement and review (natural spaced repetition)
    auto_reinforce: bool = True
    cross_domain_threshold: float = 0.3  # tag Jaccard below this = cross-domain use
    cross_domain_boost: float = 0.05
    review_danger_zone_min: float = 0.15
    review_danger_zone_max: float = 0.35
    review_blend_ratio: float = 0.3
    # maintenance (the watcher runs it every maintenance_interval seconds)
    auto_gc: bool = False
    auto_promote: bool = False
    maintenance_interval: float = 3600.0
    # search
    search_candidates: int = 100
    decay_weight: float = 0.3
    # temporal contiguity (episodes.py): a memory's relevance moves this share of the way up to
    # that of the best of the memories saved just before or after it (same agent and source,
    # contiguity_span each side, gaps within the window); 0 = off
    contiguity_weight: float = 0.5
    contiguity_window_minutes: float = 60.0
    contiguity_span: int = 2  # neighbours on each side: 2 = the two memories before and after
    embeddings: str = "auto"  # auto (when the extra is installed) | on | off
    hybrid_fusion: str = "score"  # score (0.5 BM25F/best + 0.5 cosine rescaled median..best) | rrf
    rrf_k: int = 60
    # enrichment (enrich.py, activation.py)
    enable_preprocessing: bool = True  # auto entities/strength/type on save
    spacy_model: str = ""  # an installed trained pipeline (e.g. en_core_web_sm); "" = rules only
    dedupe_on_save: bool = True  # a near-identical save reinforces the existing memory
    # a cold `vaultmem save`: `background` writes the note at once and a background process
    # fills in the entities (spaCy's import is most of a cold save); `now` waits for them
    save_enrichment: str = "background"
    duplicate_threshold: float = 0.9  # word-sequence similarity at which a save is a duplicate
    recall_cooldown_minutes: float = 60.0  # auto-recall reinforces one memory at most this often
    # robustness
    max_note_bytes: int = 5_000_000
    # consolidation pipeline: review actions applied without review ("touch,relate"; empty = none)
    pipeline_auto_apply: str = ""
    # folders whose transcripts `vaultmem capture` may read when a hook's JSON names a
    # transcript_path (comma-separated; the vault itself is always allowed). MCP never reads one.
    transcript_dirs: str = "~/.claude/projects"
    # the zone of a time a person typed without one (`created: 2026-11-20T09:30`, what
    # Obsidian's Date & time property writes): an IANA name; "" = this machine's zone
    timezone: str = ""
    # MCP: the tool profile a server offers (core | cortexgraph | mnemosyne | all; `vaultmem mcp --tools`)
    mcp_tools: str = "all"
    # Mnemosyne's feature toggles and tuning (the seed's autoRecall, autoCapture, enableAutoLink,
    # autoLinkThreshold, captureMaxChars)
    auto_recall: bool = True
    auto_capture: bool = True
    enable_auto_link: bool = True
    auto_link_threshold: float = 0.70
    capture_max_chars: int = 500
    # clustering defaults (CortexGraph's CORTEXGRAPH_CLUSTER_THRESHOLD, _MIN_CLUSTER_SIZE)
    cluster_threshold: float = 0.83
    min_cluster_size: int = 2

    @property
    def naive_zone(self) -> dt.tzinfo | None:
        """The zone of naive times in notes; None: this machine's local zone."""
        if not self.timezone:
            return None
        from zoneinfo import ZoneInfo

        return ZoneInfo(self.timezone)

    @property
    def pipeline_auto_apply_actions(self) -> tuple[str, ...]:
        return tuple(a.strip() for a in self.pipeline_auto_apply.split(",") if a.strip())

    @property
    def transcript_roots(self) -> tuple[Path, ...]:
        return tuple(Path(d.strip()).expanduser() for d in self.transcript_dirs.split(",") if d.strip())

    def validate(self) -> Settings:
        """Raise ConfigError naming the first invalid value."""
        if self.decay_model not in DECAY_MODELS:
            raise ConfigError(
                f"decay_model {self.decay_model!r} is unknown; use one of {', '.join(DECAY_MODELS)}"
            )
        if self.embeddings not in ("auto", "on", "off"):
            raise ConfigError(f"embeddings must be auto, on or off, got {self.embeddings!r}")
        if self.hybrid_fusion not in ("rrf", "score"):
            raise ConfigError(f"hybrid_fusion must be rrf or score, got {self.hybrid_fusion!r}")
        positive = ("rrf_k", "pl_alpha", "pl_halflife_days", "decay_lambda", "tc_lambda_fast",
                    "tc_lambda_slow", "search_candidates", "max_note_bytes", "actr_time_unit_s",
                    "actr_rate_critical", "actr_rate_important", "actr_rate_reference",
                    "actr_rate_background", "access_history_size", "maintenance_interval",
                    "contiguity_window_minutes", "contiguity_span")
        for name in positive:
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be greater than 0, got {getattr(self, name)}")
        if self.actr_default_urgency not in URGENCIES:
            raise ConfigError(f"actr_default_urgency {self.actr_default_urgency!r} is unknown; "
                              f"use one of {', '.join(URGENCIES)}")
        if self.actr_archive_threshold > self.actr_active_threshold:
            raise ConfigError("actr_archive_threshold must not be above actr_active_threshold")
        if not 0 <= self.review_danger_zone_min <= self.review_danger_zone_max:
            raise ConfigError("review_danger_zone_min must be between 0 and review_danger_zone_max, "
                              f"got {self.review_danger_zone_min} and {self.review_danger_zone_max}")
        if self.recall_cooldown_minutes < 0:
            raise ConfigError(f"recall_cooldown_minutes must be 0 or more, got {self.recall_cooldown_minutes}")
        for name in ("decay_weight", "tc_fast_weight", "review_blend_ratio", "cross_domain_threshold",
                     "duplicate_threshold", "contiguity_weight"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"{name} must be between 0 and 1, got {getattr(self, name)}")
        for name in ("stm_dir", "ltm_dir", "archive_dir", "blocks_dir", "sessions_dir", "reviews_dir"):
            value = getattr(self, name)
            if os.path.isabs(value) or ".." in Path(value).parts or not value.strip("/"):
                raise ConfigError(f"{name} must be a folder inside the vault, got {value!r}")
        if self.timezone:
            from zoneinfo import ZoneInfoNotFoundError

            try:
                self.naive_zone  # noqa: B018 - loads the zone
            except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a folder of zones (`Europe`)
                raise ConfigError(f"timezone {self.timezone!r} is not an IANA zone name; use one like Europe/Berlin, "
                                  "or leave it empty for this machine's zone") from None
        if self.save_enrichment not in ("background", "now"):
            raise ConfigError(f"save_enrichment must be background or now, got {self.save_enrichment!r}")
        if self.mcp_tools not in TOOL_PROFILES:
            raise ConfigError(f"mcp_tools must be one of {', '.join(TOOL_PROFILES)}, got {self.mcp_tools!r}")
        for name in ("auto_link_threshold", "cluster_threshold"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ConfigError(f"{name} must be above 0 and at most 1, got {getattr(self, name)}")
        if self.capture_max_chars < 20:
            raise ConfigError(f"capture_max_chars must be 20 or more, got {self.capture_max_chars}")
        if self.min_cluster_size < 2:
            raise ConfigError(f"min_cluster_size must be 2 or more, got {self.min_cluster_size}")
        unsafe = [a for a in self.pipeline_auto_apply_actions if a not in ("touch", "relate")]
        if unsafe:
            raise ConfigError(f"pipeline_auto_apply may list only the safe actions touch, relate; got {unsafe[0]!r}")
        return self


FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
TOOL_PROFILES = ("core", "cortexgraph", "mnemosyne", "all")  # mcp/server.py PROFILES

# CortexGraph names -> our names (the seed's "Configuration" table).
ENV_ALIASES = {
    "CORTEXGRAPH_DECAY_MODEL": "decay_model",
    "CORTEXGRAPH_PL_HALFLIFE_DAYS": "pl_halflife_days",
    "CORTEXGRAPH_PL_ALPHA": "pl_alpha",
    "CORTEXGRAPH_DECAY_LAMBDA": "decay_lambda",
    "CORTEXGRAPH_DECAY_BETA": "decay_beta",
    "CORTEXGRAPH_FORGET_THRESHOLD": "forget_threshold",
    "CORTEXGRAPH_PROMOTE_THRESHOLD": "promote_threshold",
    "CORTEXGRAPH_PROMOTE_USE_COUNT": "promote_use_count",
    "CORTEXGRAPH_PROMOTE_TIME_WINDOW": "promote_time_window_days",
    "CORTEXGRAPH_TC_LAMBDA_FAST": "tc_lambda_fast",
    "CORTEXGRAPH_TC_LAMBDA_SLOW": "tc_lambda_slow",
    "CORTEXGRAPH_TC_WEIGHT_FAST": "tc_fast_weight",
    "CORTEXGRAPH_AUTO_REINFORCE": "auto_reinforce",
    "CORTEXGRAPH_REVIEW_BLEND_RATIO": "review_blend_ratio",
    "CORTEXGRAPH_REVIEW_DANGER_ZONE_MIN": "review_danger_zone_min",
    "CORTEXGRAPH_REVIEW_DANGER_ZONE_MAX": "review_danger_zone_max",
    "CORTEXGRAPH_CONSOLIDATION_INTERVAL": "maintenance_interval",
    "CORTEXGRAPH_CLUSTER_THRESHOLD": "cluster_threshold",
    "CORTEXGRAPH_MIN_CLUSTER_SIZE": "min_cluster_size",
    "CORTEXGRAPH_ENABLE_EMBEDDINGS": "embeddings",  # true -> on, false -> off (_ENV_VALUES)
}
# CortexGraph variables whose values differ from ours
_ENV_VALUES = {"CORTEXGRAPH_ENABLE_EMBEDDINGS": {"true": "on", "1": "on", "yes": "on", "false": "off", "0": "off",
                                                 "no": "off"}}


def _coerce(name: str, value: Any, origin: str) -> Any:
    kind = FIELDS[name].type
    try:
        if kind == "float":
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if kind == "int":
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            return int(value)
        if kind == "bool":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError
        return str(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} in {origin} must be a {kind}, got {value!r}") from None


def load_settings(
    vault: Path | None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Build the settings for one vault from every layer, validated."""
    values = {name: value for name, (value, _source) in _layers(vault, environ, overrides).items()}
    return Settings(**values).validate()


def describe_settings(vault: Path | None, environ: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """Every setting's effective value and where it came from (for `vaultmem config`)."""
    settings = load_settings(vault, environ)
    layers = _layers(vault, environ, None)
    return {name: {"value": getattr(settings, name), "source": layers.get(name, (None, "default"))[1]}
            for name in FIELDS}


def _layers(vault: Path | None, environ: Mapping[str, str] | None,
            overrides: Mapping[str, Any] | None) -> dict[str, tuple[Any, str]]:
    environ = os.environ if environ is None else environ
    values: dict[str, tuple[Any, str]] = {}
    if vault is not None:
        path = vault / CONFIG_FILE
        if path.is_file():
            values.update((k, (v, CONFIG_FILE)) for k, v in _read_config_file(path).items())
    for env_name, name in ENV_ALIASES.items():
        if env_name in environ:
            raw = environ[env_name]
            if env_name in _ENV_VALUES:
                mapped = _ENV_VALUES[env_name].get(raw.strip().lower())
                if mapped is None:
                    raise ConfigError(f"{env_name} must be true or false, got {raw!r}")
                raw = mapped
            values[name] = (_coerce(name, raw, env_name), env_name)
    for name in FIELDS:
        env_name = "VAULTMEM_" + name.upper()
        if env_name in environ:
            values[name] = (_coerce(name, environ[env_name], env_name), env_name)
    for name, value in (overrides or {}).items():
        if value is not None:
            values[name] = (_coerce(name, value, "command-line options"), "command line")
    return values


def safe_yaml(text: str) -> Any:
    """yaml.safe_load through libyaml's C parser when PyYAML has it (the same constructors and
    resolvers: the same values): the enrichment templates parse many times faster."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - safe loaders


# Where a vault keeps what it parsed from YAML (`yaml_cached`), under its derived folder.
PARSED_DIR = "cache"


def yaml_cached(text: str, kept: Path | None) -> Any:
    """`safe_yaml(text)`, kept as JSON in the file `kept` with the text it came from, so that
    a cold command whose settings or templates did not change reads them without importing
    PyYAML (its import is a large share of a cold save). The kept text must equal `text` exactly;
    a value JSON cannot hold as it is (dates, numbers as keys, NaN) is never kept. Writing is
    best-effort: a read-only folder just parses every time. Raises yaml.YAMLError as
    safe_yaml does."""
    import json

    if kept is not None:
        try:
            with open(kept, encoding="utf-8") as file:
                found = json.load(file)
            if isinstance(found, dict) and found.get("text") == text and "data" in found:
                return found["data"]
        except (OSError, ValueError):
            pass
    data = safe_yaml(text)
    if kept is not None:
        try:
            record = json.dumps({"text": text, "data": data}, ensure_ascii=False, allow_nan=False)
            if json.loads(record)["data"] != data:
                return data
            kept.parent.mkdir(parents=True, exist_ok=True)
            temp = kept.with_name(f".{kept.name}{TMP_MARK}{os.getpid()}-{os.urandom(4).hex()}")
            try:
                temp.write_text(record, encoding="utf-8")
                os.replace(temp, kept)
            finally:
                temp.unlink(missing_ok=True)
        except (OSError, TypeError, ValueError):
            pass
    return data


def is_yaml_error(exc: BaseException) -> bool:
    """Whether `exc` is PyYAML's: it can be only once PyYAML was imported to parse, so this
    imports nothing (`yaml_cached` may not have needed the parser)."""
    yaml = sys.modules.get("yaml")
    return yaml is not None and isinstance(exc, yaml.YAMLError)


def yaml_problem(exc: BaseException) -> str:
    """A YAML error (or an OSError) in one line, where it is and what is wrong: `line 2:
    expected ',' or ']', but got '<stream end>' (while parsing a flow sequence)`."""
    problem, context = getattr(exc, "problem", None), getattr(exc, "context", None)
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if not problem:
        return (str(exc).splitlines() or [type(exc).__name__])[0]
    where = f"line {mark.line + 1}: " if mark is not None else ""
    return f"{where}{problem}" + (f" ({context})" if context else "")


def _read_config_file(path: Path) -> dict[str, Any]:
    origin = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {origin}: {exc}; fix or delete the file") from None
    if all(not line.strip() or line.lstrip().startswith("#") for line in text.splitlines()):
        return {}  # only comments (the file `vaultmem init` writes): skip importing yaml
    try:
        data = yaml_cached(text, path.parent / PARSED_DIR / f"{path.name}.json")
    except Exception as exc:
        if not is_yaml_error(exc):
            raise
        raise ConfigError(f"cannot read {origin}: {yaml_problem(exc)}; fix or delete the file") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{origin} must be a mapping of setting: value")
    result = {}
    for key, value in data.items():
        if key not in FIELDS:
            import difflib

            close = difflib.get_close_matches(str(key), list(FIELDS), n=1)
            hint = f"did you mean {close[0]!r}?" if close else "README.md's Configuration section lists the names"
            raise ConfigError(f"unknown setting {key!r} in {origin}; {hint}")
        result[key] = _coerce(key, value, origin)
    return result


