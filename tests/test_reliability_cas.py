"""Compare-and-swap writes: a person saving a note in Obsidian (which does not take vaultmem's
lock) while vaultmem rewrites it never loses their edit. The same race with a real second process
saving every few milliseconds is measured by bench/bench_cas.py (docs/reliability.md)."""

from __future__ import annotations

import pytest

from vaultmem.base.errors import ConflictError
from vaultmem.storage.vault import Vault

MID = "0a1b2c44-0000-4000-8000-000000000008"
TEXT = (f"---\nid: {MID}\ncreated: 2026-11-01T09:00:00Z\nlast_used: 2026-11-01T09:00:00Z\nuse_count: 0\n"
        "strength: 1.0\nstatus: active\ntags: []\n---\nThe on-call rota changes on Mondays.\n")


@pytest.fixture
def note(vault_path):
    path = vault_path / "memory/stm/on-call-rota-0a1b2c44.md"
    path.write_text(TEXT)
    return path


def test_an_edit_saved_between_vaultmem_s_read_and_write_is_kept(store, note, monkeypatch):
    real = Vault._synced_temp
    calls = []

    def person_saves_meanwhile(self, path, text):
        calls.append(path)
        if len(calls) == 1:  # vaultmem has read the note and computed its change: the person saves now
            note.write_text(note.read_text().replace("on Mondays.", "on Mondays and Thursdays."))
        return real(self, path, text)

    monkeypatch.setattr(Vault, "_synced_temp", person_saves_meanwhile)
    result = store.touch(MID[:8])
    text = note.read_text()
    assert "on Mondays and Thursdays." in text  # the person's edit survived
    assert "use_count: 1\n" in text and result["use_count"] == 1  # and vaultmem's change was re-applied on top
    assert len(calls) == 2


def test_a_note_that_never_stops_changing_is_a_conflict_not_an_overwrite(store, note, monkeypatch):
    real = Vault._synced_temp
    n = [0]

    def person_keeps_saving(self, path, text):
        n[0] += 1
        note.write_text(TEXT.replace("Mondays", f"day {n[0]}"))
        return real(self, path, text)

    monkeypatch.setattr(Vault, "_synced_temp", person_keeps_saving)
    with pytest.raises(ConflictError, match=r"^memory/stm/on-call-rota-0a1b2c44.md kept changing while vaultmem wrote "
                                            r"it \(5 tries\); nothing was overwritten, try again when the editing stops$"):
        store.touch(MID[:8])
    assert note.read_text() == TEXT.replace("Mondays", "day 5")
