"""Understanding what is saved: entities (spaCy), strength, memory_type, urgency, domain.

The entity engine is spaCy: `spacy.blank("en")` for tokenisation, an EntityRuler for the
technologies and any extra patterns in `templates/entities.yaml`, a Matcher for runs of
capitalised words, and regular expressions (also from the template) for URLs, e-mails,
IPs, host:port, ports, versions and dates. When the setting `spacy_model` names an installed
trained pipeline, it is loaded instead of the blank one and its NER runs too, the ruler
first. spaCy is imported on first use and the pipeline is kept for the life of the process.

Strength, type, urgency and domain are keyword rules from `templates/classify.yaml`,
matched on word boundaries. A vault overrides either file in `.vaultmem/templates/`.
"""

from __future__ import annotations

import dataclasses
import re
import threading
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from vaultmem.base.config import TEMPLATE_DIR, is_yaml_error, yaml_cached, yaml_problem
from vaultmem.base.errors import ConfigError

URGENCIES = ("critical", "important", "reference", "background")
DOMAINS = ("technical", "personal", "project", "knowledge", "general")
MAX_ENTITIES = 100
# Trained-NER labels that are not things worth filtering by.
_SKIP_NER = {"CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY", "TIME"}
# Precedence when spans overlap: regex formats, then the ruler, then NER, then names.
_RANK = {"regex": 0, "ruler": 1, "ner": 2, "name": 3}
_SENTENCE_END = {".", "!", "?", ":", ";", "\n", "-", "*", "•", "(", "\"", "“", "'"}


@dataclasses.dataclass
class Enrichment:
    entities: list[str]
    strength: float
    memory_type: str
    urgency: str
    domain: str
    priority: float


def template_path(name: str, vault_templates: Path | None) -> Path:
    """The vault's copy of a template when it has one, else vaultmem's."""
    if vault_templates is not None and (vault_templates / name).is_file():
        return vault_templates / name
    return TEMPLATE_DIR / name


def load_yaml_template(path: Path, parsed_dir: Path | None = None) -> dict[str, Any]:
    """A template's mapping; with `parsed_dir`, what was parsed is kept there for the next
    process (`yaml_cached`: a cold save need not import PyYAML)."""
    kept = None if parsed_dir is None else parsed_dir / f"{path.stem}-{zlib.crc32(str(path).encode()):08x}.json"
    try:
        data = yaml_cached(path.read_text(encoding="utf-8"), kept) or {}
    except Exception as exc:
        if not (isinstance(exc, (OSError, UnicodeDecodeError)) or is_yaml_error(exc)):
            raise
        raise ConfigError(f"cannot read template {path}: {yaml_problem(exc)}; fix it or delete the vault's copy") from None
    if not isinstance(data, dict):
        raise ConfigError(f"template {path} must be a mapping; compare it with {TEMPLATE_DIR / path.name}")
    return data


def phrase_regex(phrases: Iterable[str]) -> re.Pattern[str] | None:
    r"""One case-insensitive pattern: phrases on word boundaries, `re:` entries verbatim, tried
    in the order given. Each run of plain phrases shares one pair of word-boundary checks,
    `(?<!\w)(?:a|b c|...)(?!\w)`: the same matches as a pair around each phrase, compiled in
    about half the time, which every cold save pays for the templates' phrases."""
    parts: list[str] = []
    run: list[str] = []
    for phrase in phrases:
        phrase = str(phrase)
        if phrase.startswith("re:"):
            if run:
                parts.append(r"(?<!\w)(?:" + "|".join(run) + r")(?!\w)")
                run = []
            parts.append(f"(?:{phrase[3:]})")
        elif phrase.strip():
            run.append(r"\s+".join(re.escape(w) for w in phrase.strip().split()))
    if run:
        parts.append(r"(?<!\w)(?:" + "|".join(run) + r")(?!\w)")
    if not parts:
        return None
    try:
        return re.compile("|".join(parts), re.I | re.M)
    except re.error as exc:
        raise ConfigError(f"a phrase pattern in the templates is invalid ({exc}); fix the re: entry") from None


