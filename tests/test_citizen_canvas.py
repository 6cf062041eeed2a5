"""A canvas's file card follows the memory it shows when vaultmem moves it, as Obsidian's
own renames do: only the card's `file` value changes (on a canvas vaultmem exported, the
card's id and its edges too), byte-exactly; a broken canvas is never rewritten."""

from __future__ import annotations

import json

from conftest import invoke
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_citizen_links import JWT, JWT_ID, memory, write

from vaultmem.storage import canvas

OLD, NEW = f"memory/stm/{JWT}.md", f"memory/ltm/{JWT}.md"

# As Obsidian writes a canvas: tab-indented, one card per line.
PERSON_CANVAS = (
    '{\n\t"nodes":[\n'
    f'\t\t{{"id":"a1","type":"file","file":"{OLD}","x":0,"y":0,"width":400,"height":400}},\n'
    f'\t\t{{"id":"a2","type":"text","text":"see {OLD}","x":500,"y":0,"width":250,"height":60}},\n'
    f'\t\t{{"id":"a3","type":"file","file":"{OLD}","subpath":"#Why","x":0,"y":500,"width":400,"height":400}},\n'
    '\t\t{"id":"a4","type":"file","file":"Projects/Apollo.md","x":900,"y":0,"width":400,"height":400}\n'
    '\t],\n\t"edges":[\n'
    '\t\t{"id":"e1","fromNode":"a1","fromSide":"right","toNode":"a4","toSide":"left"}\n'
    '\t]\n}'
)


def test_only_the_file_cards_change_byte_exactly():
    text, changes = canvas.retarget(PERSON_CANVAS, OLD, NEW)
    assert text == PERSON_CANVAS.replace(f'"file":"{OLD}"', f'"file":"{NEW}"')
    assert f"see {OLD}" in text  # a text card that mentions the path is the person's words
    assert changes == [{"line": 3, "old": OLD, "new": NEW}, {"line": 5, "old": OLD, "new": NEW}]
    crlf = PERSON_CANVAS.replace("\n", "\r\n")
    assert canvas.retarget(crlf, OLD, NEW)[0] == text.replace("\n", "\r\n")


def test_a_path_written_with_escapes_is_found_and_the_rest_left_alone():
    old, new = "memory/stm/café-1.md", "memory/ltm/café-1.md"
    escaped = '{"nodes":[{"id":"n","type":"file","file":"memory\\/stm\\/caf\\u00e9-1.md","x":0,"y":0}],"edges":[]}'
    text, changes = canvas.retarget(escaped, old, new)
    assert text == '{"nodes":[{"id":"n","type":"file","file":"memory/ltm/café-1.md","x":0,"y":0}],"edges":[]}'
    assert changes == [{"line": 1, "old": old, "new": new}]


def test_a_canvas_that_does_not_show_the_note_or_is_broken_is_untouched():
    assert canvas.retarget(PERSON_CANVAS, "memory/stm/other.md", "memory/ltm/other.md") == (PERSON_CANVAS, [])
    broken = PERSON_CANVAS[:-1]  # the closing brace gone: the person's to fix
    assert canvas.retarget(broken, OLD, NEW) == (broken, [])
    only_text = '{"nodes":[{"id":"t","type":"text","text":"' + OLD + '"}]}'
    assert canvas.retarget(only_text, OLD, NEW) == (only_text, [])


def test_a_card_vaultmem_exported_keeps_an_id_made_from_its_path():
    old_id, other = canvas.node_id("node", OLD), canvas.node_id("node", "Projects/Apollo.md")
    exported = json.dumps({"nodes": [{"id": old_id, "type": "file", "file": OLD},
                                     {"id": other, "type": "file", "file": "Projects/Apollo.md"}],
                           "edges": [{"id": "e", "fromNode": other, "toNode": old_id}]}, indent="\t")
    text, changes = canvas.retarget(exported, OLD, NEW)
    data = json.loads(text)
    assert [(n["id"], n["file"]) for n in data["nodes"]] == [(canvas.node_id("node", NEW), NEW),
                                                              (other, "Projects/Apollo.md")]
    assert data["edges"] == [{"id": "e", "fromNode": other, "toNode": canvas.node_id("node", NEW)}]
    assert len(changes) == 1


