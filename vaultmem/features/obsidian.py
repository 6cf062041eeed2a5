"""vaultmem inside Obsidian: property types, the Bases dashboard, the note template, links out.

- `merge_types`: vaultmem's properties in `.obsidian/types.json` (Obsidian's property types),
  added beside the person's entries, which are never changed; nothing is written when
  nothing is missing, so the file stays byte-exact.
- `base_text`: `memory/Memories.base`, a Bases file (Obsidian's core database view) with the
  views a person keeps open, and the decay score as a Bases formula computed from the note's
  own properties under the model in `.vaultmem/config.yaml`. Bases formulas have arithmetic,
  comparisons, `if`, `min`/`max`, list literals and `reduce`, but no `exp`, `ln` or power, so
  the formula builds them: ln by halving into [1, 2) and the atanh series, exp by a Taylor
  step and 20 squarings (both exact to ~1e-10). The `actr` model sums over each use's time
  and cannot be written this way: its base has no score column and says so.
- `note_template`: a memory note for the Templates core plugin (and Templater).
- `obsidian_uri`: `obsidian://open?vault=...&file=...` for a note.
- `install_agent_skill`: the vaultmem Agent Skill (SKILL.md), for assistants without MCP.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import urllib.parse
from pathlib import Path
from typing import Any

from vaultmem.base.config import TEMPLATE_DIR, Settings
from vaultmem.base.errors import InvalidInput
from vaultmem.core.port import MemoryCore

TYPES_FILE = ".obsidian/types.json"
BASE_NAME = "Memories.base"
# The first line of a dashboard vaultmem wrote; without it the file is the person's and is
# never rewritten.
BASE_MARK = "# vaultmem dashboard"

# Obsidian property types (Settings -> Properties) of what vaultmem writes. `tags` is
# Obsidian's own type already.
PROPERTY_TYPES: dict[str, str] = {
    "id": "text", "created": "datetime", "last_used": "datetime", "use_count": "number",
    "strength": "number", "status": "text", "memory_type": "text", "entities": "multitext",
    "source": "text", "context": "text", "agent": "text", "vaultmem": "text", "private": "checkbox",
    "pinned": "checkbox", "urgency": "text", "domain": "text", "confidence": "number",
    "importance": "number", "priority_score": "number", "event_time": "datetime",
    "ingested_at": "datetime", "promoted_at": "datetime", "archived_at": "datetime",
    "demoted_at": "datetime", "last_review": "datetime", "access_times": "multitext",
    "review_count": "number", "hit_count": "number", "useful_count": "number", "related": "multitext",
    "consolidated_into": "text", "consolidated_from": "multitext", "session_id": "text", "turns": "number",
}


# -- property types ----------------------------------------------------------------------------


def merge_types(store: MemoryCore, dry_run: bool = False) -> dict[str, Any]:
    """Add vaultmem's property types to `.obsidian/types.json`, keeping every entry and key
    the person has. Returns {path, added, created}; writes nothing when nothing is missing."""
    path = store.vault.root / TYPES_FILE
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raw = None
    data: dict[str, Any] = {}
    if raw is not None:
        try:
            data = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{TYPES_FILE} is not valid JSON (line {exc.lineno}); fix it in a text editor, "
                               "or delete it and let Obsidian recreate it") from None
        if not isinstance(data, dict) or not isinstance(data.get("types", {}), dict):
            raise InvalidInput(f'{TYPES_FILE} must hold an object with a "types" object; fix or delete it')
    types = data.setdefault("types", {})
    added = [name for name in PROPERTY_TYPES if name not in types]
    if added and not dry_run:
        types.update((name, PROPERTY_TYPES[name]) for name in added)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Obsidian writes JSON.stringify(data, null, 2)
        store.vault.write_text(path, json.dumps(data, indent=2, ensure_ascii=False))
    return {"path": TYPES_FILE, "added": added, "created": raw is None and bool(added) and not dry_run}


# -- the decay score as a Bases formula ---------------------------------------------------------

LN2 = math.log(2)
_HALVINGS = 64  # ln's range reduction: values up to 2 ** 64
_SQUARINGS = 20  # exp(y) = exp(y / 2 ** 20) ** (2 ** 20)


def _num(value: float) -> str:
    """A number as Bases reads it (no exponent notation)."""
    text = repr(float(value))
    if "e" in text or "E" in text:
        text = f"{value:.20f}".rstrip("0").rstrip(".")
    text = text.removesuffix(".0")
    return text if text not in ("", "-0") else "0"


def _ln_formulas(name: str, value: str) -> dict[str, str]:
    """Formulas computing ln(value) for value >= 1 as `formula.<name>_ln`: halve into [1, 2)
    counting the halvings, then ln m = 2 atanh z, z = (m - 1) / (m + 1) <= 1/3, by its series."""
    zeros = ",".join("0" * _HALVINGS)
    z, z2 = f"formula.{name}_z", f"formula.{name}_z2"
    series = f"2 * {z} * (1 + {z2} * (1/3 + {z2} * (1/5 + {z2} * (1/7 + {z2} * (1/9 + {z2} * (1/11 + {z2} * " \
             f"(1/13 + {z2} * (1/15 + {z2} / 17))))))))"
    return {
        f"{name}_mk": f"[{zeros}].reduce(if(acc[0] >= 2, [acc[0] / 2, acc[1] + 1], acc), [{value}, 0])",
        f"{name}_z": f"(formula.{name}_mk[0] - 1) / (formula.{name}_mk[0] + 1)",
        f"{name}_z2": f"{z} * {z}",
        f"{name}_ln": f"{series} + formula.{name}_mk[1] * {_num(LN2)}",
    }


def _exp_formulas(name: str, exponent: str) -> dict[str, str]:
    """Formulas computing exp(exponent) as `formula.<name>`: a 4th-order Taylor step at
    exponent / 2 ** 20, squared 20 times."""
    s = f"formula.{name}_s"
    ones = ",".join("0" * _SQUARINGS)
    return {
        f"{name}_s": f"({exponent}) / {2 ** _SQUARINGS}",
        name: f"[{ones}].reduce(acc * acc, 1 + {s} * (1 + {s} * (1/2 + {s} * (1/6 + {s} / 24))))",
    }


def score_formulas(settings: Settings) -> dict[str, str] | None:
    """The Bases formulas whose `formula.score` is vaultmem's decay score under `settings`'
    model (core.decay.score), or None for a model Bases cannot express (actr)."""
    model = settings.decay_model
    if model == "actr":
        return None
    day_ms = 86_400_000
    f: dict[str, str] = {
        "age_days": f"if(last_used, max(0, (number(now()) - number(last_used)) / {day_ms}), 0)",
        "immune": 'if(pinned == true || (memory_type && ["procedural", "core"].contains('
                  'memory_type.toString().lower())), 1, 0)',
    }
    f.update(_ln_formulas("uses", "max(0, number(if(use_count, use_count, 0))) + 1"))
    beta = _num(settings.decay_beta)
    strength = "number(if(strength, strength, 1))"
    if model == "power_law":
        t0_days = settings.pl_halflife_days / (2 ** (1 / settings.pl_alpha) - 1)
        f.update(_ln_formulas("age", f"1 + formula.age_days / {_num(t0_days)}"))
        f.update(_exp_formulas("grow", f"{beta} * formula.uses_ln - (1 - formula.immune) * "
                                       f"{_num(settings.pl_alpha)} * formula.age_ln"))
        f["score"] = f"({strength} * formula.grow).round(4)"
    elif model == "exponential":
        lam_day = settings.decay_lambda * 86400
        f.update(_exp_formulas("grow", f"{beta} * formula.uses_ln - (1 - formula.immune) * "
                                       f"{_num(lam_day)} * formula.age_days"))
        f["score"] = f"({strength} * formula.grow).round(4)"
    else:  # two_component
        w = settings.tc_fast_weight
        f.update(_exp_formulas("grow", f"{beta} * formula.uses_ln"))
        f.update(_exp_formulas("fast", f"-(1 - formula.immune) * {_num(settings.tc_lambda_fast * 86400)} "
                                       "* formula.age_days"))
        f.update(_exp_formulas("slow", f"-(1 - formula.immune) * {_num(settings.tc_lambda_slow * 86400)} "
                                       "* formula.age_days"))
        f["score"] = (f"({strength} * formula.grow * ({_num(w)} * formula.fast + {_num(1 - w)} * formula.slow))"
                      ".round(4)")
    return f


# -- the dashboard -----------------------------------------------------------------------------


def _quote(expr: str) -> str:
    """A formula or filter as a YAML single-quoted scalar."""
    return "'" + expr.replace("'", "''") + "'"


def base_text(settings: Settings) -> str:
    """memory/Memories.base for these settings (deterministic: the same settings, the same bytes)."""
    stm, ltm, arch = (settings.stm_dir.strip("/"), settings.ltm_dir.strip("/"), settings.archive_dir.strip("/"))
    formulas = score_formulas(settings)
    fingerprint = hashlib.sha256(json.dumps(
        [settings.decay_model, settings.decay_beta, settings.pl_alpha, settings.pl_halflife_days,
         settings.decay_lambda, settings.tc_lambda_fast, settings.tc_lambda_slow, settings.tc_fast_weight,
         settings.forget_threshold, settings.review_danger_zone_min, settings.review_danger_zone_max,
         stm, ltm, arch]).encode()).hexdigest()[:12]
    lines = [
        f"{BASE_MARK} ({fingerprint}): `vaultmem obsidian setup` rewrites this file when .vaultmem/config.yaml",
        "# changes. Remove this line to keep your own edits: vaultmem then never touches it.",
    ]
    if formulas is None:
        lines += ["# The actr decay model sums over each recorded use (access_times) and Bases formulas cannot",
                  "# express it: the views below order by last_used and use_count instead of the score."]
    else:
        lines += [f"# formula.score is vaultmem's decay score under the {settings.decay_model} model, computed",
                  "# from each note's own last_used, use_count, strength, memory_type and pinned."]
    lines += [
        "filters:",
        "  and:",
        "    - 'file.ext == \"md\"'",
        "    - or:",
        *(f"        - {_quote(f'file.inFolder({json.dumps(folder)})')}" for folder in (stm, ltm, arch)),
    ]
    if formulas:
        lines.append("formulas:")
        lines += [f"  {name}: {_quote(expr)}" for name, expr in formulas.items()]
    lines += [
        "properties:",
        "  formula.score:" if formulas else "  use_count:",
        "    displayName: Score" if formulas else "    displayName: Uses",
        "  last_used:",
        "    displayName: Last used",
        "  use_count:" if formulas else "  memory_type:",
        "    displayName: Uses" if formulas else "    displayName: Type",
        "views:",
    ]
    score = ["formula.score"] if formulas else []
    columns = ["file.name", *score, "last_used", "use_count", "strength", "memory_type", "tags"]

    def view(name: str, sort: list[tuple[str, str]], filters: list[str] | None = None,
             group: str | None = None, limit: int = 100, order: list[str] | None = None) -> list[str]:
        out = ["  - type: table", f"    name: {json.dumps(name)}", f"    limit: {limit}"]
        if filters:
            out += ["    filters:", "      and:", *(f"        - {_quote(x)}" for x in filters)]
        if group:
            out += ["    groupBy:", f"      property: {group}", "      direction: ASC"]
        out += ["    order:", *(f"      - {c}" for c in (order or columns))]
        out += ["    sort:", *(f"      - property: {p}\n        direction: {d}" for p, d in sort)]
        return out

    in_stm = f'file.inFolder({json.dumps(stm)})'
    lines += view("Recent", [("last_used", "DESC")])
    if formulas:
        lo, hi = settings.review_danger_zone_min, settings.review_danger_zone_max
        lines += view("Fading", [("formula.score", "ASC")],
                      [in_stm, f"formula.score < {_num(hi)}"], limit=100)
        lines += view("Review candidates", [("formula.score", "ASC")],
                      [in_stm, f"formula.score >= {_num(lo)}", f"formula.score <= {_num(hi)}"])
    else:
        lines += view("Fading", [("last_used", "ASC")], [in_stm])
    lines += view("Most used", [("use_count", "DESC")])
    lines += view("Long-term", [("last_used", "DESC")], [f'file.inFolder({json.dumps(ltm)})'])
    lines += view("By type", [*([("formula.score", "DESC")] if formulas else []), ("last_used", "DESC")],
                  group="memory_type")
    lines += view("By tag", [("last_used", "DESC")], ["tags"], group="tags")
    text = "\n".join(lines) + "\n"
    # the rest of the file's digest in its first line: an edit by the person shows (write_base)
    first, rest = text.split("\n", 1)
    return first.replace(f"({fingerprint})", f"({fingerprint} {_digest(rest)})", 1) + "\n" + rest


def _digest(rest: str) -> str:
    return hashlib.sha256(rest.encode("utf-8")).hexdigest()[:12]


def _edited(old: str) -> bool:
    """Whether a dashboard vaultmem wrote was changed since (its first line's digest no longer
    matches the rest, or it has none: written before the digest was)."""
    first, _, rest = old.partition("\n")
    found = re.match(re.escape(BASE_MARK) + r" \([0-9a-f]{12} (?P<digest>[0-9a-f]{12})\)", first)
    return found is None or found["digest"] != _digest(rest)


def base_path(store: MemoryCore) -> Path:
    """memory/Memories.base: beside the memory folders (the parent of the short-term folder)."""
    parent = Path(store.settings.stm_dir.strip("/")).parent
    return store.vault.root / parent / BASE_NAME


def write_base(store: MemoryCore, dry_run: bool = False) -> dict[str, Any]:
    """Write or refresh the dashboard. A file without vaultmem's first line is the person's
    and is left alone; one the person edited below that line is kept in .trash/ before it is
    replaced (`kept`). Returns {path, status: created | updated | unchanged | yours[, kept]}."""
    rel = base_path(store).relative_to(store.vault.root).as_posix()
    path = store.vault.abs(rel)  # refuses a path that leads out of the vault
    text = base_text(store.settings)
    try:
        old: str | None = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = None
    if old is not None and not old.startswith(BASE_MARK):
        return {"path": rel, "status": "yours"}
    if old == text:
        return {"path": rel, "status": "unchanged"}
    kept = old is not None and _edited(old)
    result = {"path": rel, "status": "created" if old is None else "updated"}
    if not dry_run:
        if kept:
            result["kept"] = store.vault.trash(rel)  # the person's edits: in .trash/, not lost
        path.parent.mkdir(parents=True, exist_ok=True)
        store.vault.write_text(path, text)
    elif kept:
        result["kept"] = ".trash/"
    return result


def base_stale(store: MemoryCore) -> bool:
    """True when vaultmem's dashboard exists and no longer matches the configuration."""
    path = base_path(store)
    try:
        old = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    return old.startswith(BASE_MARK) and old != base_text(store.settings)