class Classifier:
    """Strength, memory_type, urgency, domain and priority from `classify.yaml`."""

    def __init__(self, rules: dict[str, Any]) -> None:
        s = rules.get("strength", {})
        self.base = float(s.get("base", 1.0))
        self.markers = [(name, float(g.get("bonus", 0)), phrase_regex(g.get("phrases", [])))
                        for name, g in (s.get("markers") or {}).items()]
        ent = s.get("entities", {})
        self.ent_min, self.ent_bonus = int(ent.get("min", 3)), float(ent.get("bonus", 0.1))
        self.ent_many, self.ent_many_bonus = int(ent.get("many", 6)), float(ent.get("many_bonus", 0.2))
        long = s.get("long", {})
        self.long_chars, self.long_bonus = int(long.get("chars", 300)), float(long.get("bonus", 0.1))
        self.question_penalty = float(s.get("question_penalty", 0.1))
        self.types = [(t, phrase_regex(p)) for t, p in (rules.get("memory_type") or {}).items()]
        self.urgency = [(u, phrase_regex(p)) for u, p in (rules.get("urgency") or {}).items()]
        self.domains = [(d, phrase_regex(p)) for d, p in (rules.get("domain") or {}).items()]
        prio = rules.get("priority") or {}
        self.prio_urgency = {k: float(v) for k, v in (prio.get("urgency") or {}).items()}
        self.prio_domain = {k: float(v) for k, v in (prio.get("domain") or {}).items()}

    def strength_markers(self, text: str, entity_count: int) -> tuple[float, list[str]]:
        """Strength in [1.0, 2.0] and the markers that raised (or lowered) it."""
        value, found = self.base, []
        for name, bonus, rx in self.markers:
            if rx is not None and rx.search(text):
                value += bonus
                found.append(name)
        if entity_count >= self.ent_many:
            value += self.ent_many_bonus
            found.append(f"entities>={self.ent_many}")
        elif entity_count >= self.ent_min:
            value += self.ent_bonus
            found.append(f"entities>={self.ent_min}")
        if len(text) >= self.long_chars:
            value += self.long_bonus
            found.append("long")
        if text.rstrip().endswith("?"):
            value -= self.question_penalty
            found.append("question")
        return round(min(2.0, max(1.0, value)), 2), found

    def memory_type(self, text: str) -> str:
        for name, rx in self.types:
            if rx is not None and rx.search(text):
                return name
        return "semantic"

    def urgency_of(self, text: str) -> str:
        for name, rx in self.urgency:
            if rx is not None and rx.search(text):
                return name
        return "reference"

    def domain_of(self, text: str) -> str:
        best, best_count = "general", 0
        for name, rx in self.domains:
            count = len(rx.findall(text)) if rx is not None else 0
            if count > best_count:
                best, best_count = name, count
        return best

    def priority(self, urgency: str, domain: str) -> float:
        return round(self.prio_urgency.get(urgency, 0.6) * self.prio_domain.get(domain, 0.5), 2)


