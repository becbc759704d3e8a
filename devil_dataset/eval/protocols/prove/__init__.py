"""PROVE's reference-free object-removal evaluation protocol (``devil evaluate --protocol prove``,
``docs/removal.md``):

- ``layout.py``: the layout it reads (frames, masks, a method's outputs);
- ``input_check.py``: every source decoded once before scoring, every bad file named in one error;
- ``mask_reading.py``: what the masks hold (0/255, 0/1, grey edges, lossy, soft; inverted), said in the results;
- ``kernels.py``: its arithmetic (RC-S, RC-T, the grey mask, the DINOv2 patch features);
- ``removal.py``: RC-S and RC-T as metric classes;
- ``run.py``: the evaluation run and its results document.
"""
