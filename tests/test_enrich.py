"""Entities, strength, classification and near-duplicates on save."""

from __future__ import annotations

import json
import os

import pytest
import yaml
from conftest import FIXTURES, invoke
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.base.errors import InvalidInput
from vaultmem.core import enrich
from vaultmem.core.enrich import duplicate_query, get_enricher, phrase_regex, similarity

SENTENCES = yaml.safe_load((FIXTURES / "entities" / "sentences.yaml").read_text())


def test_entity_precision_and_recall_on_the_labelled_set(capsys):
    assert len(SENTENCES) >= 60
    extractor = get_enricher()
    tp = fp = fn = 0
    for case in SENTENCES:
        got = {e.lower() for e in extractor.entities(case["text"])}
        want = {str(e).lower() for e in case["entities"]}
        tp, fp, fn = tp + len(got & want), fp + len(got - want), fn + len(want - got)
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    with capsys.disabled():
        print(f"\nentities: precision {precision:.3f}, recall {recall:.3f} on {len(SENTENCES)} sentences")
    assert precision >= 0.95 and recall >= 0.95


@pytest.mark.parametrize("text, expected", [
    ("Zoe prefers cafe meetings", ["Zoe"]),  # a name at the start of a sentence
    ("Deploys go out on Tuesdays", ["Tuesdays"]),  # "Deploys" is not a name, "go" is not Go
    ("We write Go at work. Go is fast.", ["Go"]),
    ("Redis runs on cache.local:6379 and 10.0.0.7", ["Redis", "cache.local:6379", "10.0.0.7"]),
    ("Mail ops@example.com or see https://wiki.example.com/ops.", ["ops@example.com", "https://wiki.example.com/ops"]),
    ("Pin node to v20.11.1 on port 3000", ["v20.11.1", "3000"]),
    ("Meeting moved to 2026-12-01", ["2026-12-01"]),
    ("i like postgres and typescript", ["Postgres", "TypeScript"]),  # technologies keep their spelling
])
def test_entities(text, expected):
    assert get_enricher().entities(text) == expected


def test_spacy_pipeline_is_built_once_per_process():
    first = get_enricher()
    first.entities("warm up")
    extractor = first.extractor
    assert get_enricher() is first and first.extractor is extractor


def test_a_vault_template_overrides_ours(store, vault_path):
    ours = yaml.safe_load((enrich.TEMPLATE_DIR / "entities.yaml").read_text())
    ours["technologies"].append("Frobnicator")
    (vault_path / ".vaultmem/templates").mkdir(parents=True)
    (vault_path / ".vaultmem/templates/entities.yaml").write_text(yaml.safe_dump(ours))
    assert store.enricher().entities("the frobnicator broke") == ["Frobnicator"]
    assert get_enricher().entities("the frobnicator broke") == []


def test_templates_read_through_libyaml_give_the_same_rules(store, vault_path):
    from vaultmem.base.config import safe_yaml

    for name in ("entities.yaml", "classify.yaml"):
        text = (enrich.TEMPLATE_DIR / name).read_text()
        assert safe_yaml(text) == yaml.load(text, Loader=yaml.SafeLoader)  # the pure-Python reader


def test_a_broken_vault_template_is_reported_in_one_line_and_saves_nothing(store, vault_path):
    from vaultmem.base.errors import ConfigError

    (vault_path / ".vaultmem/templates").mkdir(parents=True)
    broken = vault_path / ".vaultmem/templates/classify.yaml"
    broken.write_text("memory_types:\n  episodic: [a, b\n")
    before = sorted(p.name for p in vault_path.rglob("*.md"))
    with pytest.raises(ConfigError) as caught:
        store.save("The deploy runs at noon")
    assert str(caught.value) == (f"cannot read template {broken}: line 3: did not find expected ',' or ']' "
                                 "(while parsing a flow sequence); fix it or delete the vault's copy")
    assert sorted(p.name for p in vault_path.rglob("*.md")) == before