class EntityExtractor:
    """spaCy pipeline + template patterns. Build once per process: see `get_enricher`."""

    def __init__(self, spec: dict[str, Any], spacy_model: str = "") -> None:
        import spacy
        from spacy.matcher import Matcher

        if spacy_model:
            try:
                self.nlp = spacy.load(spacy_model)
            except OSError:
                raise ConfigError(f"spacy_model {spacy_model!r} is not installed; install the pipeline "
                                  "or unset spacy_model to use the rule-based extractor") from None
        else:
            self.nlp = spacy.blank("en")
        self.has_ner = "ner" in self.nlp.pipe_names
        ruler = self.nlp.add_pipe("entity_ruler", name="vaultmem_ruler",
                                  before="ner" if self.has_ner else None,
                                  config={"phrase_matcher_attr": "LOWER", "overwrite_ents": True})
        exact = {str(t) for t in spec.get("case_sensitive") or []}
        techs = list(dict.fromkeys([*(str(t) for t in spec.get("technologies") or []), *exact]))
        patterns: list[dict[str, Any]] = []
        for name in techs:
            if name in exact:
                tokens = [{"ORTH": t.text} for t in self.nlp.make_doc(name)]
                patterns.append({"label": "TECH", "pattern": tokens, "id": name})
            else:
                patterns.append({"label": "TECH", "pattern": name, "id": name})
        patterns.extend(spec.get("patterns") or [])
        ruler.add_patterns(patterns)  # type: ignore[attr-defined]  # spaCy types add_pipe as a plain callable
        self.regexes: list[tuple[str, re.Pattern[str]]] = []
        for label, items in (spec.get("regex") or {}).items():
            for item in ([items] if isinstance(items, str) else items):
                try:
                    self.regexes.append((str(label), re.compile(item)))
                except re.error as exc:
                    raise ConfigError(f"entities.yaml regex for {label} is invalid ({exc}); fix the pattern") from None
        self.not_names = {str(w).lower() for w in spec.get("not_names") or []}
        self.first_names = {str(w).lower() for w in spec.get("first_names") or []}
        self.matcher = Matcher(self.nlp.vocab)
        self.matcher.add("CAPS", [[{"IS_TITLE": True}, {"IS_TITLE": True, "OP": "*"}],
                                  [{"TEXT": {"REGEX": r"^[A-Z][A-Za-z]*[A-Z][A-Za-z0-9]*$"}}]],
                         greedy="LONGEST")

    def extract(self, text: str) -> list[str]:
        """Entities in order of first appearance, de-duplicated case-insensitively."""
        cands: list[tuple[int, int, int, str]] = []  # (rank, start, end, text)
        for _label, rx in self.regexes:
            for m in rx.finditer(text):
                if m.group(0):
                    cands.append((_RANK["regex"], m.start(), m.end(), m.group(0)))
        doc = self.nlp(text)
        for ent in doc.ents:
            if ent.label_ == "TECH" or ent.ent_id_:
                cands.append((_RANK["ruler"], ent.start_char, ent.end_char, ent.ent_id_ or ent.text))
            elif ent.label_ not in _SKIP_NER:
                rank = _RANK["ner"] if self.has_ner else _RANK["ruler"]
                cands.append((rank, ent.start_char, ent.end_char, ent.text))
        cands.extend(self._names(doc))
        cands.sort(key=lambda c: (c[0], c[1], -(c[2] - c[1])))
        taken: list[tuple[int, int]] = []
        kept: list[tuple[int, str]] = []
        for _rank, start, end, value in cands:
            if any(start < e and s < end for s, e in taken):
                continue
            taken.append((start, end))
            kept.append((start, value))
        kept.sort()
        result, seen = [], set()
        for _start, value in kept:
            key = value.lower()
            if key not in seen:
                seen.add(key)
                result.append(value)
        return result[:MAX_ENTITIES]

    def _names(self, doc: Any) -> list[tuple[int, int, int, str]]:
        """Capitalised words and runs of them, with sentence openers judged separately."""
        caps_mid = {t.text for t in doc if t.is_title and not self._initial(doc, t.i)}
        found = []
        for _mid, start, end in self.matcher(doc):
            while start < end and doc[start].text.lower() in self.not_names:
                start += 1
            while end > start and doc[end - 1].text.lower() in self.not_names:
                end -= 1
            if start >= end:
                continue
            span = doc[start:end]
            if len(span) == 1:
                word = span.text
                if len(word) < 2 or word.isupper() and len(word) > 6:
                    continue
                if self._initial(doc, start) and word.lower() not in self.first_names and word not in caps_mid:
                    continue
            found.append((_RANK["name"], span.start_char, span.end_char, span.text))
        return found

    @staticmethod
    def _initial(doc: Any, i: int) -> bool:
        if i == 0:
            return True
        prev = doc[i - 1]
        if prev.text == ")" and i >= 2 and (doc[i - 2].like_num or len(doc[i - 2].text) == 1):
            return True  # "1) Run ..." list items
        return prev.text in _SENTENCE_END or prev.is_space or prev.text.endswith((".", "!", "?", "\n"))


