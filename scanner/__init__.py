"""dicetray's scanner: camera frames in, settled dice readings out (see issue: Scanner I)."""