@pytest.mark.parametrize("text, strength", [
    ("Use JWT tokens for authentication in all new APIs", 1.0),  # the seed's example
    ("Remember: I prefer TypeScript over JavaScript for all new projects", 1.5),  # 1.0 + 0.3 + 0.2
    ("Critical: never forget to renew the TLS certificate", 1.5),  # critical group counts once
    ("Critical and important: I prefer to never forget this", 2.0),  # 1.0 + 0.5 + 0.3 + 0.2 = 2.0 cap
    ("Is it important that we use Redis?", 1.2),  # 1.0 + 0.3 - 0.1 (question)
    ("Which keyboard do you use?", 1.0),  # never below 1.0; "key" is not in "keyboard"
])
def test_strength_markers(text, strength):
    e = get_enricher()
    assert e.enrich(text).strength == strength


@pytest.mark.parametrize("text, memory_type, urgency, domain", [
    ("I prefer dark mode in all my apps", "preference", "reference", "personal"),
    ("To restart the auth service: 1) SSH into prod-01, 2) run systemctl restart auth", "procedural", "reference", "technical"),
    ("Alice reports to Bob", "relationship", "reference", "general"),
    ("We migrated the Redis cluster to port 6380 yesterday", "episodic", "reference", "technical"),
    ("Redis default port is 6379", "semantic", "reference", "technical"),
    ("Urgent: the production database is out of disk", "semantic", "critical", "technical"),
    ("The sprint deadline is Friday, don't forget", "semantic", "important", "project"),
    ("btw the office has a new coffee machine", "semantic", "background", "personal"),
])
def test_classification(text, memory_type, urgency, domain):
    result = get_enricher().enrich(text)
    assert (result.memory_type, result.urgency, result.domain) == (memory_type, urgency, domain)


def test_priority_is_urgency_times_domain():
    c = get_enricher().classifier
    assert c.priority("critical", "technical") == 1.0
    assert c.priority("background", "general") == 0.2


def test_phrases_match_on_word_boundaries():
    rx = phrase_regex(["key", "i prefer"])
    assert rx.search("the key is here") and rx.search("I  prefer tea")
    assert not rx.search("keyboard") and not rx.search("monkey") and not rx.search("hi preferences")


def test_save_fills_in_entities_strength_and_classification(store, vault_path):
    result = store.save("Remember: I prefer TypeScript over JavaScript for all new projects")
    assert result["enrichment_applied"] is True and result["status"] == "created"
    assert result["auto_entities"] == 2 and result["calculated_strength"] == 1.5
    text = (vault_path / result["path"]).read_text()
    assert "memory_type: preference\n" in text and "strength: 1.5\n" in text
    assert "entities:\n  - TypeScript\n  - JavaScript\n" in text
    assert text.endswith("urgency: important\ndomain: technical\n---\nRemember: I prefer TypeScript over "
                         "JavaScript for all new projects\n")
    hits = store.search("typescript")["results"]
    assert [h["id"] for h in hits] == [result["memory_id"]] and hits[0]["memory_type"] == "preference"


def test_given_values_win(store, vault_path):
    result = store.save("Remember: I prefer TypeScript", entities=["lang"], strength=1.1,
                        memory_type="core", meta={"domain": "knowledge"})
    assert result["auto_entities"] == 0
    text = (vault_path / result["path"]).read_text()
    assert "entities:\n  - lang\n" in text and "strength: 1.1\n" in text and "memory_type: core\n" in text
    assert "domain: knowledge\n" in text


def test_unknown_memory_type_is_refused(store):
    with pytest.raises(InvalidInput, match="^memory_type must be one of episodic, semantic, preference, "
                                           "relationship, procedural, profile, core, got 'fact'$"):
        store.save("x", memory_type="fact")


def test_enrichment_can_be_turned_off(store, vault_path):
    store.settings.enable_preprocessing = False
    result = store.save("Remember: I prefer TypeScript")
    assert result["enrichment_applied"] is False
    assert "entities: []\n" in (vault_path / result["path"]).read_text()


