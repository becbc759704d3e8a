"""PROVE's reference-free object-removal evaluation protocol (``devil evaluate --protocol prove``,
``docs/removal.md``):

- ``definition.py``: the protocol as the registry reads it (result keys, layout, metrics and what RC-S / RC-T need,
  parity modes, the removal table drawn by :mod:`devil_dataset.eval.report.paper_table`);
- ``layout.py``: the layout it reads (frames, masks, a method's outputs);
- ``input_check.py``: every source decoded once before scoring, every bad file named in one error;
- ``mask_reading.py``: what the masks hold (0/255, 0/1, palette, grey edges, lossy, soft; inverted), said in the
  results;
- ``kernels.py``: its arithmetic (RC-S, RC-T, the grey mask, the crops and windows);
- ``removal.py``: RC-S and RC-T as metric classes, and the one DINOv2 per process and device;
- ``run.py``: the evaluation run and its results document.
"""