# -- the note template -------------------------------------------------------------------------


def template_folder(root: Path) -> tuple[str, str]:
    """(folder, where it came from): the Templates core plugin's folder, else Templater's,
    else `Templates`."""
    for rel, key, origin in ((".obsidian/templates.json", "folder", "Templates core plugin"),
                             (".obsidian/plugins/templater-obsidian/data.json", "templates_folder", "Templater")):
        try:
            data = json.loads((root / rel).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        folder = str(data.get(key) or "").strip().strip("/") if isinstance(data, dict) else ""
        if folder and ".." not in Path(folder).parts and not Path(folder).is_absolute():
            return folder, origin
    return "Templates", "default"


def install_template(store: MemoryCore, dry_run: bool = False) -> dict[str, Any]:
    """Place `vaultmem memory.md` in the vault's templates folder (Templater's `<% %>` syntax
    in Templater's folder, the core plugin's `{{date}}` elsewhere); an existing file of that
    name is left alone."""
    folder, origin = template_folder(store.vault.root)
    source = "vaultmem memory.templater.md" if origin == "Templater" else "vaultmem memory.md"
    text = (TEMPLATE_DIR / "obsidian" / source).read_text(encoding="utf-8")
    rel = f"{folder}/vaultmem memory.md"
    path = store.vault.abs(rel)  # refuses a templates folder that leads out of the vault (a symlink)
    try:
        old: str | None = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = None
    if old == text:
        return {"path": rel, "status": "unchanged", "folder_from": origin}
    if old is not None:
        return {"path": rel, "status": "yours", "folder_from": origin}
    if not dry_run:
        path.parent.mkdir(parents=True, exist_ok=True)
        store.vault.write_text(path, text)
    return {"path": rel, "status": "created", "folder_from": origin}


def setup(store: MemoryCore, *, template: bool = False, dry_run: bool = False) -> dict[str, Any]:
    """`vaultmem obsidian setup`: property types, the dashboard and (with template) the note
    template. Idempotent: a second run changes nothing."""
    store.vault.require()
    result: dict[str, Any] = {"success": True, "types": merge_types(store, dry_run), "base": write_base(store, dry_run)}
    if template:
        result["template"] = install_template(store, dry_run)
    return result


# -- links out ---------------------------------------------------------------------------------

_UNSAFE = re.compile(r"[\x00-\x1f\x7f]")


def obsidian_uri(root: Path, rel: str) -> str:
    """`obsidian://open?vault=NAME&file=PATH` (Obsidian's URI scheme: the vault by its folder
    name, the file by its path without `.md`), percent-encoded."""
    name = Path(root).name
    file = rel[:-3] if rel.endswith(".md") else rel
    if _UNSAFE.search(file):
        raise InvalidInput(f"{rel!r} cannot be put in a link")
    return ("obsidian://open?vault=" + urllib.parse.quote(name, safe="")
            + "&file=" + urllib.parse.quote(file, safe=""))


# -- the agent skill ---------------------------------------------------------------------------


def install_agent_skill(folder: str | Path, force: bool = False) -> dict[str, Any]:
    """Copy templates/skills/vaultmem/SKILL.md to FOLDER/vaultmem/SKILL.md: the Agent Skill,
    vaultmem's CLI for assistants that load skills instead of an MCP tool list. A copy that
    differs (edited by the person) is replaced only with `force`."""
    text = (TEMPLATE_DIR / "skills" / "vaultmem" / "SKILL.md").read_text(encoding="utf-8")
    dest = Path(folder).expanduser().absolute() / "vaultmem" / "SKILL.md"
    try:
        old: str | None = dest.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = None
    if old is not None and old != text and not force:
        raise InvalidInput(f"{dest} exists and differs from this version; pass --force to replace it")
    status = "unchanged" if old == text else ("replaced" if old is not None else "installed")
    if status != "unchanged":
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
    return {"success": True, "path": str(dest), "status": status}
