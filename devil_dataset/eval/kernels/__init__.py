"""Stateless math of the metrics, numpy and torch: functions of arrays that keep nothing between calls.

Nothing here imports a metric class, the engine or the report (the torchmetrics rule: the math never imports the
class that keeps state). One concern per module: the composite, pixel metrics (numpy, torch), SSIM's exact window
sums, the warp error (numpy, torch), Frechet distances and exact feature statistics, re-inpainting masks, the
EditBoard fidelity math.
"""
