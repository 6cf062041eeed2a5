"""Layer 3, core: the memory model (types, validation), scoring and decay, enrichment,
the secret gate and `Memories` (save / modify / search). Imports storage and base."""