class Enricher:
    """Entities + classification for one set of templates; cheap after the first call."""

    def __init__(self, entity_spec: dict[str, Any], rules: dict[str, Any], spacy_model: str = "") -> None:
        self._spec = entity_spec
        self._model = spacy_model
        self._extractor: EntityExtractor | None = None
        self._lock = threading.Lock()
        self.classifier = Classifier(rules)

    @property
    def extractor(self) -> EntityExtractor:
        if self._extractor is None:
            with self._lock:
                if self._extractor is None:
                    self._extractor = EntityExtractor(self._spec, self._model)
        return self._extractor

    def entities(self, text: str) -> list[str]:
        return self.extractor.extract(text)

    def enrich(self, text: str, *, entities: Sequence[str] | None = None, strength: float | None = None,
               memory_type: str | None = None) -> Enrichment:
        """Fill in whatever was not given; given values are kept as they are."""
        ents = list(entities) if entities is not None else self.entities(text)
        if strength is None:
            strength, _markers = self.classifier.strength_markers(text, len(ents))
        urgency = self.classifier.urgency_of(text)
        domain = self.classifier.domain_of(text)
        return Enrichment(
            entities=ents, strength=strength,
            memory_type=memory_type or self.classifier.memory_type(text),
            urgency=urgency, domain=domain, priority=self.classifier.priority(urgency, domain),
        )


# -- near-duplicates ------------------------------------------------------------------------

_WORD = re.compile(r"\w+")
_NUMBER = re.compile(r"\d+")


def words(text: str) -> list[str]:
    """Lower-cased word tokens: case, punctuation and spacing do not make content different."""
    return [w.lower() for w in _WORD.findall(text)]


def similarity(new: str, existing: str) -> float:
    """How near-identical two contents are, 0..1.

    difflib's ratio over the two word sequences (2 * matching words / total words), so
    re-wording, case and punctuation barely count while an added or changed word does.
    A word with a digit in the new content that the old one lacks means a changed fact
    ("3pm" vs "4pm", port 6380 vs 6379): similarity 0, whatever the other words say.
    """
    import difflib

    a, b = words(new), words(existing)
    if not a or not b:
        return 0.0
    if len(a) > 2 * len(b) or len(b) > 2 * len(a):
        return 0.0
    old_numbers = {w for w in b if _NUMBER.search(w)}
    if any(w not in old_numbers for w in a if _NUMBER.search(w)):
        return 0.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def duplicate_query(content: str, max_terms: int = 8) -> str:
    """A cheap candidate query: the content's longest distinct words, plain (OR-ed).

    A near-identical memory shares almost every word, so its rarest (longest) few are
    enough to bring it into the top hits; the caller searches the content field only.
    """
    from vaultmem.storage.fulltext.bm25 import (
        OPERATORS,  # "not", "or" are words here, not query syntax
    )

    distinct = sorted({w for w in words(content) if len(w) > 2 and w.upper() not in OPERATORS},
                      key=lambda w: (-len(w), w))
    return " ".join(distinct[:max_terms])


_ENRICHERS: dict[tuple[Any, ...], Enricher] = {}
_ENRICHERS_LOCK = threading.Lock()


def get_enricher(vault_templates: Path | None = None, spacy_model: str = "",
                 parsed_dir: Path | None = None) -> Enricher:
    """The process-wide enricher for these templates; rebuilt when a template file changes.
    `parsed_dir`: where the parsed templates are kept for the next process (load_yaml_template)."""
    paths = [template_path(n, vault_templates) for n in ("entities.yaml", "classify.yaml")]
    key = (spacy_model, *((str(p), p.stat().st_mtime_ns) for p in paths))
    enricher = _ENRICHERS.get(key)
    if enricher is None:
        with _ENRICHERS_LOCK:
            enricher = _ENRICHERS.get(key)
            if enricher is None:
                enricher = Enricher(load_yaml_template(paths[0], parsed_dir), load_yaml_template(paths[1], parsed_dir),
                                    spacy_model)
                _ENRICHERS[key] = enricher
    return enricher
