"""The classical fourth-order Runge–Kutta method as a diffrax solver (diffrax ships none)."""

from __future__ import annotations

from typing import ClassVar

import diffrax
import numpy as np

__all__ = ["RK4"]


class RK4(diffrax.AbstractERK):
    r"""The classical Runge–Kutta method (Kutta 1901; Hairer, Nørsett & Wanner, *Solving ODEs I*,
    Table II.1.2): four evaluations of the right-hand side per step against Tsit5's six, order
    4, no error estimate (fixed steps only: ``diffrax.ConstantStepSize``). For
    :func:`~simplexlab.theory.linear_noise` at a fixed step, where the right-hand side (the
    field, its Jacobian on the covariance's columns and the step's covariance) is the cost."""

    tableau: ClassVar[diffrax.ButcherTableau] = diffrax.ButcherTableau(
        c=np.array([0.5, 0.5, 1.0]),
        b_sol=np.array([1 / 6, 1 / 3, 1 / 3, 1 / 6]),
        b_error=np.zeros(4),
        a_lower=(np.array([0.5]), np.array([0.0, 0.5]), np.array([0.0, 0.0, 1.0])),
    )
    interpolation_cls: ClassVar = diffrax.ThirdOrderHermitePolynomialInterpolation.from_k

    def order(self, terms):
        return 4
