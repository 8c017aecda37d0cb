#!/usr/bin/env python3
"""Golden one-sided Clopper-Pearson bounds and the bounds built on them, at 50 digits (mpmath).

Clopper-Pearson lower bound of k successes in n trials at significance alpha: the p with
P[Bin(n, p) >= k] = alpha (0 for k = 0); upper bound: the p with P[Bin(n, p) <= k] = alpha
(1 for k = n), computed as 1 - lower(n - k) by the symmetry Bin(n, p) = n - Bin(n, 1 - p).
The tail is summed exactly term by term from the first term outwards (mass from log-gamma at
60 digits), the root is bracketed (the median of Bin(n, k/n) is k, and C(n, k) p^k <= (e n p / k)^k
bounds the tail from above), narrowed by bisection in ln p and finished with mpmath's bracketed
Illinois solver. Small cases are cross-checked against mpmath's own regularised incomplete beta.

Grid: k in {0, 1, 2, 3, 10, n/2, n-1, n} x n in {10, 1e3, 1e5, 1e7, 1e9} x alpha in
{0.05, 0.025, 1e-6, 1e-12} x {lower, upper}.

`references` recomputes at n = 1e7 what an auditing library in the style of jax_privacy's
auditing.py reports from counts: the Clopper-Pearson epsilon ln((tpr_lo - delta) / fpr_hi), the
GDP epsilon of mu = Phi^-1(1 - fpr_hi) - Phi^-1(fnr_hi), and the one-run audit's p-value
(Steinke, Nasr & Jagielski 2023, Theorem 3), all without scipy.

Run (the torch venv has mpmath, a dependency of sympy; takes minutes at n = 1e9):
  ~/.cache/gnnaudit/torch-2.13.0/bin/python scripts/golden_clopper_pearson.py \
      > attacks/tests/golden/clopper_pearson.json
"""
import json
import sys

import mpmath as mp

mp.mp.dps = 60


def ln_mass(k, n, p):
    q = 1 - p
    return (mp.loggamma(n + 1) - mp.loggamma(k + 1) - mp.loggamma(n - k + 1)
            + (k * mp.log(p) if k else 0) + ((n - k) * mp.log(q) if n - k else 0))


def sum_outwards(first, n, p, step):
    """Sum of the masses from `first` (included) in direction `step`, relative to the first."""
    q = 1 - p
    term, total, j = mp.mpf(1), mp.mpf(1), first
    stop = mp.mpf(10) ** (-mp.mp.dps)
    while 0 <= j + step <= n:
        if step > 0:
            term *= mp.mpf(n - j) / (j + 1) * p / q
        else:
            term *= mp.mpf(j) / (n - j + 1) * q / p
        j += step
        total += term
        if term < stop * total:
            break
    return total


def tail_by_integral(k, n, p):
    """P[Bin(n, p) >= k] = I_p(k, n-k+1) by tanh-sinh quadrature of the beta density over the
    side of p away from the mode, within 80 standard deviations (the rest is below 1e-1000)."""
    a, b = k, n - k + 1
    ln_b = mp.loggamma(a) + mp.loggamma(b) - mp.loggamma(a + b)
    density = lambda t: mp.exp((a - 1) * mp.log(t) + (b - 1) * mp.log1p(-t) - ln_b)
    width = 80 * mp.sqrt(mp.mpf(a) * b / (a + b) ** 3)
    mode = mp.mpf(a - 1) / (a + b - 2)
    if p <= mode:
        return mp.quad(density, mp.linspace(max(p - width, 0), p, 9))
    return 1 - mp.quad(density, mp.linspace(p, min(p + width, 1), 9))


def tail_at_least(k, n, p):
    """P[Bin(n, p) >= k], summed on the side away from the mean (an integral for large counts)."""
    if k == 0:
        return mp.mpf(1)
    if min(k, n - k) > 20_000:
        return tail_by_integral(k, n, p)
    if k > n * p:
        return mp.exp(ln_mass(k, n, p)) * sum_outwards(k, n, p, +1)
    return 1 - mp.exp(ln_mass(k - 1, n, p)) * sum_outwards(k - 1, n, p, -1)


def cp_lower(k, n, alpha):
    if k == 0:
        return mp.mpf(0)
    alpha = mp.mpf(alpha)
    if k == n:
        return alpha ** (mp.mpf(1) / n)
    f = lambda t: mp.log(tail_at_least(k, n, mp.exp(t))) - mp.log(alpha)
    lo = mp.log(alpha) / k - mp.log(mp.mpf(n) / k) - 1
    hi = mp.log(mp.mpf(k) / n)
    assert f(lo) < 0 < f(hi), (k, n, alpha)
    # Narrow the bracket around Wilson's score bound (each tail costs ~sqrt(n) terms), else bisect.
    z = -phi_inv(alpha)
    centre, spread = k - mp.mpf(0.5) + z * z / 2, z * mp.sqrt((k - 0.5) * (n - k + 0.5) / n + z * z / 4)
    wilson = (centre - spread) / (n + z * z)
    if wilson > 0 and lo < mp.log(wilson) < hi:
        t, step = mp.log(wilson), mp.mpf(10) ** -4
        below = f(t) < 0
        while True:
            nxt = t + step if below else t - step
            if not lo < nxt < hi:
                break
            if (f(nxt) < 0) != below:
                lo, hi = (t, nxt) if below else (nxt, t)
                break
            t, step = nxt, step * 4
    while hi - lo > mp.mpf(10) ** -3 * abs(hi):
        mid = (lo + hi) / 2
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid
    t = mp.findroot(f, (lo, hi), solver="illinois", tol=mp.mpf(10) ** (-50), maxsteps=200)
    return mp.exp(t)


