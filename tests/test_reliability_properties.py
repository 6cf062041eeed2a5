"""Property-based tests (hypothesis): the note codec, the scoring functions, the wikilink parser.

Beyond tests/test_note.py, tests/test_decay.py and tests/test_links.py: notes with a
person's own keys, comments, flow lists, CRLF and BOM around the keys vaultmem owns; the
ACT-R model; wikilinks in arbitrary surrounding text. VAULTMEM_SOAK=1 multiplies the
examples by 10.
"""

from __future__ import annotations

import datetime as dt

from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability_helpers import NOW, SOAK

from vaultmem.base.config import Settings
from vaultmem.base.timeutil import parse_time
from vaultmem.core import decay
from vaultmem.storage import links
from vaultmem.storage import note as notes

EXAMPLES = 2000 if SOAK else 200
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

person_keys = st.from_regex(r"[a-z][a-z_]{0,11}", fullmatch=True).filter(
    lambda k: k not in notes.OWNED_KEYS and k not in notes._YAML_SPECIAL)
person_values = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=30),
    st.integers(-10**6, 10**6),
    st.booleans(),
    st.lists(st.text(st.characters(whitelist_categories=("L", "N")), min_size=1, max_size=8), max_size=3),
)
owned_changes = st.fixed_dictionaries({}, optional={
    "use_count": st.integers(0, 10**6),
    "strength": st.floats(1.0, 2.0).map(lambda f: round(f, 3)),
    "status": st.sampled_from(notes.STATUSES),
    "last_used": st.datetimes(dt.datetime(2000, 1, 1), dt.datetime(2100, 1, 1)).map(
        lambda d: d.replace(microsecond=0, tzinfo=dt.timezone.utc)),
    "tags": st.lists(st.from_regex(r"[A-Za-z][\w/-]{0,10}", fullmatch=True), max_size=4),
    "source": st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=20),
})
bodies = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\x00"), max_size=200)


@st.composite
def person_notes(draw):
    """A memory note a person has been editing: their keys, comments and layout around ours."""
    person = draw(st.dictionaries(person_keys, person_values, max_size=5))
    order = ["id", "use_count", "status", "tags", *person]
    draw(st.randoms()).shuffle(order)
    lines = []
    for key in order:
        if key == "id":
            lines.append("id: 7f3c2a1e-5b9d-4c1e-9a0b-2d4e6f8a1c3e\n")
        elif key == "use_count":
            lines.append("use_count: 3  # a person's comment\n")
        elif key == "status":
            lines.append("status: active\n")
        elif key == "tags":
            lines.append(draw(st.sampled_from(["tags: [a, b]\n", "tags:\n  - a\n  - b\n", "tags: []\n"])))
        else:
            flow = isinstance(person[key], list) and draw(st.booleans())
            lines.append(notes.render_property(key, person[key], flow=flow))
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), "# a comment line\n")
    text = "---\n" + "".join(lines) + "---\n" + draw(bodies)
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    if draw(st.booleans()):
        text = "\ufeff" + text
    return text, person


def _lines_outside(text: str, keys: set[str]) -> list[str]:
    """The note's lines that belong to no key in `keys` (the person's bytes)."""
    split = notes.split_note(text)
    lines = split.frontmatter.splitlines(keepends=True)
    spans = notes._key_spans(lines)
    owned = {i for k, (a, b) in spans.items() if k in keys for i in range(a, b)}
    return [line for i, line in enumerate(lines) if i not in owned]


@SETTINGS
@given(person_notes(), owned_changes)
def test_codec_update_is_identity_on_owned_keys_and_byte_identical_elsewhere(note, changes):
    text, person = note
    updated = notes.update_frontmatter(text, changes)
    before, after = notes.split_note(text), notes.split_note(updated)
    # parse -> update -> parse: the changed keys read back as set, every other value unchanged
    old_props, new_props = notes.load_yaml(before.frontmatter), notes.load_yaml(after.frontmatter)
    for key, value in changes.items():
        if isinstance(value, dt.datetime):  # YAML 1.2 reads a time as text; parse_time reads the text
            assert parse_time(new_props[key]) == value
        else:
            assert new_props[key] == (list(value) if isinstance(value, list) else value)
    for key, value in old_props.items():
        if key not in changes:
            assert new_props[key] == value
    # byte-identical elsewhere: BOM, body, line ends and every line of the person's keys/comments
    assert after.bom == before.bom and after.body == before.body
    assert after.newline == before.newline
    assert _lines_outside(updated, set(changes)) == _lines_outside(text, set(changes))
    # applying the same change again changes nothing (idempotent)
    assert notes.update_frontmatter(updated, changes) == updated


