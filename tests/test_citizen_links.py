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
    assert [line for line in result.output.splitlines() if line.startswith("rewrote")] == [
        f"rewrote link in Projects/Apollo.md:7: ../memory/stm/{JWT}.md -> ../memory/ltm/{JWT}.md",
        f"rewrote link in Projects/Apollo.md:7: ../memory/stm/{JWT}.md -> ../memory/ltm/{JWT}.md",
        f"rewrote link in Projects/Apollo.md:7: /memory/stm/{JWT} -> /memory/ltm/{JWT}",
        f"rewrote link in Projects/Apollo.md:6: memory/stm/{JWT} -> memory/ltm/{JWT}",
        f"rewrote link in Projects/Apollo.md:6: memory/stm/{JWT}.md -> memory/ltm/{JWT}.md"]
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
