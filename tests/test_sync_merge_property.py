"""The merge driver under a real `git merge`, on generated pairs of notes: whatever the two
devices did (property values of every YAML type, CRLF, LF or a BOM, cp1252 bytes, lines
added on both sides), every line either side added is in the result or between markers, and a
merge left between markers always stops `vaultmem sync` with exit 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vaultmem.store import MemoryStore

REL = "memory/stm/lake-house.md"
VALUES = ["3", "0", "-7", "1.5", ".inf", "-.inf", ".nan", "1e400", "9" * 400, "true", "false", "yes", "null", "",
          "2026-11-22", "2026-11-22T10:15:00Z", "[a, b]", "[]", "{k: v}", "'quoted'", "\"x: y\"", "café",
          "[[1, 2], {a: 1}]", "active", "[active]"]
KEYS = ["use_count", "strength", "status", "access_times", "tags", "last_used", "rating", "private"]
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.test", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.test", "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False,
                          env={**os.environ, **GIT_ENV})
    assert not check or done.returncode == 0, (args, done.stdout, done.stderr)
    return done


side = st.fixed_dictionaries({
    "props": st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3),
    "added": st.lists(st.tuples(st.integers(0, 4), st.sampled_from(["alpha", "beta", "gamma", "café", "naïve"])),
                      min_size=1, max_size=3),
    "newline": st.sampled_from(["\n", "\r\n"]),
    "bom": st.booleans(),
    "encoding": st.sampled_from(["utf-8", "utf-8", "cp1252"]),
})


def render(props: dict[str, str], body: list[str], newline: str, bom: bool, encoding: str) -> bytes:
    lines = ["---", "id: 11111111-2222-4333-8444-555555555555", *(f"{k}: {v}" for k, v in props.items()), "---",
             *body]
    text = newline.join(lines) + newline
    return (("\ufeff" if bom and encoding == "utf-8" else "") + text).encode(encoding)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base_props=st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3), ours=side,
       theirs=side)
def test_every_added_line_survives_a_git_merge_and_a_clash_stops_the_sync(tmp_path_factory, base_props, ours,
                                                                           theirs):
    root = tmp_path_factory.mktemp("device")
    MemoryStore(root).init()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "merge.vaultmem.driver", f'"{sys.executable}" -m vaultmem sync merge-driver %O %A %B %P')
    (root / ".gitattributes").write_text("memory/**/*.md merge=vaultmem\n")
    body = ["The lake house wifi is slow", "The boat is called Heron", "Keys are under the mat", "Bring towels"]
    (root / REL).write_bytes(render(base_props, body, "\n", False, "utf-8"))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    added: dict[str, list[tuple[str, str]]] = {}
    for name, change in (("theirs", theirs), ("ours", ours)):
        git(root, "checkout", "-q", "-b" if name == "theirs" else "", name) if name == "theirs" else \
            git(root, "checkout", "-q", "main")
        lines = list(body)
        mine = []
        for at, word in change["added"]:
            line = f"{name} wrote {word} at {at}"
            lines.insert(min(at, len(lines)), line)
            mine.append((line, change["encoding"]))
        added[name] = mine
        (root / REL).write_bytes(render({**base_props, **change["props"]}, lines, change["newline"], change["bom"],
                                        change["encoding"]))
        git(root, "commit", "-qam", name)
    merge = git(root, "merge", "--no-edit", "theirs", check=False)
    result = (root / REL).read_bytes()
    for line, encoding in added["ours"] + added["theirs"]:
        assert line.encode(encoding) in result or line.encode("utf-8") in result, (line, result)
    clashed = b"<<<<<<< " in result
    assert clashed == (merge.returncode != 0), (merge.stdout, result)
    if clashed:
        from click.testing import CliRunner

        from vaultmem.cli import cli

        stopped = CliRunner().invoke(cli, ["sync", "--no-push", "--json", "--vault", str(root)])
        assert stopped.exit_code == 1 and REL in stopped.output