@SETTINGS
@given(person_notes())
def test_codec_with_no_change_is_byte_identical(note):
    text, _ = note
    assert notes.update_frontmatter(text, {}) == text


# -- scoring -------------------------------------------------------------------------------------

ages_h = st.floats(0, 24 * 3650, allow_nan=False)
MODELS = ["power_law", "exponential", "two_component", "actr"]


@SETTINGS
@given(st.sampled_from(MODELS), ages_h, ages_h, st.integers(0, 200), st.floats(1.0, 2.0))
def test_every_model_is_monotonic_in_age_and_bounded(model, a, b, uses, strength):
    s = Settings(decay_model=model)
    young, old = sorted((a, b))

    def at(age_h: float) -> float:
        last = NOW - dt.timedelta(hours=age_h)
        return decay.score(use_count=uses, last_used=last, created=last, strength=strength, now=NOW, settings=s)

    s_young, s_old = at(young), at(old)
    assert s_old <= s_young * (1 + 1e-9)
    assert 0.0 <= s_old and s_young < float("inf")
    if model != "actr":
        assert s_young <= (uses + 1) ** s.decay_beta * strength * (1 + 1e-9)


@SETTINGS
@given(ages_h, st.integers(0, 50), st.integers(0, 50), st.floats(0.1, 1.0), st.floats(-2.0, 2.0))
def test_actr_activation_grows_with_uses_and_is_finite(age_h, uses, extra, rate, baseline):
    created = NOW - dt.timedelta(hours=age_h)

    def act(n: int) -> float:
        return decay.actr_activation(created=created, last_used=created, use_count=n, access_times=[],
                                     now=NOW, rate=rate, baseline=baseline)

    fewer, more = act(uses), act(uses + extra)
    assert more >= fewer - 1e-9
    # bounded: at most ln(1 + uses) above the baseline (every age is at least one hour)
    assert fewer <= baseline + __import__("math").log(1 + uses) + 1e-9


@SETTINGS
@given(ages_h, st.lists(ages_h, max_size=12), st.integers(0, 40))
def test_actr_with_recorded_access_times_is_monotonic_in_now(age_h, accesses_h, uses):
    created = NOW - dt.timedelta(hours=age_h + max(accesses_h, default=0))
    times = [(NOW - dt.timedelta(hours=h)).strftime("%Y-%m-%dT%H:%M:%SZ") for h in accesses_h]

    def act(now: dt.datetime) -> float:
        return decay.actr_activation(created=created, last_used=created, use_count=uses, access_times=times,
                                     now=now, rate=0.5, baseline=0.0)

    assert act(NOW + dt.timedelta(days=30)) <= act(NOW) + 1e-9


# -- wikilinks -------------------------------------------------------------------------------------

# A target ending in ".md" (any case) reads as a link to the file without it, so `[[x.MD]]` and
# a note `x.MD.md` do not match: a known edge case left to the graph module, excluded here.
targets = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9 _.-]{0,24}", fullmatch=True).map(str.strip).filter(
    lambda t: bool(t) and not t.lower().endswith(".md"))
prose = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="[]|#\\`\r\x00<>!"), max_size=40)


@SETTINGS
@given(st.lists(st.tuples(prose, targets, st.sampled_from(["", "Heading", "^block1"]), st.sampled_from(["", "Alias"]),
                          st.booleans()), min_size=1, max_size=6), prose)
def test_wikilink_parser_finds_every_link_in_any_prose(parts, tail):
    body, expected = "", []
    for before, target, sub, alias, embed in parts:
        inner = target + (f"#{sub}" if sub else "") + (f"|{alias}" if alias else "")
        body += before.replace("\n", " ") + " " + ("!" if embed else "") + f"[[{inner}]] "
        expected.append((target, sub, alias, embed))
    body += tail.replace("\n", " ") + "\n"
    body = body.lstrip()  # a line indented 4+ columns is a code block, where links are not links
    found = [(link.target, link.subpath, link.alias, link.embed) for link in links.parse_links(body)]
    assert found == expected


