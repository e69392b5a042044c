"""The live table: camera -> scanner -> game, and the tools that exercise it (doctor, soak, bench)."""
