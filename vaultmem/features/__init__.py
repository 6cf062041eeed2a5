"""Layer 4, features: lifecycle, graph, consolidation, activation, doctor, and the
Mnemosyne set (mnemosyne/). Each is typed against `core.port.MemoryCore`; never the front door."""