@SETTINGS
@given(st.text(max_size=300))
def test_wikilink_parser_never_crashes_and_reports_real_lines(text):
    found = links.parse_links(text)
    n_lines = text.count("\n") + 1
    for link in found:
        assert 1 <= link.line <= n_lines + 1
        assert "]]" not in link.target and "\n" not in link.target


@SETTINGS
@given(st.sampled_from(["related", "causes", "supports", "contradicts", "has_decision"]), targets,
       st.floats(0, 1).map(lambda f: round(f, 3)), bodies)
def test_set_relation_round_trips_and_keeps_the_body(relation, target, strength, body):
    body = body.replace("## Relations", "## Notes")
    line = links.render_relation(relation, target, strength)
    updated = links.set_relation(body, line, relation, links.keys_for(f"memory/stm/{target}.md"))
    assert updated.startswith(body.rstrip("\n"))
    found = [lk for lk in links.parse_links(updated) if lk.type == relation]
    assert [(lk.target, round(lk.strength, 3)) for lk in found] == [(target, strength)]
    again = links.set_relation(updated, line, relation, links.keys_for(f"memory/stm/{target}.md"))
    assert again == updated


# -- paths ------------------------------------------------------------------------------------------

path_parts = st.sampled_from(["..", ".", "", "memory", "stm", "~", "/", "\\\\", "\x00", "CON", "a" * 300, "x.md"])
refs = st.one_of(st.text(max_size=300), st.lists(path_parts, max_size=6).map("/".join))


@SETTINGS
@given(refs)
def test_vault_abs_never_returns_a_path_outside_the_vault(tmp_path_factory, ref):
    from vaultmem.base.errors import InvalidInput
    from vaultmem.storage.vault import Vault

    root = tmp_path_factory.getbasetemp() / "prop-vault"
    root.mkdir(exist_ok=True)
    vault = Vault(root, Settings())
    try:
        path = vault.abs(ref)
    except InvalidInput as exc:
        assert "\n" not in str(exc)
        return
    except (OSError, ValueError):  # e.g. a name too long for the file system to resolve
        return
    resolved = path.resolve()
    assert resolved == root.resolve() or root.resolve() in resolved.parents


@SETTINGS
@given(st.text(max_size=400))
def test_safe_file_name_is_always_one_plain_portable_name(name):
    from vaultmem.storage.vault import safe_file_name

    safe = safe_file_name(name)
    assert safe and "/" not in safe and "\\" not in safe and "\x00" not in safe
    assert safe not in (".", "..") and not safe.startswith((".", " ", "-")) and not safe.endswith((".", " "))
    assert len(safe.encode("utf-8")) <= 200
    reserved = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}
    assert safe.split(".")[0].upper() not in reserved


@SETTINGS
@given(st.text(min_size=1, max_size=2000))
def test_saved_memory_file_names_are_plain_and_short(content):
    slug = notes.slugify(content)
    name = f"{slug}-7f3c2a1e.md"
    assert "/" not in name and "\x00" not in name and not name.startswith(".")
    assert len(name.encode("utf-8")) <= 255


# -- One bad note is one bad note: hostile frontmatter through sync, search, stats and gc -----------

HOSTILE_KEYS = ["id", "created", "last_used", "use_count", "strength", "status", "memory_type", "tags",
                "entities", "aliases", "pinned", "deleted", "source", "agent", "context", "private",
                "access_times", "urgency", "event_time", "related", "2026-01-01", "1", "true", "null",
                "? [a, b]", '"q\\x41"', "'x'"]
