#!/usr/bin/env python3
"""Golden PLD values in the low-noise regime, from Google's dp_accounting.

Each case is DP-SGD's event: `steps` compositions of the Poisson-subsampled Gaussian mechanism
(rate q, noise multiplier sigma), add/remove-one relation, as
  SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(sigma)), steps)
and dp_accounting's composed PLD is `PLDAccountant(value_discretization_interval=h)`
(connect-the-dots, pessimistic: an upper bound, accurate to the grid). Two fields:

- `eps_pld_dp_accounting`: the library's `get_epsilon(delta)`. Above ~745 nats its inversion
  (pld_pmf._get_epsilon_for_delta) underflows exp(-loss) to 0 and returns the grid loss at which
  the mass above reaches delta: pessimistic by up to ~1 nat (the regression case: 6356.58).
- `eps_pld_dp_accounting_inverted`: the smallest epsilon with `get_delta(epsilon) <= delta` on the
  same composed PLD (get_delta is exact: expm1(epsilon - loss)), by bisection to 1e-12 relative.
  This is the value an exact inversion of dp_accounting's PLD gives; tests compare to it.

At sigma <= 0.05 one step's loss spans thousands of nats, so the default h = 1e-4 needs 10^7-10^8
grid points (minutes to hours in numpy); those cases use h = 1e-2, sigma = 0.1 uses 1e-3 (the
connect-the-dots error is second order in h). The RDP epsilon of dp_accounting's RdpAccountant
is kept for information.

Run:  python3 -m venv /work/venvs/dpacc && /work/venvs/dpacc/bin/pip install dp-accounting
      /work/venvs/dpacc/bin/python scripts/golden_low_sigma.py > tests/golden/pld_low_sigma.json
"""
import importlib.metadata
import json
import platform
import sys
import time

import dp_accounting
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant

# (q, sigma, steps, delta): sigma 0.02-0.3, a few steps, large q; the first is the regression case.
CASES = [
    (0.126, 0.02, 7, 1e-4),
    (0.126, 0.05, 7, 1e-4),
    (0.126, 0.1, 7, 1e-4),
    (0.126, 0.2, 7, 1e-4),
    (0.126, 0.3, 7, 1e-4),
    (0.5, 0.05, 3, 1e-5),
    (0.5, 0.1, 1, 1e-5),
    (0.5, 0.3, 10, 1e-5),
    (0.25, 0.2, 20, 1e-5),
    (0.05, 0.3, 100, 1e-5),
]


def interval(sigma):
    return 1e-2 if sigma <= 0.05 else 1e-3 if sigma <= 0.1 else 1e-4


def inverted_epsilon(accountant, delta, upper):
    """Smallest epsilon in [0, upper] with accountant.get_delta(epsilon) <= delta (bisection)."""
    if accountant.get_delta(0.0) <= delta:
        return 0.0
    lo, hi = 0.0, upper
    while hi - lo > 1e-12 * hi:
        mid = 0.5 * (lo + hi)
        if accountant.get_delta(mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def event(q, sigma, steps):
    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps)


def main():
    cases = []
    for q, sigma, steps, delta in CASES:
        h = interval(sigma)
        t = time.time()
        pld = pld_privacy_accountant.PLDAccountant(value_discretization_interval=h)
        pld.compose(event(q, sigma, steps))
        eps_pld = pld.get_epsilon(delta)
        seconds = time.time() - t
        eps_inv = inverted_epsilon(pld, delta, eps_pld)
        rdp = rdp_privacy_accountant.RdpAccountant()
        rdp.compose(event(q, sigma, steps))
        cases.append({
            "id": f"dpsgd_low_sigma_q{q}_s{sigma}_T{steps}_d{delta:g}",
            "params": {"q": q, "sigma": sigma, "steps": steps, "delta": delta,
                       "value_discretization_interval": h},
            "expected": {"eps_pld_dp_accounting_inverted": eps_inv},
            "library": {"eps_pld_dp_accounting": eps_pld},
            "info": {"eps_rdp_dp_accounting": rdp.get_epsilon(delta),
                     "seconds_dp_accounting": round(seconds, 1)},
            "tolerance_rel": 1e-3,
        })
        print(f"{cases[-1]['id']}: {eps_inv} (library {eps_pld}, {seconds:.1f} s)", file=sys.stderr, flush=True)
    out = {
        "schema_version": 1,
        "generated_with": {"python": platform.python_version(),
                           "dp-accounting": importlib.metadata.version("dp-accounting"),
                           "numpy": importlib.metadata.version("numpy"),
                           "scipy": importlib.metadata.version("scipy")},
        "reference": "dp_accounting.pld.PLDAccountant(value_discretization_interval=h) on "
                     "SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(sigma)), steps)",
        "cases": cases,
    }
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