def test_cli_save_entity_and_type_override(runner, vault_path):
    data = json.loads(invoke(runner, "save", "Deploys go out on Tuesdays", "-e", "deploys", "--type",
                             "procedural", "--json").output)
    assert data["entities"] == ["deploys"] and data["memory_type"] == "procedural"
    bad = invoke(runner, "save", "x", "--type", "fact")
    assert bad.exit_code == 2 and "'fact' is not one of" in bad.output


# -- near-duplicates --------------------------------------------------------------------------


def test_similarity_measure():
    assert similarity("Use JWT for auth.", "use jwt for AUTH") == 1.0
    assert similarity("The meeting is at 3pm on Friday", "The meeting is at 4pm on Friday") == 0.0
    assert similarity("Deploys go out on Tuesdays after standup", "Deploys go out on Tuesdays") == pytest.approx(10 / 12)
    long = "Postgres connection pool max twenty connections idle timeout thirty seconds for the orders service"
    assert similarity(long + " please", long) == pytest.approx(28 / 29)  # 14 of 15 words


def test_a_near_identical_save_reinforces_the_existing_memory(store, vault_path, clock):
    first = store.save("Postgres connection pool: max 20 connections, idle timeout 30s for the orders service")
    clock.advance(hours=2)
    again = store.save("postgres connection pool - max 20 connections; idle timeout 30s for the orders service!")
    assert again["status"] == "duplicate" and again["memory_id"] == first["memory_id"]
    assert again["similarity"] == 1.0 and again["use_count"] == 1
    assert again["message"] == f"Near-duplicate of {first['memory_id']} (similarity 1.00); reinforced it instead"
    assert len(list((vault_path / "memory/stm").glob("*.md"))) == 1
    assert "last_used: 2026-11-22T12:15:00Z\n" in (vault_path / first["path"]).read_text()


def test_a_near_identical_save_scans_nothing_and_follows_a_moved_note(store, vault_path, monkeypatch):
    """The duplicate is reinforced where it is now, without a scan of the vault (a new note's
    save scans nothing either): 50 ms at 10,000 notes, 0.5 s at 100,000."""
    from vaultmem.storage.vault import Vault

    first = store.save("Deploys go out on Tuesdays after the standup")
    scans = []
    real = Vault.scan
    monkeypatch.setattr(Vault, "scan", lambda self, notes=True: scans.append(notes) or real(self, notes))
    again = store.save("deploys go out on tuesdays after the standup")
    assert again["status"] == "duplicate" and again["memory_id"] == first["memory_id"] and again["use_count"] == 1
    assert scans == []
    (vault_path / "memory/ltm").mkdir(exist_ok=True)
    moved = vault_path / "memory/ltm" / os.path.basename(first["path"])
    os.rename(vault_path / first["path"], moved)  # by hand, in Obsidian: the index does not know yet
    assert store.save("Deploys go out on Tuesdays after the standup.")["use_count"] == 2
    assert "use_count: 2\n" in moved.read_text() and not (vault_path / first["path"]).exists()
    assert scans  # modify followed the note it did not find where the index had it


def test_a_memory_rewritten_in_obsidian_is_not_the_duplicate_of_its_old_text(store, vault_path):
    """A save checks the index as it stands (no scan), so the candidate is read again when its
    file changed: the person turned 3pm into 4pm, and saving the 3pm fact again must save it,
    not reinforce the 4pm note with it."""
    first = store.save("The weekly sync with the platform team is at 3pm on Friday in room 4")
    note = vault_path / first["path"]
    before = note.read_bytes()
    note.write_bytes(before.replace(b"at 3pm on Friday", b"at 4pm on Friday, moved by Dana"))
    edited = note.read_bytes()
    again = store.save("The weekly sync with the platform team is at 3pm on Friday in room 4")
    assert again["status"] == "created" and again["memory_id"] != first["memory_id"]
    assert note.read_bytes() == edited  # the person's note: not reinforced, not rewritten
    # unchanged since indexed, it is still the duplicate (the index's record, no re-read)
    third = store.save("The weekly sync with the platform team is at 3pm on Friday in room 4")
    assert third["status"] == "duplicate" and third["memory_id"] == again["memory_id"]


