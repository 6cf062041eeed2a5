"""Layer 2, storage: the note codec, the vault's files (atomic writes, moves, lock, scan),
wikilinks, the Whoosh index and catalog, BM25, vectors. Imports base only."""
