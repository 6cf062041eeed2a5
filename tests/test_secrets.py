"""The secret filter: zero false negatives on the labelled set, talk about secrets passes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import FIXTURES, invoke
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.base.secrets import KINDS, SecretBlocked, check, find_secret

LABELLED = yaml.safe_load((FIXTURES / "secrets" / "labelled.yaml").read_text())
POSITIVES = LABELLED["positives"]
NEGATIVES = LABELLED["negatives"]


def test_the_labelled_set_is_big_enough():
    assert len(POSITIVES) >= 150 and len(NEGATIVES) >= 80
    assert {p["kind"] for p in POSITIVES} <= set(KINDS)


@pytest.mark.parametrize("case", POSITIVES, ids=[f"{p['kind']}-{i}" for i, p in enumerate(POSITIVES)])
def test_every_positive_is_blocked_with_its_kind(case):
    found = find_secret(case["text"])
    assert found is not None, "false negative"
    assert found.kind == case["kind"]


def test_precision_on_the_labelled_set(capsys):
    blocked_negatives = [n for n in NEGATIVES if find_secret(n) is not None]
    true_positives = sum(1 for p in POSITIVES if find_secret(p["text"]) is not None)
    precision = true_positives / (true_positives + len(blocked_negatives))
    with capsys.disabled():
        print(f"\nsecret filter: recall {true_positives}/{len(POSITIVES)}, "
              f"false positives {len(blocked_negatives)}/{len(NEGATIVES)}, precision {precision:.3f}")
    assert true_positives == len(POSITIVES)
    assert blocked_negatives == []  # no false blocks on the labelled look-alikes


@pytest.mark.parametrize("text", [
    "I use 1Password as my password manager",
    "Use JWT tokens for auth",
    "rotate the API key every 90 days",
])
def test_the_issue_sentences_are_not_blocked(text):
    assert find_secret(text) is None
    check(text)


def test_mnemosyne_anchor_cases():
    # Mnemosyne 1.0.1 stores a real-format AWS key and blocks the 1Password sentence.
    assert find_secret("aws key AKIA6PYCDYBK155OXTZ7").kind == "aws_access_key"
    assert find_secret("Database password is hunter2").kind == "password_assignment"


def test_blocked_error_carries_the_kind_and_never_the_secret():
    with pytest.raises(SecretBlocked) as info:
        check("token ghp_1Cu5LrH9lMnFDOpdJvarwItsjk5inSjV5o3B")
    err = info.value
    assert (err.kind, err.status, err.code) == ("github_token", "blocked_secret", "SECRET_BLOCKED")
    assert str(err) == ("blocked: content looks like github_token; remove the credential "
                        "(keep it in a password manager) and save again")
    assert "ghp_" not in str(err)


WORDS = ["the", "password", "manager", "api", "key", "token", "secret", "rotate", "every", "days", "use",
         "jwt", "for", "auth", "is", "stored", "in", "vault", "my", "our", "keyboard", "credentials", "never",
         "commit", "to", "git", "reset", "expires", "after", "minutes", "1Password", "Bitwarden", "login"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=14))
def test_ordinary_talk_about_secrets_is_never_blocked(words):
    assert find_secret(" ".join(words)) is None


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.characters(whitelist_categories=("L", "Zs", "P")), max_size=40),
       st.text(alphabet=st.characters(whitelist_categories=("L", "Zs", "P")), max_size=40))
def test_an_aws_key_is_found_wherever_it_sits(before, after):
    text = f"{before} AKIAQ74SVIZ7X1O9RO5N {after}"
    assert find_secret(text) is not None


def test_cli_save_refuses_a_secret_and_writes_nothing(runner, vault_path):
    secret = "sk_live_oyCvEU9259XxebXDCchuV0Du"
    result = invoke(runner, "save", f"Stripe key is {secret}", "--tag", "billing")
    assert result.exit_code == 1
    assert result.output == ("Error: blocked: content looks like stripe_key; remove the credential "
                             "(keep it in a password manager) and save again\n")
    assert secret not in result.output
    assert list((vault_path / "memory/stm").glob("*.md")) == []
    for path in Path(vault_path).rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_library_save_checks_context_and_meta_too(store):
    with pytest.raises(SecretBlocked):
        store.save("deploy notes", context="DATABASE_URL=postgres://app:Tr0ub4dor-3@db.internal:5432/orders")
    with pytest.raises(SecretBlocked):
        store.save("deploy notes", meta={"api_key": "AIzaKOO5KMOZPI_oVpbR2CDjlt1BC5Gco7fcopo"})
    assert list(store.vault.abs("memory/stm").glob("*.md")) == []


def test_hand_written_notes_are_indexed_and_flagged_by_doctor(runner, vault_path):
    note = vault_path / "Projects" / "Ops.md"
    note.parent.mkdir()
    note.write_text("# Ops\n\nThe old box:\nDB_PASSWORD=correcthorse9\n")
    found = invoke(runner, "search", "box")
    assert "No memories found." in found.output  # a person's note, indexed, not a memory
    result = invoke(runner, "doctor")
    assert result.exit_code == 1
    assert result.output == ("credential: Projects/Ops.md:4: looks like password_assignment; "
                             "move the credential to a password manager\n1 problem found\n")
    assert note.read_text().endswith("DB_PASSWORD=correcthorse9\n")  # never changed
    note.write_text("# Ops\n\nUse the password manager.\n")
    clean = invoke(runner, "doctor")
    assert clean.exit_code == 0 and clean.output == "No problems found\n"


@pytest.mark.parametrize("text", ["password is 1Password", "the password is in Bitwarden", "password: KeePassXC"])
def test_naming_the_password_manager_is_not_a_password(text):
    assert find_secret(text) is None  # found by hypothesis: "password is 1Password" was blocked


def test_everything_detect_secrets_finds_in_the_labelled_set_is_blocked(capsys):
    """detect-secrets (Yelp) as an outside oracle: every positive its provider plugins flag,
    vaultmem blocks too. Its entropy and keyword plugins are left out: they flag prose."""
    pytest.importorskip("detect_secrets")
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings

    noisy = {"Base64 High Entropy String", "Hex High Entropy String", "Secret Keyword"}
    flagged = []
    with default_settings():
        for case in POSITIVES:
            types = {s.type for line in case["text"].splitlines() for s in scan_line(line)} - noisy
            if types:
                flagged.append(case)
    missed = [c["text"] for c in flagged if find_secret(c["text"]) is None]
    with capsys.disabled():
        print(f"\ndetect-secrets flags {len(flagged)}/{len(POSITIVES)} positives; vaultmem blocks "
              f"{sum(find_secret(c['text']) is not None for c in POSITIVES)}/{len(POSITIVES)}")
    assert flagged and missed == []


KEYS = [
    "AKIA" + "QZ7R4XK2M9PLW3NB", "ghp_" + "x8Kq2LmN4pR7sT9vW1yZ3aB5cD6eF0gH2jK4", "sk_live_" + "51Hq8Zx2LmN4pR7sT9vW1yZ3",
    "glpat-" + "Uit8pxbkcM5yeDswqoiA", "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "dapi" + "0123456789abcdef0123456789abcdef",
    "sbp_" + "0123456789abcdef0123456789abcdef01234567", "AIza" + "SyB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1w",
]


@settings(max_examples=150, deadline=None)
@given(key=st.sampled_from(KEYS), cut=st.integers(4, 40),
       sep=st.sampled_from([" ", "\n", "\u200b", "\u200d", "\ufeff", "\u2060"]),
       before=st.sampled_from(["", "my key is ", "token: "]), after=st.sampled_from(["", " thanks", " (rotate it)"]))
def test_a_key_split_or_hiding_an_invisible_character_is_still_blocked(key, cut, sep, before, after):
    cut = min(cut, len(key) - 1)
    assert find_secret(before + key[:cut] + sep + key[cut:] + after) is not None
