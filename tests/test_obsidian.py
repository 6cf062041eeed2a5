"""vaultmem inside Obsidian: property types, the Bases dashboard and its score formula, the
note template, links out."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from pathlib import Path

import pytest
import yaml
from bases_eval import Evaluator, Parser
from conftest import NOW, Clock, examples, invoke
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.base.config import Settings, load_settings
from vaultmem.core import decay
from vaultmem.features import obsidian
from vaultmem.store import MemoryStore

# -- the score formula equals vaultmem's score ----------------------------------------------------

MODELS = st.sampled_from(["power_law", "exponential", "two_component"])
NOTES = st.fixed_dictionaries({
    "use_count": st.integers(0, 5000),
    "strength": st.floats(1.0, 2.0),
    "age_days": st.one_of(st.floats(0, 3650), st.sampled_from([0.0, 0.5, 3.0, 30.0])),
    "memory_type": st.sampled_from([None, "semantic", "episodic", "procedural", "Core"]),
    "pinned": st.sampled_from([None, False, True]),
})


def _settings(model: str, beta: float, alpha: float, halflife: float, lam: float, weight: float) -> Settings:
    return dataclasses.replace(Settings(), decay_model=model, decay_beta=beta, pl_alpha=alpha, pl_halflife_days=halflife,
                               decay_lambda=lam, tc_fast_weight=weight).validate()


@settings(max_examples=examples(300, 75), deadline=None)
@given(model=MODELS, note=NOTES, beta=st.floats(0.1, 1.0), alpha=st.floats(0.3, 3.0),
       halflife=st.floats(0.25, 60.0), lam=st.floats(1e-8, 1e-4), weight=st.floats(0.0, 1.0))
def test_the_dashboard_score_is_vaultmem_s_score_to_3_decimals(model, note, beta, alpha, halflife, lam, weight):
    """75 draws in the test command (300 thorough): the decay models are few and hypothesis
    tries each with the settings' bounds early; the formulas are smooth between them."""
    s = _settings(model, beta, alpha, halflife, lam, weight)
    formulas = yaml.safe_load(obsidian.base_text(s))["formulas"]
    last_used = NOW - dt.timedelta(days=note["age_days"])
    props = {"use_count": note["use_count"], "strength": note["strength"], "last_used": last_used,
             "memory_type": note["memory_type"], "pinned": note["pinned"]}
    got = Evaluator(formulas, props, NOW).formula("score")
    want = decay.score(use_count=note["use_count"], last_used=last_used, strength=note["strength"], now=NOW,
                       settings=s, memory_type=note["memory_type"], pinned=bool(note["pinned"]))
    assert abs(got - want) < 5e-4, (got, want)


def test_missing_properties_score_as_vaultmem_reads_them():
    formulas = yaml.safe_load(obsidian.base_text(Settings()))["formulas"]
    assert Evaluator(formulas, {"last_used": NOW}, NOW).formula("score") == 1.0  # no uses, strength 1


def test_actr_cannot_be_a_formula_and_the_dashboard_says_so():
    text = obsidian.base_text(dataclasses.replace(Settings(), decay_model="actr"))
    data = yaml.safe_load(text)
    assert "formulas" not in data and "formula.score" not in text
    assert "# The actr decay model sums over each recorded use (access_times) and Bases formulas cannot" in text
    assert [v["name"] for v in data["views"]] == ["Recent", "Fading", "Most used", "Long-term", "By type", "By tag"]


# -- the .base file is valid Bases syntax ----------------------------------------------------------

BASE_KEYS = {"filters", "formulas", "properties", "summaries", "views"}
VIEW_KEYS = {"type", "name", "limit", "filters", "order", "sort", "groupBy", "summaries"}


def _filters(node):
    if isinstance(node, str):
        yield node
    else:
        assert isinstance(node, dict) and len(node) == 1 and next(iter(node)) in ("and", "or", "not"), node
        for item in next(iter(node.values())):
            yield from _filters(item)


