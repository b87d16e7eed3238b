"""The maths layer: everything the papers state as an equation, and nothing else.

Mean-field (p, y, z) fields and their closed forms, the diffrax solver, bonus-to-drift geometry,
fixed points, sampling theory and the sharpening-collapse theorems. It imports no other layer.
Its public names are served by :mod:`simplexlab.meanfield`, :mod:`simplexlab.geometry` and
:mod:`simplexlab.sampling`; the modules here are private.
"""
