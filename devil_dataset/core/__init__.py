"""The building blocks every stage shares; imports nothing of the package above ``core``.

Errors, atomic writes and the one file hash, the output-folder lock, progress and stage timing, the engines
(local, Ray), the slices table, cover-crop, the hole box, alignment, optical flow, the mask generator with its
presets, the mask store and statistics, the release's file formats, PNG encoding, video I/O, the dataset schema
shared by the writer and the reader, the network weights cache with the networks, and the one release-versus-
corrected switch (``parity``).
``tests/test_layers.py`` holds the import rules.
"""
from .cpu_pins import pin_environment

# Before anything of the package imports numpy or torch: their CPU-detecting libraries read these variables when they
# load or first run (core/cpu_pins.py); engine workers inherit them.
pin_environment()
