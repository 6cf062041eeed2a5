"""Moves keep every link working, as Obsidian's "Automatically update internal links" does:
path links to a moved memory are rewritten byte-exactly, markdown links count as links,
promotion keeps subfolders and a taken name gets a free one."""

from __future__ import annotations

import json

from conftest import invoke

JWT = "use-jwt-tokens-7f3c2a1e"
JWT_ID = "7f3c2a1e-5b9d-4c1e-9a0b-2d4e6f8a1c3e"
RECENT = "2026-11-22T09:00:00Z"


def memory(mid: str, content: str, *, use_count: int = 12, last_used: str = RECENT, status: str = "active",
           extra: str = "") -> str:
    return (f"---\nid: {mid}\ncreated: 2026-11-15T09:00:00Z\nlast_used: {last_used}\nuse_count: {use_count}\n"
            f"strength: 1.2\nstatus: {status}\ntags: []\nvaultmem: memory\n{extra}---\n{content}\n")


def write(vault, rel: str, text: str, *, crlf: bool = False, bom: bool = False) -> None:
    path = vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.replace("\n", "\r\n") if crlf else text
    path.write_bytes((("\ufeff" if bom else "") + data).encode("utf-8"))


APOLLO = ("---\nstatus: draft   # until the kickoff\n---\n# Apollo\n\n"
          f"Auth follows the [[memory/stm/{JWT}|JWT decision]] (see [[memory/stm/{JWT}.md#Why]]).\n"
          f"Details: [the JWT note](../memory/stm/{JWT}.md) and [again](<../memory/stm/{JWT}.md>), "
          f"by name [[{JWT}]], from the root [r](/memory/stm/{JWT}).\n"
          "```\n[[memory/stm/not-a-link]] in code stays\n```\n")


def test_promote_rewrites_path_links_to_the_moved_memory_byte_exactly(runner, vault_path):
    write(vault_path, f"memory/stm/{JWT}.md", memory(JWT_ID, "Use JWT tokens for authentication in all new APIs"))
    write(vault_path, "Projects/Apollo.md", APOLLO, crlf=True, bom=True)
    before = (vault_path / "Projects/Apollo.md").read_bytes()
    preview = invoke(runner, "promote")
    assert preview.exit_code == 0 and preview.output.startswith("Would promote 1 memory to memory/ltm/\n")
    assert (vault_path / "Projects/Apollo.md").read_bytes() == before  # a preview writes nothing
    result = invoke(runner, "promote", "--apply")
    assert result.exit_code == 0
    assert [line for line in result.output.splitlines() if line.startswith("rewrote")] == [  # in reading order
        f"rewrote link in Projects/Apollo.md:6: memory/stm/{JWT} -> memory/ltm/{JWT}",
        f"rewrote link in Projects/Apollo.md:6: memory/stm/{JWT}.md -> memory/ltm/{JWT}.md",
        f"rewrote link in Projects/Apollo.md:7: ../memory/stm/{JWT}.md -> ../memory/ltm/{JWT}.md",
        f"rewrote link in Projects/Apollo.md:7: ../memory/stm/{JWT}.md -> ../memory/ltm/{JWT}.md",
        f"rewrote link in Projects/Apollo.md:7: /memory/stm/{JWT} -> /memory/ltm/{JWT}"]
    expected = ("\ufeff" + APOLLO.replace("memory/stm/use-jwt", "memory/ltm/use-jwt")).replace("\n", "\r\n")
    assert (vault_path / "Projects/Apollo.md").read_bytes().decode("utf-8") == expected
    assert (vault_path / f"memory/ltm/{JWT}.md").is_file()
    backlinks = json.loads(invoke(runner, "backlinks", JWT_ID[:8], "--json").output)
    assert {b["path"] for b in backlinks["notes"]} == {"Projects/Apollo.md"}


