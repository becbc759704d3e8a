"""The building blocks every stage shares; imports nothing of the package above ``core``.

Errors, atomic writes and the one file hash, the output-folder lock, progress and stage timing, the engines
(local, Ray), the slices table, cover-crop, the hole box, alignment, optical flow, the mask generator with its
presets, the mask store and statistics, the release's file formats, PNG encoding, video I/O, the dataset schema
shared by the writer and the reader, the network weights cache with the networks, the CPU pins (``cpu_pins``: they
apply where the package computes a published number, never at import) and the one release-versus-corrected switch
(``parity``).
``tests/test_layers.py`` holds the import rules.
"""
