"""The full-text seam: everything vaultmem does with Whoosh, and the only package that imports it.

- `engine`: the index's folder and schema, opening and creating it, one commit of deleted
  and added documents (`update`), a rebuild's parts written in parallel and joined
  (`Part`, `assemble`), segment merges (`segments`, `merge_segments`), what counts as a
  damaged index (`is_corruption`).
- `search`: text and filters in, (path, relevance) out, best first (`TextSearch`).
- `bm25`: the plain-query BM25F over postings read through the reader's public interface.
- `analysis`: the search analyzer (also what consolidation and recall tokenize with).

Only what Whoosh 2.7 documents is used here, so any Whoosh 2.7-compatible release serves
(the tests run on whoosh3 and whoosh-reloaded: `make test-whoosh-reloaded`).
"""
