"""Parameters of the sparse teacher-student models (Marino & Ricci-Tersenghi, sec. 3.2)."""

from dataclasses import dataclass

from .. import _validate

MODELS = ("two_matrix", "one_matrix")
REDUCTIONS = ("sum", "mean")


@dataclass(frozen=True)
class Params:
    """A sparse +-1 teacher and a student that infers it by the greedy rule.

    ``model="two_matrix"`` (scenarios ST-SS-2M-OC and, with ``d_s > d``, ST-SS-2M-MC,
    eqs. 1, 3, 6): y = psi(W_out* phi(W_in* x)) with phi = psi = LeakyReLU of slope
    ``a``, N inputs, N hidden units and N outputs; W_in*, W_out* are N x N with
    exactly d non-zero entries +-1 in every row and column. The student has the same
    form on a support with ``d_s`` non-zeros per row and column that contains the
    teacher's; weights +-1 when d_s = d, {-1, 0, +1} when d_s > d.

    ``model="one_matrix"`` (ST-SS-1M-OC, eqs. 7-8): y = (1/N) sum_r phi((W*^T x)_r / sqrt d)
    with phi(t) = erf(t / sqrt 2); the student knows the support and infers the signs.

    Inputs x ~ N(0, I_N). Each Monte Carlo sweep uses one fresh mini-batch of ``m``
    samples; the validation set (``n_val`` samples) is drawn once per run.
    """

    N: int  # inputs = hidden units (= outputs for two_matrix)
    d: int  # non-zeros per row and column of the teacher's matrices (d_t)
    m: int  # mini-batch size: samples per Monte Carlo sweep
    model: str = "two_matrix"  # "two_matrix" (LeakyReLU, N outputs) or "one_matrix" (erf, mean output)
    d_s: int | None = None  # student's non-zeros per row and column (None: d); > d is the mismatched case
    a: float = 0.1  # slope of LeakyReLU for negative arguments (eq. 6)
    n_val: int | None = None  # validation samples (None: 30 for two_matrix, 1024 for one_matrix)

    def __post_init__(self):
        _validate.integer("N", self.N, low=1, doc="inputs = hidden units")
        _validate.integer("d", self.d, low=1, doc="teacher non-zeros per row and column")
        if self.d > self.N:
            raise ValueError(f"d (teacher non-zeros per row and column) must be <= N = {self.N}; "
                             f"got {self.d}")
        _validate.integer("m", self.m, low=1, doc="mini-batch size")
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {MODELS}; got {self.model!r}")
        if self.d_s is not None:
            _validate.integer("d_s", self.d_s, low=1, doc="student non-zeros per row and column")
            if not self.d <= self.d_s <= self.N:
                raise ValueError(f"d_s (student non-zeros per row and column) must be in "
                                 f"[d, N] = [{self.d}, {self.N}]; got {self.d_s}")
            if self.model == "one_matrix" and self.d_s != self.d:
                raise ValueError(f"d_s (student non-zeros per row and column) must equal d = "
                                 f"{self.d} for model 'one_matrix'; got {self.d_s}")
        _validate.real("a", self.a, low=0.0, high=1.0, doc="LeakyReLU slope")
        if self.n_val is not None:
            _validate.integer("n_val", self.n_val, low=1, doc="validation samples")

    @property
    def student_d(self):
        """Student's non-zeros per row and column (``d_s``, defaulting to ``d``)."""
        return self.d if self.d_s is None else self.d_s

    @property
    def mismatched(self):
        """True when the student's support is larger than the teacher's (weights in {-1, 0, 1})."""
        return self.student_d > self.d

    @property
    def validation_size(self):
        """Validation samples: ``n_val``, or the paper's 30 (two_matrix) / 1024 (one_matrix)."""
        if self.n_val is not None:
            return self.n_val
        return 30 if self.model == "two_matrix" else 1024

    @property
    def n_weights(self):
        """Student weights updated by the greedy rule (one sweep attempts this many moves)."""
        return (2 if self.model == "two_matrix" else 1) * self.N * self.student_d

    @property
    def n_teacher_weights(self):
        """Non-zero weights of the teacher (the normalisation of the validation loss)."""
        return (2 if self.model == "two_matrix" else 1) * self.N * self.d

    def attrs(self):
        """The parameters as flat, netCDF-safe attributes."""
        return _validate.flat_attrs(self)


@dataclass(frozen=True)
class SGDParams:
    """A sparse erf teacher (eq. 7) and a dense real-valued student trained by SGD (eq. 5).

    Scenario ST-DS-1M-MC (sec. 4.4): the student has the teacher's functional form,
    y_hat = (1/N) sum_r phi((W^T x)_r / sqrt d), phi(t) = erf(t / sqrt 2), with the
    teacher's d in the normalisation, but a dense real N x N matrix W, initialised
    uniformly in [w_init_low, w_init_high] ([0, 1] in the paper). Each step draws
    m fresh samples and moves W <- W - lr grad L, with L the loss of eq. (2) summed
    over the mini-batch (``reduction="sum"``, as written in eq. 2) or averaged.
    ``d_s`` is the d of the student's 1/sqrt(d) (eq. 8): None keeps the teacher's d;
    the caption of the paper's Fig. 8 gives the dense student d_s = N.
    """

    N: int  # inputs = hidden units
    d: int  # teacher non-zeros per row and column
    m: int  # mini-batch size
    lr: float  # learning rate lambda
    reduction: str = "sum"  # mini-batch loss: "sum" (eq. 2) or "mean" over the m samples
    d_s: int | None = None  # d in the student's 1/sqrt(d) (None: the teacher's d)
    w_init_low: float = 0.0  # student weights start uniform in [w_init_low, w_init_high]
    w_init_high: float = 1.0
    n_val: int = 1024  # validation samples

    def __post_init__(self):
        _validate.integer("N", self.N, low=1, doc="inputs = hidden units")
        _validate.integer("d", self.d, low=1, doc="teacher non-zeros per row and column")
        if self.d > self.N:
            raise ValueError(f"d (teacher non-zeros per row and column) must be <= N = {self.N}; "
                             f"got {self.d}")
        _validate.integer("m", self.m, low=1, doc="mini-batch size")
        _validate.real("lr", self.lr, low=0.0, low_open=True, doc="learning rate")
        if self.reduction not in REDUCTIONS:
            raise ValueError(f"reduction must be one of {REDUCTIONS}; got {self.reduction!r}")
        if self.d_s is not None:
            _validate.integer("d_s", self.d_s, low=1, doc="d in the student's 1/sqrt(d)")
            if self.d_s > self.N:
                raise ValueError(f"d_s (d in the student's 1/sqrt(d)) must be <= N = {self.N}; "
                                 f"got {self.d_s}")
        _validate.real("w_init_low", self.w_init_low, doc="lower end of the initial weights")
        _validate.real("w_init_high", self.w_init_high, low=self.w_init_low,
                       doc="upper end of the initial weights")
        _validate.integer("n_val", self.n_val, low=1, doc="validation samples")

    @property
    def student_scale(self):
        """The student's 1/sqrt(d_s) (the teacher's 1/sqrt(d) when d_s is None)."""
        return 1.0 / float(self.d if self.d_s is None else self.d_s) ** 0.5

    def attrs(self):
        """The parameters as flat, netCDF-safe attributes."""
        return _validate.flat_attrs(self)
