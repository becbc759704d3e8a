"""ProPainter / E2FGVI's evaluation protocol (``devil evaluate --protocol propainter``,
``docs/propainter-protocol.md``):

- ``definition.py``: the protocol as the registry reads it (result keys, layout, metrics and their weights, parity
  modes, the papers' DAVIS / YouTube-VOS table drawn by :mod:`devil_dataset.eval.report.paper_table`);
- ``layout.py``: the DAVIS / YouTube-VOS test layout it reads (frames, masks, a method's outputs);
- ``kernels.py``: its arithmetic (PSNR / SSIM of their code, the hole dilation, E_warp);
- ``i3d.py``: its VFID features (the I3D of their code, batch-norm modes);
- ``run.py``: the evaluation run and its results document.
"""
