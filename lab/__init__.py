"""Code that trains, renders, labels and evaluates the scanner: never imported by the runtime.

The Pi runs `scanner/`, `scorekeeper/` and `calibration/`; everything here exists to make or judge
what they ship (training data, real-photo labels, the unseen-look benchmark).
"""
