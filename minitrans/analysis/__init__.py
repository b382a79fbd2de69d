"""The notes' claims measured on attention itself, and its pictures: heatmaps with the tokens on
the axes (and fonts for any script), which heads align words (AER against gold), which heads
matter (ablation), what each head does (roles), entropy and largest weight per layer, the order
probe, and √d_k at initialisation.

May import ``core``, ``data``, ``models``, ``inference`` and ``export``; imported by ``runs``
(TensorBoard shows these measures), ``serve`` and ``cli``.
"""
