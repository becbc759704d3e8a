"""The evaluation protocols the package speaks, one folder each: ``devil/`` (the DEVIL benchmark's own),
``propainter/`` (ProPainter / E2FGVI's DAVIS and YouTube-VOS evaluation) and ``prove/`` (PROVE's reference-free
object-removal evaluation). What belongs to one protocol only lives in its folder; the math the protocols share stays
in :mod:`devil_dataset.eval.kernels`, the metric classes in :mod:`devil_dataset.eval.metrics`, the evaluation pass in
:mod:`devil_dataset.eval.scoring`.
"""