@pytest.mark.parametrize("model", ["power_law", "exponential", "two_component", "actr"])
def test_the_base_file_follows_the_published_syntax(model):
    data = yaml.safe_load(obsidian.base_text(dataclasses.replace(Settings(), decay_model=model)))
    assert set(data) <= BASE_KEYS
    formulas = data.get("formulas", {})
    expressions = [*formulas.values(), *_filters(data["filters"])]
    referenced = set()
    for view in data["views"]:
        assert set(view) <= VIEW_KEYS and view["type"] == "table" and view["name"]
        expressions += list(_filters(view["filters"])) if "filters" in view else []
        referenced |= {c for c in view["order"] if c.startswith("formula.")}
        referenced |= {s["property"] for s in view.get("sort", []) if s["property"].startswith("formula.")}
        assert all(s["direction"] in ("ASC", "DESC") for s in view.get("sort", []))
    referenced |= {p for p in data.get("properties", {}) if p.startswith("formula.")}
    for expr in expressions:
        Parser(expr).parse()  # every expression reads as Bases syntax (the evaluated subset)
        referenced |= {f"formula.{m}" for m in re.findall(r"formula\.(\w+)", expr)}
    assert {r.removeprefix("formula.") for r in referenced} <= set(formulas)


# -- init, setup, types.json ------------------------------------------------------------------------


def test_init_creates_the_dashboard_and_the_property_types(tmp_path):
    root = tmp_path / "fresh"
    result = MemoryStore(root, clock=Clock()).init()
    assert ".obsidian/types.json (34 property types)" in result["created"] and "memory/Memories.base" in result["created"]
    types = json.loads((root / ".obsidian/types.json").read_text())["types"]
    assert (types["created"], types["last_used"], types["use_count"], types["strength"], types["entities"]) == (
        "datetime", "datetime", "number", "number", "multitext")
    assert (root / "memory/Memories.base").read_text().startswith(obsidian.BASE_MARK)


def test_a_person_s_types_json_keeps_every_entry_and_key(tmp_path):
    root = tmp_path / "theirs"
    (root / ".obsidian").mkdir(parents=True)
    theirs = '{\n  "types": {\n    "created": "date",\n    "rating": "number"\n  },\n  "other": [1, 2]\n}'
    (root / ".obsidian/types.json").write_text(theirs)
    MemoryStore(root, clock=Clock()).init()
    data = json.loads((root / ".obsidian/types.json").read_text())
    assert data["types"]["created"] == "date" and data["types"]["rating"] == "number" and data["other"] == [1, 2]
    assert data["types"]["use_count"] == "number" and list(data["types"])[:2] == ["created", "rating"]
    before = (root / ".obsidian/types.json").read_bytes()
    mtime = (root / ".obsidian/types.json").stat().st_mtime_ns
    assert MemoryStore(root, clock=Clock()).obsidian_setup()["types"]["added"] == []
    assert (root / ".obsidian/types.json").read_bytes() == before  # byte-exact: nothing written
    assert (root / ".obsidian/types.json").stat().st_mtime_ns == mtime


def test_a_broken_types_json_is_reported_and_left_alone(runner, vault_path):
    (vault_path / ".obsidian").mkdir(exist_ok=True)
    (vault_path / ".obsidian/types.json").write_text('{"types": {"a": "text",}')
    result = invoke(runner, "obsidian", "setup")
    assert (result.exit_code, result.output) == (1, "Error: .obsidian/types.json is not valid JSON (line 1); fix it in "
                                                    "a text editor, or delete it and let Obsidian recreate it\n")
    assert (vault_path / ".obsidian/types.json").read_text() == '{"types": {"a": "text",}'


def test_the_dashboard_follows_the_config_unless_it_is_yours(runner, vault_path):
    base = vault_path / "memory/Memories.base"
    assert "under the power_law model" in base.read_text()
    (vault_path / ".vaultmem/config.yaml").write_text("decay_model: exponential\n")
    assert "Memories.base no longer matches" in invoke(runner, "doctor").output
    out = json.loads(invoke(runner, "obsidian", "setup", "--json").output)
    assert out["base"] == {"path": "memory/Memories.base", "status": "updated"}
    assert "under the exponential model" in base.read_text()
    assert json.loads(invoke(runner, "obsidian", "setup", "--json").output)["base"]["status"] == "unchanged"
    mine = base.read_text().split("\n", 1)[1]  # the person removed vaultmem's first line: theirs now
    base.write_text(mine)
    (vault_path / ".vaultmem/config.yaml").write_text("decay_model: two_component\n")
    assert json.loads(invoke(runner, "obsidian", "setup", "--json").output)["base"]["status"] == "yours"
    assert base.read_text() == mine


