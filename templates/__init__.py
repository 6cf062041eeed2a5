"""Files a person copies or edits: the memory note template, the enrichment rule files
(YAML), service units for the watcher. memory.md and the YAML files are read at run time,
so this folder ships in the wheel as `vaultmem.templates`; a vault overrides any of them
with a copy in `<vault>/.vaultmem/templates/`."""
