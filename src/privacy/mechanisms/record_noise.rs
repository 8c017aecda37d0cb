//! Additive-noise LDP randomisers for a whole feature record x in [a, b]^d, the baselines of
//! LPGNN's Table 3.2 (thesis ch.3, Section 3.6.2):
//!
//! * Laplace (LP): y = x + Lap(d (b - a) / eps) per coordinate. The L1 sensitivity of the record
//!   is d (b - a) (every coordinate may change), so the release is pure eps-LDP.
//! * Analytic Gaussian (AG, Balle & Wang 2018): y = x + N(0, (s sqrt(d) (b - a))^2) per
//!   coordinate, the L2 sensitivity sqrt(d) (b - a), and s the smallest noise multiplier whose
//!   exact Gaussian curve gives (eps, delta) (`accountant::analytic`). The thesis uses
//!   delta = 1e-10 (printed "1^{-10}").
//!
//! The server uses y directly (both are unbiased). Values outside [a, b] are clipped first and
//! counted, so that the sensitivity holds.
use crate::error::{Error, Result};
use crate::privacy::accountant::analytic::gaussian_sigma;
use crate::privacy::accountant::Event;
use tch::{Kind, Tensor};

/// The delta of Table 3.2's analytic Gaussian row.
pub const AG_DELTA: f64 = 1e-10;

/// Which additive noise the record gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RecordNoise {
    /// Laplace of scale d (b - a) / eps per coordinate.
    Laplace,
    /// Analytic Gaussian at this delta.
    AnalyticGaussian { delta: f64 },
}

/// A calibrated record randomiser on [low, high]^dims.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecordMechanism {
    pub noise: RecordNoise,
    pub epsilon: f64,
    pub dims: usize,
    pub low: f64,
    pub high: f64,
    /// Laplace: the scale per coordinate; Gaussian: the standard deviation per coordinate.
    pub scale: f64,
    /// Gaussian: the noise multiplier s = std / L2 sensitivity (None for Laplace).
    pub noise_multiplier: Option<f64>,
}

impl RecordMechanism {
    pub fn new(noise: RecordNoise, epsilon: f64, dims: usize, low: f64, high: f64) -> Result<Self> {
        if !(epsilon > 0.0 && epsilon.is_finite()) {
            return Err(Error::invalid("epsilon_x", format!("must be finite and > 0, got {epsilon}")));
        }
        if dims == 0 {
            return Err(Error::invalid("features", "the record mechanism needs at least one feature"));
        }
        if !(low.is_finite() && high.is_finite() && low < high) {
            return Err(Error::invalid("range", format!("need finite a < b, got [{low}, {high}]")));
        }
        let span = high - low;
        let (scale, noise_multiplier) = match noise {
            RecordNoise::Laplace => (dims as f64 * span / epsilon, None),
            RecordNoise::AnalyticGaussian { delta } => {
                if !(delta > 0.0 && delta < 1.0) {
                    return Err(Error::invalid("delta", format!("must be in (0, 1), got {delta}")));
                }
                let s = gaussian_sigma(epsilon, delta)?;
                (s * (dims as f64).sqrt() * span, Some(s))
            }
        };
        Ok(RecordMechanism { noise, epsilon, dims, low, high, scale, noise_multiplier })
    }

    /// The accountant's event of one record release: PureDp{eps} (Laplace) or the Gaussian
    /// with the calibrated multiplier (its epsilon at delta is the exact curve's).
    pub fn event(&self) -> Event {
        match (self.noise, self.noise_multiplier) {
            (RecordNoise::AnalyticGaussian { .. }, Some(s)) => Event::gaussian(s),
            _ => Event::PureDp { epsilon: self.epsilon },
        }
    }

    /// The delta the release is priced at (0 for Laplace).
    pub fn delta(&self) -> f64 {
        match self.noise {
            RecordNoise::Laplace => 0.0,
            RecordNoise::AnalyticGaussian { delta } => delta,
        }
    }

    /// Per-coordinate variance of y (2 b^2 for Laplace, sigma^2 for Gaussian).
    pub fn variance(&self) -> f64 {
        match self.noise {
            RecordNoise::Laplace => 2.0 * self.scale * self.scale,
            RecordNoise::AnalyticGaussian { .. } => self.scale * self.scale,
        }
    }