def test_gc_archive_rewrites_a_relative_markdown_link_and_reports_it_in_json(runner, vault_path):
    old = "5e6f7a8b-0000-4000-8000-0000000000aa"
    write(vault_path, "memory/stm/old staging ip-5e6f7a8b.md",
          memory(old, "The old staging server was 10.0.0.12", use_count=0, last_used="2025-01-02T03:04:05Z"))
    write(vault_path, "People/Alice.md", "Alice knew the [old box](<../memory/stm/old staging ip-5e6f7a8b.md>) and "
                                         "[the same](../memory/stm/old%20staging%20ip-5e6f7a8b.md#Where).\n")
    result = json.loads(invoke(runner, "gc", "--apply", "--json").output)
    assert result["archived_count"] == 1
    assert result["links_rewritten"] == [
        {"path": "People/Alice.md", "line": 1, "old": "../memory/stm/old staging ip-5e6f7a8b.md",
         "new": "../memory/archive/old staging ip-5e6f7a8b.md"},
        {"path": "People/Alice.md", "line": 1, "old": "../memory/stm/old%20staging%20ip-5e6f7a8b.md#Where",
         "new": "../memory/archive/old%20staging%20ip-5e6f7a8b.md#Where"}]
    assert (vault_path / "People/Alice.md").read_text() == (
        "Alice knew the [old box](<../memory/archive/old staging ip-5e6f7a8b.md>) and "
        "[the same](../memory/archive/old%20staging%20ip-5e6f7a8b.md#Where).\n")


def test_markdown_links_are_links_for_backlinks_and_doctor(runner, vault_path):
    write(vault_path, f"memory/stm/{JWT}.md", memory(JWT_ID, "Use JWT tokens"))
    write(vault_path, "People/Bob.md", f"Bob wrote [the rule](../memory/stm/{JWT}.md) and [gone](../memory/stm/nope.md).\n")
    backlinks = json.loads(invoke(runner, "backlinks", JWT_ID[:8], "--json").output)
    assert [(b["path"], b["line"]) for b in backlinks["notes"]] == [("People/Bob.md", 1)]
    assert invoke(runner, "doctor").output == ("broken_link: People/Bob.md:1: [[memory/stm/nope.md]] points to no "
                                               "note; fix the link or restore the note\n1 problem found\n")


def test_promote_keeps_the_subfolder_and_a_taken_name_gets_a_free_one(runner, vault_path):
    launch = "0c0ffee2-0000-4000-8000-0000000000ee"
    write(vault_path, "memory/stm/work/apollo-launch.md", memory(launch, "Apollo launches on December 4"))
    write(vault_path, "memory/ltm/work/apollo-launch.md",
          memory("0badf00d-0000-4000-8000-0000000000dd", "Apollo v1 launched in June 2025", status="promoted"))
    write(vault_path, "Daily/2026-11-23.md", "Plan: [[memory/stm/work/apollo-launch|launch plan]]\n")
    result = invoke(runner, "promote", "--apply")
    assert result.exit_code == 0
    assert "renamed memory/stm/work/apollo-launch.md -> memory/ltm/work/apollo-launch-0c0ffee2.md: the name was taken" \
        in result.output.splitlines()
    assert (vault_path / "memory/ltm/work/apollo-launch-0c0ffee2.md").is_file()
    assert "Apollo v1" in (vault_path / "memory/ltm/work/apollo-launch.md").read_text()  # untouched
    assert (vault_path / "Daily/2026-11-23.md").read_text() == (
        "Plan: [[memory/ltm/work/apollo-launch-0c0ffee2|launch plan]]\n")


def test_a_moved_memory_s_own_relative_links_follow_it_and_a_draft_status_stays(runner, vault_path):
    write(vault_path, "People/Carol.md", "# Carol\n")
    write(vault_path, f"memory/stm/{JWT}.md",
          memory(JWT_ID, "Ask [Carol](../../People/Carol.md) about tokens", status="draft"))
    assert invoke(runner, "promote", "--apply").exit_code == 0
    text = (vault_path / f"memory/ltm/{JWT}.md").read_text()
    assert "Ask [Carol](../../People/Carol.md) about tokens" in text  # same depth: unchanged
    assert "status: draft\n" in text and "promoted_at:" in text  # a status vaultmem does not own stays
    write(vault_path, "memory/stm/deep/er/note-0c0ffee3.md",
          memory("0c0ffee3-0000-4000-8000-0000000000ff", "See [Carol](../../../People/Carol.md)"))
    assert invoke(runner, "promote", "0c0ffee3", "--force", "--apply").exit_code == 0
    moved = (vault_path / "memory/ltm/deep/er/note-0c0ffee3.md").read_text()
    assert "See [Carol](../../../People/Carol.md)" in moved


def snapshot(vault) -> dict[str, bytes]:
    """Every file of the vault but vaultmem's own index and state."""
    return {p.relative_to(vault).as_posix(): p.read_bytes() for p in sorted(vault.rglob("*"))
            if p.is_file() and ".vaultmem" not in p.relative_to(vault).parts}


