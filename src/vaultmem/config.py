"""Settings: defaults < `<vault>/.vaultmem/config.yaml` < `VAULTMEM_*` environment < CLI flags.

The CortexGraph seed's `CORTEXGRAPH_*` variable names are accepted as aliases so a
CortexGraph user can switch without renaming their environment.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Mapping

from vaultmem.errors import ConfigError

DEFAULT_VAULT = Path("~/Documents/vaultmem").expanduser()
CONFIG_FILE = ".vaultmem/config.yaml"

DECAY_MODELS = ("power_law", "exponential", "two_component", "actr")


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
    # search
    search_candidates: int = 100
    decay_weight: float = 0.3
    embeddings: str = "auto"  # auto (when the extra is installed) | on | off
    hybrid_fusion: str = "score"  # score (0.5 BM25F/best + 0.5 cosine/best) | rrf
    rrf_k: int = 60
    # robustness
    max_note_bytes: int = 5_000_000

    def validate(self) -> "Settings":
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
                    "tc_lambda_slow", "search_candidates", "max_note_bytes")
        for name in positive:
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be greater than 0, got {getattr(self, name)}")
        for name in ("decay_weight", "tc_fast_weight"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"{name} must be between 0 and 1, got {getattr(self, name)}")
        for name in ("stm_dir", "ltm_dir", "archive_dir", "blocks_dir", "sessions_dir", "reviews_dir"):
            value = getattr(self, name)
            if os.path.isabs(value) or ".." in Path(value).parts or not value.strip("/"):
                raise ConfigError(f"{name} must be a folder inside the vault, got {value!r}")
        return self


FIELDS = {f.name: f for f in dataclasses.fields(Settings)}

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
}


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
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    if vault is not None:
        path = vault / CONFIG_FILE
        if path.is_file():
            values.update(_read_config_file(path))
    for env_name, name in ENV_ALIASES.items():
        if env_name in environ:
            values[name] = _coerce(name, environ[env_name], env_name)
    for name in FIELDS:
        env_name = "VAULTMEM_" + name.upper()
        if env_name in environ:
            values[name] = _coerce(name, environ[env_name], env_name)
    for name, value in (overrides or {}).items():
        if value is not None:
            values[name] = _coerce(name, value, "command-line options")
    return Settings(**values).validate()


def _read_config_file(path: Path) -> dict[str, Any]:
    import yaml

    origin = str(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"cannot read {origin}: {first}; fix or delete the file") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{origin} must be a mapping of setting: value")
    result = {}
    for key, value in data.items():
        if key not in FIELDS:
            raise ConfigError(f"unknown setting {key!r} in {origin}; see `vaultmem config` for the names")
        result[key] = _coerce(key, value, origin)
    return result


def resolve_vault(option: str | os.PathLike[str] | None, environ: Mapping[str, str] | None = None) -> Path:
    """--vault, else VAULTMEM_VAULT, else the default folder (~/Documents/vaultmem)."""
    environ = os.environ if environ is None else environ
    raw = option or environ.get("VAULTMEM_VAULT") or DEFAULT_VAULT
    return Path(raw).expanduser().absolute()