    pub fn describe(&self) -> String {
        match self.noise {
            RecordNoise::Laplace => format!(
                "Laplace record noise, scale d(b-a)/eps_x = {:.4} per coordinate (L1 sensitivity {}), eps_x-LDP",
                self.scale, self.dims
            ),
            RecordNoise::AnalyticGaussian { delta } => format!(
                "analytic Gaussian record noise (Balle & Wang 2018), std {:.4} = s sqrt(d)(b-a), s = {:.4}, \
                 (eps_x, {delta:e})-LDP",
                self.scale,
                self.noise_multiplier.unwrap_or(f64::NAN)
            ),
        }
    }

    /// Randomises every row of x [N, d] (torch's seeded generator). Returns y and the number of
    /// entries outside [a, b] that were clipped first.
    pub fn perturb(&self, x: &Tensor) -> Result<(Tensor, usize)> {
        let size = x.size();
        if size.len() != 2 || size[1] as usize != self.dims {
            return Err(Error::invalid("features", format!("expected [N, {}], got {size:?}", self.dims)));
        }
        let x = x.to_kind(Kind::Float);
        let outside = (x.lt(self.low).logical_or(&x.gt(self.high))).sum(Kind::Int64).int64_value(&[]) as usize;
        let x = x.clamp(self.low, self.high);
        let noise = match self.noise {
            // Lap(b) = b (E1 - E2) with E ~ Exp(1) = -ln(1 - U): torch's U lies in [0, 1), so
            // 1 - U lies in (0, 1] and the log stays finite (ln U would be -inf at U = 0, which
            // millions of draws hit).
            RecordNoise::Laplace => {
                let e = |u: Tensor| -(u.neg() + 1.0).log();
                (e(x.rand_like()) - e(x.rand_like())) * self.scale
            }
            RecordNoise::AnalyticGaussian { .. } => x.randn_like() * self.scale,
        };
        Ok((x + noise, outside))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::accountant::analytic::gaussian_epsilon;

    /// The Gaussian's multiplier gives exactly (eps, delta) on the analytic curve; the Laplace
    /// scale is d/eps on [0, 1]; noise moments match the variances; clipping is counted.
    #[test]
    fn calibration_and_moments() {
        let lp = RecordMechanism::new(RecordNoise::Laplace, 2.0, 100, 0.0, 1.0).unwrap();
        assert_eq!(lp.scale, 50.0);
        assert_eq!(lp.event(), Event::PureDp { epsilon: 2.0 });
        let ag = RecordMechanism::new(RecordNoise::AnalyticGaussian { delta: AG_DELTA }, 1.0, 100, 0.0, 1.0).unwrap();
        let s = ag.noise_multiplier.unwrap();
        assert!((gaussian_epsilon(s, AG_DELTA).unwrap() - 1.0).abs() < 1e-9);
        assert!((ag.scale - s * 10.0).abs() < 1e-12);
        tch::manual_seed(3);
        for m in [lp, ag] {
            let x = Tensor::full([400, 100], 0.5, (Kind::Float, tch::Device::Cpu));
            let (y, clipped) = m.perturb(&x).unwrap();
            assert_eq!(clipped, 0);
            let n = 40_000.0;
            let mean = y.mean(Kind::Double).double_value(&[]);
            let var = y.var(true).double_value(&[]);
            assert!((mean - 0.5).abs() < 5.0 * (m.variance() / n).sqrt(), "{m:?}: mean {mean}");
            assert!((var / m.variance() - 1.0).abs() < 0.05, "{m:?}: var {var} vs {}", m.variance());
        }
        let x = Tensor::from_slice(&[2.0f32, -1.0, 0.5]).view([1, 3]);
        let m = RecordMechanism::new(RecordNoise::Laplace, 1.0, 3, 0.0, 1.0).unwrap();
        assert_eq!(m.perturb(&x).unwrap().1, 2);
        // Millions of draws (Cora's 2708 x 1433) stay finite: U = 0 does not give an infinite draw.
        let big = Tensor::zeros([2708, 1433], (Kind::Float, tch::Device::Cpu));
        let (y, _) = RecordMechanism::new(RecordNoise::Laplace, 1.0, 1433, 0.0, 1.0).unwrap().perturb(&big).unwrap();
        assert!(bool::try_from(y.isfinite().all()).unwrap());
        assert!(RecordMechanism::new(RecordNoise::Laplace, 0.0, 3, 0.0, 1.0).is_err());
        assert!(RecordMechanism::new(RecordNoise::AnalyticGaussian { delta: 0.0 }, 1.0, 3, 0.0, 1.0).is_err());
    }
}
