"""PROVE's reference-free object-removal evaluation protocol (``devil evaluate --protocol prove``,
``docs/removal.md``):

- ``layout.py``: the layout it reads (frames, masks, a method's outputs; the input checks);
- ``kernels.py``: its arithmetic (RC-S, RC-T, the grey mask, the DINOv2 patch features);
- ``removal.py``: RC-S and RC-T as metric classes;
- ``run.py``: the evaluation run and its results document.
"""