def test_a_relative_markdown_link_from_alice_survives_promote_with_crlf_and_bom_kept(runner, vault_path):
    write(vault_path, f"memory/stm/{JWT}.md", memory(JWT_ID, "Use JWT tokens for authentication in all new APIs"))
    alice = (f"# Alice\n\nAlice chose [JWT](../memory/stm/{JWT}.md#Why) for us.  \n"
             f"\tSee [[{JWT}]] and, as Obsidian's absolute format writes it, [the note](memory/stm/{JWT}).\n")
    write(vault_path, "People/Alice.md", alice, crlf=True, bom=True)
    result = invoke(runner, "promote", "--apply")
    assert result.exit_code == 0
    assert result.output.splitlines()[-2:] == [
        f"rewrote link in People/Alice.md:3: ../memory/stm/{JWT}.md#Why -> ../memory/ltm/{JWT}.md#Why",
        f"rewrote link in People/Alice.md:4: memory/stm/{JWT} -> memory/ltm/{JWT}"]
    expected = "\ufeff" + alice.replace("/stm/", "/ltm/").replace("\n", "\r\n")
    assert (vault_path / "People/Alice.md").read_bytes() == expected.encode("utf-8")
    backlinks = json.loads(invoke(runner, "backlinks", JWT_ID[:8], "--json").output)
    assert [(b["path"], b["line"]) for b in backlinks["notes"]] == [
        ("People/Alice.md", 3), ("People/Alice.md", 4), ("People/Alice.md", 4)]
    assert invoke(runner, "doctor").output == "No problems found\n"