def test_duplicate_check_reads_operator_words_as_plain_words(store, vault_path):
    # The candidate query is plain words on the content field: "NOT"/"OR" in a memory are words.
    assert duplicate_query("Do NOT deploy OR restart kafka-connect (ever) at: night") == \
        "connect restart deploy kafka night ever"
    first = store.save("Do NOT deploy OR restart kafka-connect (ever) at: night")
    again = store.save("do not deploy or restart kafka-connect ever at night")
    assert again["status"] == "duplicate" and again["memory_id"] == first["memory_id"]


def test_a_changed_fact_is_not_a_duplicate(store, vault_path):
    store.save("The weekly sync is at 3pm on Friday in room 4")
    other = store.save("The weekly sync is at 4pm on Friday in room 4")
    assert other["status"] == "created"
    assert len(list((vault_path / "memory/stm").glob("*.md"))) == 2


def test_allow_duplicate_saves_a_copy(runner, vault_path):
    invoke(runner, "save", "Deploys go out on Tuesdays")
    dup = invoke(runner, "save", "Deploys go out on Tuesdays")
    assert dup.exit_code == 0 and "note: Near-duplicate of" in dup.stderr
    invoke(runner, "save", "Deploys go out on Tuesdays", "--allow-duplicate")
    assert len(list((vault_path / "memory/stm").glob("*.md"))) == 2


def test_phrases_and_patterns_are_tried_in_the_order_given():
    text = "use port 80 now"
    assert [m.group(0) for m in phrase_regex(["key", "port", "re:\\bport \\d+"]).finditer(text)] == ["port"]
    assert [m.group(0) for m in phrase_regex(["re:\\bport \\d+", "port", "key"]).finditer(text)] == ["port 80"]


def _phrase_regex_one_pair_each(phrases):
    """phrase_regex as it was: a pair of word-boundary checks around each phrase."""
    import re

    parts = []
    for phrase in phrases:
        phrase = str(phrase)
        if phrase.startswith("re:"):
            parts.append(f"(?:{phrase[3:]})")
        elif phrase.strip():
            parts.append(r"(?<!\w)" + r"\s+".join(re.escape(w) for w in phrase.strip().split()) + r"(?!\w)")
    return re.compile("|".join(parts), re.I | re.M) if parts else None


def _template_phrase_lists():
    from vaultmem.base.config import TEMPLATE_DIR

    found = []

    def walk(value):
        if isinstance(value, dict):
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list) and value and all(isinstance(p, str) for p in value):
            found.append(value)

    for name in ("classify.yaml", "activation.yaml"):
        walk(yaml.safe_load((TEMPLATE_DIR / name).read_text(encoding="utf-8")))
    return found


_PHRASE_LISTS = _template_phrase_lists()


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_phrases_sharing_one_boundary_check_match_exactly_as_one_check_each(data):
    """What each template's phrase group finds (findall: a domain's count; finditer: activation's
    hits) is the same with the shared word-boundary checks as with a pair around each phrase,
    `re:` entries in between included."""
    phrases = data.draw(st.sampled_from(_PHRASE_LISTS + [["key", "port", "re:\\bport \\d+", "deploy pipeline"],
                                                         ["re:\\bport \\d+", "port", "deploy"]]))
    words = [w for p in phrases if not p.startswith("re:") for w in p.split()] + ["keyboard", "x1", "port 80"]
    spelled = st.sampled_from(phrases).map(lambda p: p[3:] if p.startswith("re:") else p)
    pieces = data.draw(st.lists(st.one_of(st.sampled_from(words), spelled,
                                          st.text(alphabet=" \n\t.,!?'-_aZé9", max_size=3)), max_size=25))
    text = "".join(data.draw(st.sampled_from(["", " ", "  ", "\n", "-", "_", "'"])) + p for p in pieces)
    old, new = _phrase_regex_one_pair_each(phrases), phrase_regex(phrases)
    assert [m.span() for m in new.finditer(text)] == [m.span() for m in old.finditer(text)]
    assert len(new.findall(text)) == len(old.findall(text))
