"""Parameters of Gaussian-mixture classification trained by (persistent) SGD.

Mignacco, Krzakala, Urbani, Zdeborova (NeurIPS 2020); the notation follows the talk slides
that present the paper and the derivation in the book's appendix, "Appendix: the dynamical
mean-field equations of chapter 3" (``book/dmft_derivation.md``).
"""

from dataclasses import asdict, dataclass

import numpy as np

from .. import _validate

LOSSES = ("logistic", "square")
MODELS = ("two-cluster", "three-cluster", "teacher")


@dataclass(frozen=True)
class Params:
    """Data model, loss and algorithm (one frozen record, validated on construction).

    Data x_mu = c_mu v*/sqrt(d) + sqrt(Delta) z_mu, z_mu ~ N(0, I_d), |v*|^2 = d, with
    n = alpha d samples reused at every step.

    * ``two-cluster``: c = +1 with probability rho, -1 otherwise; label y = c;
      Phi(r) = r, prediction sign(r), r = w.x/sqrt(d).
    * ``three-cluster``: c = 0 with probability 1 - rho, +-1 with rho/2 each; label
      y = +1 for |c| = 1 and -1 for c = 0; Phi(r) = r^2 - L^2, i.e. prediction +1 iff
      |r| > L (the threshold of the talk's generalisation-error formula).
    * ``teacher``: c = 0, real label y = v*.x/sqrt(d), Phi(r) = r; only with the square
      loss (it has the exact random-matrix solution of :func:`tsdyn.dmft.exact_square_gd`).

    Loss Lambda(y, r) = ln(1 + exp(-y Phi(r))) (logistic) or (y - Phi(r))^2 / 2 (square),
    plus the ridge lam |w|^2 / 2.

    Algorithm and time unit (derivation eqs. E1, E3): one step is
    ``w <- w - eta [lam w + sum_mu s_mu dLambda/dr x_mu / sqrt(d)]`` (gradient *summed*
    over the mini-batch), and time is t = steps * eta. The batch indicators s_mu are
    independent two-state Markov chains, started from Bernoulli(b): a sample out of the
    batch enters it with probability eta/tau per step (rate 1/tau), one in the batch
    leaves it with probability (1 - b) eta / (b tau) (rate (1 - b)/(b tau)). Hence
    <s> = b, mean time out of the batch tau, mean time in b tau/(1 - b), and
    <s(t)s(t')> - b^2 = b(1 - b) exp(-|t - t'|/(b tau)). ``tau=None`` is plain SGD: a
    fresh Bernoulli(b) batch every step, which is the chain with tau = eta/b. ``b = 1``
    is full-batch gradient descent (gradient flow as eta -> 0).
    """

    alpha: float  # n/d, samples per dimension
    Delta: float  # variance of the noise around each cluster centre
    rho: float = 0.5  # two-cluster: P(c=+1); three-cluster: P(|c|=1)
    lam: float = 0.0  # ridge regularisation lambda
    b: float = 1.0  # mean fraction of samples in the mini-batch (b = 1: full batch)
    tau: float | None = None  # persistence time (mean time out of the batch); None: plain SGD
    eta: float = 0.1  # learning rate = time per step of the discrete algorithm
    loss: str = "logistic"  # "logistic" or "square"
    model: str = "two-cluster"  # "two-cluster", "three-cluster" or "teacher"
    L: float = 0.7  # three-cluster threshold on |w.x/sqrt(d)|
    R0: float = 0.01  # initial weight variance |w_perp(0)|^2/d (the talk's R)
    m0: float = 0.0  # initial magnetisation w(0).v*/d

    def __post_init__(self):
        _validate.real("alpha", self.alpha, low=0.0, low_open=True, doc="samples per dimension n/d")
        _validate.real("Delta", self.Delta, low=0.0, low_open=True, doc="cluster noise variance")
        _validate.real("rho", self.rho, low=0.0, high=1.0, low_open=True, high_open=True,
                       doc="cluster weight")
        _validate.real("lam", self.lam, low=0.0, doc="ridge regularisation")
        _validate.real("b", self.b, low=0.0, high=1.0, low_open=True, doc="mean batch fraction")
        _validate.real("eta", self.eta, low=0.0, low_open=True, doc="learning rate")
        if self.tau is not None:
            _validate.real("tau", self.tau, low=0.0, low_open=True, doc="persistence time")
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}; got {self.loss!r}")
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {MODELS}; got {self.model!r}")
        if self.model == "teacher" and self.loss != "square":
            raise ValueError(f"model 'teacher' has real labels and needs loss 'square'; "
                             f"got loss {self.loss!r}")
        _validate.real("L", self.L, low=0.0, low_open=True, doc="three-cluster threshold")
        _validate.real("R0", self.R0, low=0.0, doc="initial weight variance")
        _validate.real("m0", self.m0, doc="initial magnetisation")
        if self.model == "three-cluster" and self.m0 == 0.0 and self.R0 == 0.0:
            raise ValueError("R0 (initial weight variance) and m0 cannot both be 0 in the "
                             "three-cluster model: w = 0 is a fixed point of its dynamics")
        self.switch_probabilities(self.eta, name="eta")

    @property
    def tau_eff(self):
        """Persistence time of the chain: ``tau``, or eta/b for plain SGD."""
        return self.eta / self.b if self.tau is None else self.tau

    @property
    def time_in_batch(self):
        """Mean time a sample spends in the batch, b tau/(1 - b) (inf for b = 1).

        The talk calls *this* the persistence time; our ``tau`` (the published sampler's
        convention) is the mean time out of the batch. See :meth:`tau_for_time_in_batch`.
        """
        return np.inf if self.b == 1.0 else self.b * self.tau_eff / (1.0 - self.b)

    @staticmethod
    def tau_for_time_in_batch(time_in, b):
        """Our ``tau`` (mean time out of the batch) for a mean time ``time_in`` in it:
        tau = (1 - b) time_in / b (the talk's convention, e.g. its 1/tau = 0.6)."""
        _validate.real("time_in", time_in, low=0.0, low_open=True, doc="mean time in the batch")
        _validate.real("b", b, low=0.0, high=1.0, low_open=True, high_open=True,
                       doc="mean batch fraction (a persistent chain needs b < 1)")
        return (1.0 - b) * time_in / b

    @property
    def rates(self):
        """(enter, leave) rates of the continuous-time batch chain, per unit time."""
        return 1.0 / self.tau_eff, (1.0 - self.b) / (self.b * self.tau_eff)

    @property
    def correlation_time(self):
        """Decay time b tau of <s(t)s(t')> - b^2 (in the eta -> 0 limit)."""
        return self.b * self.tau_eff

    def switch_probabilities(self, dt, name="dt"):
        """(P(0->1), P(1->0)) per step of length ``dt``; both must be <= 1."""
        enter, leave = self.rates
        p01, p10 = enter * dt, leave * dt
        if self.b < 1.0 and (p01 > 1.0 + 1e-12 or p10 > 1.0 + 1e-12):
            bound = min(self.tau_eff, self.b * self.tau_eff / (1.0 - self.b))
            raise ValueError(
                f"{name} (time step) must be <= min(tau, b tau/(1-b)) = {bound:g} for the batch "
                f"chain to be a valid Markov chain (tau={self.tau_eff:g}, b={self.b:g}); got {dt!r}")
        return min(p01, 1.0), min(p10, 1.0)

    @property
    def sample_step(self):
        """b eta: how far one step advances the clock of sample visits b t (the step of the
        matched gradient descent, :func:`tsdyn.dmft.matched_step_gd`)."""
        return self.b * self.eta

    @property
    def temperature(self):
        """eta (1 - b): the strength of the batch noise per unit of the sample clock b t.

        Plain SGD with a Bernoulli(b) batch and the gradient summed over it (eq. E1) moves
        w per step by the drift -b eta grad and a noise of covariance eta^2 b (1 - b) G,
        G = sum_mu g_mu g_mu^T over the per-sample gradients; per unit of b t (b eta per
        step) that is the drift -grad and the covariance eta (1 - b) G. In terms of the
        sample-clock step h = b eta it reads h (1 - b)/b, the talk's eta (1 - b)/b with its
        eta the step of the batch-averaged gradient.
        """
        return self.eta * (1.0 - self.b)

    @staticmethod
    def eta_at_temperature(temperature, b):
        """The learning rate eta = T/(1 - b) of plain SGD at batch fraction ``b`` with
        temperature ``T`` = eta (1 - b) (:attr:`temperature`)."""
        _validate.real("temperature", temperature, low=0.0, low_open=True,
                       doc="batch-noise temperature eta (1 - b)")
        _validate.real("b", b, low=0.0, high=1.0, low_open=True, high_open=True,
                       doc="mean batch fraction (a temperature needs b < 1)")
        return temperature / (1.0 - b)

    @property
    def algorithm(self):
        """'gd' (b = 1), 'sgd' (tau None) or 'psgd'."""
        if self.b == 1.0:
            return "gd"
        return "sgd" if self.tau is None else "psgd"

    def attrs(self):
        """The parameters as flat, netCDF-safe attributes."""
        out = {k: ("None" if v is None else v) for k, v in asdict(self).items()}
        out["algorithm"] = self.algorithm
        return out


def check_params(params):
    """Raise a ``ValueError`` unless ``params`` is a :class:`Params`."""
    if not isinstance(params, Params):
        raise ValueError(f"params must be a dmft.Params; got {type(params).__name__}")