def test_promote_moves_the_card_and_reports_it(runner, vault_path):
    write(vault_path, f"memory/stm/{JWT}.md", memory(JWT_ID, "Use JWT tokens for authentication in all new APIs"))
    write(vault_path, "Boards/Auth.canvas", PERSON_CANVAS, crlf=True)
    write(vault_path, "Boards/Broken.canvas", PERSON_CANVAS[:-1])
    broken = (vault_path / "Boards/Broken.canvas").read_bytes()
    result = json.loads(invoke(runner, "promote", "--apply", "--json").output)
    assert [r for r in result["links_rewritten"] if r["path"].endswith(".canvas")] == [
        {"path": "Boards/Auth.canvas", "line": 3, "old": OLD, "new": NEW},
        {"path": "Boards/Auth.canvas", "line": 5, "old": OLD, "new": NEW}]
    assert (vault_path / "Boards/Auth.canvas").read_bytes() == PERSON_CANVAS.replace(
        f'"file":"{OLD}"', f'"file":"{NEW}"').replace("\n", "\r\n").encode()
    assert (vault_path / "Boards/Broken.canvas").read_bytes() == broken


def test_an_exported_canvas_can_be_exported_again_after_its_memory_moved(runner, vault_path):
    write(vault_path, f"memory/stm/{JWT}.md", memory(JWT_ID, "Use JWT tokens for authentication in all new APIs"))
    write(vault_path, "Projects/Apollo.md", f"Auth: [[{JWT}]]\n")
    assert invoke(runner, "graph", "--canvas", "memory/auth.canvas").exit_code == 0
    assert invoke(runner, "promote", "--apply").exit_code == 0
    files = [n["file"] for n in json.loads((vault_path / "memory/auth.canvas").read_text())["nodes"]]
    assert NEW in files and OLD not in files
    again = invoke(runner, "graph", "--canvas", "memory/auth.canvas")  # still recognised as vaultmem's
    assert again.exit_code == 0, again.output


PATHS = st.text(st.sampled_from(list('ab/ .-_"\\é日#[]{}:,')), min_size=1, max_size=30)


@settings(max_examples=300, deadline=None)
@given(old=PATHS, new=PATHS, other=PATHS, ascii_only=st.booleans(), indent=st.sampled_from([None, "\t", 2]))
def test_any_path_any_spelling_only_its_cards_change(old, new, other, ascii_only, indent):
    assume(other != old)
    data = {"nodes": [{"id": "a", "type": "file", "file": old}, {"id": "b", "type": "text", "text": old},
                      {"id": "c", "type": "file", "file": other}], "edges": []}
    text = json.dumps(data, ensure_ascii=ascii_only, indent=indent)
    edited, changes = canvas.retarget(text, old, new)
    nodes = json.loads(edited)["nodes"]
    assert [n.get("file", n.get("text")) for n in nodes] == [new, old, other]
    assert changes == [{"line": text.count("\n", 0, text.index('"file":')) + 1, "old": old, "new": new}]


def test_doctor_lists_cards_to_missing_files_and_canvases_obsidian_cannot_open(runner, vault_path):
    write(vault_path, f"memory/stm/{JWT}.md", memory(JWT_ID, "Use JWT tokens for authentication in all new APIs"))
    write(vault_path, "attachments/diagram.png", "png")
    board = ('{"nodes":[\n'
             f'{{"id":"a","type":"file","file":"{OLD}"}},\n'
             '{"id":"b","type":"file","file":"attachments/diagram.png"},\n'
             '{"id":"c","type":"file","file":"Projects/Gone.md"},\n'
             '{"id":"d","type":"text","text":"Projects/Also gone.md"}\n]}\n')
    write(vault_path, "Boards/Auth.canvas", board)
    write(vault_path, "Boards/Broken.canvas", "{\"nodes\": [")
    before = {p: p.read_bytes() for p in (vault_path / "Boards").iterdir()}
    result = invoke(runner, "doctor", "--json")
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["counts"]["canvas_cards"] == 2
    assert [p for p in data["problems"] if p["check"] in ("broken_canvas_card", "malformed_canvas")] == [
        {"check": "broken_canvas_card", "path": "Boards/Auth.canvas", "line": 4, "target": "Projects/Gone.md",
         "message": "Boards/Auth.canvas:4: a card shows Projects/Gone.md, which is not in the vault; "
                    "point the card at the note or remove it"},
        {"check": "malformed_canvas", "path": "Boards/Broken.canvas",
         "message": "Boards/Broken.canvas is not a JSON Canvas file (Obsidian cannot open it); "
                    "fix its JSON or delete it"}]
    assert {p: p.read_bytes() for p in (vault_path / "Boards").iterdir()} == before  # reported, never rewritten
    text = invoke(runner, "doctor")
    assert "broken_canvas_card: Boards/Auth.canvas:4: a card shows Projects/Gone.md" in text.output