def cp_upper(k, n, alpha):
    return 1 - cp_lower(n - k, n, alpha)


def grid():
    cases = []
    for n in [10, 10**3, 10**5, 10**7, 10**9]:
        ks = sorted({k for k in [0, 1, 2, 3, 10, n // 2, n - 1, n] if 0 <= k <= n})
        for k in ks:
            for alpha in [0.05, 0.025, 1e-6, 1e-12]:
                lower = cp_lower(k, n, alpha)
                upper = cp_upper(k, n, alpha)
                if n <= 1000 and 0 < k < n:
                    # mpmath's incomplete beta: I_p(k, n-k+1) = P[Bin(n, p) >= k].
                    check = mp.betainc(k, n - k + 1, 0, lower, regularized=True)
                    assert abs(check / alpha - 1) < mp.mpf(10) ** -30, (k, n, alpha, check)
                cases.append({"k": k, "n": n, "alpha": alpha,
                              "lower": mp.nstr(lower, 30), "upper": mp.nstr(upper, 30)})
                print(f"n={n} k={k} alpha={alpha}", file=sys.stderr)
    return cases


def phi(x):
    return mp.ncdf(x)


def phi_inv(y):
    return mp.sqrt(2) * mp.erfinv(2 * mp.mpf(y) - 1)


def gdp_delta(mu, eps):
    return phi(-eps / mu + mu / 2) - mp.exp(eps) * phi(-eps / mu - mu / 2)


def gdp_epsilon(mu, delta):
    if gdp_delta(mu, 0) <= delta:
        return mp.mpf(0)
    hi = mp.mpf(1)
    while gdp_delta(mu, hi) > delta:
        hi *= 2
    return mp.findroot(lambda e: gdp_delta(mu, e) - delta, (hi / 2 if hi > 1 else mp.mpf(0), hi),
                       solver="illinois", tol=mp.mpf(10) ** (-50))


def one_run_p_value(m, r, v, eps, delta):
    """Theorem 3's right-hand side, the window maximum taken over every i (no shortcut)."""
    q = 1 / (1 + mp.exp(-mp.mpf(eps)))
    tail = tail_at_least(v, r, q)
    first = mp.exp(ln_mass(v - 1, r, q))
    # Masses below v relative to P[X = v-1]: walk down all the way (slow, but exact).
    term, window, best = mp.mpf(1), mp.mpf(0), mp.mpf(0)
    for i in range(1, v + 1):
        window += term
        best = max(best, window / i)
        j = v - i
        if j == 0:
            break
        term *= mp.mpf(j) / (r - j + 1) * (1 - q) / q
        if term < mp.mpf(10) ** -80 * window:  # nothing further can reach the best mean
            break
    return min(tail + 2 * m * mp.mpf(delta) * first * best, mp.mpf(1))


def references():
    n = 10**7
    delta = 1e-5
    out = {"n": n, "delta": delta, "clopper_pearson": [], "gdp": [], "one_run": []}
    # (true positives, false positives) of n positives and n negatives, level 0.05 split in two.
    for tp, fp in [(5_500_000, 4_500_000), (1234, 70), (9_999_000, 3), (5_003_000, 5_000_000)]:
        level = mp.mpf(0.05)
        tpr_lo = cp_lower(tp, n, level / 2)
        fpr_hi = cp_upper(fp, n, level / 2)
        eps = mp.log((tpr_lo - delta) / fpr_hi) if tpr_lo > delta else mp.mpf(0)
        out["clopper_pearson"].append({"tp": tp, "fp": fp, "level": 0.05, "tpr_lo": mp.nstr(tpr_lo, 30),
                                       "fpr_hi": mp.nstr(fpr_hi, 30), "eps": mp.nstr(max(eps, 0), 30)})
        fnr_hi = cp_upper(n - tp, n, level / 2)
        mu = phi_inv(1 - fpr_hi) - phi_inv(fnr_hi)
        out["gdp"].append({"tp": tp, "fp": fp, "level": 0.05, "fnr_hi": mp.nstr(fnr_hi, 30),
                           "mu": mp.nstr(mu, 30), "eps": mp.nstr(gdp_epsilon(mu, delta) if mu > 0 else 0, 30)})
        print(f"reference tp={tp} fp={fp}", file=sys.stderr)
    for m, r, v, eps, d in [(2 * n, n, 5_010_000, 0.0, 0.0), (2 * n, n, 5_010_000, 0.004, 1e-6),
                            (2 * n, n, 5_010_000, 0.003, 1e-9), (n, n // 10, 600_000, 0.3, 1e-5)]:
        out["one_run"].append({"canaries": m, "guesses": r, "correct": v, "eps": eps, "delta": d,
                               "p_value": mp.nstr(one_run_p_value(m, r, v, eps, d), 30)})
        print(f"one-run r={r} v={v} eps={eps}", file=sys.stderr)
    return out


if __name__ == "__main__":
    doc = {
        "generator": "scripts/golden_clopper_pearson.py",
        "mpmath": mp.__version__,
        "digits": 50,
        "cases": grid(),
        "references": references(),
    }
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")