HOSTILE_VALUES = [
    "2026-02-30", "2026-13-01T00:00:00Z", "0001-01-01T00:00:00+23:59", '"0001-01-01T00:00:00+23:59"',
    "9999-12-31T23:59:59-23:59", "9223372036854775808", "-9223372036854775809", "1e400", "-.inf", ".nan",
    "!!float 'abc'", "!!timestamp 'x'", "!!int 'x'", "!!binary aGVsbG8=", "!!binary '!!'", "!!set {a, b}",
    "!!omap [a: 1, b: 2]", "!!pairs [a: 1]", "!!str", "!!null x", "!!bool maybe", "{2026-01-01: 1, 2: [3]}",
    "[[a, b], {c: d}]", "&a [*a]", "*undefined", "[", "{", "'unterminated", "| \n  block", "> \n  folded",
    "[[Some Note]]", '"[[Daily|alias]]"', "~", "''", "yes", "0x1F", "0o17", "1_000", "12:30:00",
    "\"\\ud800\"", "\"\\x00\"", "- item", "[1, 2, 3]", "{a: {b: {c: {d: 1}}}}", "x" * 300,
]


@st.composite
def hostile_frontmatter(draw):
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        key = draw(st.sampled_from(HOSTILE_KEYS))
        value = draw(st.one_of(st.sampled_from(HOSTILE_VALUES),
                               st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"),
                                       max_size=20)))
        lines.append(f"{key}: {value}")
    if draw(st.booleans()):
        lines.append(draw(st.sampled_from(["- top level list", "just text", "\tkey: tab", "a: 1\na: 2", ""])))
    return "\n".join(lines)


@given(front=hostile_frontmatter(), crlf=st.booleans())
@settings(max_examples=600 if SOAK else examples(60, 25), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_no_frontmatter_a_person_can_write_stops_a_command(tmp_path_factory, front, crlf):
    """25 hostile notes in the test command (60 thorough, 600 with VAULTMEM_SOAK=1), a vault
    each: the hostile shapes (tags, anchors, nesting, odd types) are few and each is drawn
    often; the codec's own properties above take every shape by the hundred without a vault."""
    from vaultmem.store import MemoryStore

    vault = tmp_path_factory.mktemp("hostile")
    store = MemoryStore(vault, clock=lambda: NOW)
    store.init()
    store.save("hello from a healthy memory", tags=["ok"])
    text = f"---\n{front}\n---\nhello from a hostile note\n"
    if crlf:
        text = text.replace("\n", "\r\n")
    for rel in ("memory/stm/hostile.md", "Daily/hostile.md"):
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_bytes(text.encode("utf-8", "surrogatepass"))
    before = {rel: (vault / rel).read_bytes() for rel in ("memory/stm/hostile.md", "Daily/hostile.md")}
    report = store.sync()
    malformed = dict(report.malformed)
    for rel in before:  # each note indexes, or is reported malformed with a reason
        assert rel in malformed and malformed[rel] or store.index.get(rel) is not None
    found = store.search("hello")
    assert "hello from a healthy memory" in [m["content"] for m in found["results"]]
    assert store.stats()["total_memories"] >= 1
    store.gc(apply=False)
    store.promote(auto=True, apply=False)
    store.doctor()
    # A malformed note is reported, never rewritten; a person's note outside the memory folders never
    # is (a readable note in a memory folder is a memory: its status may be made to match its folder).
    kept = [rel for rel in before if rel in malformed or not rel.startswith("memory/")]
    assert {rel: (vault / rel).read_bytes() for rel in kept} == {rel: before[rel] for rel in kept}
    store.close()


@given(st.one_of(st.floats(0, 253402300800 + 5, allow_nan=False),
                 st.integers(0, 253402300000).map(lambda s: s + 0.9999995),  # rounds to the next second
                 st.integers(0, 253402300000).map(lambda s: s + 0.5e-6)))
def test_index_times_read_as_datetime_gives_them(ts):
    """`index.iso` (time.gmtime for a search's 20 timestamps) is the second
    `format_time(datetime.fromtimestamp(ts, UTC))` shows, microsecond rounding included; past
    year 9999 both refuse alike."""
    from vaultmem.base.timeutil import UTC, format_time
    from vaultmem.storage.index import iso

    try:
        expected: str | type[BaseException] = format_time(dt.datetime.fromtimestamp(ts, UTC))
    except (ValueError, OverflowError, OSError) as exc:
        expected = type(exc)
    try:
        got: str | type[BaseException] | None = iso(ts)
    except (ValueError, OverflowError, OSError) as exc:
        got = type(exc)
    assert got == expected
