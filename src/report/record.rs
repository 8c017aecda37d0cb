//! A privacy budget value that may be infinite ("no privacy"), with one textual form everywhere:
//! a positive number, or `inf`. TOML has a native `inf` float and JSON has none, so the serde
//! form is a number when finite and the string "inf" otherwise; reports stay valid JSON.
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;

/// Target or claimed epsilon. `Infinite` is the non-private setting (thesis tables' "eps = inf").
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Epsilon {
    Finite(f64),
    Infinite,
}

impl Epsilon {
    /// `inf` for infinite and non-finite values.
    pub fn from_f64(x: f64) -> Self {
        if x.is_finite() {
            Epsilon::Finite(x)
        } else {
            Epsilon::Infinite
        }
    }
    pub fn as_f64(self) -> f64 {
        match self {
            Epsilon::Finite(x) => x,
            Epsilon::Infinite => f64::INFINITY,
        }
    }
    /// The finite value, None for "no privacy".
    pub fn finite(self) -> Option<f64> {
        match self {
            Epsilon::Finite(x) => Some(x),
            Epsilon::Infinite => None,
        }
    }
    pub fn is_infinite(self) -> bool {
        matches!(self, Epsilon::Infinite)
    }
    /// Total order (inf last), for sorting grids.
    pub fn total_cmp(&self, other: &Self) -> Ordering {
        self.as_f64().total_cmp(&other.as_f64())
    }
    /// Short label for file names and plot axes: "1", "0.5", "inf".
    pub fn label(self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Epsilon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Epsilon::Finite(x) => write!(f, "{x}"),
            Epsilon::Infinite => f.write_str("inf"),
        }
    }
}

impl Serialize for Epsilon {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Epsilon::Finite(x) => s.serialize_f64(*x),
            Epsilon::Infinite => s.serialize_str("inf"),
        }
    }
}

impl<'de> Deserialize<'de> for Epsilon {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Epsilon;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a positive number or \"inf\"")
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<Epsilon, E> {
                checked(x)
            }
            fn visit_i64<E: de::Error>(self, x: i64) -> Result<Epsilon, E> {
                Ok(Epsilon::Finite(x as f64))
            }
            fn visit_u64<E: de::Error>(self, x: u64) -> Result<Epsilon, E> {
                Ok(Epsilon::Finite(x as f64))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Epsilon, E> {
                match s.trim().to_ascii_lowercase().as_str() {
                    "inf" | "+inf" | "infinity" | "∞" => Ok(Epsilon::Infinite),
                    other => match other.parse::<f64>() {
                        Ok(x) => checked(x),
                        Err(_) => Err(E::custom(format!("expected a number or \"inf\", got \"{s}\""))),
                    },
                }
            }
        }
        /// NaN and -inf are refused here, where they are still visible: `from_f64` maps every
        /// non-finite value to "no privacy", so `-inf` used to run silently as eps = inf.
        fn checked<E: de::Error>(x: f64) -> Result<Epsilon, E> {
            if x.is_nan() || x == f64::NEG_INFINITY {
                return Err(E::custom(format!("epsilon {x} is not a privacy level (give a number > 0, or inf)")));
            }
            Ok(Epsilon::from_f64(x))
        }
        d.deserialize_any(V)
    }
}

/// serde helper for plain `f64` fields that may be infinite (written as "inf").
pub mod f64_or_inf {
    use super::Epsilon;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        Epsilon::from_f64(*x).serialize(s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Epsilon::deserialize(d)?.as_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, Serialize)]
    struct Grid {
        eps: Vec<Epsilon>,
    }

    #[test]
    fn toml_accepts_numbers_native_inf_and_the_string() {
        let g: Grid = toml::from_str(r#"eps = [1, 0.5, inf, "inf", "8"]"#).unwrap();
        assert_eq!(
            g.eps,
            vec![
                Epsilon::Finite(1.0),
                Epsilon::Finite(0.5),
                Epsilon::Infinite,
                Epsilon::Infinite,
                Epsilon::Finite(8.0)
            ]
        );
    }

    #[test]
    fn minus_infinity_and_nan_are_refused_not_run_as_no_privacy() {
        for text in [r#"eps = [-inf]"#, r#"eps = [nan]"#, r#"eps = ["-inf"]"#, r#"eps = ["NaN"]"#, r#"eps = [1, -inf]"#]
        {
            let err = toml::from_str::<Grid>(text).err().unwrap_or_else(|| panic!("{text} accepted"));
            assert!(err.to_string().contains("not a privacy level"), "{text}: {err}");
        }
        assert!(serde_json::from_str::<Grid>(r#"{"eps":["-inf"]}"#).is_err());
    }

    #[test]
    fn json_round_trip_keeps_infinity_as_a_string() {
        let g = Grid { eps: vec![Epsilon::Finite(2.0), Epsilon::Infinite] };
        let s = serde_json::to_string(&g).unwrap();
        assert_eq!(s, r#"{"eps":[2.0,"inf"]}"#);
        let back: Grid = serde_json::from_str(&s).unwrap();
        assert_eq!(back.eps, g.eps);
        assert!(toml::from_str::<Grid>(r#"eps = ["lots"]"#).is_err());
    }
}
