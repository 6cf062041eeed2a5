"""Layer 4, features: lifecycle, graph, consolidation, activation, doctor, and the
Mnemosyne set (mnemosyne/). Each takes the core `Memories`; never the front door."""