def test_a_clash_is_reported_in_json_and_the_note_still_moves(runner, vault_path):
    launch = "0c0ffee2-0000-4000-8000-0000000000ee"
    write(vault_path, "memory/stm/work/apollo-launch.md", memory(launch, "Apollo launches on December 4"))
    write(vault_path, "memory/ltm/work/apollo-launch.md",
          memory("0badf00d-0000-4000-8000-0000000000dd", "Apollo v1 launched in June 2025", status="promoted"))
    write(vault_path, "People/Alice.md", "Alice runs [the launch](../memory/stm/work/apollo-launch.md).\n")
    result = invoke(runner, "promote", "--apply", "--json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert (data["promoted_count"], data["skipped"]) == (1, [])
    assert data["renamed"] == [{"from": "memory/stm/work/apollo-launch.md",
                                "path": "memory/ltm/work/apollo-launch-0c0ffee2.md"}]
    assert data["candidates"][0]["new_path"] == "memory/ltm/work/apollo-launch-0c0ffee2.md"
    assert data["links_rewritten"] == [
        {"path": "People/Alice.md", "line": 1, "old": "../memory/stm/work/apollo-launch.md",
         "new": "../memory/ltm/work/apollo-launch-0c0ffee2.md"}]
    assert not (vault_path / "memory/stm/work/apollo-launch.md").exists()
    assert "status: promoted\n" in (vault_path / "memory/ltm/work/apollo-launch-0c0ffee2.md").read_text()
    assert (vault_path / "People/Alice.md").read_text() == (
        "Alice runs [the launch](../memory/ltm/work/apollo-launch-0c0ffee2.md).\n")


def test_a_renamed_memory_keeps_the_links_by_name_that_pointed_at_it(runner, vault_path):
    """A free name on a clash changes the note's name: links by that name beside it would
    now find the other note, so they follow it too (only those that resolved to it)."""
    launch = "0c0ffee2-0000-4000-8000-0000000000ee"
    write(vault_path, "memory/stm/work/apollo-launch.md", memory(launch, "Apollo launches on December 4"))
    write(vault_path, "memory/ltm/work/apollo-launch.md",
          memory("0badf00d-0000-4000-8000-0000000000dd", "Apollo v1 launched in June 2025", status="promoted"))
    sibling = memory("0c0ffee3-0000-4000-8000-0000000000ef", "Before [[apollo-launch|the launch]] read "
                     "[this](apollo-launch.md) and [that](./apollo-launch.md#When)", use_count=0)
    write(vault_path, "memory/stm/work/checklist-0c0ffee3.md", sibling)
    write(vault_path, "People/Bob.md", "Bob: [[apollo-launch]]\n")  # resolved to the long-term one: stays
    result = invoke(runner, "promote", "0c0ffee2", "--apply")
    assert result.exit_code == 0
    assert result.output.splitlines()[-4:] == [
        "renamed memory/stm/work/apollo-launch.md -> memory/ltm/work/apollo-launch-0c0ffee2.md: the name was taken",
        "rewrote link in memory/stm/work/checklist-0c0ffee3.md:11: apollo-launch -> apollo-launch-0c0ffee2",
        "rewrote link in memory/stm/work/checklist-0c0ffee3.md:11: apollo-launch.md -> "
        "../../ltm/work/apollo-launch-0c0ffee2.md",
        "rewrote link in memory/stm/work/checklist-0c0ffee3.md:11: ./apollo-launch.md#When -> "
        "../../ltm/work/apollo-launch-0c0ffee2.md#When"]
    assert (vault_path / "memory/stm/work/checklist-0c0ffee3.md").read_text() == sibling.replace(
        "[[apollo-launch|", "[[apollo-launch-0c0ffee2|").replace(
        "(apollo-launch.md)", "(../../ltm/work/apollo-launch-0c0ffee2.md)").replace(
        "(./apollo-launch.md#When)", "(../../ltm/work/apollo-launch-0c0ffee2.md#When)")
    assert (vault_path / "People/Bob.md").read_text() == "Bob: [[apollo-launch]]\n"
    backlinks = json.loads(invoke(runner, "backlinks", launch[:8], "--json").output)
    assert {b["path"] for b in backlinks["memories"] + backlinks["notes"]} == {
        "memory/stm/work/checklist-0c0ffee3.md"}


def test_previews_change_no_file_and_show_title_and_path(runner, vault_path):
    old = "5e6f7a8b-0000-4000-8000-0000000000aa"
    write(vault_path, "memory/stm/old staging ip-5e6f7a8b.md",
          memory(old, "The old staging server was 10.0.0.12", use_count=0, last_used="2025-01-02T03:04:05Z"))
    write(vault_path, f"memory/stm/work/{JWT}.md", memory(JWT_ID, "Use JWT tokens for authentication"))
    write(vault_path, "People/Alice.md", f"[a](../memory/stm/work/{JWT}.md) [b](<../memory/stm/old staging "
                                         "ip-5e6f7a8b.md>)\r\n", bom=True)
    invoke(runner, "index", "status")  # the index is built: only the previews could change a file now
    before = snapshot(vault_path)
    promote = invoke(runner, "promote")
    assert promote.exit_code == 0
    assert promote.output.splitlines()[:2] == [
        "Would promote 1 memory to memory/ltm/",
        f"  7f3c2a1e [5.50] {JWT} · memory/stm/work/{JWT}.md"]
    assert invoke(runner, "promote", "--dry-run").output == promote.output  # the old flag still previews
    assert invoke(runner, "promote", "7f3c2a1e").output.splitlines()[:2] == promote.output.splitlines()[:2]
    gc = invoke(runner, "gc")
    assert gc.exit_code == 0
    assert gc.output.splitlines() == [
        "Would archive 1 low-scoring memory (threshold: 0.05); run with --apply to move them to memory/archive/",
        "score sum: 0.0035",
        "  5e6f7a8b [0.0035] old staging ip-5e6f7a8b · memory/stm/old staging ip-5e6f7a8b.md"]
    assert json.loads(invoke(runner, "promote", "--json").output)["links_rewritten"] == []
    assert snapshot(vault_path) == before


def test_markdown_links_in_every_form_obsidian_writes_resolve_and_urls_are_not_links(runner, vault_path):
    """Obsidian writes markdown links relative (`../x.md`), from the root (`Folder/x.md`) or
    shortest (`x.md`, found by name); a URL, a file that is no note, or code is no link."""
    write(vault_path, f"memory/stm/{JWT}.md", memory(JWT_ID, "Use JWT tokens"))
    write(vault_path, "Projects/Plan.md", "# Plan\n")
    write(vault_path, "Projects/Sub/Notes.md", (
        f"[short]({JWT}.md) [absolute](Projects/Plan.md) [relative](../Plan.md) [bare](Plan)\n"
        "[web](https://example.com/x.md) [mail](mailto:a@example.com) [app](obsidian://open?vault=v&file=x)\n"
        "[host](www.example.com) [text](notes.txt) [img](../../attachments/d.png) [self](#Heading) "
        "[proto](//cdn.example.com/a)\n"
        "`[code](nope.md)`\n\n```\n[fenced](nope.md)\n```\n"))
    assert invoke(runner, "doctor").output == "No problems found\n"
    backlinks = json.loads(invoke(runner, "backlinks", JWT_ID[:8], "--json").output)
    assert [(b["path"], b["line"]) for b in backlinks["notes"]] == [("Projects/Sub/Notes.md", 1)]
    assert invoke(runner, "graph", "--canvas", "g.canvas", "--around", "Projects/Sub/Notes.md").exit_code == 0
    canvas = json.loads((vault_path / "g.canvas").read_text())
    files = {node["id"]: node["file"] for node in canvas["nodes"]}
    assert sorted((files[e["fromNode"]], files[e["toNode"]]) for e in canvas["edges"]) == [  # one edge per pair
        ("Projects/Sub/Notes.md", "Projects/Plan.md"), ("Projects/Sub/Notes.md", f"memory/stm/{JWT}.md")]
    write(vault_path, "Projects/Sub/Notes.md", "[gone](Projects/Gone.md) [gone too](Gone%20Too)\n")
    assert invoke(runner, "doctor").output == (
        "broken_link: Projects/Sub/Notes.md:1: [[Projects/Gone.md]] points to no note; fix the link or restore "
        "the note\nbroken_link: Projects/Sub/Notes.md:1: [[Gone Too]] points to no note; fix the link or restore "
        "the note\n2 problems found\n")


def test_parse_links_reads_markdown_links_as_obsidian_does():
    from vaultmem.storage.links import parse_links

    body = ("See [a](../memory/stm/x%20y.md#Why) and [b](<../p q.md>), [[w|W]], ![i](img.png \"t\")\n"
            "[c](https://e.com) [d](Note) `[e](code.md)` [f](/Root/R.md#^b1)\n")
    found = [(link.style, link.target, link.subpath, link.raw, link.embed, link.line)
             for link in parse_links(body, 4, "Folder/Src.md")]
    assert found == [
        ("markdown", "memory/stm/x y.md", "Why", "../memory/stm/x%20y.md#Why", False, 5),
        ("markdown", "p q.md", "", "../p q.md", False, 5),
        ("wiki", "w", "", "", False, 5),
        ("markdown", "img.png", "", "img.png", True, 5),
        ("markdown", "Note", "", "Note", False, 6),
        ("markdown", "Root/R.md", "^b1", "/Root/R.md#^b1", False, 6)]


def test_percent_escapes_are_kept_as_the_person_wrote_them(runner, vault_path):
    cafe = "0c0ffee4-0000-4000-8000-0000000000ab"
    write(vault_path, "memory/stm/café notes-0c0ffee4.md", memory(cafe, "The café on Main Street opens at 7"))
    line = "[mixed](../memory/stm/café%20notes-0c0ffee4.md) [all](../memory/stm/caf%C3%A9%20notes-0c0ffee4.md)\n"
    write(vault_path, "People/Alice.md", line)
    assert invoke(runner, "promote", "0c0ffee4", "--apply").exit_code == 0
    assert (vault_path / "People/Alice.md").read_text() == line.replace("/stm/", "/ltm/")


def test_consolidation_lists_the_links_it_rewrote(runner, vault_path):
    pg = "The staging database runs PostgreSQL 16 on port 5433."
    write(vault_path, "memory/stm/pg-0c0ffee5.md", memory("0c0ffee5-0000-4000-8000-0000000000a5", pg, use_count=1))
    write(vault_path, "memory/stm/pg-0c0ffee6.md", memory("0c0ffee6-0000-4000-8000-0000000000a6", pg, use_count=4))
    write(vault_path, "People/Alice.md", "Ports: [[memory/stm/pg-0c0ffee5|pg]] and [pg](../memory/stm/pg-0c0ffee6.md)\n")
    cid = json.loads(invoke(runner, "cluster", "--json").output)["clusters"][0]["id"]
    result = invoke(runner, "consolidate", "--cluster", cid, "--mode", "apply")
    assert result.exit_code == 0
    assert result.output.splitlines()[-2:] == [
        "rewrote link in People/Alice.md:1: memory/stm/pg-0c0ffee5 -> memory/archive/pg-0c0ffee5",
        "rewrote link in People/Alice.md:1: ../memory/stm/pg-0c0ffee6.md -> ../memory/archive/pg-0c0ffee6.md"]
    assert (vault_path / "People/Alice.md").read_text() == (
        "Ports: [[memory/archive/pg-0c0ffee5|pg]] and [pg](../memory/archive/pg-0c0ffee6.md)\n")


def test_deep_consolidation_lists_the_links_it_rewrote(runner, vault_path):
    pg = "The staging database runs PostgreSQL 16 on port 5433."
    write(vault_path, "memory/stm/pg-0c0ffee5.md", memory("0c0ffee5-0000-4000-8000-0000000000a5", pg, use_count=1))
    write(vault_path, "memory/stm/pg-0c0ffee6.md", memory("0c0ffee6-0000-4000-8000-0000000000a6", pg, use_count=4))
    write(vault_path, "People/Alice.md", "Ports: [[memory/stm/pg-0c0ffee5|pg]]\n")
    report = json.loads(invoke(runner, "consolidate", "--deep", "--json").output)
    assert report["nearDuplicatesMerged"] == 1
    assert report["links_rewritten"] == [{"path": "People/Alice.md", "line": 1, "old": "memory/stm/pg-0c0ffee5",
                                          "new": "memory/archive/pg-0c0ffee5"}]
    assert (vault_path / "People/Alice.md").read_text() == "Ports: [[memory/archive/pg-0c0ffee5|pg]]\n"


def test_the_readme_s_promote_example_is_real_output(tmp_path, monkeypatch):
    """README's example on fixtures/real-vault prints exactly what the README shows."""
    import re
    import shlex
    import shutil
    from pathlib import Path

    from click.testing import CliRunner
    from conftest import FIXTURES

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```text\n(\$ vaultmem promote 8d2144f6\n.*?)```", readme, re.S)
    assert block
    vault = tmp_path / "real"
    shutil.copytree(FIXTURES / "real-vault", vault)
    monkeypatch.setenv("VAULTMEM_VAULT", str(vault))
    monkeypatch.setenv("VAULTMEM_NOW", "2026-11-23T10:15:00Z")
    runner = CliRunner()
    assert invoke(runner, "init", str(vault)).exit_code == 0
    shown = []
    for line in block.group(1).splitlines():
        if line.startswith("$ "):
            result = invoke(runner, *shlex.split(line[2:])[1:])
            assert result.exit_code == 0
            shown += [line, *result.output.splitlines()]
    assert "\n".join(shown) + "\n" == block.group(1)


def test_a_moved_memory_s_relative_links_are_recomputed_for_a_deeper_folder(runner, vault_path, monkeypatch):
    monkeypatch.setenv("VAULTMEM_LTM_DIR", "memory/long/term")
    write(vault_path, "People/Carol.md", "# Carol\n")
    write(vault_path, "attachments/d.png", "png")
    write(vault_path, "memory/stm/sib-0c0ffee3.md", memory("0c0ffee3-0000-4000-8000-0000000000ff", "A sibling",
                                                         use_count=0))
    body = ("Ask [Carol](../../People/Carol.md), ![d](<../../attachments/d.png>), [s](sib-0c0ffee3.md), "
            "[s2](./sib-0c0ffee3.md#H), [r](/People/Carol.md), [n](Carol.md)")
    write(vault_path, f"memory/stm/{JWT}.md", memory(JWT_ID, body), crlf=True)
    result = invoke(runner, "promote", "--apply")
    assert result.exit_code == 0
    assert result.output.splitlines()[-4:] == [
        f"rewrote link in memory/long/term/{JWT}.md:11: ../../People/Carol.md -> ../../../People/Carol.md",
        f"rewrote link in memory/long/term/{JWT}.md:11: ../../attachments/d.png -> ../../../attachments/d.png",
        f"rewrote link in memory/long/term/{JWT}.md:11: sib-0c0ffee3.md -> ../../stm/sib-0c0ffee3.md",
        f"rewrote link in memory/long/term/{JWT}.md:11: ./sib-0c0ffee3.md#H -> ../../stm/sib-0c0ffee3.md#H"]
    text = (vault_path / f"memory/long/term/{JWT}.md").read_bytes().decode("utf-8")
    assert ("Ask [Carol](../../../People/Carol.md), ![d](<../../../attachments/d.png>), "
            "[s](../../stm/sib-0c0ffee3.md), [s2](../../stm/sib-0c0ffee3.md#H), [r](/People/Carol.md), "
            "[n](Carol.md)\r\n") in text  # from the root and by name: unchanged; CRLF kept
    invoke(runner, "obsidian", "setup")  # the dashboard follows the moved long-term folder
    assert invoke(runner, "doctor").output == "No problems found\n"
