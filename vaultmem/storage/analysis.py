"""Text analysis for the search index: how notes and queries become terms.

Kept in its own module (it imports Whoosh) so `index.py` stays cheap to import. Every
choice here is measured by `bench/retrieval.py`; docs/retrieval.md has the numbers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from whoosh.analysis import (
    Filter,
    LowercaseFilter,
    RegexTokenizer,
    StemFilter,
    StopFilter,
)

# Function words that carry no topic: English stop words plus the question words and
# auxiliaries natural-language queries are full of ("what did she ...", "how many ...").
STOP_WORDS = frozenset("""
a about above after again against all also am an and any are aren't as at be because been before
being below between both but by can can't cannot could couldn't did didn't do does doesn't doing
don't down during each else ever few for from further get gets got had hadn't has hasn't have
haven't having he he'd he'll he's her here here's hers herself him himself his how how's however
i i'd i'll i'm i've if in into is isn't it it's its itself just let's like me more most much
mustn't my myself no nor not now of off on once only or other ought our ours ourselves out over
own really same shan't she she'd she'll she's should shouldn't so some such than that that's the
their theirs them themselves then there there's these they they'd they'll they're they've this
those through to too under until up upon us very was wasn't we we'd we'll we're we've were
weren't what what's when when's where where's whether which while who who's whom whose why why's
will with won't would wouldn't yet you you'd you'll you're you've your yours yourself yourselves
""".split())

STEMMING = True
STOPPING = True


class PossessiveFilter(Filter):
    """`Caroline's` -> `Caroline`, `James'` -> `James`; typographic apostrophes -> `'`."""

    def __call__(self, tokens: Iterator[Any]) -> Iterator[Any]:  # type: ignore[override]  # whoosh: tokens in, tokens out
        for t in tokens:
            text = t.text.replace("\u2019", "'")
            if text.endswith(("'s", "'S")):
                text = text[:-2]
            elif text.endswith("'"):
                text = text[:-1]
            t.text = text
            yield t


def analyzer(search: bool = True) -> Any:
    """The search analyzer; `search=False` is the original chain (Whoosh's short stop list,
    no possessive filter) that consolidation's similarity thresholds were tuned on."""
    if not search:
        return (RegexTokenizer(r"\w+(?:['\u2019]\w+)*") | LowercaseFilter() | StopFilter(minsize=1)
                | StemFilter(cachesize=50000))
    chain = RegexTokenizer(r"\w+(?:['\u2019]\w+)*") | PossessiveFilter() | LowercaseFilter()
    if STOPPING:
        chain = chain | StopFilter(stoplist=STOP_WORDS, minsize=1)
    if STEMMING:
        chain = chain | StemFilter(cachesize=50000)
    return chain
