"""dicetray's calibration: learns the look of the user's dice, lights and tray."""
