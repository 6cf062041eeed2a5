"""Layer 1, base: errors, time and settings. Imports nothing of vaultmem above it."""