def test_a_dashboard_the_person_edited_is_kept_in_trash_before_it_is_replaced(runner, vault_path):
    """The red team's case: `obsidian setup` overwrote a Memories.base the person had edited
    below vaultmem's first line, keeping nothing."""
    base = vault_path / "memory/Memories.base"
    edited = base.read_text().replace('name: "Recent"', 'name: "My recent ones"')
    base.write_text(edited)
    (vault_path / ".vaultmem/config.yaml").write_text("decay_model: exponential\n")
    out = json.loads(invoke(runner, "obsidian", "setup", "--json").output)
    assert out["base"] == {"path": "memory/Memories.base", "status": "updated", "kept": ".trash/Memories.base"}
    assert (vault_path / ".trash/Memories.base").read_text() == edited
    assert "under the exponential model" in base.read_text()
    (vault_path / ".vaultmem/config.yaml").write_text("decay_model: power_law\n")  # unedited: replaced, none kept
    assert json.loads(invoke(runner, "obsidian", "setup", "--json").output)["base"] == {
        "path": "memory/Memories.base", "status": "updated"}


def test_a_templates_folder_that_leads_out_of_the_vault_is_refused(runner, vault_path, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (vault_path / "Templates").symlink_to(outside, target_is_directory=True)
    result = invoke(runner, "obsidian", "setup", "--template")
    assert result.exit_code == 1
    assert result.output.endswith("Error: path 'Templates/vaultmem memory.md' leads outside the vault (symlink?); "
                                  "refusing it\n")
    assert list(outside.iterdir()) == []


# -- the note template ---------------------------------------------------------------------------


def test_the_template_goes_to_the_templates_folder_and_is_never_malformed(runner, vault_path):
    (vault_path / ".obsidian").mkdir(exist_ok=True)
    (vault_path / ".obsidian/templates.json").write_text('{"folder": "Meta/Templates"}')
    out = json.loads(invoke(runner, "obsidian", "setup", "--template", "--json").output)
    assert out["template"] == {"path": "Meta/Templates/vaultmem memory.md", "status": "created",
                               "folder_from": "Templates core plugin"}
    text = (vault_path / "Meta/Templates/vaultmem memory.md").read_text()
    yaml.safe_load(text.split("---")[1])
    assert "vaultmem: memory" not in text  # the template itself is not a memory
    assert "malformed" not in invoke(runner, "doctor").output
    # a note made from it, as the Templates plugin fills it in, in memory/stm, is a memory
    made = text.replace("{{date:YYYY-MM-DDTHH:mm:ss}}", "2026-11-22T09:30:00") + "Standups moved to 9:30.\n"
    (vault_path / "memory/stm/standups.md").write_text(made)
    found = json.loads(invoke(runner, "search", "standups", "--json").output)["results"][0]
    assert (found["created_at"], found["use_count"], found["memory_type"]) == ("2026-11-22T09:30:00Z", 0, "semantic")
    again = json.loads(invoke(runner, "obsidian", "setup", "--template", "--json").output)
    assert again["template"]["status"] == "unchanged"


# -- links out ---------------------------------------------------------------------------------------


def test_obsidian_uri_percent_encodes_the_vault_and_the_path():
    assert obsidian.obsidian_uri(Path("/home/me/My Vault"), "memory/stm/über & co #1.md") == (
        "obsidian://open?vault=My%20Vault&file=memory%2Fstm%2F%C3%BCber%20%26%20co%20%231")


def _one_memory(vault_path: Path) -> dict:
    s = MemoryStore(vault_path, settings=load_settings(vault_path), clock=Clock())
    saved = s.save("The staging deploy runs every Tuesday at noon", tags=["ops"])
    s.close()
    return saved


def test_search_and_open_print_obsidian_links(runner, vault_path, monkeypatch):
    monkeypatch.setenv("FORCE_HYPERLINK", "0")
    saved = _one_memory(vault_path)
    uri = obsidian.obsidian_uri(vault_path, saved["path"])
    assert uri == "obsidian://open?vault=vault&file=" + saved["path"][:-3].replace("/", "%2F")
    out = invoke(runner, "search", "staging deploy", "--links").output
    assert out.splitlines()[1].endswith(f"· {saved['path']}  {uri}")
    assert uri not in invoke(runner, "search", "staging deploy").output
    assert invoke(runner, "open", saved["memory_id"][:8], "--links").output.splitlines()[0] == (
        f"{saved['memory_id']}  ({saved['path']}  {uri})")


def test_a_terminal_with_hyperlinks_gets_a_clickable_path(runner, vault_path, monkeypatch):
    monkeypatch.setenv("FORCE_HYPERLINK", "1")
    saved = _one_memory(vault_path)
    uri = obsidian.obsidian_uri(vault_path, saved["path"])
    line = invoke(runner, "search", "staging deploy").output.splitlines()[1]
    assert line.endswith(f"\x1b]8;;{uri}\x1b\\{saved['path']}\x1b]8;;\x1b\\")
    monkeypatch.delenv("FORCE_HYPERLINK")  # CliRunner's output is no terminal: plain path
    assert invoke(runner, "search", "staging deploy").output.splitlines()[1].endswith(f"· {saved['path']}")


def test_open_in_obsidian_hands_the_link_to_the_opener(runner, vault_path, tmp_path, monkeypatch):
    saved = _one_memory(vault_path)
    uri = obsidian.obsidian_uri(vault_path, saved["path"])
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    result = invoke(runner, "open", saved["memory_id"][:8], "--in-obsidian")
    assert (result.exit_code, result.output) == (1, "Error: cannot open obsidian:// links here: xdg-open is not "
                                                    "installed; open the note in Obsidian by hand, or print its link "
                                                    "with --links\n")
    opener = bin_dir / "xdg-open"
    log = tmp_path / "opened.txt"
    opener.write_text(f"#!/bin/sh\necho \"$1\" >> {log}\nexit ${{FAIL:-0}}\n")
    opener.chmod(0o755)
    result = invoke(runner, "open", saved["memory_id"][:8], "--in-obsidian")
    assert (result.exit_code, result.output) == (0, f"opened {saved['path']} in Obsidian\n")
    assert log.read_text() == uri + "\n"
    monkeypatch.setenv("FAIL", "3")
    result = invoke(runner, "open", saved["memory_id"][:8], "--in-obsidian")
    assert (result.exit_code, result.output) == (1, "Error: no application opened the obsidian:// link (xdg-open "
                                                    "exited 3); install Obsidian, or print the link with --links\n")


# -- the agent skill ------------------------------------------------------------------------------

SKILL = Path(__file__).resolve().parent.parent / "templates" / "skills" / "vaultmem" / "SKILL.md"


def test_the_skill_is_agent_skills_format_and_every_command_in_it_works(runner, vault_path):
    import shlex

    text = SKILL.read_text()
    front = yaml.safe_load(text.split("---")[1])
    assert set(front) == {"name", "description"} and front["name"] == "vaultmem"
    assert len(front["description"]) <= 1024  # the format's limit
    saved = _one_memory(vault_path)
    commands = [line.strip() for line in text.splitlines() if line.startswith("    vaultmem ")]
    assert len(commands) == 6
    for command in commands:
        args = shlex.split(command.replace("4d5e6f70", saved["memory_id"][:8]))[1:]
        result = invoke(runner, *args)
        assert result.exit_code == 0, (command, result.output)
        json.loads(result.output)


def test_agent_skill_install_copies_it_and_never_overwrites_an_edited_one(runner, tmp_path):
    folder = tmp_path / "skills"
    assert invoke(runner, "agent-skill", "install", str(folder)).output == f"installed {folder}/vaultmem/SKILL.md\n"
    assert (folder / "vaultmem/SKILL.md").read_text() == SKILL.read_text()
    (folder / "vaultmem/SKILL.md").write_text("mine")
    result = invoke(runner, "agent-skill", "install", str(folder))
    assert (result.exit_code, result.output) == (
        1, f"Error: {folder}/vaultmem/SKILL.md exists and differs from this version; pass --force to replace it\n")
    assert (folder / "vaultmem/SKILL.md").read_text() == "mine"
    assert invoke(runner, "agent-skill", "install", str(folder), "--force").output.startswith("replaced ")


def test_templater_gets_its_own_syntax(runner, vault_path):
    (vault_path / ".obsidian/plugins/templater-obsidian").mkdir(parents=True)
    (vault_path / ".obsidian/plugins/templater-obsidian/data.json").write_text('{"templates_folder": "tpl"}')
    out = json.loads(invoke(runner, "obsidian", "setup", "--template", "--json").output)["template"]
    assert out == {"path": "tpl/vaultmem memory.md", "status": "created", "folder_from": "Templater"}
    text = (vault_path / "tpl/vaultmem memory.md").read_text()
    assert yaml.safe_load(text.split("---")[1])["created"] == '<% tp.date.now("YYYY-MM-DDTHH:mm:ss") %>'
    assert "malformed" not in invoke(runner, "doctor").output
